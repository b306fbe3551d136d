"""Lesson 05's checkers name the wrong answers learners bring from elsewhere."""
from course_lib.exercises.lesson05 import LAYER_NORM


def test_the_tutorial_layer_norm_gets_both_slips_named():
    """Issue 29 §2: (x − mean) / (x.std() + eps) — the unbiased std and ε outside the root at once
    (a well-known tutorial's form) got the generic hint."""
    def layer_norm(x, gamma, beta, eps):
        mean = x.mean(-1, keepdim=True)
        std = x.std(-1, keepdim=True)
        return gamma * (x - mean) / (std + eps) + beta

    v = LAYER_NORM.verdict(layer_norm)
    assert v.status == "wrong", v.message
    assert "two slips" in v.message and "unbiased" in v.message and "outside the square root" in v.message, v.message
