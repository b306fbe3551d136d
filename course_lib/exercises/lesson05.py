"""Lesson 05 — the transformer block: LayerNorm, the feed-forward network, the encoder block.

- `layer_norm(x, gamma, beta, eps)`: z-score each position's feature vector, then γ, β.
- `FeedForward(d_model, d_ff)`: ReLU(x W₁ + b₁) W₂ + b₂ with layers named w_1, w_2.
- `EncoderBlock(d_model, h, d_ff)`: the 2017 post-norm block,
  x = LN₁(x + MHA(x)); x = LN₂(x + FFN(x)), with parts named self_attn, ffn, norm1, norm2.

The class exercises are checked by copying reference weights into the learner's module
(by parameter name) and comparing outputs.
"""
import torch
import torch.nn.functional as F

from ..nn.layers import EncoderLayer, FeedForward
from .feedback import Property, fmt, permutation_equivariant
from .framework import Exercise, Mistake
from .lesson04 import _random_state, load_weights

__all__ = ["check_layer_norm", "check_feed_forward", "check_encoder_block"]


# --- layer_norm -----------------------------------------------------------------------------

def layer_norm_reference(x, gamma, beta, eps):
    """x: (..., d); gamma, beta: (d,). (x - mean) / √(var + eps) · γ + β over the last axis,
    var the biased variance (divide by d), as nn.LayerNorm does."""
    mean = x.mean(dim=-1, keepdim=True)
    var = x.var(dim=-1, keepdim=True, unbiased=False)
    return (x - mean) / torch.sqrt(var + eps) * gamma + beta


def _ln_inputs(gen):
    batch, n, d = 2, 4, 6
    # Rows at very different scales: some with a variance near eps, where eps matters.
    scale = torch.tensor([3.0, 1.0, 0.1, 0.05])[None, :, None]
    x = torch.randn(batch, n, d, generator=gen) * scale + torch.randn(batch, n, 1, generator=gen)
    gamma = 1 + 0.5 * torch.randn(d, generator=gen)
    beta = 0.5 * torch.randn(d, generator=gen)
    return x, gamma, beta, 0.01


def _standardized_before_gamma_beta(args, out, again):
    """With γ = 1 and β = 0 every row has mean 0 and variance σ²/(σ² + ε) (≈ 1)."""
    x, gamma, beta, eps = args
    z = again((x, torch.ones_like(gamma), torch.zeros_like(beta), eps)).double()
    var_x = x.double().var(-1, unbiased=False)
    mean, var = z.mean(-1), z.var(-1, unbiased=False)
    bad = mean.abs() > 1e-4
    if bad.any():
        i = tuple(int(t) for t in bad.nonzero()[0])
        return (f"with γ = 1 and β = 0 your rows do not have mean 0: row {i} has mean "
                f"{fmt(mean[i].item())} — before γ and β, LayerNorm leaves each row with mean 0")
    want = var_x / (var_x + eps)
    bad = (var - want).abs() > 1e-3 * (1 + want)
    if bad.any():
        i = tuple(int(t) for t in bad.nonzero()[0])
        return (f"with γ = 1 and β = 0 your rows do not have variance 1: row {i} has variance "
                f"{fmt(var[i].item())}, and should have σ²/(σ² + ε) = {fmt(want[i].item())} — before γ "
                f"and β, LayerNorm scales each row to variance 1 (a little less, by ε)")
    return None


def _normalize(x, dims, unbiased=False):
    mean = x.mean(dim=dims, keepdim=True)
    var = x.var(dim=dims, keepdim=True, unbiased=unbiased)
    return x - mean, var


# Two slips of the lecture notes, copied literally. The notes write σ for the standard
# deviation and then divide by √σ + ε (a fourth root of the variance), and write the
# mean as μ = Σ_j x_j without the 1/d.
def _notes_sqrt_sigma(x, g, b, eps):
    c, var = _normalize(x, -1)
    return c / (var.sqrt().sqrt() + eps) * g + b


def _notes_sum_mean(x, g, b, eps):
    c = x - x.sum(dim=-1, keepdim=True)                  # μ = Σ x_j: d times the mean
    return c / torch.sqrt((c ** 2).mean(dim=-1, keepdim=True) + eps) * g + b


def _notes_both(x, g, b, eps):
    c = x - x.sum(dim=-1, keepdim=True)
    return c / ((c ** 2).mean(dim=-1, keepdim=True).sqrt().sqrt() + eps) * g + b


EPS_AFTER_DIVISION_HINT = ("you added ε after the division, (x − μ) / σ + ε: that shifts every value "
                           "by ε and leaves the division unguarded. ε goes under the square root, in "
                           "the denominator: (x − μ) / √(σ² + ε)")
WHOLE_TENSOR_HINT = ("x.std() (or x.mean(), x.var()) without dim= gives one number for the whole "
                     "tensor — every position of every sequence mixed together. LayerNorm "
                     "normalizes each position on its own: statistics over the last axis, "
                     "x.mean(dim=-1, keepdim=True) and x.var(dim=-1, keepdim=True, unbiased=False), "
                     "with ε under the square root")
BETA_DIVIDED_HINT = ("β ended up inside the division, so it was divided by √(σ² + ε) too; β is "
                     "added last, after normalizing and scaling: (x − μ) / √(σ² + ε) · γ + β")


LAYER_NORM = Exercise(
    name="layer_norm",
    reference=layer_norm_reference,
    make_inputs=_ln_inputs,
    mistakes=[
        Mistake("you divided by √σ + ε with σ the standard deviation — a fourth root of the "
                "variance (some lecture notes write it this way). Divide by the standard "
                "deviation itself, with ε inside the root: (x − μ) / √(σ² + ε)", _notes_sqrt_sigma),
        Mistake("your mean is Σ_j x_j without the 1/d (some lecture notes write μ = Σ x_j): that "
                "is d times the mean, so the rows don't end up with mean 0. "
                "Use μ = (1/d) Σ_j x_j, i.e. x.mean(dim=-1, keepdim=True)", _notes_sum_mean),
        Mistake("two slips copied from some lecture notes: μ = Σ_j x_j needs the 1/d (use "
                "x.mean(-1)), and √σ + ε with σ the standard deviation takes a fourth root of the "
                "variance — divide by √(σ² + ε), σ² the variance", _notes_both),
        Mistake("ε belongs inside the square root: (x − μ) / √(σ² + ε), not (x − μ) / (σ + ε)",
                lambda x, g, b, eps: (lambda c, v: c / (v.sqrt() + eps) * g + b)(*_normalize(x, -1))),
        Mistake(EPS_AFTER_DIVISION_HINT,
                lambda x, g, b, eps: (lambda c, v: (c / v.sqrt() + eps) * g + b)(*_normalize(x, -1))),
        Mistake(EPS_AFTER_DIVISION_HINT,
                lambda x, g, b, eps: (lambda c, v: c / v.sqrt() * g + b + eps)(*_normalize(x, -1))),
        Mistake(BETA_DIVIDED_HINT,
                lambda x, g, b, eps: (lambda c, v: (c * g + b) / torch.sqrt(v + eps))(*_normalize(x, -1))),
        Mistake(BETA_DIVIDED_HINT,
                lambda x, g, b, eps: (lambda c, v: (c + b) / torch.sqrt(v + eps) * g)(*_normalize(x, -1))),
        Mistake("β was added before the scaling by γ, so γ scales it too: (z + β)·γ = z·γ + β·γ, "
                "with z = (x − μ) / √(σ² + ε) — each feature is shifted by β·γ instead of β. The "
                "shift comes last, after multiplying by γ",
                lambda x, g, b, eps: (lambda c, v: (c / torch.sqrt(v + eps) + b) * g)(*_normalize(x, -1))),
        Mistake("two slips at once, the form of a well-known tutorial, (x − μ) / (x.std() + ε): "
                "x.std() is the *unbiased* standard deviation (it divides by d − 1, LayerNorm by d), "
                "and ε is added to σ outside the square root instead of to σ² under it. Each "
                "changes the result, most on rows whose variance is near ε",
                lambda x, g, b, eps: (x - x.mean(-1, keepdim=True)) / (x.std(-1, keepdim=True) + eps) * g + b),
        Mistake(WHOLE_TENSOR_HINT,
                lambda x, g, b, eps: (x - x.mean(-1, keepdim=True)) / (x.std() + eps) * g + b),
        Mistake(WHOLE_TENSOR_HINT,
                lambda x, g, b, eps: (x - x.mean()) / (x.std() + eps) * g + b),
        Mistake(WHOLE_TENSOR_HINT,
                lambda x, g, b, eps: (x - x.mean()) / torch.sqrt(x.var(unbiased=False) + eps) * g + b),
        Mistake("you used the unbiased variance (divide by d − 1); LayerNorm divides by d: "
                "x.var(dim=-1, unbiased=False), or ((x - mean)**2).mean(-1)",
                lambda x, g, b, eps: (lambda c, v: c / torch.sqrt(v + eps) * g + b)(*_normalize(x, -1, True))),
        Mistake("you normalized over the batch axis (that is BatchNorm); LayerNorm normalizes "
                "each position's own feature vector: statistics over the last axis, dim=-1",
                lambda x, g, b, eps: (lambda c, v: c / torch.sqrt(v + eps) * g + b)(*_normalize(x, 0))),
        Mistake("you normalized over the positions axis (dim=1); LayerNorm's statistics are "
                "over the features of one position: the last axis, dim=-1",
                lambda x, g, b, eps: (lambda c, v: c / torch.sqrt(v + eps) * g + b)(*_normalize(x, 1))),
        Mistake("you forgot ε: divide by √(σ² + ε), which also keeps a constant row from "
                "dividing by zero",
                lambda x, g, b, eps: (lambda c, v: c / torch.sqrt(v) * g + b)(*_normalize(x, -1))),
        Mistake("you divided by the variance; divide by the standard deviation √(σ² + ε)",
                lambda x, g, b, eps: (lambda c, v: c / (v + eps) * g + b)(*_normalize(x, -1))),
        Mistake("γ and β are swapped: scale by γ (gamma), then shift by β (beta)",
                lambda x, g, b, eps: (lambda c, v: c / torch.sqrt(v + eps) * b + g)(*_normalize(x, -1))),
        Mistake("you stopped at the z-score: multiply by γ and add β at the end",
                lambda x, g, b, eps: (lambda c, v: c / torch.sqrt(v + eps))(*_normalize(x, -1))),
    ],
    alternatives=[
        lambda x, g, b, eps: F.layer_norm(x, x.shape[-1:], g, b, eps),
        lambda x, g, b, eps: (x - x.mean(-1, keepdim=True)) * g / torch.sqrt(
            x.var(-1, keepdim=True, unbiased=False) + eps) + b,   # γ before the division: the same
        lambda x, g, b, eps: ((x - x.mean(-1, keepdim=True))
                              * torch.rsqrt(((x - x.mean(-1, keepdim=True)) ** 2).mean(-1, keepdim=True) + eps)
                              * g + b),
    ],
    output_names=("normalized",),
    properties=[Property(_standardized_before_gamma_beta)],
    small_inputs=lambda gen: [
        (torch.tensor([[1.0, 3.0]]), torch.ones(2), torch.zeros(2), 0.01),
        (torch.tensor([[1.0, 3.0]]), torch.tensor([2.0, 1.0]), torch.tensor([0.5, 0.0]), 0.01),
        (torch.tensor([[1.0, 2.0, 6.0], [0.0, 4.0, 2.0]]), torch.tensor([2.0, 1.0, 0.5]),
         torch.tensor([0.5, 0.0, -1.0]), 0.01)],
)


def check_layer_norm(fn):
    """Check a learner's `layer_norm(x, gamma, beta, eps)`; prints a verdict, never raises."""
    return LAYER_NORM.check(fn)


# --- FeedForward ---------------------------------------------------------------------------

D_MODEL, D_FF, HEADS = 8, 20, 2


class FeedForwardReference(FeedForward):
    """The library's FFN with the exercise's signature (d_model, d_ff)."""

    def __init__(self, d_model, d_ff):
        super().__init__(d_model, d_ff)


def _ffn_inputs(gen):
    state = _random_state(FeedForwardReference(D_MODEL, D_FF), gen)
    return torch.randn(2, 5, D_MODEL, generator=gen), state


def _run_ffn(cls, args):
    x, state = args
    return load_weights(cls(D_MODEL, D_FF), state)(x)


def _ffn_variant(body):
    class Variant(FeedForwardReference):
        def forward(self, x):
            return body(self, x)
    return Variant


class _FunctionalFFN(FeedForwardReference):
    """A valid alternative: the same maps written with F.linear and clamp."""

    def forward(self, x):
        hidden = F.linear(x, self.w_1.weight, self.w_1.bias).clamp(min=0)
        return F.linear(hidden, self.w_2.weight, self.w_2.bias)


FEED_FORWARD = Exercise(
    name="feed_forward",
    reference=FeedForwardReference,
    make_inputs=_ffn_inputs,
    run=_run_ffn,
    mistakes=[
        Mistake("there is no nonlinearity: (x W₁ + b₁) W₂ + b₂ is just one linear map. "
                "Put a ReLU between the two layers",
                _ffn_variant(lambda m, x: m.w_2(m.w_1(x)))),
        Mistake("the ReLU goes between the two layers only; the output h W₂ + b₂ is not passed "
                "through a ReLU (it must be able to be negative)",
                _ffn_variant(lambda m, x: torch.relu(m.w_2(torch.relu(m.w_1(x)))))),
        Mistake("the residual connection belongs to the block (x + FFN(x) comes later); "
                "the FFN itself returns ReLU(x W₁ + b₁) W₂ + b₂",
                _ffn_variant(lambda m, x: x + m.w_2(torch.relu(m.w_1(x))))),
        Mistake("the ReLU is applied before W₁: it goes on the hidden layer, "
                "ReLU(x W₁ + b₁) W₂ + b₂",
                _ffn_variant(lambda m, x: m.w_2(m.w_1(torch.relu(x))))),
        Mistake("this FFN uses ReLU (as in the 2017 paper), not GELU",
                _ffn_variant(lambda m, x: m.w_2(F.gelu(m.w_1(x))))),
        Mistake("your ReLU is on the output, after W₂, and none sits between the layers: the "
                "nonlinearity belongs to the hidden layer (W₁'s output), and the output "
                "h W₂ + b₂ must be able to be negative",
                _ffn_variant(lambda m, x: torch.relu(m.w_2(m.w_1(x))))),
    ],
    alternatives=[_FunctionalFFN],
    output_names=("out",),
    properties=[permutation_equivariant(
        1, "your outputs are not permutation-equivariant: with the positions of x rotated by one, "
           "each position's output should be its old output, moved along with it "
           "(the FFN works on each position on its own), and yours "
           "changed")],
)


def check_feed_forward(cls):
    """Check a learner's FeedForward class (d_model, d_ff) with layers w_1, w_2."""
    return FEED_FORWARD.check(cls)


# --- the encoder block -------------------------------------------------------------------------

class EncoderBlockReference(EncoderLayer):
    """The library's post-norm EncoderLayer with the exercise's signature (d_model, h, d_ff)."""

    def __init__(self, d_model, h, d_ff):
        super().__init__(d_model, h, d_ff, norm_first=False)


def _block_inputs(gen):
    state = _random_state(EncoderBlockReference(D_MODEL, HEADS, D_FF), gen)
    for name in list(state):                     # γ near 1, β near 0, but not exactly
        if name.startswith("norm") and name.endswith("weight"):
            state[name] = 1 + state[name]
    return torch.randn(2, 5, D_MODEL, generator=gen), state


def _run_block(cls, args):
    x, state = args
    return load_weights(cls(D_MODEL, HEADS, D_FF), state)(x)


def _block_variant(body):
    class Variant(EncoderBlockReference):
        def forward(self, x):
            return body(self, x)
    return Variant


class _TwoLineBlock(EncoderBlockReference):
    """A valid alternative: a loop over (sublayer, norm) pairs."""

    def forward(self, x):
        for sublayer, norm in ((self.self_attn, self.norm1), (self.ffn, self.norm2)):
            x = norm(x + sublayer(x))
        return x


ENCODER_BLOCK = Exercise(
    name="encoder_block",
    reference=EncoderBlockReference,
    make_inputs=_block_inputs,
    run=_run_block,
    mistakes=[
        Mistake("that is the pre-norm block, x + Sublayer(LN(x)); this exercise asks for the "
                "2017 post-norm block: x = LN(x + Sublayer(x)) — add first, then normalize",
                _block_variant(lambda m, x: (lambda y: y + m.ffn(m.norm2(y)))(x + m.self_attn(m.norm1(x))))),
        Mistake("the FFN sublayer has no residual connection: x = norm2(x + ffn(x))",
                _block_variant(lambda m, x: m.norm2(m.ffn(m.norm1(x + m.self_attn(x)))))),
        Mistake("the attention sublayer has no residual connection: x = norm1(x + self_attn(x))",
                _block_variant(lambda m, x: (lambda y: m.norm2(y + m.ffn(y)))(m.norm1(m.self_attn(x))))),
        Mistake("you normalized the sublayer's output and then added x; Add & Norm adds first, "
                "then normalizes the sum: norm(x + sublayer(x))",
                _block_variant(lambda m, x: (lambda y: y + m.norm2(m.ffn(y)))(x + m.norm1(m.self_attn(x))))),
        Mistake("each sublayer has its own LayerNorm: norm1 after attention, norm2 after the FFN",
                _block_variant(lambda m, x: (lambda y: m.norm1(y + m.ffn(y)))(m.norm1(x + m.self_attn(x))))),
        Mistake("the two norms are swapped: norm1 belongs to the attention sublayer and norm2 to "
                "the FFN (each has its own γ and β), x = norm1(x + self_attn(x)), then "
                "x = norm2(x + ffn(x))",
                _block_variant(lambda m, x: (lambda y: m.norm1(y + m.ffn(y)))(m.norm2(x + m.self_attn(x))))),
        Mistake("the FFN must read the attention sublayer's result, not the block's input: "
                "the two sublayers run one after the other",
                _block_variant(lambda m, x: m.norm2(m.norm1(x + m.self_attn(x)) + m.ffn(x)))),
        Mistake("neither sublayer has a residual connection: each one adds its own input back "
                "before its norm — x = norm1(x + self_attn(x)), then x = norm2(x + ffn(x))",
                _block_variant(lambda m, x: m.norm2(m.ffn(m.norm1(m.self_attn(x)))))),
        Mistake("the FFN's residual adds the block's original input x; it must add the FFN's own "
                "input, norm1's output: y = norm1(x + self_attn(x)), then norm2(y + ffn(y))",
                _block_variant(lambda m, x: (lambda y: m.norm2(x + m.ffn(y)))(m.norm1(x + m.self_attn(x))))),
        Mistake("the FFN's residual adds x + self_attn(x) from *before* norm1; it must add what the "
                "FFN reads, norm1's output: y = norm1(x + self_attn(x)), then norm2(y + ffn(y))",
                _block_variant(lambda m, x: (lambda s: m.norm2(s + m.ffn(m.norm1(s))))(x + m.self_attn(x)))),
        Mistake("you normalized first and added the *normalized* tensor back, LN(x) + Sublayer(LN(x)); "
                "a residual carries the sublayer's input x unchanged. And this block is post-norm: "
                "x = LN(x + Sublayer(x)) — add first, then normalize",
                _block_variant(lambda m, x: (lambda g: g + m.ffn(g))(
                    m.norm2((lambda h: h + m.self_attn(h))(m.norm1(x)))))),
    ],
    alternatives=[_TwoLineBlock],
    output_names=("out",),
    properties=[permutation_equivariant(
        1, "your outputs are not permutation-equivariant: with the positions of x rotated by one, "
           "each position's output should be its old output, moved along with it "
           "(an encoder block without positional encodings sees a set), and yours "
           "changed")],
)


def check_encoder_block(cls):
    """Check a learner's post-norm EncoderBlock class (d_model, h, d_ff) with parts
    self_attn, ffn, norm1, norm2."""
    return ENCODER_BLOCK.check(cls)
