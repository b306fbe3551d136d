"""Figures for lesson 06: masks, masked attention, padding, the leakage test."""
from __future__ import annotations

import matplotlib.pyplot as plt
import numpy as np
import torch
from matplotlib.lines import Line2D
from matplotlib.patches import Patch

from .describe import describe, fmt
from .palette import BLACK, GREEN, GREY, VERMILLION

__all__ = ["mask_grid", "masked_attention_panels", "leakage_bars"]

# A mask on the single-hue "Blues" map, its two values at 0.07 (False: pale) and 0.79 (True:
# blue); each blocked cell also carries a grey × (told apart without colour).
_MASK_CMAP, _MASK_LIMITS = "Blues", (-0.1, 1.3)
_BLOCKED_FACE = "#c8c8c8"   # a −∞ score: mid grey, so a black "−∞" on it stands out


def _as_bool_2d(name, mask):
    m = torch.as_tensor(mask)
    if m.dtype != torch.bool:
        raise ValueError(f"{name} must be a bool tensor (True = may attend), got {m.dtype}")
    if m.dim() != 2:
        raise ValueError(f"{name} must be 2-D (n_q, n_k), got shape {tuple(m.shape)}")
    return m


_VISIBLE = {" ": "␣", "\n": "\\n", "\t": "\\t"}


def _labels(name, labels, n):
    """Tick labels for n positions; a space is drawn as ␣ and a newline as \\n."""
    if labels is None:
        return [str(i) for i in range(n)]
    labels = [_VISIBLE.get(str(lab), str(lab)) for lab in labels]
    if len(labels) != n:
        raise ValueError(f"{name} has {len(labels)} labels for {n} positions")
    return labels


def _num(v):
    """A change as the description prints it: 2 decimals, 2 significant digits below 0.01."""
    v = float(v)
    return fmt(v) if v == 0 or abs(v) >= 0.01 else f"{v:.1e}"


def _ranges(ix):
    """Positions as ranges: [0, 1, 2, 5] -> '0–2, 5' ('none' for none)."""
    out, ix = [], list(ix)
    for i in ix:
        if out and i == out[-1][1] + 1:
            out[-1][1] = i
        else:
            out.append([i, i])
    return ", ".join(f"{a}–{b}" if b > a else str(a) for a, b in out) or "none"


def _cross_blocked(ax, blocked, cell_in, color=GREY):
    """A × on every blocked cell (cell_in: a cell's size in inches)."""
    rows, cols = np.nonzero(blocked)
    ax.scatter(cols, rows, marker="x", s=(0.4 * 72 * cell_in) ** 2, color=color, linewidths=0.8)


def _grid(ax, values, cmap, q_labels, k_labels, title, vmin=None, vmax=None):
    im = ax.imshow(values, cmap=cmap, vmin=vmin, vmax=vmax)
    ax.set_xticks(range(len(k_labels)), k_labels, rotation=90 if max(map(len, k_labels)) > 2 else 0)
    ax.set_yticks(range(len(q_labels)), q_labels)
    ax.set_xlabel("key j (attended to)")
    ax.set_ylabel("query i")
    ax.set_title(title, fontsize=10)
    return im


def mask_grid(masks, labels=None, titles=None):
    """One or more bool masks (n_q, n_k), up to 3 per row: blue = may attend, grey = blocked.

    masks: a 2-D bool tensor, or a list of them. labels: the tokens, used for both axes
    (one list, or one list per mask). titles: one per mask. Returns the Figure.
    """
    masks = [masks] if isinstance(masks, torch.Tensor) else list(masks)
    if not masks:
        raise ValueError("masks must contain at least one mask")
    masks = [_as_bool_2d(f"masks[{i}]", m) for i, m in enumerate(masks)]
    if labels is None or (labels and isinstance(labels[0], str)):
        labels = [labels] * len(masks)
    if len(labels) != len(masks):
        raise ValueError(f"got {len(labels)} label lists for {len(masks)} masks")
    titles = list(titles) if titles is not None else [""] * len(masks)
    if len(titles) != len(masks):
        raise ValueError(f"got {len(titles)} titles for {len(masks)} masks")
    ncols = min(len(masks), 3)                       # ≤ 3 per row: fits the notebook column
    nrows = -(-len(masks) // ncols)
    n = max(max(m.shape) for m in masks)
    cell = min(0.3, (9.5 / ncols - 0.9) / n)         # inches per token, ≤ 9.5 in in all
    width = ncols * (cell * n + 0.9)
    height = nrows * (cell * n + 1.3)
    fig, axes = plt.subplots(nrows, ncols, figsize=(width, height), squeeze=False, layout="constrained")
    for ax in axes.flat[len(masks):]:
        ax.set_visible(False)
    for ax, m, lab, title in zip(axes.flat, masks, labels, titles):
        q_labels = _labels("labels", lab[: m.shape[0]] if lab is not None else None, m.shape[0])
        k_labels = _labels("labels", lab[: m.shape[1]] if lab is not None else None, m.shape[1])
        im = _grid(ax, m.int().numpy(), _MASK_CMAP, q_labels, k_labels, title, *_MASK_LIMITS)
        _cross_blocked(ax, ~m.numpy(), cell)
        ax.tick_params(labelsize=9)
    blocked = (Patch(color=im.to_rgba(0)), Line2D([], [], ls="", marker="x", color=GREY))
    fig.legend(handles=[Patch(color=im.to_rgba(1)), blocked], labels=["may attend (True)", "blocked (False, ×)"],
               loc="outside lower center", ncols=2, fontsize=9, frameon=False)
    _widen_for_titles(fig)
    return describe(fig, **_masks_description(masks, labels, titles))


def _widen_for_titles(fig):
    """Widen the figure until no panel title sticks out of it (constrained layout centres a title
    over its axes and lets a long one run past the canvas edge)."""
    for _ in range(3):
        renderer = fig.canvas.get_renderer()
        fig.canvas.draw()
        boxes = [ax.title.get_window_extent(renderer) for ax in fig.axes if ax.get_visible() and ax.get_title()]
        over = max([0.0] + [fig.bbox.x0 - b.x0 for b in boxes] + [b.x1 - fig.bbox.x1 for b in boxes])
        if over <= 0:
            return
        w, h = fig.get_size_inches()
        fig.set_size_inches(w + 2 * over / fig.dpi + 0.1, h)


def _masks_description(masks, labels, titles):
    """describe()'s arguments for mask_grid: per mask its shape, how many cells may attend,
    its pattern (causal, padding keys); per query the keys it may attend to in a table."""
    said, rows, extra = [], [], [len(masks)]
    for k, (m, lab, title) in enumerate(zip(masks, labels, titles)):
        m = m.numpy()
        nq, nk = m.shape
        name = title or (f"mask {k + 1}" if len(masks) > 1 else "the mask")
        keys, queries = m.any(0), m.any(1)
        causal = np.array_equal(m, np.tril(np.ones_like(m)) & keys[None, :] & queries[:, None])
        words = f"{name} ({nq} queries × {nk} keys): {int(m.sum())} of {m.size} cells may attend"
        if causal:
            words += ", causal (each query sees itself and the keys before it)"
        if not keys.all():
            words += f", keys {_ranges(np.flatnonzero(~keys))} blocked for every query"
        if not queries.all():
            words += f", queries {_ranges(np.flatnonzero(~queries))} see no key"
        said.append(words)
        extra += [k + 1, int(m.sum()), m.size]
        q_labels = _labels("labels", lab[:nq] if lab is not None else None, nq)
        rows += [[f"{name}, query {i} ({q_labels[i]})", _ranges(np.flatnonzero(m[i]))] for i in range(nq)]
    text = (f"{'Attention masks' if len(masks) > 1 else 'An attention mask'} (rows: queries i, columns: keys j; "
            f"blue: may attend, pale with ×: blocked). {'; '.join(said)}.")
    return dict(text=text, table=(["query", "may attend to keys"], rows), extra_values=extra)


def masked_attention_panels(scores, mask, labels=None):
    """Three steps of masked attention for one head, left to right:
    the scores q kᵀ/√d_k, the scores with blocked entries set to -inf, the softmax weights.

    scores: float (n_q, n_k); mask: bool (n_q, n_k), True = may attend. Returns the Figure.
    """
    s = torch.as_tensor(scores, dtype=torch.float32)
    if s.dim() != 2:
        raise ValueError(f"scores must be 2-D (n_q, n_k), got shape {tuple(s.shape)}")
    m = _as_bool_2d("mask", mask)
    if m.shape != s.shape:
        raise ValueError(f"mask has shape {tuple(m.shape)} but scores have {tuple(s.shape)}")
    q_labels = _labels("labels", labels[: s.shape[0]] if labels is not None else None, s.shape[0])
    k_labels = _labels("labels", labels[: s.shape[1]] if labels is not None else None, s.shape[1])
    masked = s.masked_fill(~m, float("-inf"))
    weights = torch.softmax(masked, dim=-1).nan_to_num(0.0)
    # The colour scale covers 95 % of the scores: one large score would otherwise wash out
    # the rest. Scores beyond it are drawn at the end colour and printed on their squares
    # (in the middle panel too, where they are not blocked).
    lim = float(torch.quantile(s.abs().flatten(), 0.95)) or float(s.abs().max()) or 1.0
    n = max(s.shape)
    # Three panels in the notebook column (8.9 in + margins ≤ 913 px: shown at full size).
    fig, axes = plt.subplots(1, 3, figsize=(8.9, 0.22 * n + 2.3), layout="constrained")
    _grid(axes[0], s.numpy(), "RdBu_r", q_labels, k_labels, "scores q·k/√d_k", -lim, lim)
    shown = np.ma.masked_invalid(masked.numpy())   # -inf cells: not drawn, the grey face shows
    axes[1].set_facecolor(_BLOCKED_FACE)
    im_s = _grid(axes[1], shown, "RdBu_r", q_labels, k_labels, "blocked → −∞", -lim, lim)
    annotate = n <= 10                               # bigger grids: the colours say it
    for i, j in zip(*np.nonzero(s.abs().numpy() > lim)):
        if annotate:
            for ax in axes[:2] if m[i, j] else axes[:1]:
                ax.text(j, i, f"{float(s[i, j]):.1f}", ha="center", va="center", fontsize=8, color="white")
    if annotate:
        for i, j in zip(*np.nonzero(~m.numpy())):
            axes[1].text(j, i, "−∞", ha="center", va="center", fontsize=9.5, color=BLACK)
    else:                                            # too small for "−∞": a × on each blocked cell
        _cross_blocked(axes[1], ~m.numpy(), 8.9 / 3 / n, BLACK)
    im = _grid(axes[2], weights.numpy(), "Blues", q_labels, k_labels, "softmax: weights", 0, 1)
    for i in range(weights.shape[0] if annotate else 0):
        for j in range(weights.shape[1]):
            w = float(weights[i, j])
            text = "0" if w == 0 else ("1" if w > 0.995 else f"{w:.2f}".lstrip("0"))  # exact 0 = blocked
            axes[2].text(j, i, text, ha="center", va="center", fontsize=8,
                         color="white" if w > 0.6 else BLACK)
    # The score bar serves the left and middle panels: under both of them, not beside the middle one.
    fig.colorbar(im_s, ax=axes[:2], location="bottom", fraction=0.05, shrink=0.8, pad=0.02,
                 extend="both", label="score, left and middle panels (grey: −∞)")
    fig.colorbar(im, ax=axes[2], location="bottom", fraction=0.05, shrink=0.8, pad=0.02, label="weight")
    w, blocked = weights.numpy(), ~m.numpy()
    seen = ~blocked.all(1)
    sums = "each row sums to 1" if np.allclose(w[seen].sum(1), 1, atol=1e-3) else "rows do not sum to 1"
    k = int((~seen).sum())
    none = f"; {k} {'query' if k == 1 else 'queries'} with every key blocked: weight 0 everywhere" if k else ""
    text = (f"Masked attention of {s.shape[0]} queries (rows) over {s.shape[1]} keys (columns), in three panels: "
            f"the scores q·k/√d_k (from {fmt(s.min())} to {fmt(s.max())}), the same with the {int(blocked.sum())} "
            f"blocked entries set to −∞, and the softmax weights, where every blocked weight is exactly 0 and "
            f"{sums}{none}. The table lists the weights.")
    rows = [[f"{i}: {q_labels[i]}", *("blocked" if blocked[i, j] else float(w[i, j]) for j in range(len(k_labels)))]
            for i in range(len(q_labels))]
    return describe(fig, text, table=(["query", *(f"{j}: {lab}" for j, lab in enumerate(k_labels))], rows),
                    extra_values=[int(blocked.sum()), int((~seen).sum())])


def leakage_bars(changes, first_changed, labels=None):
    """The leakage test, drawn: how much each position's output moved when only the tokens
    from `first_changed` on were replaced.

    changes: {name: 1-D tensor (n,)} max |Δ output| per position, one entry per model
    (e.g. "with causal mask", "without mask"). Bars left of the dashed line are positions
    that only see unchanged tokens: with a causal mask they must be exactly 0.
    Returns the Figure.
    """
    if not isinstance(changes, dict) or not changes:
        raise ValueError("changes must be a non-empty dict {name: 1-D tensor}")
    series = {k: torch.as_tensor(v, dtype=torch.float64) for k, v in changes.items()}
    n = {v.shape[0] for v in series.values() if v.dim() == 1}
    if len(n) != 1 or any(v.dim() != 1 for v in series.values()):
        raise ValueError("every entry of changes must be a 1-D tensor of the same length")
    n = n.pop()
    if not 0 < first_changed < n:
        raise ValueError(f"first_changed must be in 1..{n - 1}, got {first_changed}")
    fig, axes = plt.subplots(len(series), 1, figsize=(8, 1.9 * len(series) + 0.6), sharex=True, squeeze=False)
    x = np.arange(n)
    said, extra = [], []
    for ax, (name, v) in zip(axes[:, 0], series.items()):
        leak = [i < first_changed and v[i] > 0 for i in range(n)]     # a leak: red and hatched
        colors = [VERMILLION if leak[i] else (GREY if i >= first_changed else GREEN) for i in range(n)]
        ax.bar(x, v.numpy(), color=colors, hatch=["//" if lk else "" for lk in leak], edgecolor="white", lw=0.5)
        top = float(v.max()) or 1.0
        for i in range(first_changed):
            if v[i] == 0:   # a bar of height 0 is invisible: say it
                ax.text(i, 0.02 * top, "0", ha="center", va="bottom", color=BLACK, fontsize=9, fontweight="bold")
        ax.axvline(first_changed - 0.5, color="k", ls="--", lw=1)
        past = float(v[:first_changed].max())
        ax.set_title(f"{name}: largest change at positions < {first_changed} = {past:.2g}", fontsize=10)
        ax.set_ylabel("max |Δ logits|")
        worst = int(v[:first_changed].argmax())
        after = f"from position {first_changed} on up to {_num(v[first_changed:].max())}"
        said.append(f"{name}: every position before {first_changed} unchanged (exactly 0), {after}" if past == 0 else
                    f"{name}: positions before {first_changed} move up to {_num(past)} (at position {worst}, the "
                    f"future leaks into the past), {after}")
        extra.append(worst)
    axes[-1, 0].set_xlabel("position (tokens from the dashed line on were replaced)")
    if labels is not None:
        axes[-1, 0].set_xticks(x, _labels("labels", labels, n))
    fig.tight_layout()
    return describe(fig, f"The leakage test: the largest change of any logit (max |Δ logits|, bars) at each of {n} "
                         f"positions when the tokens from position {first_changed} on are replaced. "
                         f"{'; '.join(said)}.", extra_values=extra)
