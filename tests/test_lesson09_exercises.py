"""Lesson 09's statistics: the slips learners write, each named (issue 38 §3)."""
import torch

from course_lib.exercises.framework import WRONG
from course_lib.exercises.lesson09 import MEAN_POOL, PREVIOUS_TOKEN_SCORE


def test_a_mask_without_its_feature_axis_is_named():
    def mean_pool(hidden, attention_mask):
        return (hidden * attention_mask).sum(dim=1) / attention_mask.sum(dim=1, keepdim=True)

    v = MEAN_POOL.verdict(mean_pool)
    assert v.status == WRONG and "attention_mask[..., None]" in v.message, v.message


def test_a_count_without_keepdim_is_named():
    def mean_pool(hidden, attention_mask):
        m = attention_mask.unsqueeze(-1).float()
        return (hidden * m).sum(dim=1) / attention_mask.sum(dim=1)

    v = MEAN_POOL.verdict(mean_pool)
    assert v.status == WRONG and "keepdim=True" in v.message, v.message


def test_query_zero_wrapping_around_is_named():
    def previous_token_score(weights):
        n = weights.shape[-1]
        return torch.stack([weights[:, i, i - 1] for i in range(n)]).mean(dim=0)

    v = PREVIOUS_TOKEN_SCORE.verdict(previous_token_score)
    assert v.status == WRONG and "wraps around" in v.message, v.message
