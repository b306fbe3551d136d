"""Lesson 02's checkers catch the wrong answers their prompts warn about."""
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
    assert "named exactly `W_q`" in verdict.message


def test_a_crash_in_self_attention_names_the_weights_it_was_given():
    """Not "argument 2 (4, 7), argument 3 (4, 7)…" (issue 29 §2): the weights by name."""
    from course_lib.exercises.lesson02 import SELF_ATTENTION, SelfAttentionReference

    class Broken(SelfAttentionReference):
        def forward(self, x):
            return self.W_q(x) @ self.W_v(x)        # (n, d_k) @ (n, d_v): does not fit

    message = SELF_ATTENTION.verdict(Broken).message
    assert "argument 2" not in message and "W_q (4, 7), W_k (4, 7), W_v (5, 7)" in message, message
    assert "x (2, 6, 7) (batch, n, d_model)" in message and "d_model=7, d_k=4, d_v=5" in message, message
