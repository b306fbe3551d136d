"""Lesson 10's induction-score checker names an off-by-one range (issue 29 §2)."""
import pytest
import torch

from course_lib.exercises.lesson10 import INDUCTION_SCORE


def _score(start, stop, divide_by_period=False):
    def induction_score(weights, period):
        i = torch.arange(start(period), stop(period))
        total = weights[:, i, i - period + 1].sum(dim=-1)
        return total / (period if divide_by_period else len(i))
    return induction_score


@pytest.mark.parametrize("fn, words", [
    (_score(lambda p: p, lambda p: 2 * p), "one position early"),          # BOS forgotten
    (_score(lambda p: p + 2, lambda p: 2 * p + 1), "starts one late"),
    (_score(lambda p: p + 2, lambda p: 2 * p + 1, divide_by_period=True), "starts one late"),
    (_score(lambda p: p + 1, lambda p: 2 * p, divide_by_period=True), "stops one short"),
    (_score(lambda p: p + 1, lambda p: 2 * p), "stops one short"),
])
def test_off_by_one_ranges_are_named(fn, words):
    v = INDUCTION_SCORE.verdict(fn)
    assert v.status == "wrong" and words in v.message, v.message
