"""Lesson 06's checkers with a non-float output (a bool mask, integer ids) are wired with
`run=`, so tests/test_exercises.py's generic probes skip them; the same probes here, minus
the NaN one (a bool or integer tensor cannot hold NaN)."""
import pytest
import torch

from course_lib.exercises import framework
from course_lib.exercises.framework import CRASHED, TODO, WRONG

CAUSAL, GENERATE = framework.REGISTRY["causal_mask"], framework.REGISTRY["generate"]


def _stub(*args):
    raise NotImplementedError("write your solution here")


@pytest.mark.parametrize("ex", [CAUSAL, GENERATE], ids=["causal_mask", "generate"])
@pytest.mark.parametrize("fn, status, words", [
    (_stub, TODO, "not solved yet"),
    (lambda *a: [][1], CRASHED, "raised IndexError"),
    (lambda *a: None, WRONG, "returned None"),
    (lambda *a: 3.0, WRONG, "should be a torch tensor"),
])
def test_bad_learner_code_gives_a_specific_message(ex, fn, status, words):
    v = ex.verdict(fn)
    assert v.status == status and words in v.message, v.message


def test_a_float_mask_is_named():
    v = CAUSAL.verdict(lambda n: torch.ones(n, n).tril())
    assert v.status == WRONG and "dtype torch.float32, expected torch.bool" in v.message


def test_a_mask_of_the_wrong_shape_is_named():
    v = CAUSAL.verdict(lambda n: torch.ones(n, n + 1, dtype=torch.bool).tril())
    assert v.status == WRONG and "has shape" in v.message


def test_generate_returning_only_the_new_tokens_is_named():
    v = GENERATE.verdict(lambda model, tokens, n, *a: GENERATE.reference(model, tokens, n, *a)[:, tokens.shape[1]:])
    assert v.status == WRONG and "only the new tokens" in v.message and "prompt" in v.message, v.message


def test_generate_without_cropping_is_told_to_crop():
    # The model's own error says "build the model with a larger max_len"; the fix in
    # the loop is to crop, and the checker says so.
    def no_crop(model, tokens, n, t=1.0, k=None, g=None):
        for _ in range(n):
            logits = model(tokens)[:, -1]
            tokens = torch.cat([tokens, logits.argmax(-1, keepdim=True)], 1)
        return tokens
    v = GENERATE.verdict(no_crop)
    assert v.status == WRONG and "tokens[:, -model.max_len:]" in v.message, v.message
    assert "larger max_len" not in v.message


# ---- issue 29 §2: wrong answers a learner wrote, each named (not the generic or NaN message)

def _scores(q, k):
    return q @ k.transpose(-2, -1) / q.shape[-1] ** 0.5


def test_a_top_left_triangle_instead_of_the_given_mask_is_named():
    def masked_attention(q, k, v, mask):
        own = torch.ones(q.shape[1], k.shape[1], dtype=torch.bool).tril()   # n_q != n_k
        weights = torch.softmax(_scores(q, k).masked_fill(~own, float("-inf")), dim=-1)
        return weights @ v, weights

    v = framework.REGISTRY["masked_attention"].verdict(masked_attention)
    assert v.status == WRONG and "top-left corner" in v.message and "ignored `mask`" in v.message, v.message


def _topk(logits, kth):
    return logits.masked_fill(logits < kth, float("-inf"))


def test_temperature_zero_not_handled_is_named():
    def next_token_probs(logits, temperature, top_k):
        if top_k is not None:
            logits = _topk(logits, torch.topk(logits, top_k, dim=-1).values[..., -1:])
        return torch.softmax(logits / temperature, dim=-1)

    v = framework.REGISTRY["next_token_probs"].verdict(next_token_probs)
    assert v.status == WRONG and "temperature 0 is not handled" in v.message, v.message
    assert "exp overflow" not in v.message


def test_top_k_over_the_whole_batch_is_named():
    def next_token_probs(logits, temperature, top_k):
        if temperature == 0:
            return torch.nn.functional.one_hot(logits.argmax(-1), logits.shape[-1]).float()
        if top_k is not None:
            logits = _topk(logits, logits.flatten().topk(top_k).values[-1])   # all rows together
        return torch.softmax(logits / temperature, dim=-1)

    v = framework.REGISTRY["next_token_probs"].verdict(next_token_probs)
    assert v.status == WRONG and "whole batch at once" in v.message, v.message
    assert "exp overflow" not in v.message and "temperature 0" not in v.message


def test_a_draw_without_the_generator_is_named():
    def generate(model, tokens, max_new_tokens, temperature=1.0, top_k=None, generator=None):
        from course_lib.nn.decoding import next_token_probs
        for _ in range(max_new_tokens):
            logits = model(tokens[:, -model.max_len:])[:, -1, :]
            if temperature == 0:
                next_id = logits.argmax(dim=-1, keepdim=True)
            else:
                next_id = torch.multinomial(next_token_probs(logits, temperature, top_k), 1)   # no generator=
            tokens = torch.cat([tokens, next_id], dim=1)
        return tokens

    before = torch.random.get_rng_state()
    v = GENERATE.verdict(generate)
    assert v.status == WRONG and "do not use `generator`" in v.message, v.message
    assert "greedy_decode" not in v.message
    assert torch.equal(torch.random.get_rng_state(), before)   # the learner's global state is left alone


# ---- issue 38 §3: the sampling loop's other slips, each named (not "find the first step where they part")

def _generate(choose=None, cat_dim=1, scale_first=False):
    """A learner's loop; `choose(logits, temperature, top_k, generator)` picks the next ids."""
    from course_lib.nn.decoding import next_token_probs

    def generate(model, tokens, max_new_tokens, temperature=1.0, top_k=None, generator=None):
        for _ in range(max_new_tokens):
            logits = model(tokens[:, -model.max_len:])[:, -1, :]
            if choose is not None:
                next_id = choose(logits, temperature, top_k, generator)
            elif temperature == 0:
                next_id = logits.argmax(dim=-1, keepdim=True)
            else:
                if scale_first:
                    logits = logits / temperature
                probs = next_token_probs(logits, temperature, top_k)
                next_id = torch.multinomial(probs, 1, generator=generator)
            tokens = torch.cat([tokens, next_id], dim=cat_dim)
        return tokens
    return generate


def _argmax_or(draw):
    return lambda x, t, k, g: x.argmax(-1, keepdim=True) if t == 0 else draw(x, t, k, g)


@pytest.mark.parametrize("learner, words", [
    (_generate(cat_dim=0), ["dim=0", "dim=1"]),
    (_generate(choose=lambda x, t, k, g: x.argmax(-1) if t == 0 else torch.multinomial(x.softmax(-1), 1, generator=g)),
     ["(batch,)", "keepdim=True"]),
    (_generate(choose=_argmax_or(lambda x, t, k, g: torch.multinomial(x / t, 1, generator=g))),
     ["logits", "probabilities"]),
    (_generate(scale_first=True), ["twice"]),
], ids=["cat-along-the-batch", "next-id-without-its-axis", "multinomial-of-logits", "temperature-twice"])
def test_a_learners_sampling_slip_is_named(learner, words):
    v = GENERATE.verdict(learner)
    assert v.status == WRONG, v.message
    for w in words:
        assert w in v.message, v.message
