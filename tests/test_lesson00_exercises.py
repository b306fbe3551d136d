"""Lesson 00's checker names the slips learners make in their first exercise (issue 38 §3)."""
import pytest

from course_lib.exercises.framework import OK, WRONG
from course_lib.exercises.lesson00 import CENTER_ROWS


@pytest.mark.parametrize("dim", [1, -1])
def test_a_mean_without_keepdim_is_told_keepdim(dim):
    """x.mean(dim=1) is (n,): `x - mean` cannot broadcast — the message names keepdim, not the sizes."""
    def center_rows(x):
        return x - x.mean(dim=dim)

    v = CENTER_ROWS.verdict(center_rows)
    assert v.status == WRONG, v.message
    assert "keepdim" in v.message and "(n,)" in v.message, v.message


def test_the_row_sum_instead_of_the_mean_is_named():
    v = CENTER_ROWS.verdict(lambda x: x - x.sum(dim=1, keepdim=True))
    assert v.status == WRONG and "sum" in v.message and "divided by" in v.message, v.message


def test_a_mean_divided_by_the_number_of_rows_is_named():
    def center_rows(x):
        return x - x.sum(dim=1, keepdim=True) / x.shape[0]      # shape[0] is n, not d

    v = CENTER_ROWS.verdict(center_rows)
    assert v.status == WRONG and "x.shape[0]" in v.message and "x.shape[1]" in v.message, v.message


@pytest.mark.parametrize("fn", [
    lambda x: x - x.mean(dim=1)[:, None],
    lambda x: x - x.mean(dim=1).unsqueeze(1),
    lambda x: (x.T - x.mean(dim=1)).T,
], ids=["none-index", "unsqueeze", "transpose"])
def test_a_mean_without_keepdim_put_back_by_hand_is_accepted(fn):
    v = CENTER_ROWS.verdict(fn)
    assert v.status == OK, v.message
