"""Greedy decoding and beam search for an EncoderDecoder (lesson 08), and beam search for a
decoder-only LM: one calling convention (course_lib.nn.decoding).

Ported from tests/test_seq2seq_decoding.py by refactor_tools/apply_layout.py (issue 14)."""
import itertools

import pytest
import torch

from course_lib.exercises.lesson08 import greedy_decode_reference
from course_lib.nn.decoding import beam_search, beam_step, greedy_decode, sample
from course_lib.nn.models import DecoderOnlyLM, EncoderDecoder

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
    fast = greedy_decode(m, BOS, 6, EOS, src=src)
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
    out = greedy_decode(m, BOS, 12, EOS, src=src)
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
    assert torch.equal(beam_search(m, BOS, 6, EOS, beam_size=1, src=src), greedy_decode(m, BOS, 6, EOS, src=src))


@pytest.mark.parametrize("seed", [0, 1])
def test_a_wide_beam_finds_the_most_probable_sequence(seed):
    """With beam_size ≥ every possible prefix, beam search is exhaustive search."""
    vocab, max_len = 5, 3
    m, src = _model(seed, vocab), _src(seed, vocab)[:2]
    best, beams, scores = beam_search(m, BOS, max_len, EOS, beam_size=vocab ** max_len, length_penalty=0.0,
                                      src=src, return_all=True)
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
    best, beams, scores = beam_search(m, BOS, 5, EOS, beam_size=3, src=src, return_all=True)
    assert beams.shape[:2] == (5, 3) and scores.shape == (5, 3)
    assert (scores[:, :-1] >= scores[:, 1:]).all()
    assert torch.equal(best, beams[:, 0, : best.shape[1]])


@pytest.mark.parametrize("kwargs, message", [(dict(beam_size=0), "beam_size"),
                                             (dict(max_new_tokens=-1), "max_new_tokens")])
def test_bad_arguments_are_named(kwargs, message):
    with pytest.raises(ValueError, match=message):
        beam_search(_model(), BOS, eos_id=EOS, src=_src(), **{"max_new_tokens": 3, "beam_size": 2, **kwargs})


@pytest.mark.parametrize("call, message", [
    (lambda: greedy_decode(_model(), BOS, 3, EOS), "pass src="),
    (lambda: greedy_decode(_lm(), torch.zeros(1, 1, dtype=torch.long), 3, src=_src()), "src= is for an EncoderDecoder"),
])
def test_the_wrong_model_kind_is_named(call, message):
    with pytest.raises(TypeError, match=message):
        call()


# ------------------------------------------------------------------ the same calls for a decoder-only LM

def _lm(seed=0, vocab=7):
    torch.manual_seed(seed)
    return DecoderOnlyLM(vocab, d_model=16, h=2, d_ff=32, n_layers=1, max_len=16).eval()


def test_lm_beam_of_one_is_greedy_and_a_wider_beam_scores_at_least_as_well():
    lm, prompt = _lm(), torch.tensor([[3, 4], [5, 6]])
    assert torch.equal(beam_search(lm, prompt, 6, beam_size=1), greedy_decode(lm, prompt, 6))
    _, _, narrow = beam_search(lm, prompt, 4, beam_size=1, length_penalty=0.0, return_all=True)
    _, _, wide = beam_search(lm, prompt, 4, beam_size=8, length_penalty=0.0, return_all=True)
    assert (wide[:, 0] >= narrow[:, 0] - 1e-5).all()


def test_lm_beam_stops_at_eos():
    lm, prompt = _lm(2), torch.tensor([[3]])
    out = greedy_decode(lm, prompt, 8)
    eos = int(out[0, 3])                       # call the greedy path's third new token <eos>
    best = beam_search(lm, prompt, 8, eos_id=eos, beam_size=1)
    assert best[0].tolist() == out[0, : out[0].tolist().index(eos) + 1].tolist()


def test_sampling_an_encoder_decoder_at_t0_is_greedy():
    m, src = _model(), _src()
    greedy = greedy_decode(m, BOS, 6, EOS, src=src)
    drawn = sample(m, BOS, 6, temperature=0.0, eos_id=EOS, src=src)
    assert torch.equal(drawn, greedy)
