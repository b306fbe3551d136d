"""Every `course_lib.viz` figure is readable where a learner sees it (issues 15 and 38).

Where a figure is shown: JupyterLab's notebook column on a 1366×768 laptop screen with
the file browser open gives a figure 913 px. The inline backend draws at figure.dpi (100,
matplotlib's default; matplotlib-inline sets no dpi of its own) with bbox_inches="tight",
and JupyterLab scales an image wider than the column down to the column. So a text of
s points is shown at  s · dpi / 72 · min(1, 913 / image width in px)  pixels.

The test renders each figure at its default size with the lessons' inputs (the table
below: the sizes, labels and parameters each lesson passes), records every text actually
drawn — annotations, ticks, legends, colour-bar labels — and fails on any smaller than
8 pt as shown. Every colour bar has a label, and every colour-mapped image has a colour
bar that says what its colours mean (a two-valued mask says it in a legend instead).
Functions are enumerated from `course_lib.viz.__all__`, so a new figure is covered: one
without defaults must get an entry in INPUTS (or NOT_FIGURES).
"""
import inspect

import matplotlib

matplotlib.use("Agg")

import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
import pytest  # noqa: E402
import torch  # noqa: E402
from matplotlib.figure import Figure  # noqa: E402
from matplotlib.text import Text  # noqa: E402

import course_lib.viz as viz  # noqa: E402
from course_lib.nn.attention import causal_mask  # noqa: E402
from course_lib.nn.training import History  # noqa: E402

COLUMN_PX = 913       # the width JupyterLab gives a figure at 1366×768, file browser open (measured in
                      # Chromium by tests/test_browser.py's explorer-fit test, which fails if it is less)
DPI = 100             # inline backend: figure.dpi
# Smallest text a learner should have to read (issue 38): 8 pt at the size the notebook shows it,
# i.e. a font of s points on a figure shown at scale k counts as s·k points.
MIN_PT = 8.0
MIN_PX = MIN_PT * DPI / 72 - 1e-6
OUTSIDE_IN = 0.1      # text drawn more than this outside the canvas is cut off wherever the
                      # figure is not saved with bbox_inches="tight" (widget redraws, savefig)

# Data helpers, not figures (or draw into a given Axes: covered through their callers).
NOT_FIGURES = {"softmax_saturation", "trace_shapes", "jacobian_norms", "draw_attention"}

g = torch.Generator().manual_seed(0)


def _rand(*shape):
    return torch.rand(*shape, generator=g)


def _rows(*shape):
    return torch.softmax(torch.randn(*shape, generator=g) * 2, dim=-1)


def _words(n):
    return ["[CLS]", "the", "animal", "didn", "'", "t", "cross", "the", "street", "because", "it",
            "was", "too", "tired", "[SEP]"][:n]


def _model_and_data():
    from course_lib.data.translation import NumberTranslationData
    from course_lib.experiments.translator import TrainState, TranslatorConfig
    data = NumberTranslationData()
    cfg = TranslatorConfig(d_model=16, h=4, d_ff=32, n_enc=2, n_dec=2)
    return TrainState.fresh(data, cfg).model.eval(), data


def _cross_grid():
    from course_lib.experiments.translator_eval import translate
    model, data = _model_and_data()
    r = translate(model, data, "777777")
    return dict(cross=r["cross"], src_tokens=r["source"], out_tokens=r["pieces"] + ["<eos>"])


STEPS = list(range(1, 301))
LOSS = list(3.5 * np.exp(-np.arange(300) / 60) + 0.3 + 0.05 * np.random.default_rng(0).random(300))

TIRED = "The animal didn't cross the street because it was too tired".split()
SENTENCES = ["A man is playing a guitar on stage.", "Someone performs music with a guitar in front of an audience.",
             "The train to Berlin was cancelled this morning.", "This morning's rail service to Berlin did not run.",
             "How do I reset my password?", "I forgot my login and need a new password.",
             "The cat is sleeping on the warm windowsill.", "A kitten naps in the sun by the window."]
EXTRAPOLATION_KINDS = ("none", "sinusoidal", "learned", "rotary")


def _series(n, lo=1.0, hi=0.2):
    return list(np.linspace(lo, hi, n))


# name -> a function returning the keyword arguments: the lesson's own call (its sizes, labels,
# titles and parameters; the data random where the lesson's come from training). A function a
# lesson calls twice with other shapes has its second call in MORE_INPUTS.
INPUTS = {
    # lesson 02 cell 7
    "lookup_figure": lambda: dict(keys=torch.tensor([[2.0, 1.0], [1.5, -0.5], [-1.0, 1.0], [-1.5, -1.0]]),
                                  values=torch.tensor([4.0, 30.0, 2.0, 5.0]), query=torch.tensor([1.8, 0.6]),
                                  key_labels=["cat", "dog", "chicken", "snake"], query_label="kitten", unit="kg"),
    # lesson 02 cell 25
    "scaling_figure": lambda: dict(d_values=[1, 2, 4, 8, 16, 32, 64, 128, 256, 512, 1024], n_keys=16, **{
        k: {s: list(np.linspace(0.1, 1.0, 11)) for s in ("variance", "max_prob", "entropy", "grad_norm")}
        for k in ("raw", "scaled")}),
    # lesson 02 cell 40
    "attention_matrix_heatmap": lambda: dict(weights=_rows(11, 11), tokens=TIRED, title="hand-set self-attention"),
    "attention_explorer_view": lambda: dict(tokens=_words(10), scores=torch.randn(10, 10, generator=g)),
    # lesson 00 cell 7
    "softmax_temperature_bars": lambda: dict(scores=[2.0, 1.0, 0.5, -1.0], labels=["cat", "dog", "car", "sky"],
                                             temperature=1.0),
    # lesson 05 cells 15, 17, 33, 42
    "fit_plot": lambda: dict(x=torch.linspace(-2, 2, 101), target=torch.linspace(-2, 2, 101).abs(),
                             lines={"best affine map": torch.full((101,), 0.67),
                                    "one FFN": torch.linspace(-2, 2, 101).abs() + 0.02},
                             points={"4 attention layers (8 tokens)": (torch.rand(800, generator=g) * 4 - 2,
                                                                       torch.rand(800, generator=g) * 2)}),
    "grad_norm_vs_depth_plot": lambda: dict(depths=[1, 2, 4, 8, 12, 16, 24],
                                            norms={"plain": [1, .5, .1, 1e-2, 1e-4, 1e-6, 1e-9],
                                                   "residual only": [1, 1, 1.1, 1.2, 1.3, 1.4, 1.5]}),
    "loss_curves_plot": lambda: dict(curves={n: LOSS[:80] for n in ("plain", "LayerNorm only", "residual only",
                                                                     "residual + LayerNorm (pre-norm)")},
                                     chance=2 * np.log(5), title="12 blocks, Adam lr 0.01"),
    "stream_parts_plot": lambda: dict(names=["embedding"] + [f"block {i} {p}" for i in range(12) for p in ("attn", "ffn")],
                                      sizes=list(np.linspace(1, 3, 25)),
                                      title="trained pre-norm stack: RMS size of each part of the final stream"),
    "layer_profile_plot": lambda: dict(grad_norms=list(np.logspace(-3, 0, 12)), stream_rms=list(np.logspace(0, 1, 12))),
    # lesson 07 cell 10
    "attention_heatmap": lambda: dict(weights=_rows(3, 2), query_labels=["ein", "und", "zwanzig"],
                                      key_labels=["twenty", "one"], xlabel="English source (keys, values)",
                                      ylabel="German position (queries)", title="cross-attention with hand-made queries"),
    # lesson 09 cell 7 (cell 36 in MORE_INPUTS)
    "family_attention_maps": lambda: dict(panels=[
        {"weights": _rows(12, 12), "q_tokens": list("314759|95741"), "k_tokens": list("314759|95741"),
         "title": f"{k}: self attn., L0 H1"} for k in ("encoder-only", "causal encoder", "decoder-only",
                                                       "encoder-decoder")]),
    "it_attention_grid": lambda: dict(weights=_rand(2, 2, 6, 12), sentences=["tired", "wide"], targets=["animal", "street"]),
    "head_pattern_grid": lambda: dict(labels=[["previous", "broad", "[CLS]", "next", "mixed", "[SEP]"] * 2] * 6,
                                      scores={k: _rand(6, 12) for k in ("previous", "broad", "[CLS]", "next", "[SEP]")},
                                      title="all-MiniLM-L6-v2: the dominant pattern of each head"),
    # lesson 09 cell 45
    "similarity_heatmap": lambda: dict(similarity=_rand(8, 8) * 1.1 - 0.1,
                                       labels=[f"{i}: {s}" for i, s in enumerate(SENTENCES)]),
    "attention_map": lambda: dict(weights=_rows(12, 12), labels=list("aAbBcCaAdDbB"), title="head 0",
                                  marks={"previous token": torch.eye(12, dtype=torch.bool).roll(-1, 1)}),
    "head_maps": lambda: dict(maps=[_rows(12, 12) for _ in range(3)], labels=list("aAbBcCaAdDbB"),
                              titles=["1 head: its only head", "2 heads: head 0", "2 heads: head 1"],
                              marks={"previous token": torch.eye(12, dtype=torch.bool).roll(-1, 1),
                                     "binding of the same letter": torch.eye(12, dtype=torch.bool).roll(1, 1)}),
    # lesson 04 cells 31, 48
    "heads_timing_plot": lambda: dict(heads=[1, 2, 4, 8, 16, 32],
                                      times={"loop over heads": [1e-4 * 2 ** i for i in range(6)],
                                             "heads as a batch axis": [1e-4 * 1.5 ** i for i in range(6)]},
                                      title="b=4, n=32, d_model=64, 1 thread"),
    "relation_scores_plot": lambda: dict(scores={"1 head": _rand(1, 1, 2), "2 heads": _rand(1, 2, 2),
                                                 "2 layers × 2 heads": _rand(2, 2, 2)},
                                         title="where each head looks (mean over 500 test sequences)"),
    "induction_loss_curves": lambda: dict(history={"step": STEPS, "first": LOSS, "repeated": [x / 2 for x in LOSS]},
                                          vocab_size=32),
    # lesson 10 cell 16
    "position_loss_plot": lambda: dict(curves={"trained": _rand(20) * 4, "untrained": _rand(20) + 3}, period=10,
                                       vocab_size=32),
    "induction_score_grid": lambda: dict(scores={"previous-token score": _rand(2, 2), "induction score": _rand(2, 2)}),
    "induction_head_map": lambda: dict(weights=_rows(21, 21), tokens=["BOS"] + [str(i) for i in range(10)] * 2, period=10,
                                       title="layer 1, head 0 on one test sequence"),
    "ablation_bars": lambda: dict(table={"none": (3.6, 0.3), "L0H0": (3.6, 0.8), "layer 0 (both)": (3.58, 4.0),
                                         "L1H0": (3.62, 1.43), "layer 1 (both)": (4.51, 4.57)}, vocab_size=32),
    "influence_maps": lambda: dict(maps={"with attention": _rand(10, 10), "all heads switched off": _rand(10, 10)}),
    "residual_contribution_bars": lambda: dict(values={n: (0.1, 1.0) for n in (
        "embed", "L0H0", "L0H1", "L0 bias", "L1H0", "L1H1", "L1 bias", "LN β + unembed bias")},
        ylabel="contribution to the correct token's logit", title="who writes the answer into the residual stream"),
    # lesson 11 cell 54 (cell 61 in MORE_INPUTS)
    "head_weight_grid": lambda: dict(weights=_rand(30, 9) * 0.75,
                                     title='"it" → "animal", every layer and head ("... too tired"); boxed: the 3 largest'),
    "generation_panel": lambda: dict(prompt="Once upon a time", continuation=" there was a little girl named Lily.",
                                     top_pieces=[" there", " in", ",", " a", " the"], top_probs=[.5, .2, .1, .1, .05],
                                     temperature=1.0, top_k=None),
    # lesson 11 cell 79
    "cache_timing_plot": lambda: dict(with_cache=(list(range(9, 109)), [0.05] * 100),
                                      without_cache=([8, 128, 256, 384, 512], [0.09, 0.2, 0.4, 0.6, 0.96])),
    "mask_grid": lambda: dict(masks=[causal_mask(14)[None].expand(1, 14, 14)[0] for _ in range(3)],
                              labels=[list("to be·········"), list("or not········"), list("to be: that is")],
                              titles=["'to be' (+9 pads)", "'or not' (+8 pads)", "'to be: that is' (+0 pads)"]),
    # lesson 06 cells 14, 33 (mask_grid: cell 26; cell 6 in MORE_INPUTS)
    "masked_attention_panels": lambda: dict(scores=torch.randn(8, 8, generator=g) * 2, mask=causal_mask(8),
                                            labels=list("to be or")),
    "leakage_bars": lambda: dict(changes={"DecoderOnlyLM (causal mask)": torch.cat([torch.zeros(10), _rand(6)]),
                                          "same network, no mask": _rand(16)}, first_changed=10),
    # lesson 03 cells 48, 55, 10, 12, 26
    "extrapolation_figure": lambda: dict(lengths=list(range(2, 33, 2)),
                                         by_length={k: _series(16) for k in EXTRAPOLATION_KINDS},
                                         by_position={k: _series(32) for k in EXTRAPOLATION_KINDS},
                                         train_len=16, chance=1 / 16),
    "rotary_relative_figure": lambda: dict(scores=torch.randn(40, 40, generator=g), max_offset=12),
    "sinusoidal_heatmap": lambda: dict(d_model=64, length=100),
    "dimension_curves": lambda: dict(dims=(0, 1, 10, 11, 40), d_model=64, length=100),
    "rotation_figure": lambda: dict(k=3, d_model=16, pair=1, length=20),
    # lesson 01 cells 13, 18, 27, 34
    "timing_figure": lambda: dict(lengths=[16, 32, 64, 128, 256, 512, 1024, 2048], d_model=64, times={
        "RNN, Python loop (ElmanRNN)": list(np.logspace(-3, -1, 8)), "RNN, C++ loop (nn.RNN)": list(np.logspace(-4, -2, 8)),
        "one self-attention layer": list(np.logspace(-4, -1.5, 8))}),
    "gradient_norm_figure": lambda: dict(radii=(0.5, 0.9, 1.0, 1.1), nonlinearities=("linear", "tanh"), n=100),
    "distance_figure": lambda: dict(distances=list(range(63, -1, -1)),
                                    norms={"RNN (ElmanRNN)": list(np.logspace(-9, 0, 64)),
                                           "one self-attention layer": [0.1] * 64}),
    "recall_figure": lambda: dict(ns=[2, 4, 8, 16, 32], accuracies={"RNN": [1, 1, 1, .13, .11],
                                                                   "one attention layer": [1] * 5}, chance=1 / 8),
    "next_token_bars": lambda: dict(probs=_rows(65), labels=[chr(32 + i) for i in range(65)]),
    "sample_panel": lambda: dict(prompt="ROMEO:", text="ROMEO:\nWhat say you, my lord? I will not be so bold\n" * 3,
                                 probs=_rows(65), labels=[chr(32 + i) for i in range(65)], temperature=0.8, top_k=10),
    # lesson 06 cell 52
    "loss_curves": lambda: dict(histories=History(steps=STEPS, train_loss=LOSS, eval_steps=list(range(20, 301, 20)),
                                                  eval_loss=LOSS[19::20]), smooth=20,
                                reference={"uniform (ln V)": np.log(65), "unigram": 3.3, "bigram": 2.5}),
    "loss_curve": lambda: dict(history={"step": STEPS, "loss": LOSS}, resumed_at=150, floor=0.3),
    "cross_attention_grid": _cross_grid,
    "translation_figure": lambda: dict(zip(("model", "data"), _model_and_data()),
                                       text="seven hundred and seventy-seven thousand, seven hundred and seventy-seven",
                                       layer=1),
    "accuracy_by_length": lambda: dict(results={
        "half-trained": (list(range(1, 1000, 7)), [i % 11 != 0 for i in range(1, 1000, 7)]),
        "final": (list(range(1, 1000, 7)), [True] * len(range(1, 1000, 7)))},
        title="held-out numbers translated wrong, by number of digits"),
}

# Second calls of a function, with other shapes: (name, id, keyword arguments).
MORE_INPUTS = [
    ("mask_grid", "06-cell-6", lambda: dict(masks=causal_mask(8), labels=list("to be or"),
                                             titles=["causal mask: blue = may attend"])),
    ("family_attention_maps", "09-cell-36", lambda: dict(panels=[
        {"weights": _rows(n_q, 14), "q_tokens": (["[CLS]"] + TIRED + [".", "[SEP]"])[:n_q],
         "k_tokens": ["[CLS]"] + TIRED + [".", "[SEP]"], "title": f"{name}: L{k} H{k + 3} (0.{k + 5}{k})"}
        for k, (name, n_q) in enumerate((("previous", 14), ("next", 14), ("[CLS]", 14), ("broad", 12)))])),
    ("head_weight_grid", "11-cell-61", lambda: dict(
        weights=_rand(30, 9) * 0.46, highlight=[(4, 2), (5, 1), (9, 7)],
        title='"wide" → "street" ("... too wide"); boxed: the 3 heads that gain most over "tired"')),
    ("loss_curves_plot", "05-cell-39", lambda: dict(curves={n: LOSS[:80] for n in (
        "pre-norm, lr 0.01", "post-norm, lr 0.01", "post-norm, lr 0.001")}, chance=2 * np.log(5),
        title="12 blocks, no warm-up")),
    ("translation_figure", "08-cell-57", lambda: dict(zip(("model", "data"), _model_and_data()),
                                                      text="twenty-one", layer=1)),
]

FIGURES = sorted(n for n in viz.__all__ if n not in NOT_FIGURES)


def drawn_texts(fig):
    """(renderer, [Text]) for every visible, non-empty text the figure draws (at DPI)."""
    drawn = []
    original = Text.draw

    def record(self, renderer):
        if self.get_visible() and self.get_text().strip():
            drawn.append(self)
        return original(self, renderer)

    Text.draw = record
    try:
        fig.set_dpi(DPI)
        fig.canvas.draw()
    finally:
        Text.draw = original
    return fig.canvas.get_renderer(), drawn


def shown_texts(fig):
    """[(text, size in on-screen px)] for every non-empty text drawn, and the display scale."""
    renderer, drawn = drawn_texts(fig)
    width_px = (fig.get_tightbbox(renderer).width + 2 * 0.1) * DPI     # bbox_inches="tight", pad 0.1 in
    scale = min(1.0, COLUMN_PX / width_px)
    return [(t.get_text(), t.get_fontsize() * DPI / 72 * scale) for t in drawn], scale


def outside_canvas(fig):
    """How far (inches) the drawn content reaches beyond each edge: (left, bottom, right, top)."""
    box = fig.get_tightbbox(fig.canvas.get_renderer())
    w, h = fig.get_size_inches()
    return -box.x0, -box.y0, box.x1 - w, box.y1 - h


def test_every_viz_function_is_in_the_table_or_has_defaults():
    missing = []
    for name in FIGURES:
        params = inspect.signature(getattr(viz, name)).parameters.values()
        if name not in INPUTS and any(p.default is p.empty for p in params):
            missing.append(name)
    assert not missing, f"add lesson-sized inputs to INPUTS in {__file__} for: {missing}"


# Every figure once with its lesson's inputs, and the second calls.
CALLS = [pytest.param(name, INPUTS.get(name, dict), id=name) for name in FIGURES] + [
    pytest.param(name, kwargs, id=f"{name}[{where}]") for name, where, kwargs in MORE_INPUTS]


def _draw(name, kwargs):
    torch.manual_seed(0)
    fig = getattr(viz, name)(**kwargs())
    assert isinstance(fig, Figure), f"{name} returned {type(fig).__name__}, not a Figure"
    return fig


@pytest.mark.parametrize("name, kwargs", CALLS)
def test_text_is_readable_in_the_notebook_column(name, kwargs):
    fig = _draw(name, kwargs)
    try:
        texts, scale = shown_texts(fig)
        assert texts, f"{name} drew no text at all"
        small = sorted({(round(px * 72 / DPI, 1), s[:30]) for s, px in texts if px < MIN_PX})
        assert not small, (f"{name}: {len(small)} texts under {MIN_PT:g} pt when shown at {scale:.0%} "
                           f"({fig.get_size_inches()[0]:.1f} in wide at {DPI} dpi in a {COLUMN_PX} px "
                           f"column), (pt as shown, text): {small[:6]}")
        out = outside_canvas(fig)
        assert max(out) <= OUTSIDE_IN, (f"{name}: text or axes reach outside the figure by "
                                        f"(left, bottom, right, top) = {tuple(round(o, 2) for o in out)} in")
    finally:
        plt.close(fig)


def colour_scale_problems(fig) -> list[str]:
    """Colour bars without a label, and colour-mapped images no colour bar explains.

    An image is explained by a colour bar drawn for the same colour map and the same range
    (one bar may serve several panels). An image of two values (a mask) may instead say
    what its two colours mean in a legend."""
    from matplotlib.collections import QuadMesh

    bars = [ax._colorbar for ax in fig.axes if getattr(ax, "_colorbar", None) is not None]
    problems = []
    for bar in bars:
        label = (bar.ax.get_ylabel() if bar.orientation == "vertical" else bar.ax.get_xlabel()).strip()
        if not label:
            problems.append(f"a colour bar ({bar.mappable.get_cmap().name}) has no label")
    keys = {(b.mappable.get_cmap().name, b.mappable.norm.vmin, b.mappable.norm.vmax) for b in bars}
    legend = bool(fig.legends) or any(ax.get_legend() for ax in fig.axes)
    for ax in fig.axes:
        if getattr(ax, "_colorbar", None) is not None:
            continue
        for im in list(ax.images) + [c for c in ax.collections if isinstance(c, QuadMesh)]:
            data = im.get_array()
            if data is None or np.ndim(data) == 3:        # an RGB picture: no colour scale
                continue
            key = (im.get_cmap().name, im.norm.vmin, im.norm.vmax)
            two_valued = np.unique(np.ma.compressed(np.ma.asarray(data))).size <= 2
            if key not in keys and not (two_valued and legend):
                problems.append(f"panel {ax.get_title()[:40]!r}: colours ({key[0]}, {key[1]:.3g} … {key[2]:.3g}) "
                                f"that no colour bar explains")
    return problems


@pytest.mark.parametrize("name, kwargs", CALLS)
def test_every_colour_scale_is_explained(name, kwargs):
    fig = _draw(name, kwargs)
    try:
        problems = colour_scale_problems(fig)
        assert not problems, f"{name}: " + "; ".join(problems)
    finally:
        plt.close(fig)


SMALL_GRID = 32      # up to this many rows (columns), a heatmap labels every one: nobody counts to row 13


def unlabelled_rows(fig) -> list[str]:
    """Heatmaps of at most SMALL_GRID rows (or columns) that leave some of them without a label.
    Panels that share an axis may label it once, on the outer panel: a row or column counts as
    labelled if any image of the same size labels it."""
    from matplotlib.collections import QuadMesh

    labelled = {"y": {}, "x": {}}
    sizes = []
    for ax in fig.axes:
        if getattr(ax, "_colorbar", None) is not None:
            continue
        for im in list(ax.images) + [c for c in ax.collections if isinstance(c, QuadMesh)]:
            data = im.get_array()
            if data is None or np.ndim(data) != 2:
                continue
            n_rows, n_cols = np.shape(data)
            sizes.append((ax.get_title()[:40], n_rows, n_cols))
            for axis, ticks in (("y", ax.get_yticklabels()), ("x", ax.get_xticklabels())):
                shown = {round(t.get_position()[1 if axis == "y" else 0]) for t in ticks
                         if t.get_visible() and t.get_text().strip()}
                key = n_rows if axis == "y" else n_cols
                labelled[axis][key] = labelled[axis].get(key, set()) | shown
    problems = []
    for title, n_rows, n_cols in sizes:
        for axis, n in (("y", n_rows), ("x", n_cols)):
            missing = n <= SMALL_GRID and not set(range(n)) <= labelled[axis].get(n, set())
            if missing:
                what = "rows" if axis == "y" else "columns"
                problems.append(f"panel {title!r}: {len(labelled[axis].get(n, set()) & set(range(n)))} of its "
                                f"{n} {what} labelled")
    return sorted(set(problems))


@pytest.mark.parametrize("name, kwargs", CALLS)
def test_every_row_of_a_small_grid_is_labelled(name, kwargs):
    fig = _draw(name, kwargs)
    try:
        fig.canvas.draw()
        problems = unlabelled_rows(fig)
        assert not problems, f"{name}: " + "; ".join(problems)
    finally:
        plt.close(fig)


def test_the_checks_catch_small_text_and_an_unlabelled_colour_bar():
    fig, ax = plt.subplots(figsize=(4, 3))
    im = ax.imshow(np.eye(3) * 0.7, cmap="viridis")
    ax.text(0, 0, "0.70", fontsize=7)
    assert [s for s, px in shown_texts(fig)[0] if px < MIN_PX] == ["0.70"]
    assert colour_scale_problems(fig) and "no colour bar" in colour_scale_problems(fig)[0]
    bar = fig.colorbar(im, ax=ax)
    assert colour_scale_problems(fig) == ["a colour bar (viridis) has no label"]
    bar.set_label("weight")
    assert colour_scale_problems(fig) == []
    fig.canvas.draw()
    assert unlabelled_rows(fig) == []                    # 3 × 3: matplotlib labels 0, 1, 2
    ax.imshow(np.eye(30), cmap="viridis")                # 30 layers with a tick every 5
    ax.set_yticks(range(0, 30, 5))
    fig.canvas.draw()
    assert any("of its 30 rows labelled" in p for p in unlabelled_rows(fig))
    plt.close(fig)
    fig, ax = plt.subplots(figsize=(14, 3))             # 14 in = 1400 px, shown at 65 %
    ax.set_title("a 9 pt title", fontsize=9)
    assert "a 9 pt title" in [s for s, px in shown_texts(fig)[0] if px < MIN_PX]
    plt.close(fig)
