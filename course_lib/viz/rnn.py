"""Figures for lesson 01: why not RNNs.

Plain parameters in, a matplotlib Figure out. `jacobian_norms` is the computation
behind the gradient figures (the chain rule written as a product of matrices).
"""
from __future__ import annotations

import functools
import math

import matplotlib.pyplot as plt
import numpy as np
import torch
from matplotlib import ticker

from ..nn.rnn import NONLINEARITIES, set_spectral_radius
from .describe import describe, fmt
from .live import LivePlot
from .palette import BLACK, BLUE, CYCLE, GREEN, GREY, LINESTYLES, ORANGE, PURPLE, SKY, VERMILLION

__all__ = [
    "timing_figure",
    "jacobian_norms",
    "gradient_norm_figure",
    "gradient_norm_view",
    "distance_figure",
    "recall_figure",
]

STANDARD_RADII = (0.5, 0.9, 1.0, 1.1)
_RADIUS_COLORS = (BLUE, GREEN, ORANGE, VERMILLION, PURPLE, SKY, BLACK)   # shrinking … exploding


def _style(i, colors=CYCLE):
    """The i-th series' colour and line style: told apart without colour too."""
    return dict(color=colors[i % len(colors)], ls=LINESTYLES[i % len(LINESTYLES)])


def _num(x):
    """2 decimals, or 2 significant digits where the value is far from 1 (1.2e-05, 3.4e+03)."""
    return fmt(x) if x == 0 or 0.01 <= abs(x) < 1000 else f"{x:.1e}"


def _check_positive(name, value):
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not value > 0:
        raise ValueError(f"{name} must be a positive number, got {name}={value!r}")


def _check_nonlinearity(nonlinearity):
    if nonlinearity not in NONLINEARITIES:
        raise ValueError(f"nonlinearity must be one of {sorted(NONLINEARITIES)}, got {nonlinearity!r}")


def _check_series(name, xs, series):
    if not series:
        raise ValueError(f"{name} must map a label to a list of values, got nothing")
    for label, ys in series.items():
        if len(ys) != len(xs):
            raise ValueError(f"{name}[{label!r}] has {len(ys)} values for {len(xs)} x positions")


def timing_figure(lengths, times, d_model):
    """Wall time vs length (log-log), next to the sequential steps and the work each needs.

    lengths: the sequence lengths n; times: {label: seconds per forward pass, one per n};
    labels containing "attention" are counted as one attention layer, the others as an RNN.
    """
    lengths = list(lengths)
    if len(lengths) < 2:
        raise ValueError(f"lengths needs at least 2 values, got {lengths}")
    _check_series("times", lengths, times)
    _check_positive("d_model", d_model)
    n = torch.tensor(lengths, dtype=torch.float64)
    # ≤ 9.1 in: shown at full size in the notebook column. Each legend sits under its panel:
    # measured times land anywhere on another machine, and a legend inside the axes could cover some.
    fig, (ax_t, ax_s, ax_w) = plt.subplots(1, 3, figsize=(9.1, 4.8), layout="constrained")
    # attention dashed orange squares, RNNs solid blue circles, as in the other panels; others apart
    kinds = {True: iter([(ORANGE, "--"), (SKY, ":"), (BLACK, "-.")]),
             False: iter([(BLUE, "-"), (VERMILLION, "-."), (GREEN, ":"), (PURPLE, "--")])}
    for label, secs in times.items():
        color, ls = next(kinds["attention" in label], (None, "-"))
        ax_t.loglog(lengths, [s * 1e3 for s in secs], "s" if "attention" in label else "o", label=label,
                    color=color, ls=ls)
    ax_t.set(xlabel="sequence length n", ylabel="forward pass (ms)", title="measured wall time")

    ax_s.loglog(lengths, n, "o-", color=BLUE, label="RNN: n (one per position)")
    ax_s.loglog(lengths, torch.ones_like(n), "s--", color=ORANGE, label="attention: 1")
    ax_s.set(xlabel="sequence length n", ylabel="sequential steps", title="steps that wait for each other")
    ax_s.set_ylim(0.5, float(n.max()) * 2)

    d = float(d_model)
    rnn_work, attention_work = 2 * n * d * d, 4 * n * d * d + 2 * n * n * d
    ax_w.loglog(lengths, rnn_work, "o-", color=BLUE, label="RNN: 2·n·d²")
    ax_w.loglog(lengths, attention_work, "s--", color=ORANGE,
                label="attention: 4·n·d² + 2·n²·d")
    ax_w.set(xlabel="sequence length n", ylabel="multiply-adds", title=f"total work (d = {d_model})")
    for ax in (ax_t, ax_s, ax_w):
        ax.grid(True, which="major", alpha=0.3)
        shown = lengths[::2] if len(lengths) > 6 else lengths      # the measured n, plain numbers
        ax.set_xticks(shown, [str(v) for v in shown])
        ax.xaxis.set_minor_formatter(ticker.NullFormatter())
        ax.legend(fontsize=9, loc="upper center", bbox_to_anchor=(0.5, -0.17), frameon=False)
    first, last = lengths[0], lengths[-1]
    measured = "; ".join(f"{label} {_num(secs[0] * 1e3)} ms at n = {first}, {_num(secs[-1] * 1e3)} ms at n = {last}"
                         for label, secs in times.items())
    return describe(fig, f"Measured forward-pass time against sequence length n (log–log): {measured}. An RNN "
                         f"needs n sequential steps, one attention layer 1; but at n = {last} "
                         f"and d = {d_model} attention does {_num(attention_work[-1])} multiply-adds, the RNN "
                         f"{_num(rnn_work[-1])}.")


@functools.lru_cache(maxsize=8)
def _base_problem(d, n, seed):
    """A random W with spectral radius 1 and a random input drive u_t = U x_t, fixed by seed."""
    gen = torch.Generator().manual_seed(seed)
    W = torch.randn(d, d, generator=gen, dtype=torch.float64) / math.sqrt(d)
    set_spectral_radius(W, 1.0)
    drive = torch.randn(n, d, generator=gen, dtype=torch.float64)
    h0 = torch.randn(d, generator=gen, dtype=torch.float64) * 0.5
    return W, drive, h0


# σ and σ' on numpy arrays (the same functions as course_lib.nn.rnn.NONLINEARITIES). The
# recurrence below is 100 steps of (32, 32) products: in torch its per-operation overhead
# cost 2–4× numpy's whole step, and far more where torch's threads wait for a busy CPU
# (the explorer computes up to five curves per slider step).
_SIGMA = {"tanh": np.tanh, "relu": lambda a: np.maximum(a, 0.0), "linear": lambda a: a}


def _derivative(nonlinearity, a):
    """σ'(a), elementwise; a: a numpy array."""
    if nonlinearity == "tanh":
        return 1 - np.tanh(a) ** 2
    if nonlinearity == "relu":
        return (a > 0).astype(a.dtype)
    return np.ones_like(a)


def jacobian_norms(radius, nonlinearity="tanh", n=100, d=32, input_scale=0.5, seed=0):
    """‖∂h_t/∂h_0‖ (spectral norm) for t = 0..n, for h_t = σ(W h_{t-1} + u_t).

    W is a fixed random (d, d) matrix scaled to spectral radius `radius`; u_t = U x_t is a
    fixed random drive times `input_scale`. By the chain rule
        ∂h_t/∂h_0 = D_t W · D_{t-1} W ··· D_1 W,   D_t = diag(σ'(W h_{t-1} + u_t)),
    computed here one factor at a time, for n steps (the sequence length, as in lesson 01).
    Returns a float64 tensor (n + 1,), entry 0 is 1.
    """
    _check_positive("radius", radius)
    _check_nonlinearity(nonlinearity)
    for name, value in (("n", n), ("d", d)):
        if isinstance(value, bool) or not isinstance(value, int) or value < 1:
            raise ValueError(f"{name} must be a positive int, got {name}={value!r}")
    if not input_scale >= 0:
        raise ValueError(f"input_scale must be >= 0, got input_scale={input_scale}")
    if nonlinearity == "linear":    # D_t = I: the Jacobian ignores the inputs, one curve for all
        input_scale = 0.0
    return _jacobian_norms(float(radius), nonlinearity, n, d, float(input_scale), seed).clone()


@functools.lru_cache(maxsize=256)    # 256 curves of n + 1 floats: an explorer's way back is free
def _jacobian_norms(radius, nonlinearity, n, d, input_scale, seed):
    W0, drive, h = (x.numpy() for x in _base_problem(d, n, seed))
    W = W0 * radius
    sigma = _SIGMA[nonlinearity]
    products = np.empty((n + 1, d, d))
    products[0] = J = np.eye(d)
    for t in range(n):
        a = W @ h + input_scale * drive[t]
        h = sigma(a)
        J = products[t + 1] = _derivative(nonlinearity, a)[:, None] * (W @ J)   # D_t W J_{t-1}
    # ‖J‖₂ is J's largest singular value: all n + 1 norms in one call
    return torch.from_numpy(np.linalg.svd(products, compute_uv=False)[:, 0])


def _loggable(norms):
    """norms (n + 1,) as a float64 numpy array with NaN for the norms that underflowed to 0:
    a log axis cannot show 0, so the curve stops there."""
    y = norms.numpy().copy()
    y[y <= 0] = float("nan")
    return y


def _plot_norms(ax, norms, **kwargs):
    ax.semilogy(range(len(norms)), _loggable(norms), **kwargs)


MAX_DECADES = 22      # gradient_norm_figure's log axis: a growth of 4 decades stays visible


def gradient_norm_figure(radii=STANDARD_RADII, nonlinearities=("linear", "tanh"), n=100, input_scale=0.5):
    """One panel per nonlinearity: ‖∂h_t/∂h_0‖ vs t for each spectral radius of W."""
    radii = list(radii)
    if not radii:
        raise ValueError("radii must list at least one spectral radius")
    nonlinearities = list(nonlinearities)
    if not nonlinearities:
        raise ValueError("nonlinearities must list at least one of 'linear', 'tanh', 'relu'")
    fig, axes = plt.subplots(1, len(nonlinearities), figsize=(4.55 * len(nonlinearities), 3.9),
                             sharey=True, squeeze=False)
    shown, said, curves = [], [], []
    for ax, nl in zip(axes[0], nonlinearities):
        ends = []
        for i, r in enumerate(radii):
            norms = jacobian_norms(r, nl, n, input_scale=input_scale)
            style = _style(i, _RADIUS_COLORS)
            _plot_norms(ax, norms, label=f"ρ = {r:g}", **style)
            shown.append(norms[norms > 0])
            curves.append((ax, r, norms, style["color"]))
            ends.append(f"{_num(norms[-1].item())} for ρ = {r:g}")
        title = "σ = identity (linear RNN)" if nl == "linear" else f"σ = {nl}"
        ax.set(xlabel="steps t from h_0 to h_t", title=title)
        said.append(f"with {title}: " + ", ".join(ends))
    shown = torch.cat(shown)
    if len(shown):   # whole decades around the data, at most MAX_DECADES of them: a curve that falls
        # further leaves through the bottom with its end value written there, so a growing curve
        # is not flattened against 40 decades of vanishing ones
        low, high = math.floor(math.log10(shown.min().item())), math.ceil(math.log10(shown.max().item()))
        high = max(high, low + 1)
        low = max(low, high - MAX_DECADES)
        for ax, r, norms, colour in curves:
            below = (norms < 10.0 ** low).nonzero()
            if len(below):
                t = int(below[0])
                # two short lines: one long line from a curve that leaves past mid-panel crosses the frame
                ax.annotate(f"ρ = {r:g} ↓\n{_num(norms[-1].item())} at t = {n}", (t, 10.0 ** low),
                            xytext=(6, 4), textcoords="offset points", fontsize=9, color=BLACK,
                            ha="left", va="bottom")
        axes[0][0].set_ylim(10.0 ** low, 10.0 ** high)
        step = next(s for s in (1, 2, 5, 10, 20) if (high - low) / s <= 8)   # at most ~8 labels, 10^0 among them
        axes[0][0].set_yticks([10.0 ** k for k in range(low - low % step, high + 1, step) if k >= low])
        axes[0][0].yaxis.set_minor_locator(ticker.NullLocator())
    for ax in axes[0]:
        ax.axhline(1.0, color=GREY, lw=0.8, ls=":")
        ax.grid(True, alpha=0.3)
    axes[0][0].set_ylabel("‖∂h_t / ∂h_0‖")
    fig.tight_layout(rect=(0, 0.1, 1, 1))
    fig.legend(*axes[0][0].get_legend_handles_labels(), loc="lower center", ncol=len(radii), fontsize=9,
               title="spectral radius of W", title_fontsize=9, frameon=False)
    return describe(fig, f"Gradient norm ‖∂h_t/∂h_0‖ against the step t = 0 … {n} (log scale), one curve per "
                         f"spectral radius ρ of W, input strength {input_scale:.2f}; at t = {n} it reaches "
                         + "; ".join(said) + ".", extra_values=(input_scale, 0))


class GradientNormPlot(LivePlot):
    """The explorer's figure: ‖∂h_t/∂h_0‖ for t = 0..n for the chosen radius, in bold over
    the standard radii in grey (values: radius, nonlinearity, input_scale).

    The frame (log axis from 1e-16 to 1e12, ticks, grid) is fixed; every curve, its labels,
    the title and the legend (which names ρ) move. The norms come from `jacobian_norms`,
    cached per (radius, σ, input strength): a radius step computes one curve, a σ or input
    strength step five (the grey ones do not depend on the radius).
    """

    figsize = (7, 2.9)        # with its controls and caption, the explorer fits a 1366×768 screen

    def __init__(self, n=100):
        self.n = n

    def check(self, radius, nonlinearity, input_scale):
        _check_positive("radius", radius)
        _check_nonlinearity(nonlinearity)
        if not input_scale >= 0:
            raise ValueError(f"input_scale must be >= 0, got input_scale={input_scale}")

    def build(self, fig, radius, nonlinearity, input_scale):
        n, ones = self.n, np.ones(self.n + 1)        # placeholders: `update` sets the data
        ax = fig.add_subplot()
        self.references, self.reference_labels = [], []
        for r in STANDARD_RADII:
            self.references += ax.semilogy(range(n + 1), ones, color="lightgray", lw=1)
            self.reference_labels.append(ax.text(0, 1, f" ρ={r:g}", color=GREY, fontsize=9))
        (self.bold,) = ax.semilogy(range(n + 1), ones, color=BLUE, lw=2.5, label="ρ")
        (self.power,) = ax.semilogy(range(n + 1), ones, ":", color=BLUE, lw=1, label="ρ^t")
        ax.set_ylim(1e-16, 1e12)
        ax.set_xlim(0, n * 1.08)
        # moving only to stay drawn over the curves, as in a figure drawn in one go
        self.one = ax.axhline(1.0, color=GREY, lw=0.8, ls=":")
        ax.set(xlabel="steps t from h_0 to h_t", ylabel="‖∂h_t / ∂h_0‖")
        self.title = ax.set_title(" ")
        self.legend = ax.legend(fontsize=9, loc="lower left")
        ax.grid(True, alpha=0.3)
        ax.set_yticks([10.0 ** e for e in range(-16, 13, 4)])   # plain labels: no mathtext, fast redraws
        ax.yaxis.set_major_formatter(ticker.FuncFormatter(lambda v, _: f"{v:.0e}"))
        ax.yaxis.set_minor_formatter(ticker.NullFormatter())
        fig.subplots_adjust(left=0.12, right=0.97, bottom=0.17, top=0.89)   # fixed: no tight_layout
        return [*self.references, self.bold, self.power, self.one, *self.reference_labels,
                self.title, self.legend]

    def update(self, radius, nonlinearity, input_scale):
        n = self.n
        for r, line, label in zip(STANDARD_RADII, self.references, self.reference_labels):
            reference = jacobian_norms(r, nonlinearity, n, input_scale=input_scale)
            line.set_ydata(_loggable(reference))
            visible = ((reference >= 1e-16) & (reference <= 1e12)).nonzero()
            label.set_visible(len(visible) > 0)
            if len(visible):   # label each grey curve where it leaves the plot (or ends)
                t = int(visible[-1])
                label.set_position((t, reference[t].item()))
                label.set_verticalalignment("bottom" if t < n else "center")
        norms = jacobian_norms(radius, nonlinearity, n, input_scale=input_scale)
        self.bold.set_ydata(_loggable(norms))
        self.bold.set_label(f"ρ = {radius:.2f}")
        self.power.set_ydata([radius ** t for t in range(n + 1)])
        self.legend.get_texts()[0].set_text(f"ρ = {radius:.2f}")
        self.title.set_text(f"σ = {nonlinearity}, ρ = {radius:.2f}:  "
                            f"‖∂h_{n}/∂h_0‖ = {norms[-1].item():.2e}")

    def describe(self, radius, nonlinearity, input_scale):
        n = self.n
        end, *ends = (jacobian_norms(r, nonlinearity, n, input_scale=input_scale)[-1].item()
                      for r in (radius, *STANDARD_RADII))
        grey = ", ".join(f"{_num(e)} for ρ = {r:g}" for r, e in zip(STANDARD_RADII, ends))
        return dict(text=f"Gradient norm ‖∂h_t/∂h_0‖ against the step t = 0 … {n} (log scale) for σ = "
                         f"{nonlinearity}, input strength {input_scale:.2f}: with ρ = {radius:.2f} (bold) it reaches "
                         f"{_num(end)} at t = {n}, where ρ^t is {_num(radius ** n)}; the grey curves reach {grey}.",
                    extra_values=(input_scale, 0),
                    result=f"‖∂h_t/∂h_0‖ reaches {_num(end)} at t = {n} with ρ = {radius:.2f} "
                           f"(ρ^t is {_num(radius ** n)}), σ = {nonlinearity}.")


def gradient_norm_view(radius=1.0, nonlinearity="tanh", input_scale=0.5, n=100):
    """The widget's view: the chosen radius in bold over the standard radii in grey."""
    return GradientNormPlot(n).figure(radius=radius, nonlinearity=nonlinearity, input_scale=input_scale)


def distance_figure(distances, norms):
    """‖∂y_last/∂x_j‖ against the distance from position j to the last one (log y), one curve per model.

    distances: the distances; norms: {label: gradient norms, one per distance}.
    """
    distances = list(distances)
    _check_series("norms", distances, norms)
    fig, ax = plt.subplots(figsize=(7, 3.6))
    near, far = int(np.argmin(distances)), int(np.argmax(distances))
    said = []
    for i, (label, ys) in enumerate(norms.items()):
        y = torch.as_tensor(ys, dtype=torch.float64).clone()
        y[y <= 0] = float("nan")
        ax.semilogy(distances, y, "o" if "RNN" in label else "s", ms=3, label=label, **_style(i))
        said.append(f"{label} {_num(max(float(ys[near]), 0.0))} at distance {distances[near]} and "
                    f"{_num(max(float(ys[far]), 0.0))} at distance {distances[far]}")
    ax.set(xlabel="distance (steps) between input j and the last output",
           ylabel="‖∂(last output) / ∂x_j‖", title="how strongly the last output depends on input j")
    ax.legend(fontsize=9)
    ax.grid(True, alpha=0.3)
    fig.tight_layout()
    return describe(fig, "Gradient norm of the last output with respect to input j against the distance between "
                         "them (log scale): " + "; ".join(said) + ".", extra_values=(0,))


def recall_figure(ns, accuracies, chance):
    """Accuracy (%) vs number of distractors n, one curve per model, with the chance level."""
    ns = list(ns)
    _check_series("accuracies", ns, accuracies)
    if not 0 < chance < 1:
        raise ValueError(f"chance must be a probability in (0, 1), got chance={chance}")
    fig, ax = plt.subplots(figsize=(7, 3.6))
    last = len(accuracies) - 1
    for i, (label, acc) in enumerate(accuracies.items()):
        # Where two models score the same (100 % at small n) their markers coincide: the earlier
        # series are drawn as larger hollow markers under the later, smaller filled ones, so each
        # stays visible (a filled marker inside a ring).
        style = _style(i)
        ax.plot(ns, [100 * a for a in acc], "s" if "attention" in label else "o", label=label,
                ms=5 + 5 * (last - i), mew=1.8, zorder=2 + i,
                mfc="none" if i < last else style["color"], **style)
    ax.axhline(100 * chance, color=GREY, ls=":", lw=1, label=f"chance ({100 * chance:.1f} %)")
    ax.set_xscale("log", base=2)
    ax.set_xticks(ns, [str(n) for n in ns])
    ax.set_ylim(0, 105)
    ax.set(xlabel="distractors n between the symbol and the question",
           ylabel="test accuracy (%)", title="recall the first token after n distractors")
    ax.legend(fontsize=9)
    ax.grid(True, alpha=0.3)
    fig.tight_layout()
    said = "; ".join(f"{label} {100 * acc[0]:.1f} % at n = {ns[0]}, {100 * acc[-1]:.1f} % at n = {ns[-1]}"
                     for label, acc in accuracies.items())
    return describe(fig, f"Test accuracy at recalling the first token against the number of distractors n (log "
                         f"scale), chance {100 * chance:.1f} %: {said}.")
