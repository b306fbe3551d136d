"""Induction heads in a 2-layer attention-only transformer (lesson 10).

The task: sequences [BOS, s, s] where s is `period` random tokens. The first copy is
unpredictable (loss ≈ ln vocab_size); the second copy is predictable *if* the model can
do "find the previous occurrence of the current token and copy the token after it".
Two heads in two layers do it together:

- a **previous-token head** (layer 0): position j attends to j-1 and writes "my previous
  token was s[j-1]" into j's residual stream;
- an **induction head** (layer 1): at position i (token x) the query looks for keys
  whose "previous token was x" — position j = i - period + 1 — and copies x_j, the
  prediction for position i + 1.

The model has no FFN: x ← x + Σ_heads head(LN(x)), so the residual stream is exactly
the embeddings plus every head's output (see `residual_components`).
"""
from __future__ import annotations

import contextlib

import torch
import torch.nn.functional as F
from torch import nn

from .._checks import check_max_length, check_positive_int, check_token_ids
from ..nn.attention import causal_mask
from .head_patterns import offset_score
from ..nn.layers import LayerNorm, MultiHeadAttention
from ..nn.models import keep_attention
from ..nn.positional import LearnedPositionalEmbedding

__all__ = [
    "AttentionOnlyTransformer",
    "repeated_sequences",
    "next_token_losses",
    "half_losses",
    "train_induction_model",
    "attention_stack",
    "previous_token_scores",
    "induction_scores",
    "ablate_heads",
    "ablation_table",
    "residual_components",
    "token_influence",
    "logit_contributions",
]


class AttentionOnlyTransformer(nn.Module):
    """Token + learned position embeddings, n_layers pre-norm causal attention layers
    (no FFN), a final LayerNorm and an unembedding to logits.

        x_0 = E[token] + P[pos];   x_{l+1} = x_l + MHA_l(LN_l(x_l));   logits = U LN(x_L)

    tokens: (batch, n) ids, n ≤ max_len -> logits (batch, n, vocab_size).
    """

    def __init__(self, vocab_size, d_model=32, h=2, n_layers=2, max_len=64):
        super().__init__()
        for name, v in (("vocab_size", vocab_size), ("d_model", d_model), ("h", h),
                        ("n_layers", n_layers), ("max_len", max_len)):
            check_positive_int(name, v)
        self.vocab_size, self.max_len = vocab_size, max_len
        self.embed = nn.Embedding(vocab_size, d_model)
        self.pos = LearnedPositionalEmbedding(max_len, d_model)
        with torch.no_grad():
            self.pos.weight.mul_(0.1)      # start with positions small next to the tokens
        self.norms = nn.ModuleList(LayerNorm(d_model) for _ in range(n_layers))
        self.layers = nn.ModuleList(MultiHeadAttention(d_model, h) for _ in range(n_layers))
        self.norm = LayerNorm(d_model)
        self.unembed = nn.Linear(d_model, vocab_size)

    def residual(self, tokens):
        """The residual stream after the last layer, before the final LN: (batch, n, d_model)."""
        check_token_ids("tokens", tokens, self.vocab_size)
        check_max_length("tokens", tokens.shape[1], self.max_len)
        x = self.pos(self.embed(tokens))
        mask = causal_mask(tokens.shape[1], device=tokens.device)
        for norm, attn in zip(self.norms, self.layers):
            x = x + attn(norm(x), mask=mask)   # each layer reads the stream and adds to it
        return x

    def forward(self, tokens):
        return self.unembed(self.norm(self.residual(tokens)))


def repeated_sequences(batch, period, vocab_size, generator=None):
    """[BOS, s, s] for `batch` random sequences s of `period` tokens.

    Tokens of s are drawn from 0 .. vocab_size-1; BOS is the extra id vocab_size, so a
    model needs vocab_size + 1 embeddings. Returns int64 (batch, 1 + 2·period).
    """
    check_positive_int("batch", batch)
    check_positive_int("period", period)
    check_positive_int("vocab_size", vocab_size)
    s = torch.randint(0, vocab_size, (batch, period), generator=generator)
    bos = torch.full((batch, 1), vocab_size, dtype=torch.long)
    return torch.cat([bos, s, s], dim=1)


def next_token_losses(logits, tokens):
    """Cross-entropy of predicting token t+1 from position t, for every t.

    logits: (batch, n, vocab); tokens: (batch, n). Returns (batch, n-1): entry t is the
    loss of logits[:, t] against tokens[:, t+1].
    """
    return F.cross_entropy(logits[:, :-1].transpose(1, 2), tokens[:, 1:], reduction="none")


def half_losses(losses, period):
    """(first-copy loss, repeated-copy loss) from `next_token_losses` of [BOS, s, s].

    First copy: predicting s[0..period-1] (nothing to go on: ≈ ln vocab_size).
    Repeated copy: predicting s[1..period-1] the second time. s[0]'s second appearance
    is left out: it follows the last token of s, which never came before it.
    losses: (batch, 1 + 2·period - 1). Returns two tensors of shape (batch,).
    """
    if losses.shape[-1] != 2 * period:
        raise ValueError(f"losses has {losses.shape[-1]} positions; sequences [BOS, s, s] with "
                         f"period={period} give {2 * period}")
    return losses[:, :period].mean(-1), losses[:, period + 1:].mean(-1)


def train_induction_model(vocab_size=32, periods=(6, 14), d_model=32, h=2, n_layers=2, steps=400,
                          batch_size=64, lr=1e-2, seed=0, progress=True):
    """Train an AttentionOnlyTransformer on fresh [BOS, s, s] batches.

    Each step draws its period uniformly from `periods` (lo, hi inclusive): with a fixed
    period the model could copy "from period-1 positions back" by position alone; a
    varying period leaves only the content-based route, the induction circuit.
    Returns (model in eval mode, history) where history has the lists "step", "period",
    "first" and "repeated" (mean loss on each half, per step).
    """
    check_positive_int("steps", steps)
    lo, hi = periods
    if not 2 <= lo <= hi:
        raise ValueError(f"periods must be (lo, hi) with 2 <= lo <= hi, got {periods}")
    gen = torch.Generator().manual_seed(seed)
    torch.manual_seed(seed)
    model = AttentionOnlyTransformer(vocab_size + 1, d_model, h, n_layers, max_len=1 + 2 * hi)
    opt = torch.optim.AdamW(model.parameters(), lr=lr, weight_decay=0.0)
    history = {"step": [], "period": [], "first": [], "repeated": []}
    bar = range(steps)
    if progress:
        from tqdm.auto import tqdm
        bar = tqdm(bar, desc="training", unit="step")
    model.train()
    for step in bar:
        period = int(torch.randint(lo, hi + 1, (1,), generator=gen))
        x = repeated_sequences(batch_size, period, vocab_size, gen)
        losses = next_token_losses(model(x), x)
        loss = losses.mean()
        opt.zero_grad()
        loss.backward()
        opt.step()
        first, repeated = half_losses(losses.detach(), period)
        history["step"].append(step)
        history["period"].append(period)
        history["first"].append(first.mean().item())
        history["repeated"].append(repeated.mean().item())
        if progress and step % 20 == 0:
            bar.set_postfix(first=f"{history['first'][-1]:.2f}", repeated=f"{history['repeated'][-1]:.2f}")
    return model.eval(), history


def attention_stack(model, tokens):
    """All heads' attention on `tokens`: (layers, batch, h, n, n)."""
    was_training = model.training
    model.eval()
    try:
        with torch.no_grad(), keep_attention(model):
            model(tokens)
            weights = [m.last_weights for m in _attention_modules(model)]
    finally:
        model.train(was_training)
    return torch.stack(weights)


def previous_token_scores(attn):
    """Mean attention from position i to i-1 (i ≥ 1). attn (layers, batch, h, n, n) -> (layers, h)."""
    return offset_score(attn, -1).mean(dim=1)


def induction_scores(attn, period):
    """Mean attention from i to i - period + 1 over the repeated copy.

    For [BOS, s, s], position i = 1 + period + j holds s[j]; its previous occurrence is at
    1 + j, and the token after that occurrence — the one to copy — is at i - period + 1.
    attn (layers, batch, h, n, n) with n = 1 + 2·period -> (layers, h).
    """
    n = attn.shape[-1]
    if n != 1 + 2 * period:
        raise ValueError(f"attention covers {n} positions; [BOS, s, s] with period={period} has {1 + 2 * period}")
    return offset_score(attn, -(period - 1), slice(period + 1, n)).mean(dim=1)


def _attention_modules(model):
    mods = [m for m in model.modules() if isinstance(m, MultiHeadAttention)]
    if not mods:
        raise ValueError(f"{type(model).__name__} has no MultiHeadAttention modules")
    return mods


@contextlib.contextmanager
def ablate_heads(model, heads):
    """Inside the block, the listed heads' outputs are zeroed before W^O.

    heads: iterable of (layer, head), where layer counts the model's MultiHeadAttention
    modules in order; or "all" to silence every head (only W^O's bias remains, the
    same at every position). Zeroing head i = zeroing columns i·d_k .. (i+1)·d_k of the
    concatenated heads, which is exactly removing head i's term from
    Concat(head_1, ..., head_h) W^O.
    """
    mods = _attention_modules(model)
    if heads == "all":
        heads = [(l, i) for l, m in enumerate(mods) for i in range(m.h)]
    chosen = {}
    for layer, head in heads:
        if not 0 <= layer < len(mods) or not 0 <= head < mods[layer].h:
            raise ValueError(f"no head ({layer}, {head}): the model has {len(mods)} attention "
                             f"layers of {mods[0].h} heads")
        chosen.setdefault(layer, []).append(head)

    handles = []
    for layer, hs in chosen.items():
        m = mods[layer]

        def pre_hook(module, args, m=m, hs=tuple(hs)):
            (concat,) = args                  # (batch, n, d_model): the heads side by side
            keep = torch.ones(m.h, device=concat.device, dtype=concat.dtype)
            keep[list(hs)] = 0
            return (concat * keep.repeat_interleave(m.d_k),)

        handles.append(m.w_o.register_forward_pre_hook(pre_hook))
    try:
        yield model
    finally:
        for handle in handles:
            handle.remove()


def ablation_table(model, tokens, period, ablations):
    """Repeated-copy and first-copy loss with each set of heads ablated.

    ablations: {name: heads} (heads as in `ablate_heads`; [] = the intact model).
    Returns {name: (first-copy loss, repeated-copy loss)} as floats.
    """
    out = {}
    was_training = model.training
    model.eval()
    try:
        for name, heads in ablations.items():
            with torch.no_grad(), ablate_heads(model, heads):
                first, repeated = half_losses(next_token_losses(model(tokens), tokens), period)
            out[name] = (first.mean().item(), repeated.mean().item())
    finally:
        model.train(was_training)
    return out


def residual_components(model, tokens):
    """The final residual stream of an AttentionOnlyTransformer, split into its terms.

    Returns {"embed": E[x] + P[pos], "L{l}H{i}": head i of layer l's output through its
    slice of W^O, "L{l} bias": b^O of layer l}, each (batch, n, d_model). Their sum
    is `model.residual(tokens)` (up to float rounding): every layer only *adds* to the
    stream, and W^O is linear, so each head's contribution is a separate term.
    """
    if not isinstance(model, AttentionOnlyTransformer):
        raise TypeError("residual_components needs an AttentionOnlyTransformer")
    parts = {}
    with torch.no_grad():
        x = model.pos(model.embed(tokens))
        parts["embed"] = x
        mask = causal_mask(tokens.shape[1])
        for l, (norm, attn) in enumerate(zip(model.norms, model.layers)):
            y = norm(x)
            q, k, v = (attn.split_heads(w(y)) for w in (attn.w_q, attn.w_k, attn.w_v))
            z = F.scaled_dot_product_attention(q, k, v, attn_mask=mask)   # (batch, h, n, d_k)
            w_o = attn.w_o.weight.view(attn.d_model, attn.h, attn.d_k)     # (d_model, h, d_k)
            for i in range(attn.h):
                parts[f"L{l}H{i}"] = z[:, i] @ w_o[:, i].T
            parts[f"L{l} bias"] = attn.w_o.bias.expand_as(x)
            x = x + sum(parts[f"L{l}H{i}"] for i in range(attn.h)) + parts[f"L{l} bias"]
    return parts


def token_influence(model, tokens, vocab_size=None, generator=None):
    """How much each position's output depends on each input token.

    For every position j, token j is replaced by a different random token and the
    model is run again; entry [t, j] is ‖logits_t(changed) - logits_t(original)‖.
    tokens: (n,) or (1, n). Returns (n, n). Column j is nonzero only where position j's
    information reached — off the diagonal, only attention can carry it there.
    """
    tokens = tokens.reshape(1, -1)
    n = tokens.shape[1]
    vocab_size = vocab_size or _model_vocab(model)
    changed = tokens.repeat(n, 1)                           # row j: token j replaced
    shift = torch.randint(1, vocab_size, (n,), generator=generator)
    idx = torch.arange(n)
    changed[idx, idx] = (changed[idx, idx] + shift) % vocab_size
    was_training = model.training
    model.eval()
    try:
        with torch.no_grad():
            base = model(tokens)[0]                          # (n, vocab)
            out = model(changed)                             # (n_changes, n, vocab)
    finally:
        model.train(was_training)
    return (out - base).norm(dim=-1).T                       # [t, j]


def _model_vocab(model):
    for m in model.modules():
        if isinstance(m, nn.Embedding):
            return m.num_embeddings
        if hasattr(m, "vocab_size"):
            return m.vocab_size
    raise ValueError("cannot tell the vocabulary size; pass vocab_size")


def logit_contributions(model, tokens):
    """Each residual-stream term's share of the logit of the *actual next token*.

    The final LayerNorm divides the whole stream by one number σ per position; with σ
    taken from the real stream, LN(x) = Σ_c (c - mean c)/σ · γ + β is a sum over the
    terms c of `residual_components`, and so is the logit U·LN(x) + b. Returns
    {term: (batch, n-1)} plus "LN β + unembed bias"; at position t the values add up
    exactly to logits[:, t, tokens[:, t+1]].
    """
    parts = residual_components(model, tokens)
    with torch.no_grad():
        x = sum(parts.values())
        norm = model.norm
        sigma = torch.sqrt(x.var(dim=-1, unbiased=False, keepdim=True) + norm.eps)   # (batch, n, 1)
        target = tokens[:, 1:]
        u = model.unembed.weight[target]                                            # (batch, n-1, d)
        out = {}
        for name, c in parts.items():
            c = (c - c.mean(dim=-1, keepdim=True)) / sigma * norm.weight
            out[name] = (c[:, :-1] * u).sum(-1)
        out["LN β + unembed bias"] = u @ norm.bias + model.unembed.bias[target]
    return out
