"""Greedy decoding and beam search for an EncoderDecoder (lesson 08)."""
import itertools

import pytest
import torch

from course_lib.exercises.lesson08 import greedy_decode_reference
from course_lib.models import EncoderDecoder
from course_lib.seq2seq_decoding import beam_search, beam_step, greedy_decode

BOS, EOS, PAD = 1, 2, 0


def _model(seed=0, vocab=7):
    torch.manual_seed(seed)
    m = EncoderDecoder(vocab, vocab, d_model=16, h=2, d_ff=32, n_enc=1, n_dec=1, dropout=0.0, max_len=16, pad_id=PAD)
    with torch.no_grad():
        for name, p in m.named_parameters():  # sharper than the default init: input-dependent outputs
            if p.dim() > 1:
                p.mul_(2.0)
    return m.eval()


def _src(seed=0, vocab=7):
    g = torch.Generator().manual_seed(seed)
    src = torch.randint(3, vocab, (5, 4), generator=g)
    src[1, 2:] = PAD
    return src


@torch.no_grad()
def _log_prob(model, src, seq):
    """log p(seq | src) by teacher forcing; seq excludes <bos>. Like the decoders, the
    distribution is over the tokens other than <pad> and <bos>."""
    tgt = torch.tensor([[BOS] + seq[:-1]])
    logits = model(src, tgt)
    logits[..., [PAD, BOS]] = float("-inf")
    logp = logits.log_softmax(-1)[0]
    return float(logp[torch.arange(len(seq)), torch.tensor(seq)].sum())


def test_greedy_matches_the_step_by_step_reference_until_eos():
    m, src = _model(), _src()
    fast = greedy_decode(m, src, BOS, EOS, max_len=6)
    slow = greedy_decode_reference(m, src, BOS, EOS, 6)
    compared = 0
    for row_fast, row_slow in zip(fast.tolist(), slow.tolist()):
        n = row_slow.index(EOS) + 1 if EOS in row_slow else len(row_slow)
        if PAD in row_slow[1:n] or BOS in row_slow[1:n]:
            continue  # the library never predicts <pad>/<bos>; the plain reference may
        assert row_fast[:n] == row_slow[:n]
        compared += 1
    assert compared >= 3


def test_greedy_pads_after_eos_and_stops_when_all_are_done():
    m, src = _model(), _src()
    out = greedy_decode(m, src, BOS, EOS, max_len=12)
    assert out[:, 0].eq(BOS).all() and out.shape[1] <= 13
    for row in out.tolist():
        if EOS in row:
            assert all(t == PAD for t in row[row.index(EOS) + 1:])
    if all(EOS in row for row in out.tolist()):
        assert any(row[-1] == EOS for row in out.tolist())  # stopped right after the last <eos>


def test_beam_step_is_the_best_of_all_candidates():
    g = torch.Generator().manual_seed(0)
    scores = -torch.rand(2, 3, generator=g)
    lp = torch.randn(2, 3, 5, generator=g).log_softmax(-1)
    new, beam, tok = beam_step(scores, lp, 4)
    for b in range(2):
        cands = sorted(((float(scores[b, i] + lp[b, i, v]), i, v) for i in range(3) for v in range(5)), reverse=True)
        assert [(i, v) for _, i, v in cands[:4]] == list(zip(beam[b].tolist(), tok[b].tolist()))
        assert torch.allclose(new[b], torch.tensor([c[0] for c in cands[:4]]))


def test_beam_of_one_is_greedy():
    m, src = _model(1), _src(1)
    assert torch.equal(beam_search(m, src, BOS, EOS, max_len=6, beam_size=1), greedy_decode(m, src, BOS, EOS, max_len=6))


@pytest.mark.parametrize("seed", [0, 1])
def test_a_wide_beam_finds_the_most_probable_sequence(seed):
    """With beam_size ≥ every possible prefix, beam search is exhaustive search."""
    vocab, max_len = 5, 3
    m, src = _model(seed, vocab), _src(seed, vocab)[:2]
    best, beams, scores = beam_search(m, src, BOS, EOS, max_len=max_len, beam_size=vocab ** max_len,
                                      length_penalty=0.0, return_all=True)
    for b in range(2):
        s = src[b : b + 1]
        s = s[:, : int((s != PAD).sum())]
        candidates = []
        for n in range(1, max_len + 1):
            for seq in itertools.product(range(vocab), repeat=n):
                seq = list(seq)
                if EOS in seq[:-1] or (n < max_len and seq[-1] != EOS) or PAD in seq or BOS in seq:
                    continue  # ended early without <eos>, continued after it, or emits <pad>/<bos>
                candidates.append((_log_prob(m, s, seq), seq))
        top_score, top_seq = max(candidates)
        got = [t for t in best[b, 1:].tolist() if t != PAD]
        assert got == top_seq
        assert scores[b, 0].item() == pytest.approx(top_score, abs=1e-4)


def test_return_all_gives_sorted_beams():
    m, src = _model(3), _src(3)
    best, beams, scores = beam_search(m, src, BOS, EOS, max_len=5, beam_size=3, return_all=True)
    assert beams.shape[:2] == (5, 3) and scores.shape == (5, 3)
    assert (scores[:, :-1] >= scores[:, 1:]).all()
    assert torch.equal(best, beams[:, 0, : best.shape[1]])


@pytest.mark.parametrize("kwargs, message", [(dict(beam_size=0), "beam_size"), (dict(max_len=0), "max_len")])
def test_bad_arguments_are_named(kwargs, message):
    with pytest.raises(ValueError, match=message):
        beam_search(_model(), _src(), BOS, EOS, **{"max_len": 3, "beam_size": 2, **kwargs})
