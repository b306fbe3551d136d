"""Deep stacks of transformer blocks, with and without residuals and LayerNorm (lesson 05).

`Block` is a transformer encoder block whose wiring can be switched, to measure what
each piece buys:

    norm=None,   residual=False:  x = Sublayer(x)                 ("plain")
    norm=None,   residual=True:   x = x + Sublayer(x)             ("residual only")
    norm="pre",  residual=False:  x = Sublayer(LN(x))             ("LayerNorm only")
    norm="post", residual=True:   x = LN(x + Sublayer(x))         (post-norm, 2017)
    norm="pre",  residual=True:   x = x + Sublayer(LN(x))         (pre-norm, modern)

for each of the two sublayers (multi-head self-attention, then the FFN). With
residual=True and norm="post" or "pre" it computes exactly what
`course_lib.nn.layers.EncoderLayer(norm_first=...)` computes (tested).

The experiments run on the bindings task of `course_lib.experiments.toy_tasks`.
"""

import torch
import torch.nn.functional as F
from torch import nn

from .._checks import check_positive_int
from ..nn.layers import FeedForward, LayerNorm, MultiHeadAttention
from .toy_tasks import BindingModel, binding_loss, bindings_batch

__all__ = [
    "ARRANGEMENTS",
    "Block",
    "binding_stack",
    "first_layer_grad_norm",
    "layer_profile",
    "residual_contributions",
    "AttentionOnlyRegressor",
    "FeedForwardRegressor",
    "abs_batch",
    "train_regressor",
]

NORMS = (None, "pre", "post")

# name -> (residual, norm), in the order the lesson shows them
ARRANGEMENTS = {
    "plain": (False, None),
    "residual only": (True, None),
    "LayerNorm only": (False, "pre"),
    "post-norm": (True, "post"),
    "pre-norm": (True, "pre"),
}


class Block(nn.Module):
    """Self-attention then FFN, wired as `residual` and `norm` say (see the module doc).

    x: (batch, n, d_model) -> (batch, n, d_model). `record`, if a list, receives each
    sublayer's output (what that sublayer adds to the residual stream).
    """

    def __init__(self, d_model, h, d_ff, residual=True, norm="pre"):
        super().__init__()
        if norm not in NORMS:
            raise ValueError(f"norm must be None, 'pre' or 'post', got {norm!r}")
        if norm == "post" and not residual:
            raise ValueError("norm='post' means LN(x + Sublayer(x)), which needs residual=True; "
                             "without a residual use norm='pre' (x = Sublayer(LN(x)))")
        self.self_attn = MultiHeadAttention(d_model, h)
        self.ffn = FeedForward(d_model, d_ff)
        self.norm1 = LayerNorm(d_model) if norm else nn.Identity()
        self.norm2 = LayerNorm(d_model) if norm else nn.Identity()
        self.residual, self.norm = residual, norm

    def forward(self, x, record=None):
        for sublayer, norm in ((self.self_attn, self.norm1), (self.ffn, self.norm2)):
            if self.norm == "post":
                y = sublayer(x)
                x = norm(x + y)
            else:
                y = sublayer(norm(x))
                x = x + y if self.residual else y
            if record is not None:
                record.append(y)
        return x

    def extra_repr(self):
        return f"residual={self.residual}, norm={self.norm!r}"


def binding_stack(depth, residual=True, norm="pre", d_model=32, h=2, d_ff=64, max_len=12):
    """A BindingModel (lesson 04's task) whose body is `depth` Blocks.

    Stacks whose last operation is not a LayerNorm (pre-norm, residual only) get a final
    LayerNorm before the readouts only in the pre-norm case, as GPT-2 does.
    """
    check_positive_int("depth", depth)
    blocks = nn.ModuleList(Block(d_model, h, d_ff, residual, norm) for _ in range(depth))
    final = LayerNorm(d_model) if norm == "pre" else None
    return BindingModel(d_model, max_len=max_len, blocks=blocks, final_norm=final)


def _grad_norm(params):
    grads = [p.grad.pow(2).sum() for p in params if p.grad is not None]
    return torch.stack(grads).sum().sqrt().item() if grads else 0.0


def first_layer_grad_norm(depth, residual=True, norm="pre", seed=0, batch_size=32):
    """‖∂loss/∂θ‖ over the first block's parameters, for a freshly initialized stack.

    Same seed, same batch for every depth and arrangement; loss = the bindings task's.
    """
    torch.manual_seed(seed)
    model = binding_stack(depth, residual, norm)
    batch = bindings_batch(batch_size, 12, torch.Generator().manual_seed(seed + 1))
    binding_loss(model, batch).backward()
    return _grad_norm(model.blocks[0].parameters())


def layer_profile(depth, residual=True, norm="pre", seed=0, batch_size=16):
    """For one freshly initialized stack: per block, the gradient norm of its parameters
    and the RMS size of the residual stream after it.

    Returns (grad_norms, stream_rms): two lists of length depth, first block first.
    """
    torch.manual_seed(seed)
    model = binding_stack(depth, residual, norm)
    batch = bindings_batch(batch_size, 12, torch.Generator().manual_seed(seed + 1))
    rms = []

    def keep(module, args, out):
        rms.append(out.detach().pow(2).mean().sqrt().item())

    hooks = [b.register_forward_hook(keep) for b in model.blocks]
    try:
        binding_loss(model, batch).backward()
    finally:
        for hk in hooks:
            hk.remove()
    return [_grad_norm(b.parameters()) for b in model.blocks], rms


@torch.no_grad()
def residual_contributions(model, tokens):
    """Split the final residual stream of a BindingModel built from Blocks into its parts.

    Returns (parts, final): parts is a list of (name, tensor (batch, n, d_model)) —
    "embedding", then "block i attn" / "block i ffn" for every sublayer's output —
    and final is the stream after the last block (before any final norm). In a pre-norm
    or residual-only stack, final equals the sum of the parts exactly.
    """
    x = model.embed(tokens) + model.pos[: tokens.shape[1]]
    parts = [("embedding", x)]
    for i, block in enumerate(model.blocks):
        record = []
        x = block(x, record=record)
        parts += [(f"block {i} attn", record[0]), (f"block {i} ffn", record[1])]
    return parts, x


# --- why a nonlinearity: a per-position function -------------------------------------------

def abs_batch(batch, n=8, generator=None):
    """Sequences of n scalars x ~ U(-2, 2) and the per-position target |x|.

    Returns (x, y), both (batch, n, 1). The target at a position depends on that position
    only, so attending to other positions cannot help.
    """
    check_positive_int("batch", batch)
    check_positive_int("n", n)
    x = torch.rand(batch, n, 1, generator=generator) * 4 - 2
    return x, x.abs()


class AttentionOnlyRegressor(nn.Module):
    """Scalar in -> d_model -> `n_layers` single-head attention layers -> scalar out.

    No FFN, no nonlinearity besides the softmax inside attention. residual=True adds
    each layer's output to its input. x: (batch, n, 1) -> (batch, n, 1).
    """

    def __init__(self, n_layers=4, d_model=16, residual=True):
        super().__init__()
        self.inp = nn.Linear(1, d_model)
        self.layers = nn.ModuleList(MultiHeadAttention(d_model, 1) for _ in range(n_layers))
        self.out = nn.Linear(d_model, 1)
        self.residual = residual

    def forward(self, x):
        h = self.inp(x)
        for attn in self.layers:
            h = h + attn(h) if self.residual else attn(h)
        return self.out(h)


class FeedForwardRegressor(nn.Module):
    """Scalar in -> d_model -> one FeedForward (ReLU) -> scalar out. (batch, n, 1) -> (batch, n, 1)."""

    def __init__(self, d_model=16, d_ff=64):
        super().__init__()
        self.inp = nn.Linear(1, d_model)
        self.ffn = FeedForward(d_model, d_ff)
        self.out = nn.Linear(d_model, 1)

    def forward(self, x):
        return self.out(self.ffn(self.inp(x)))


def train_regressor(model, steps=300, lr=1e-2, n=8, batch_size=64, seed=0):
    """Fit `model` to |x| with Adam on fresh batches; returns the held-out MSE."""
    check_positive_int("steps", steps)
    g = torch.Generator().manual_seed(seed)
    opt = torch.optim.Adam(model.parameters(), lr=lr, foreach=True)
    for _ in range(steps):
        x, y = abs_batch(batch_size, n, g)
        loss = F.mse_loss(model(x), y)
        opt.zero_grad()
        loss.backward()
        opt.step()
    x, y = abs_batch(512, n, torch.Generator().manual_seed(seed + 1000))
    with torch.no_grad():
        return F.mse_loss(model(x), y).item()
