"""Lesson 05's checkers name the wrong answers learners bring from elsewhere."""
import pytest
import torch

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


def _whole_tensor(mean_dim, stat):
    def layer_norm(x, gamma, beta, eps):
        mean = x.mean() if mean_dim is None else x.mean(mean_dim, keepdim=True)
        return gamma * (x - mean) / stat(x, eps) + beta
    return layer_norm


@pytest.mark.parametrize("fn", [
    _whole_tensor(-1, lambda x, eps: x.std() + eps),            # std without dim
    _whole_tensor(None, lambda x, eps: x.std() + eps),          # both without dim
    _whole_tensor(None, lambda x, eps: (x.var(unbiased=False) + eps).sqrt()),
], ids=["std", "mean-and-std", "mean-and-var"])
def test_statistics_of_the_whole_tensor_are_named(fn):
    """x.std() without dim= is one number for every position of every sequence."""
    v = LAYER_NORM.verdict(fn)
    assert v.status == "wrong", v.message
    assert "without dim=" in v.message and "each position" in v.message, v.message


def test_beta_added_before_the_scaling_is_named():
    """Issue 38 §3: γ·(z + β) got the generic "every row should have mean 0" (which it has)."""
    def layer_norm(x, gamma, beta, eps):
        z = (x - x.mean(-1, keepdim=True)) / torch.sqrt(x.var(-1, keepdim=True, unbiased=False) + eps)
        return gamma * (z + beta)

    v = LAYER_NORM.verdict(layer_norm)
    assert v.status == "wrong", v.message
    assert "before the scaling" in v.message and "β·γ" in v.message, v.message


def test_gamma_applied_before_the_division_is_accepted():
    def layer_norm(x, gamma, beta, eps):
        mean, var = x.mean(-1, keepdim=True), x.var(-1, keepdim=True, unbiased=False)
        return (x - mean) * gamma / torch.sqrt(var + eps) + beta

    assert LAYER_NORM.verdict(layer_norm).passed
