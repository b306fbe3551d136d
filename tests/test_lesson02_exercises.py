"""Lesson 02's checkers catch the wrong answers their prompts warn about."""
import pytest
import torch
from torch import nn

from course_lib.nn.attention import scaled_dot_product_attention
from course_lib.exercises.lesson02 import SELF_ATTENTION, SOFTMAX


def test_softmax_with_the_max_of_the_whole_tensor_is_rejected():
    def global_max(s):        # stable against overflow, but a low row underflows to 0/0
        e = torch.exp(s - s.max())
        return e / e.sum(dim=-1, keepdim=True)

    verdict = SOFTMAX.verdict(global_max)
    assert not verdict.passed
    assert "NaN" in verdict.message


def test_self_attention_with_other_layer_names_is_told_the_names():
    class Renamed(nn.Module):
        def __init__(self, d_model, d_k, d_v):
            super().__init__()
            self.q = nn.Linear(d_model, d_k, bias=False)
            self.k = nn.Linear(d_model, d_k, bias=False)
            self.v = nn.Linear(d_model, d_v, bias=False)

        def forward(self, x):
            return scaled_dot_product_attention(self.q(x), self.k(x), self.v(x))[0]

    verdict = SELF_ATTENTION.verdict(Renamed)
    assert verdict.status == "crashed"
    assert "named exactly `w_q`" in verdict.message


def test_a_crash_in_self_attention_names_the_weights_it_was_given():
    """Not "argument 2 (4, 7), argument 3 (4, 7)…" (issue 29 §2): the weights by name."""
    from course_lib.exercises.lesson02 import SELF_ATTENTION, SelfAttentionReference

    class Broken(SelfAttentionReference):
        def forward(self, x):
            return self.w_q(x) @ self.w_v(x)        # (n, d_k) @ (n, d_v): does not fit

    message = SELF_ATTENTION.verdict(Broken).message
    # The smallest input it crashes on (issue 44 §3), described as the check describes its inputs.
    assert "argument 2" not in message and "self.w_q (2, 3), self.w_k (2, 3), self.w_v (2, 3)" in message, message
    assert "x (1, 3, 3) (batch, n, d_model)" in message and "d_model=3, d_k=2, d_v=2" in message, message


# ---- issue 38 §3: one naming (w_q, as the library's layers), a bias is not silently zeroed,
# and the slips of 2.1-2.3 that still got a generic message

class _Learner(nn.Module):
    """A learner's SelfAttention: `bias` says which of w_q, w_k, w_v got nn.Linear's default bias."""

    def __init__(self, d_model, d_k, d_v, bias=(), names=("w_q", "w_k", "w_v"), tuple_out=False):
        super().__init__()
        self.names, self.tuple_out = names, tuple_out
        for name, d in zip(names, (d_k, d_k, d_v)):
            setattr(self, name, nn.Linear(d_model, d, bias=name[-1] in bias))

    def forward(self, x):
        q, k, v = (getattr(self, n)(x) for n in self.names)
        out, weights = scaled_dot_product_attention(q, k, v)
        return (out, weights) if self.tuple_out else out


def _learner(**options):
    return lambda d_model, d_k, d_v: _Learner(d_model, d_k, d_v, **options)


def test_the_exercise_and_the_checker_use_the_librarys_names():
    assert SELF_ATTENTION.verdict(_learner()).passed
    message = SELF_ATTENTION.verdict(_learner(names=("q", "k", "v"))).message
    assert "named exactly `w_q`" in message and "W_q" not in message, message


def test_a_solution_written_to_the_old_prompt_still_passes():
    """Before issue 38 the prompt asked for W_q, W_k, W_v: work already done keeps its ✅."""
    assert SELF_ATTENTION.verdict(_learner(names=("W_q", "W_k", "W_v"))).passed


@pytest.mark.parametrize("bias", ["qkv", "q", "v", "qv", "kv", "qk"])
def test_a_bias_is_rejected_with_its_own_hint(bias):
    """nn.Linear's default bias=True: the checker used to zero it silently."""
    v = SELF_ATTENTION.verdict(_learner(bias=bias))
    assert v.status == "wrong", v.message
    assert "bias=False" in v.message and "x W^Q" in v.message, v.message


def test_a_bias_on_w_k_alone_cannot_change_the_output_and_passes():
    """q·(k_j + b) = q·k_j + q·b: the same for every key j, so the softmax drops it."""
    assert SELF_ATTENTION.verdict(_learner(bias="k")).passed


def test_returning_the_weights_too_is_named():
    v = SELF_ATTENTION.verdict(_learner(tuple_out=True))
    assert v.status == "wrong" and "[0]" in v.message and "(out, weights)" in v.message, v.message


def test_a_softmax_sum_without_keepdim_is_named():
    def softmax(s):
        e = torch.exp(s - s.max(dim=-1, keepdim=True).values)
        return e / e.sum(dim=-1)

    v = SOFTMAX.verdict(softmax)
    assert v.status == "wrong" and "keepdim" in v.message, v.message


def test_max_without_values_is_named():
    def softmax(s):
        e = torch.exp(s - s.max(dim=-1, keepdim=True))
        return e / e.sum(dim=-1, keepdim=True)

    v = SOFTMAX.verdict(softmax)
    assert v.status == "wrong" and ".values" in v.message, v.message


@pytest.mark.filterwarnings("ignore:The use of `x.T`")   # the learner's code warns too
def test_k_dot_T_on_a_batch_is_named():
    from course_lib.exercises.lesson02 import ATTENTION

    def attention(q, k, v, mask=None):
        scores = q @ k.T / q.shape[-1] ** 0.5
        if mask is not None:
            scores = scores.masked_fill(~mask, float("-inf"))
        weights = torch.softmax(scores, dim=-1)
        return weights @ v, weights

    v = ATTENTION.verdict(attention)
    assert v.status == "wrong" and "k.T" in v.message and "transpose(-2, -1)" in v.message, v.message


def test_weights_and_out_in_the_wrong_order_is_named():
    from course_lib.exercises.lesson02 import ATTENTION

    v = ATTENTION.verdict(lambda q, k, v, mask=None: ATTENTION.reference(q, k, v, mask)[::-1])
    assert v.status == "wrong" and "(out, weights)" in v.message, v.message
