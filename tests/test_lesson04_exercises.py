"""Lesson 04's head bookkeeping: the slips learners write, each named (issue 38 §3)."""
from course_lib.exercises.framework import WRONG
from course_lib.exercises.lesson04 import MERGE_HEADS, SPLIT_HEADS


def test_split_heads_without_the_transpose_is_named():
    def split_heads(x, h):
        batch, n, d_model = x.shape
        return x.view(batch, n, h, d_model // h)

    v = SPLIT_HEADS.verdict(split_heads)
    assert v.status == WRONG and "transpose(1, 2)" in v.message and "axis 2" in v.message, v.message


def test_view_after_transpose_is_told_reshape():
    """A learner's .view of a transposed tensor raises a stride error; the message says why."""
    def merge_heads(x):
        batch, h, n, d_k = x.shape
        return x.transpose(1, 2).view(batch, n, h * d_k)

    v = MERGE_HEADS.verdict(merge_heads)
    assert v.status == WRONG and ".reshape" in v.message and ".contiguous()" in v.message, v.message


def test_heads_moved_back_but_not_joined_is_named():
    v = MERGE_HEADS.verdict(lambda x: x.permute(0, 2, 1, 3))
    assert v.status == WRONG and "did not join them" in v.message, v.message
