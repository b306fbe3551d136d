"""Lesson 11's RMSNorm: the slips learners write, each named (issue 38 §3), and the valid
forms still accepted."""
import pytest
import torch
import torch.nn.functional as F

from course_lib.exercises.framework import OK, WRONG
from course_lib.exercises.lesson11 import RMS_NORM


@pytest.mark.parametrize("learner", [
    lambda x, g, e: x / x.norm(dim=-1, keepdim=True) * g,
    lambda x, g, e: x / (torch.linalg.vector_norm(x, dim=-1, keepdim=True) + e) * g,
    lambda x, g, e: F.normalize(x, dim=-1) * g,
    lambda x, g, e: x / torch.sqrt(x.pow(2).sum(-1, keepdim=True) + e) * g,
], ids=["norm", "norm-plus-eps", "F.normalize", "sqrt-of-sum"])
def test_the_vectors_length_instead_of_its_rms_is_named(learner):
    """‖x‖ = √(Σ x²) has no 1/d: the outputs come out √d times too small."""
    v = RMS_NORM.verdict(learner)
    assert v.status == WRONG, v.message
    assert "1/d" in v.message and "‖x‖" in v.message, v.message


@pytest.mark.parametrize("learner, words", [
    (lambda x, g, e: x / (x.pow(2).mean(-1, keepdim=True) + e) * g, ["square root"]),
    (lambda x, g, e: x / torch.sqrt(x.pow(2).mean() + e) * g, ["without dim="]),
    (lambda x, g, e: x / torch.sqrt(x.pow(2).mean(-1) + e) * g, ["keepdim"]),
    (lambda x, g, e: x / torch.sqrt(x.pow(2).mean(-1, keepdim=True) + e) + g, ["added γ"]),
], ids=["mean-square-no-root", "whole-tensor", "no-keepdim", "gamma-added"])
def test_a_learners_rms_slip_is_named(learner, words):
    v = RMS_NORM.verdict(learner)
    assert v.status == WRONG, v.message
    for w in words:
        assert w in v.message, v.message


def test_the_rms_written_with_the_norm_and_root_d_is_accepted():
    v = RMS_NORM.verdict(lambda x, g, e: g * x / torch.sqrt(x.norm(dim=-1, keepdim=True) ** 2 / x.shape[-1] + e))
    assert v.status == OK, v.message


def test_the_cache_joined_along_the_features_is_named():
    from course_lib.exercises.lesson11 import CACHED_ATTENTION_STEP

    def cached_attention_step(q, k_new, v_new, k_cache, v_cache):
        k_cache = torch.cat([k_cache, k_new], dim=-1)
        v_cache = torch.cat([v_cache, v_new], dim=-1)
        w = torch.softmax(q @ k_cache.transpose(-2, -1) / q.shape[-1] ** 0.5, dim=-1)
        return w @ v_cache, k_cache, v_cache

    v = CACHED_ATTENTION_STEP.verdict(cached_attention_step)
    assert v.status == WRONG and "dim=2" in v.message and "positions" in v.message, v.message
