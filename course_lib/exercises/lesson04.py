"""Lesson 04 — multi-head attention: splitting and merging heads, the multi-head module.

- `split_heads(x, h)`: (batch, n, d_model) -> (batch, h, n, d_k), heads as a batch axis.
- `merge_heads(x)`: (batch, h, n, d_k) -> (batch, n, h·d_k), the heads concatenated.
- `MultiHeadAttention`: the learner's module (forward only; __init__ is given), checked by
  copying the reference weights into it and comparing outputs.
"""
import math

import torch
from torch import nn

from ..nn.layers import MultiHeadAttention
from .feedback import permutation_equivariant, same_numbers_rearranged
from .framework import Exercise, Mistake

__all__ = ["check_split_heads", "check_merge_heads", "check_multi_head_attention"]


# --- split_heads -------------------------------------------------------------------------

def split_heads_reference(x, h):
    """(batch, n, d_model) -> (batch, h, n, d_k): head i gets features i·d_k ... (i+1)·d_k - 1."""
    batch, n, d_model = x.shape
    return x.view(batch, n, h, d_model // h).transpose(1, 2)


def _sizes(gen):
    """batch, n, h, d_k all different, so a swapped axis always shows."""
    h = int(torch.randint(2, 4, (1,), generator=gen))        # 2 or 3 heads
    d_k = h + 1 + int(torch.randint(0, 2, (1,), generator=gen))  # 3..5, never = h
    n = d_k + 1 + int(torch.randint(0, 2, (1,), generator=gen))  # never = h or d_k
    return 2, n, h, d_k


def _split_inputs(gen):
    batch, n, h, d_k = _sizes(gen)
    return torch.randn(batch, n, h * d_k, generator=gen), h


SPLIT_HEADS = Exercise(
    name="split_heads",
    reference=split_heads_reference,
    make_inputs=_split_inputs,
    mistakes=[
        Mistake("you reshaped straight to (batch, h, n, d_k): that cuts the flattened "
                "sequence into h chunks and mixes positions. Reshape to (batch, n, h, d_k) "
                "first, then swap axes 1 and 2",
                lambda x, h: x.reshape(x.shape[0], h, x.shape[1], x.shape[2] // h)),
        Mistake("each head got every h-th feature (features i, i+h, i+2h, ...); a head's "
                "d_k features are one contiguous block: view(batch, n, h, d_k)",
                lambda x, h: x.view(x.shape[0], x.shape[1], x.shape[2] // h, h).permute(0, 3, 1, 2)),
        Mistake("you transposed (n, d_model) before reshaping, which scrambles positions "
                "and features; reshape the last axis into (h, d_k) first, then transpose(1, 2)",
                lambda x, h: x.transpose(1, 2).reshape(x.shape[0], h, x.shape[1], x.shape[2] // h)),
        Mistake("your heads are on axis 2, (batch, n, h, d_k): the view split each position's features "
                "into heads, but the heads axis must come before the positions — transpose(1, 2) "
                "gives (batch, h, n, d_k)",
                lambda x, h: x.view(x.shape[0], x.shape[1], h, x.shape[2] // h)),
    ],
    alternatives=[
        lambda x, h: torch.stack(x.split(x.shape[-1] // h, dim=-1), dim=1),
        lambda x, h: x.reshape(x.shape[0], x.shape[1], h, -1).permute(0, 2, 1, 3),
        lambda x, h: torch.stack([x[..., i * (x.shape[-1] // h):(i + 1) * (x.shape[-1] // h)]
                                  for i in range(h)], dim=1),
    ],
    output_names=("heads",),
    properties=[same_numbers_rearranged("heads")],
    # Numbered entries: the counterexample shows where each feature went.
    small_inputs=lambda gen: [(torch.arange(float(b * n * d)).view(b, n, d), h)
                              for b, n, d, h in ((1, 1, 4, 2), (1, 2, 4, 2), (1, 3, 6, 3), (2, 3, 4, 2))],
)


def check_split_heads(fn):
    """Check a learner's `split_heads(x, h)`; prints a verdict, never raises."""
    return SPLIT_HEADS.check(fn)


# --- merge_heads -------------------------------------------------------------------------

def merge_heads_reference(x):
    """(batch, h, n, d_k) -> (batch, n, h·d_k): the heads side by side again."""
    batch, h, n, d_k = x.shape
    return x.transpose(1, 2).reshape(batch, n, h * d_k)


def _merge_inputs(gen, sizes=None):
    batch, n, h, d_k = sizes or _sizes(gen)
    return (torch.randn(batch, h, n, d_k, generator=gen),)


def _merge_probes(gen):
    """batch 3 ≠ h 2 ≠ n 5 ≠ d_k 4 (the trials have batch = 2, and h may be 2 too), then one head:
    with h = 1, .view after transpose(1, 2) runs, and is matched by its numbers rather than by
    the view error that other slips (a view after transpose(2, 3)) raise alike."""
    return [_merge_inputs(gen, sizes=(3, 5, 2, 4)), _merge_inputs(gen, sizes=(3, 5, 1, 4))]


MERGE_HEADS = Exercise(
    name="merge_heads",
    reference=merge_heads_reference,
    make_inputs=_merge_inputs,
    mistakes=[
        Mistake("you reshaped without moving the heads axis back: transpose(1, 2) to "
                "(batch, n, h, d_k) first, so each position's heads sit side by side",
                lambda x: x.reshape(x.shape[0], x.shape[2], x.shape[1] * x.shape[3])),
        Mistake("the heads' features came out interleaved (one feature of each head in "
                "turn); concatenate whole heads: head 0's d_k features, then head 1's, ...",
                lambda x: x.permute(0, 2, 3, 1).reshape(x.shape[0], x.shape[2], x.shape[1] * x.shape[3])),
        Mistake("you swapped positions and features (transpose(2, 3)); the axis to move is "
                "the heads axis: transpose(1, 2)",
                lambda x: x.transpose(2, 3).reshape(x.shape[0], x.shape[2], x.shape[1] * x.shape[3])),
        Mistake("you moved the heads back but did not join them: (batch, n, h, d_k) still has a heads "
                "axis. Reshape the last two axes into one, (batch, n, h·d_k)",
                lambda x: x.transpose(1, 2)),
        # .view after transpose raises "view size is not compatible with input tensor's size and
        # stride" — except with one head (the probe), where it runs and is matched by its numbers.
        Mistake("after transpose(1, 2) the numbers are no longer laid out in memory position by "
                "position, so .view cannot regroup them; .reshape(batch, n, h·d_k) can (it copies when "
                "it must), or call .contiguous() before .view",
                lambda x: x.transpose(1, 2).view(x.shape[0], x.shape[2], x.shape[1] * x.shape[3])),
    ],
    alternatives=[
        lambda x: torch.cat(x.unbind(dim=1), dim=-1),
        lambda x: x.permute(0, 2, 1, 3).flatten(2),
        lambda x: torch.einsum("bhnk->bnhk", x).reshape(x.shape[0], x.shape[2], -1),
    ],
    output_names=("merged",),
    probes=_merge_probes,
    properties=[same_numbers_rearranged("merged heads")],
    small_inputs=lambda gen: [(torch.arange(float(b * h * n * d)).view(b, h, n, d),)
                              for b, h, n, d in ((1, 2, 1, 2), (1, 2, 2, 2), (1, 3, 2, 2), (2, 2, 3, 2))],
)


def check_merge_heads(fn):
    """Check a learner's `merge_heads(x)`; prints a verdict, never raises."""
    return MERGE_HEADS.check(fn)


# --- the multi-head module ----------------------------------------------------------------

class MultiHeadAttentionReference(MultiHeadAttention):
    """The library's module with the exercise's signature: (d_model, h), forward(x)."""

    def __init__(self, d_model, h):
        super().__init__(d_model, h)


def _random_state(module, gen):
    """Random weights for every tensor of module's state_dict (fan-in scaled)."""
    state = {}
    for name, t in module.state_dict().items():
        scale = t.shape[-1] ** -0.5 if t.dim() == 2 else 0.3
        state[name] = torch.randn(t.shape, generator=gen) * scale
    return state


def load_weights(module, state):
    """Copy `state` into the learner's module, with a clear message when names differ."""
    if not isinstance(module, nn.Module):
        raise TypeError(f"expected an nn.Module instance, got {type(module).__name__}; "
                        "did you forget `super().__init__()` or return something odd?")
    theirs = set(module.state_dict())
    ours = set(state)
    if theirs != ours:
        missing, extra = sorted(ours - theirs), sorted(theirs - ours)
        raise ValueError(f"the check copies its weights into your module by name; missing: "
                         f"{missing or 'none'}, unexpected: {extra or 'none'}")
    module.load_state_dict(state)
    module.eval()
    return module


def _run_mha(cls, args):
    x, h, state = args
    module = load_weights(cls(x.shape[-1], h), state)
    return module(x)


def _mha_inputs(gen):
    batch, n, h, d_k = _sizes(gen)
    d_model = h * d_k
    state = _random_state(MultiHeadAttentionReference(d_model, h), gen)
    return torch.randn(batch, n, d_model, generator=gen) * 1.5, h, state


def _variant(scale="d_k", project_out=True, softmax_dim=-1, split="ok", merge="ok"):
    """A (possibly wrong) multi-head attention class, for the planted mistakes."""

    class Variant(MultiHeadAttentionReference):
        def forward(self, x):
            b, n, d = x.shape
            h, d_k = self.h, self.d_k

            def heads(t):
                if split == "no_transpose":
                    return t.reshape(b, h, n, d_k)
                return t.view(b, n, h, d_k).transpose(1, 2)

            q, k, v = heads(self.w_q(x)), heads(self.w_k(x)), heads(self.w_v(x))
            scores = q @ k.transpose(-2, -1)
            if scale == "d_k":
                scores = scores / math.sqrt(d_k)
            elif scale == "d_model":
                scores = scores / math.sqrt(d)
            out = torch.softmax(scores, dim=softmax_dim) @ v  # (b, h, n, d_k)
            if merge == "no_transpose":
                out = out.reshape(b, n, d)
            else:
                out = out.transpose(1, 2).reshape(b, n, d)
            return self.w_o(out) if project_out else out

    return Variant


class _LoopMHA(MultiHeadAttentionReference):
    """A valid alternative: one head at a time, slicing the big projection matrices."""

    def forward(self, x):
        q, k, v = self.w_q(x), self.w_k(x), self.w_v(x)
        outs = []
        for i in range(self.h):
            s = slice(i * self.d_k, (i + 1) * self.d_k)
            a = torch.softmax(q[..., s] @ k[..., s].transpose(-2, -1) / math.sqrt(self.d_k), dim=-1)
            outs.append(a @ v[..., s])
        return self.w_o(torch.cat(outs, dim=-1))


class _EinsumMHA(MultiHeadAttentionReference):
    """A valid alternative written with einsum."""

    def forward(self, x):
        b, n, d = x.shape
        q, k, v = (w(x).view(b, n, self.h, self.d_k) for w in (self.w_q, self.w_k, self.w_v))
        scores = torch.einsum("bqhk,bshk->bhqs", q, k) / self.d_k ** 0.5
        out = torch.einsum("bhqs,bshk->bqhk", scores.softmax(-1), v)
        return self.w_o(out.reshape(b, n, d))


MULTI_HEAD_ATTENTION = Exercise(
    name="multi_head_attention",
    reference=MultiHeadAttentionReference,
    make_inputs=_mha_inputs,
    run=_run_mha,
    mistakes=[
        Mistake("each head's scores must be divided by √d_k = √(d_model / h), not by √d_model: "
                "a head only sees d_k features",
                _variant(scale="d_model")),
        Mistake("you forgot to scale the scores: divide q kᵀ by √d_k before the softmax",
                _variant(scale=None)),
        Mistake("the concatenated heads still go through the output projection: return "
                "self.w_o(merged)",
                _variant(project_out=False)),
        Mistake("softmax over the wrong axis: each query's weights over the keys must sum to 1, "
                "so softmax over the last axis (dim=-1)",
                _variant(softmax_dim=-2)),
        Mistake("the heads are split wrongly: view each projection as (batch, n, h, d_k), then "
                "transpose(1, 2) — reshaping straight to (batch, h, n, d_k) mixes positions",
                _variant(split="no_transpose")),
        Mistake("the heads are merged wrongly: transpose(1, 2) back to (batch, n, h, d_k) before "
                "reshaping to (batch, n, d_model)",
                _variant(merge="no_transpose")),
    ],
    alternatives=[_LoopMHA, _EinsumMHA],
    output_names=("out",),
    input_names=("x", "h", "state"),
    properties=[permutation_equivariant(
        1, "your outputs are not permutation-equivariant: with the positions of x rotated by one, "
           "each position's output should be its old output, moved along with it (attention "
           "without positional encodings sees a set), and yours changed")],
)


def check_multi_head_attention(cls):
    """Check a learner's multi-head attention class (d_model, h) -> forward(x).

    The check builds the module, copies the reference weights into w_q, w_k, w_v, w_o
    and compares outputs on random inputs. Prints a verdict, never raises.
    """
    return MULTI_HEAD_ATTENTION.check(cls)
