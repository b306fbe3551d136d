"""Lesson 07 — cross-attention and the decoder block.

Length: two exercises with their planted wrong answers, the properties of a right answer and
the small inputs the counterexample search tries (issue 44).

`cross_attention(x, memory, w_q, w_k, w_v, src_mask)`: one head of attention whose
queries come from the decoder and whose keys and values come from the encoder output.

`MyDecoderLayer`: the post-norm decoder block — masked self-attention, cross-attention,
feed-forward, each followed by Add & Norm.
"""
import math

import torch
from torch import nn

from ..nn.layers import DecoderLayer, FeedForward, LayerNorm, MultiHeadAttention
from .feedback import Property, first_difference, permutation_equivariant, unchanged_when
from .framework import Exercise, Mistake

__all__ = ["check_cross_attention", "check_decoder_layer"]


# --------------------------------------------------------------------------- cross-attention


def _attend(q, k, v, scores_mask=None, scale=None, after=None, dim=-1, fill=float("-inf")):
    scale = math.sqrt(q.shape[-1]) if scale is None else scale
    scores = q @ k.transpose(-2, -1) / scale  # (batch, n_tgt, n_src)
    if scores_mask is not None:
        scores = scores.masked_fill(~scores_mask, fill)
    weights = torch.softmax(scores, dim=dim)
    if after is not None:
        weights = after(weights)
    return weights @ v


def cross_attention_reference(x, memory, w_q, w_k, w_v, src_mask):
    """x: (batch, n_tgt, d_model) decoder states; memory: (batch, n_src, d_model) encoder
    output; w_q, w_k: (d_model, d_k); w_v: (d_model, d_v); src_mask: (batch, n_src) bool,
    True = real source token. Returns out (batch, n_tgt, d_v).
    """
    q = x @ w_q  # queries from the decoder      (batch, n_tgt, d_k)
    k = memory @ w_k  # keys from the encoder    (batch, n_src, d_k)
    v = memory @ w_v  # values from the encoder  (batch, n_src, d_v)
    return _attend(q, k, v, src_mask[:, None, :])


def _cross_inputs(gen, sizes=(3, 4, 6, 8, 4, 5)):
    batch, n_tgt, n_src, d_model, d_k, d_v = sizes
    x = torch.randn(batch, n_tgt, d_model, generator=gen)
    memory = torch.randn(batch, n_src, d_model, generator=gen)
    w_q = torch.randn(d_model, d_k, generator=gen) / math.sqrt(d_model) * 2
    w_k = torch.randn(d_model, d_k, generator=gen) / math.sqrt(d_model) * 2
    w_v = torch.randn(d_model, d_v, generator=gen) / math.sqrt(d_model)
    # Every source row has some padding at its end (and at least two real tokens).
    lengths = torch.randint(2, n_src, (batch,), generator=gen)
    src_mask = torch.arange(n_src)[None, :] < lengths[:, None]
    return x, memory, w_q, w_k, w_v, src_mask


def _padding_changed(args):
    """The same inputs with the encoder's padded positions filled with other numbers."""
    x, memory, w_q, w_k, w_v, src_mask = args
    memory = torch.where(src_mask[..., None], memory, memory + 3.0)
    return x, memory, w_q, w_k, w_v, src_mask


def _cross_probes(gen):
    """n_tgt = n_src (batch 2, d_k 3, d_v 4 all different): where keys from x, the mask on the
    wrong axis or the values from x crash on the trials, they run here and are matched by their
    numbers — code that crashes alike for another reason (the scores taken as k qᵀ with the right
    projections) does not get their hints."""
    return [_cross_inputs(gen, sizes=(2, 5, 5, 8, 3, 4))]


def _qkv(x, memory, w_q, w_k, w_v):
    return x @ w_q, memory @ w_k, memory @ w_v


def _cross_small(gen):
    """One target position over two source tokens, d_model = d_k = d_v = 2; then padding; then more."""
    eye = torch.eye(2)
    yield torch.tensor([[[1.0, 0.0]]]), eye[None], eye, eye, eye, torch.tensor([[True, True]])
    yield torch.tensor([[[1.0, 0.0]]]), eye[None], eye, eye, eye, torch.tensor([[True, False]])
    yield (torch.tensor([[[1.0, 0.0], [0.0, 2.0]]]), torch.tensor([[[1.0, 1.0], [0.0, 1.0], [2.0, 0.0]]]),
           eye, eye, eye, torch.tensor([[True, True, False]]))
    yield (torch.randn(1, 2, 3, generator=gen), torch.randn(1, 3, 3, generator=gen), torch.randn(3, 2, generator=gen),
           torch.randn(3, 2, generator=gen), torch.randn(3, 3, generator=gen), torch.tensor([[True, True, False]]))


def _swapped_reference(x, memory, w_q, w_k, w_v, src_mask):
    """The reference with the two sequences' roles swapped: queries from the encoder, keys
    and values from the decoder (which has no padding, so nothing is masked)."""
    return cross_attention_reference(memory, x, w_q, w_k, w_v, torch.ones(x.shape[:2], dtype=torch.bool))


SWAPPED_ROWS_HINT = ("queries and keys/values are swapped: your output has one row per *source* "
                     "token (n_src) instead of one per target token (n_tgt). The queries come from "
                     "the decoder, q = x @ w_q; the keys and values from the encoder, "
                     "k = memory @ w_k, v = memory @ w_v")


QUERIES_FROM_MEMORY_HINT = ("your queries come from memory and your keys from x (q = memory @ w_q, "
                            "k = x @ w_k), and the scores were taken as k qᵀ so that src_mask fits: "
                            "each sequence went through the other one's projection. The decoder asks, "
                            "the encoder answers: q = x @ w_q, then k = memory @ w_k and "
                            "v = memory @ w_v, and the scores q kᵀ are (n_tgt × n_src)")
MASK_DOES_NOT_FIT_HINT = ("src_mask[:, None, :] does not fit your scores: their last axis must run "
                          "over the source tokens (n_src), so the keys must come from the encoder. "
                          "Keys from x — queries and keys/values swapped, or keys and values from x "
                          "as in self-attention — put the target positions there. The decoder asks, "
                          "the encoder answers: q = x @ w_q, k = memory @ w_k, v = memory @ w_v")


CROSS_ATTENTION = Exercise(
    name="cross_attention",
    reference=cross_attention_reference,
    make_inputs=_cross_inputs,
    output_names=("out",),
    mistakes=[
        Mistake("the scores are not divided by √d_k (d_k = w_q.shape[1]); without it they grow "
                "with d_k and the softmax saturates",
                lambda x, m, wq, wk, wv, mask: _attend(*_qkv(x, m, wq, wk, wv), mask[:, None, :], scale=1.0)),
        Mistake("you divided by √d_model; the scale is √d_k, the size of one query (w_q.shape[1])",
                lambda x, m, wq, wk, wv, mask: _attend(*_qkv(x, m, wq, wk, wv), mask[:, None, :],
                                                       scale=math.sqrt(x.shape[-1]))),
        Mistake("padded source positions get attention: set their scores to -inf before the softmax, "
                "e.g. scores.masked_fill(~src_mask[:, None, :], float('-inf'))",
                lambda x, m, wq, wk, wv, mask: _attend(*_qkv(x, m, wq, wk, wv))),
        Mistake("the mask is inverted: src_mask is True for *real* tokens, so fill where it is False "
                "(~src_mask) with -inf",
                lambda x, m, wq, wk, wv, mask: _attend(*_qkv(x, m, wq, wk, wv), ~mask[:, None, :])),
        Mistake("the mask was applied after the softmax, so the weights no longer sum to 1; mask the "
                "scores (with -inf) before the softmax",
                lambda x, m, wq, wk, wv, mask: _attend(*_qkv(x, m, wq, wk, wv),
                                                       after=lambda w: w * mask[:, None, :])),
        # Keys from x crash on src_mask alike, whether the queries come from memory (swapped) or
        # from x too (self-attention): one hint names both. On the square probe they run.
        Mistake(MASK_DOES_NOT_FIT_HINT,
                lambda x, m, wq, wk, wv, mask: _attend(*_qkv(m, x, wq, wk, wv), mask[:, None, :])),
        Mistake(MASK_DOES_NOT_FIT_HINT,
                lambda x, m, wq, wk, wv, mask: _attend(*_qkv(x, x, wq, wk, wv), mask[:, None, :])),
        # The same swap without the crash: the mask dropped, or moved onto the (now source) query axis.
        Mistake(SWAPPED_ROWS_HINT, _swapped_reference),
        Mistake(SWAPPED_ROWS_HINT,
                lambda x, m, wq, wk, wv, mask: _attend(*_qkv(m, x, wq, wk, wv), mask[:, :, None])),
        Mistake("`out` contains NaN in every row — what a softmax over the wrong axis gives here: "
                "over dim=-2 (the target positions) a padded source column is all -inf, and its "
                "softmax is 0/0 = NaN. Each target position's weights over the *source* tokens, "
                "the last axis, must sum to 1: `torch.softmax(scores, dim=-1)`",
                lambda x, m, wq, wk, wv, mask: _attend(*_qkv(x, m, wq, wk, wv), mask[:, None, :], dim=-2)),
        Mistake("you divided by √d_v (w_v.shape[1]); the scale is √d_k, the size of the queries and "
                "keys that are multiplied (w_q.shape[1])",
                lambda x, m, wq, wk, wv, mask: _attend(*_qkv(x, m, wq, wk, wv), mask[:, None, :],
                                                       scale=math.sqrt(wv.shape[1]))),
        Mistake("padded source scores were set to 0, which still gets weight e^0 after the softmax; "
                "fill them with float('-inf') so their weight is exactly 0",
                lambda x, m, wq, wk, wv, mask: _attend(*_qkv(x, m, wq, wk, wv), mask[:, None, :], fill=0.0)),
        # q from memory, k from x, the scores taken as k qᵀ so that src_mask fits: with v from
        # memory the output has the target's shape; with v from x the last product crashes.
        Mistake(QUERIES_FROM_MEMORY_HINT,
                lambda x, m, wq, wk, wv, mask: _attend(x @ wk, m @ wq, m @ wv, mask[:, None, :])),
        Mistake(QUERIES_FROM_MEMORY_HINT,
                lambda x, m, wq, wk, wv, mask: _attend(x @ wk, m @ wq, x @ wv, mask[:, None, :])),
        Mistake("your keys and values come from x, the decoder's own states: that is self-attention, "
                "and the source is never read. In cross-attention only the queries come from the "
                "decoder (q = x @ w_q); keys and values come from the encoder: k = memory @ w_k, "
                "v = memory @ w_v",
                lambda x, m, wq, wk, wv, mask: _attend(*_qkv(x, x, wq, wk, wv))),
        Mistake("src_mask[:, :, None] is (batch, n_src, 1): it lines the source axis up with the "
                "scores' *target* axis. The scores are (batch, n_tgt, n_src), source last, so the new "
                "axis goes in the middle: (batch, 1, n_src), one row of the mask for every target "
                "position",
                lambda x, m, wq, wk, wv, mask: _attend(*_qkv(x, m, wq, wk, wv), mask[:, :, None])),
        Mistake("you applied a causal (triangular) mask: cross-attention needs none — the whole source "
                "sentence is known before decoding starts; only padding is masked",
                lambda x, m, wq, wk, wv, mask: _attend(
                    *_qkv(x, m, wq, wk, wv),
                    mask[:, None, :] & torch.ones(x.shape[1], m.shape[1], dtype=torch.bool).tril())),
    ],
    alternatives=[
        # einsum, with the mask as an additive bias
        lambda x, m, wq, wk, wv, mask: (lambda w: torch.einsum("bts,bsv->btv", w, m @ wv))(
            torch.softmax(torch.einsum("btk,bsk->bts", x @ wq, m @ wk) / wq.shape[1] ** 0.5
                          + torch.where(mask[:, None, :], 0.0, float("-inf")), dim=-1)),
        # the course's own attention function
        lambda x, m, wq, wk, wv, mask: __import__("course_lib.nn.attention", fromlist=["x"])
        .scaled_dot_product_attention(x @ wq, m @ wk, m @ wv, mask[:, None, :])[0],
    ],
    properties=[
        unchanged_when(_padding_changed, "your output changes when the encoder's *padded* positions "
                                         "change (memory where src_mask is False): padding must take "
                                         "no part in the softmax"),
        permutation_equivariant(1, "your outputs are not permutation-equivariant in the target "
                                   "positions: with the rows of x rotated by one, each target "
                                   "position's output should move along with its row of x and stay "
                                   "the same — each query reads the source on its own — and yours "
                                   "changed"),
    ],
    probes=_cross_probes,
    small_inputs=_cross_small,
)


def check_cross_attention(fn):
    """Check a learner's `cross_attention(x, memory, w_q, w_k, w_v, src_mask)`; never raises."""
    return CROSS_ATTENTION.check(fn)


# --------------------------------------------------------------------------- decoder block


class _Block(nn.Module):
    """The constructor the lesson gives the learner: the same parts as DecoderLayer."""

    def __init__(self, d_model, h, d_ff):
        super().__init__()
        self.self_attn = MultiHeadAttention(d_model, h)
        self.cross_attn = MultiHeadAttention(d_model, h)
        self.ffn = FeedForward(d_model, d_ff)
        self.norm1 = LayerNorm(d_model)
        self.norm2 = LayerNorm(d_model)
        self.norm3 = LayerNorm(d_model)


class DecoderLayerReference(_Block):
    """Post-norm: x = LN(x + Sublayer(x)) three times."""

    def forward(self, x, memory, self_mask, cross_mask):
        x = self.norm1(x + self.self_attn(x, mask=self_mask))
        x = self.norm2(x + self.cross_attn(x, memory, mask=cross_mask))
        return self.norm3(x + self.ffn(x))


def _block(forward):
    return type("WrongDecoderLayer", (_Block,), {"forward": forward})


def _pre_norm(self, x, memory, self_mask, cross_mask):
    x = x + self.self_attn(self.norm1(x), mask=self_mask)
    x = x + self.cross_attn(self.norm2(x), memory, mask=cross_mask)
    return x + self.ffn(self.norm3(x))


def _no_causal(self, x, memory, self_mask, cross_mask):
    x = self.norm1(x + self.self_attn(x))
    x = self.norm2(x + self.cross_attn(x, memory, mask=cross_mask))
    return self.norm3(x + self.ffn(x))


def _no_memory(self, x, memory, self_mask, cross_mask):
    x = self.norm1(x + self.self_attn(x, mask=self_mask))
    x = self.norm2(x + self.cross_attn(x, x))
    return self.norm3(x + self.ffn(x))


def _no_cross_mask(self, x, memory, self_mask, cross_mask):
    x = self.norm1(x + self.self_attn(x, mask=self_mask))
    x = self.norm2(x + self.cross_attn(x, memory))
    return self.norm3(x + self.ffn(x))


def _no_cross_residual(self, x, memory, self_mask, cross_mask):
    x = self.norm1(x + self.self_attn(x, mask=self_mask))
    x = self.norm2(self.cross_attn(x, memory, mask=cross_mask))
    return self.norm3(x + self.ffn(x))


def _swapped_cross(self, x, memory, self_mask, cross_mask):
    x = self.norm1(x + self.self_attn(x, mask=self_mask))
    x = self.norm2(x + self.cross_attn(memory, x, mask=cross_mask))
    return self.norm3(x + self.ffn(x))


def _swapped_cross_unmasked(self, x, memory, self_mask, cross_mask):
    x = self.norm1(x + self.self_attn(x, mask=self_mask))
    x = self.norm2(x + self.cross_attn(memory, x))
    return self.norm3(x + self.ffn(x))


def _cross_reads_x(self, x, memory, self_mask, cross_mask):
    h1 = self.norm1(x + self.self_attn(x, mask=self_mask))
    h2 = self.norm2(h1 + self.cross_attn(x, memory, mask=cross_mask))   # queries from x, not h1
    return self.norm3(h2 + self.ffn(h2))


def _second_sublayer_from_x(self, x, memory, self_mask, cross_mask):
    h1 = self.norm1(x + self.self_attn(x, mask=self_mask))               # computed, never used
    h2 = self.norm2(x + self.cross_attn(x, memory, mask=cross_mask))
    return self.norm3(h2 + self.ffn(h2))


def _no_cross_attention(self, x, memory, self_mask, cross_mask):
    h1 = self.norm1(x + self.self_attn(x, mask=self_mask))
    return self.norm3(h1 + self.ffn(h1))


def _no_cross_attention_norm2(self, x, memory, self_mask, cross_mask):
    h1 = self.norm1(x + self.self_attn(x, mask=self_mask))
    return self.norm2(h1 + self.ffn(h1))


def _cross_first(self, x, memory, self_mask, cross_mask):
    x = self.norm1(x + self.cross_attn(x, memory, mask=cross_mask))
    x = self.norm2(x + self.self_attn(x, mask=self_mask))
    return self.norm3(x + self.ffn(x))


def _one_norm(self, x, memory, self_mask, cross_mask):
    x = self.norm1(x + self.self_attn(x, mask=self_mask))
    x = self.norm1(x + self.cross_attn(x, memory, mask=cross_mask))
    return self.norm1(x + self.ffn(x))


def _via_library(self, x, memory, self_mask, cross_mask):
    # DecoderLayer.forward on the same parts (its dropout is 0: an identity)
    self.dropout, self.norm_first = nn.Identity(), False
    return DecoderLayer.forward(self, x, memory, self_mask, cross_mask)


def _with_sublayer(self, x, memory, self_mask, cross_mask):
    def add_norm(norm, x, out):
        return norm(x + out)
    x = add_norm(self.norm1, x, self.self_attn(x, x, mask=self_mask))
    x = add_norm(self.norm2, x, self.cross_attn(x_q=x, x_kv=memory, mask=cross_mask))
    return add_norm(self.norm3, x, self.ffn(x))


SIZES = dict(d_model=8, h=2, d_ff=16)

# Swapped, the call crashes (the scores are (n_src, n_tgt): cross_mask, or the residual
# x + …, no longer fits) — except on the probe with n_tgt = n_src, where it runs and is matched.
SWAPPED_HINT = ("queries and keys/values are swapped: MultiHeadAttention is called as "
                "attn(x_q, x_kv, mask=...), and in CrossAttn(h₁, H_enc) the queries come from the "
                "decoder (h₁), keys and values from the encoder's output H_enc, `memory`")
NO_CROSS_HINT = ("your block has no cross-attention: the decoder never reads `memory` (H_enc), the "
                 "encoded source, so it could not translate anything. The block has three sublayers; "
                 "the second, h₂ = LN₂(h₁ + CrossAttn(h₁, H_enc)), is the only one that looks at the "
                 "source")


def _describe_decoder_inputs(args):
    _, x, memory, self_mask, cross_mask = args
    return (f"x {tuple(x.shape)} (batch, n_tgt, d_model), memory {tuple(memory.shape)} "
            f"(batch, n_src, d_model), self_mask {tuple(self_mask.shape)}, cross_mask "
            f"{tuple(cross_mask.shape)}; d_model = {SIZES['d_model']}, h = {SIZES['h']}")


def _decoder_inputs(gen, batch=2, n_tgt=4, n_src=5):
    ref = DecoderLayerReference(**SIZES)
    state = {}
    for name, p in ref.state_dict().items():
        if name.startswith("norm") and name.endswith("weight"):
            state[name] = 1 + 0.3 * torch.randn(p.shape, generator=gen)  # γ ≠ 1 so each norm is distinct
        else:
            state[name] = 0.5 * torch.randn(p.shape, generator=gen)
    x = torch.randn(batch, n_tgt, SIZES["d_model"], generator=gen)
    memory = torch.randn(batch, n_src, SIZES["d_model"], generator=gen)
    self_mask = torch.ones(n_tgt, n_tgt, dtype=torch.bool).tril()  # causal
    lengths = [n_src] + [3 + i % 2 for i in range(batch - 1)]         # the others padded after 3 or 4
    cross_mask = (torch.arange(n_src)[None, :] < torch.tensor(lengths)[:, None])[:, None, None, :]
    return state, x, memory, self_mask, cross_mask


def _decoder_probes(gen):
    """n_tgt = n_src, and batch 3 ≠ h 2 (the trials have batch = h = 2): with the sequences as long
    as each other, a swapped cross-attention runs and is matched by its numbers, not by the
    broadcasting error that a wrong residual (`+ memory`) raises alike."""
    return [_decoder_inputs(gen, batch=3, n_tgt=4, n_src=4)]


def _target_causal(args, out, again):
    """Changing the last target position's x leaves every earlier position's output as it was."""
    state, x, memory, self_mask, cross_mask = args
    x2 = x.clone()
    x2[:, -1] += 2.0
    diff = first_difference(again((state, x2, memory, self_mask, cross_mask))[:, :-1], out[:, :-1], 1e-5)
    if diff is None:
        return None
    return (f"your output at target position {diff[0][1]} changes when only the last target token "
            f"changes: with the causal self_mask, position t sees target positions ≤ t only")


def _decoder_padding_changed(args):
    state, x, memory, self_mask, cross_mask = args
    memory = torch.where(cross_mask[:, 0, 0, :, None], memory, memory + 3.0)
    return state, x, memory, self_mask, cross_mask


def _run_block(cls, args):
    state, x, memory, self_mask, cross_mask = args
    layer = cls(**SIZES)
    layer.load_state_dict(state)
    layer.eval()
    return layer(x, memory, self_mask, cross_mask)


DECODER_LAYER = Exercise(
    name="decoder_layer",
    reference=DecoderLayerReference,
    make_inputs=_decoder_inputs,
    run=_run_block,
    probes=_decoder_probes,
    describe=_describe_decoder_inputs,
    mistakes=[
        Mistake("that is the pre-norm arrangement x + Sublayer(LN(x)); this block is the 2017 post-norm "
                "one: x = LN(x + Sublayer(x))", _block(_pre_norm)),
        Mistake("the self-attention must be masked: pass mask=self_mask so position t cannot look at "
                "later target tokens", _block(_no_causal)),
        Mistake("your cross-attention takes its keys and values from the decoder itself: that is "
                "a second self-attention. In CrossAttn(h₁, H_enc) keys and values come from the "
                "encoder's output H_enc, `memory`", _block(_no_memory)),
        Mistake("your cross-attention reads the block input x: its queries must come from h₁ = "
                "LN₁(x + MaskedSelfAttn(x)), the output of the first sublayer — "
                "h₂ = LN₂(h₁ + CrossAttn(h₁, H_enc)). Reading x, the cross-attention does not know "
                "what the self-attention found", _block(_cross_reads_x)),
        Mistake("your second sublayer starts again from the block input x — both its residual and "
                "its cross-attention queries — so h₁, the self-attention's result, is computed and "
                "thrown away. h₂ = LN₂(h₁ + CrossAttn(h₁, H_enc)) builds on h₁",
                _block(_second_sublayer_from_x)),
        Mistake(NO_CROSS_HINT, _block(_no_cross_attention)),
        Mistake(NO_CROSS_HINT, _block(_no_cross_attention_norm2)),
        Mistake(SWAPPED_HINT, _block(_swapped_cross)),
        Mistake(SWAPPED_HINT, _block(_swapped_cross_unmasked)),
        Mistake("pass mask=cross_mask to the cross-attention so padded source positions are ignored",
                _block(_no_cross_mask)),
        Mistake("the cross-attention sublayer lost its residual connection: h₂ = LN₂(CrossAttn(h₁, H_enc)) "
                "forgets h₁; the formula adds it back, LN₂(h₁ + CrossAttn(h₁, H_enc))",
                _block(_no_cross_residual)),
        Mistake("the order is masked self-attention first, then cross-attention, then the feed-forward",
                _block(_cross_first)),
        Mistake("each sublayer has its own LayerNorm: norm1, norm2, norm3 (they have different γ, β)",
                _block(_one_norm)),
    ],
    alternatives=[_block(_via_library), _block(_with_sublayer)],
    properties=[Property(_target_causal),
                unchanged_when(_decoder_padding_changed,
                               "your output changes when the encoder's *padded* positions change "
                               "(memory where cross_mask is False): the cross-attention must not read "
                               "padding")],
)


def check_decoder_layer(cls):
    """Check a learner's decoder block class (constructor (d_model, h, d_ff), forward(x,
    memory, self_mask, cross_mask)); never raises."""
    return DECODER_LAYER.check(cls)
