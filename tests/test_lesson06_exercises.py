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
    assert v.status == WRONG and "has shape" in v.message


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
