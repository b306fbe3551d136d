"""Greedy decoding and sampling through the step-function interface, and the leakage test
for every decoder in course_lib (changing future tokens must not move past outputs)."""
import math

import pytest
import torch

from course_lib.nn.decoding import (generate_text, greedy_decode, lm_step, next_token_probs, sample,
                                 top_k_filter)
from course_lib.nn.models import DecoderOnlyLM, EncoderDecoder
from course_lib.data.shakespeare import CharVocab


def tiny_lm(vocab=11, max_len=8, seed=0):
    torch.manual_seed(seed)
    return DecoderOnlyLM(vocab, d_model=16, h=2, d_ff=32, n_layers=1, max_len=max_len).eval()


def bigram_step(table):
    """A step function from a (V, V) logit table: the next token depends on the last only."""
    return lambda tokens: table[tokens[:, -1]]


# ------------------------------------------------------------------ the distribution

def test_top_k_keeps_the_k_largest():
    logits = torch.tensor([[1.0, 5.0, 3.0, 4.0], [0.0, -1.0, 2.0, 1.0]])
    kept = top_k_filter(logits, 2)
    assert torch.equal(torch.isfinite(kept), torch.tensor([[False, True, False, True], [False, False, True, True]]))
    assert torch.equal(top_k_filter(logits, None), logits) and torch.equal(top_k_filter(logits, 9), logits)


def test_probabilities_greedy_temperature_top_k():
    # Distinct logits at least 0.1 apart, so T = 1e-3 is one-hot to float precision.
    gen = torch.Generator().manual_seed(0)
    logits = torch.stack([torch.randperm(13, generator=gen) * 0.3 for _ in range(5)]).float()
    for t, k in [(1.0, None), (0.3, None), (3.0, 4)]:
        p = next_token_probs(logits, t, k)
        assert torch.allclose(p.sum(-1), torch.ones(5))
    assert torch.allclose(next_token_probs(logits, 1.0), torch.softmax(logits, -1))
    greedy = next_token_probs(logits, 0.0)
    assert torch.equal(greedy.argmax(-1), logits.argmax(-1)) and torch.equal(greedy.sum(-1), torch.ones(5))
    assert torch.allclose(next_token_probs(logits, 1e-3), greedy, atol=1e-4)   # T -> 0 is greedy
    assert ((next_token_probs(logits, 1.0, 4) > 0).sum(-1) == 4).all()
    flat = next_token_probs(logits, 1e4)
    assert torch.allclose(flat, torch.full_like(flat, 1 / 13), atol=1e-3)     # T -> inf is uniform


@pytest.mark.parametrize("kwargs, err, message", [
    (dict(temperature=-1.0), ValueError, "temperature must be >= 0"),
    (dict(temperature="hot"), TypeError, "temperature must be a number"),
    (dict(top_k=0), ValueError, "top_k"),
])
def test_bad_settings_are_named(kwargs, err, message):
    with pytest.raises(err, match=message):
        next_token_probs(torch.randn(2, 5), **kwargs)


# ------------------------------------------------------------------ the loops

def test_greedy_follows_the_argmax_chain():
    table = torch.randn(7, 7)
    out = greedy_decode(bigram_step(table), torch.tensor([[3]]), 6)
    expected = [3]
    for _ in range(6):
        expected.append(int(table[expected[-1]].argmax()))
    assert out[0].tolist() == expected


def test_sampling_draws_from_softmax_of_logits_over_t():
    z = torch.tensor([2.0, 1.0, 0.0, -1.0])
    step = lambda tokens: z.expand(tokens.shape[0], -1)   # same distribution at every step
    draws = sample(step, torch.zeros(4000, 1, dtype=torch.long), 1, temperature=0.7,
                   generator=torch.Generator().manual_seed(0))[:, 1]
    freq = torch.bincount(draws, minlength=4).double() / 4000
    assert torch.allclose(freq, torch.softmax(z.double() / 0.7, -1), atol=0.03)


def test_sampling_is_reproducible_and_greedy_at_t0_and_k1():
    lm, prompt = tiny_lm(), torch.randint(0, 11, (3, 2), generator=torch.Generator().manual_seed(1))
    draw = lambda seed, **kw: sample(lm, prompt, 12, generator=torch.Generator().manual_seed(seed), **kw)
    assert torch.equal(draw(0), draw(0))
    assert not torch.equal(draw(0), draw(1))
    greedy = greedy_decode(lm, prompt, 12)
    assert torch.equal(draw(0, temperature=0.0), greedy)
    assert torch.equal(draw(5, top_k=1), greedy)


def test_on_step_sees_the_tokens_so_far_and_can_stop_the_draw():
    lm, prompt = tiny_lm(), torch.tensor([[1, 2]])
    seen = []
    out = sample(lm, prompt, 5, generator=torch.Generator().manual_seed(0), on_step=lambda t: seen.append(t.clone()))
    assert torch.equal(out, sample(lm, prompt, 5, generator=torch.Generator().manual_seed(0)))   # same draw
    assert [t.shape[1] for t in seen] == [2, 3, 4, 5, 6]
    assert all(torch.equal(t, out[:, :t.shape[1]]) for t in seen)

    class Enough(Exception):
        pass

    def stop_after_two(tokens):
        if tokens.shape[1] == 4:
            raise Enough
    with pytest.raises(Enough):
        sample(lm, prompt, 5, on_step=stop_after_two)
    assert not lm.training                             # left in its mode (eval) after the stop


def test_the_context_window_slides():
    lm = tiny_lm(max_len=8)
    out = greedy_decode(lm, torch.zeros(1, 3, dtype=torch.long), 20)   # 23 tokens > max_len 8
    assert out.shape == (1, 23)
    seen = []
    step = lm_step(lambda tokens: seen.append(tokens.shape[1]) or lm(tokens))
    greedy_decode(step, torch.zeros(1, 3, dtype=torch.long), 5)
    assert seen == [3, 4, 5, 6, 7]     # a plain callable has no max_len: nothing is cut
    lm.max_len = 4
    seen.clear()
    wrapped = lm_step(lm)
    lm.forward = (lambda f: lambda tokens: seen.append(tokens.shape[1]) or f(tokens))(lm.forward)
    greedy_decode(wrapped, torch.zeros(1, 3, dtype=torch.long), 4)
    assert seen == [3, 4, 4, 4]


def test_eos_stops_a_row_and_pads_it_with_eos():
    table = torch.full((4, 4), -10.0)
    table[0, 1] = table[1, 2] = table[2, 3] = table[3, 3] = 10.0   # 0 -> 1 -> 2 -> 3 (eos) -> 3
    out = greedy_decode(bigram_step(table), torch.tensor([[0], [2]]), 10, eos_id=3)
    assert out.tolist() == [[0, 1, 2, 3], [2, 3, 3, 3]]            # stops once every row ended


def test_decoding_leaves_the_model_in_its_mode():
    lm = tiny_lm().train()
    sample(lm, torch.zeros(1, 1, dtype=torch.long), 3, generator=torch.Generator().manual_seed(0))
    assert lm.training


@pytest.mark.parametrize("tokens, n, message", [
    (torch.zeros(1, 2), 3, "integer token ids"),
    (torch.zeros(2, dtype=torch.long), 3, r"\(batch, n\)"),
    (torch.zeros(1, 0, dtype=torch.long), 3, r"n ≥ 1"),
    (torch.zeros(1, 2, dtype=torch.long), -1, "max_new_tokens"),
])
def test_bad_prompts_are_named(tokens, n, message):
    with pytest.raises((TypeError, ValueError), match=message):
        greedy_decode(tiny_lm(), tokens, n)


def test_generate_text_round_trip():
    vocab = CharVocab.from_text("abcdefghij\n ")
    lm = DecoderOnlyLM(len(vocab), d_model=16, h=2, d_ff=32, n_layers=1, max_len=8)
    text = generate_text(lm, vocab, "abc", max_new_tokens=15, temperature=1.0, seed=3)
    assert text.startswith("abc") and len(text) == 18
    assert text == generate_text(lm, vocab, "abc", max_new_tokens=15, temperature=1.0, seed=3)
    assert len(generate_text(lm, vocab, "", max_new_tokens=5, seed=0)) == 5   # empty prompt: starts at \n


# ------------------------------------------------------------------ the leakage test

def _max_change(fn, tokens, t, vocab):
    changed = tokens.clone()
    changed[:, t:] = (tokens[:, t:] + 1 + torch.randint(0, vocab - 1, tokens[:, t:].shape)) % vocab
    assert (changed[:, t:] != tokens[:, t:]).all()
    with torch.no_grad():
        return (fn(tokens) - fn(changed)).abs().amax(dim=(0, 2))   # per position


@pytest.mark.parametrize("norm_first", [True, False])
def test_decoder_only_lm_does_not_leak(norm_first):
    torch.manual_seed(0)
    lm = DecoderOnlyLM(17, d_model=32, h=4, d_ff=64, n_layers=2, max_len=20, norm_first=norm_first).eval()
    tokens = torch.randint(0, 17, (3, 20))
    for t in (1, 7, 19):
        change = _max_change(lm, tokens, t, 17)
        assert change[:t].max() == 0, f"position < {t} moved by {change[:t].max()}"
        assert change[t:].max() > 0


def test_encoder_decoder_target_side_does_not_leak():
    torch.manual_seed(0)
    model = EncoderDecoder(13, 11, d_model=32, h=4, d_ff=64, n_enc=1, n_dec=2, dropout=0.0, max_len=32).eval()
    src = torch.randint(0, 13, (2, 9))
    tgt = torch.randint(0, 11, (2, 12))
    change = _max_change(lambda y: model(src, y), tgt, 5, 11)
    assert change[:5].max() == 0 and change[5:].max() > 0


def test_the_leakage_test_catches_a_missing_mask():
    torch.manual_seed(0)
    lm = DecoderOnlyLM(17, d_model=32, h=4, d_ff=64, n_layers=1, max_len=12).eval()
    unmasked = lambda tokens: lm.lm_head(lm.blocks(lm.pos(lm.embed(tokens)), mask=None))
    change = _max_change(unmasked, torch.randint(0, 17, (2, 12)), 6, 17)
    assert change[:6].max() > 1e-4
    assert math.isfinite(float(change.max()))
