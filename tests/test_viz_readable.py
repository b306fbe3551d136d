"""Every `course_lib.viz` figure is readable where a learner sees it (issue 15).

Where a figure is shown: JupyterLab's notebook column on a 1366×768 laptop screen with
the file browser open is about 950 px wide. The inline backend draws at figure.dpi (100,
matplotlib's default; matplotlib-inline sets no dpi of its own) with bbox_inches="tight",
and JupyterLab scales an image wider than the column down to the column. So a text of
s points is shown at  s · dpi / 72 · min(1, 950 / image width in px)  pixels.

The test renders each figure at its default size with inputs shaped like the lessons'
(the table below), records every text actually drawn, and fails on any smaller than
MIN_PX on screen. Functions are enumerated from `course_lib.viz.__all__`, so a new figure
is covered: one without defaults must get an entry in INPUTS (or NOT_FIGURES).
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

COLUMN_PX = 950       # JupyterLab notebook column, 1366×768, file browser open
DPI = 100             # inline backend: figure.dpi
# Smallest legible text on that screen: 7 pt at full size (9.7 px) is the smallest cell
# annotation the course uses; a 9 pt label on a 14 in figure shrunk to 68 % (8.5 px) is not.
MIN_PX = 9.5
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

# name -> a function returning the keyword arguments (lesson-sized inputs)
INPUTS = {
    "lookup_figure": lambda: dict(keys=[[1.0, 0.2], [0.3, 1.0], [-0.8, 0.4], [0.9, 0.9]],
                                  values=[1.0, 2.0, 3.0, 4.0], query=[1.0, 0.5],
                                  key_labels=["cat", "dog", "car", "cow"]),
    "scaling_figure": lambda: dict(d_values=[1, 4, 16, 64, 256, 1024], n_keys=16, **{
        k: {s: list(np.linspace(0.1, 1.0, 6)) for s in ("variance", "max_prob", "entropy", "grad_norm")}
        for k in ("raw", "scaled")}),
    "attention_matrix_heatmap": lambda: dict(weights=_rows(10, 10), tokens=_words(10)),
    "attention_explorer_view": lambda: dict(tokens=_words(10), scores=torch.randn(10, 10, generator=g)),
    "softmax_temperature_bars": lambda: dict(scores=[2.0, 1.0, 0.1, -1.0], labels=["a", "b", "c", "d"]),
    "fit_plot": lambda: dict(x=np.linspace(-2, 2, 50), target=np.sin(np.linspace(-2, 2, 50)),
                             lines={"linear": np.linspace(-1, 1, 50), "with ReLU": np.sin(np.linspace(-2, 2, 50))}),
    "grad_norm_vs_depth_plot": lambda: dict(depths=[1, 2, 4, 8, 16, 32],
                                            norms={"no residual": [1, .5, .1, 1e-2, 1e-4, 1e-7],
                                                   "residual": [1, 1, 1.1, 1.2, 1.3, 1.5]}),
    "loss_curves_plot": lambda: dict(curves={f"depth {d}, {r}": LOSS for d in (2, 8)
                                             for r in ("plain", "residual")}, chance=3.5),
    "stream_parts_plot": lambda: dict(names=["embed"] + [f"block {i} {p}" for i in range(6) for p in ("attn", "ffn")],
                                      sizes=list(np.linspace(1, 3, 13))),
    "layer_profile_plot": lambda: dict(grad_norms=list(np.logspace(-3, 0, 12)), stream_rms=list(np.logspace(0, 1, 12))),
    "attention_heatmap": lambda: dict(weights=_rows(6, 7), query_labels=["<bos>", "ein", "und", "zwanzig", "tausend", "drei"],
                                      key_labels=["twenty", "-", "one", "thousand", ",", "three", "<eos>"]),
    "family_attention_maps": lambda: dict(panels=[
        {"weights": _rows(12, 12), "q_tokens": list("314759|95741"), "k_tokens": list("314759|95741"),
         "title": f"{k}: self attn., L0 H1"} for k in ("encoder-only", "causal encoder", "decoder-only",
                                                       "encoder-decoder")]),
    "it_attention_grid": lambda: dict(weights=_rand(2, 2, 6, 12), sentences=["tired", "wide"], targets=["animal", "street"]),
    "head_pattern_grid": lambda: dict(labels=[["previous", "broad", "[CLS]", "next", "mixed", "[SEP]"] * 2] * 6,
                                      scores={k: _rand(6, 12) for k in ("previous", "broad", "[CLS]", "next", "[SEP]")}),
    "similarity_heatmap": lambda: dict(similarity=_rand(6, 6), labels=[
        "A man is eating food.", "A man is eating a piece of bread.", "The girl is carrying a baby.",
        "A man is riding a horse.", "A woman is playing violin.", "A monkey is playing drums."]),
    "attention_map": lambda: dict(weights=_rows(12, 12), labels=list("aAbBcCaAdDbB"), title="head 0",
                                  marks={"previous token": torch.eye(12, dtype=torch.bool).roll(-1, 1)}),
    "head_maps": lambda: dict(maps=[_rows(12, 12) for _ in range(3)], labels=list("aAbBcCaAdDbB"),
                              titles=["1 head: its only head", "2 heads: head 0", "2 heads: head 1"],
                              marks={"previous token": torch.eye(12, dtype=torch.bool).roll(-1, 1),
                                     "binding of the same letter": torch.eye(12, dtype=torch.bool).roll(1, 1)}),
    "heads_timing_plot": lambda: dict(heads=[1, 2, 4, 8, 16], times={"loop": [1e-3, 2e-3, 4e-3, 8e-3, 1.6e-2],
                                                                     "reshape": [1e-3] * 5}),
    "relation_scores_plot": lambda: dict(scores={"1 head": _rand(1, 1, 2), "2 heads": _rand(1, 2, 2)}),
    "induction_loss_curves": lambda: dict(history={"step": STEPS, "first": LOSS, "repeated": [x / 2 for x in LOSS]},
                                          vocab_size=32),
    "position_loss_plot": lambda: dict(curves={"step 0": _rand(20) * 4, "trained": _rand(20)}, period=10),
    "induction_score_grid": lambda: dict(scores={"previous-token score": _rand(2, 2), "induction score": _rand(2, 2)}),
    "induction_head_map": lambda: dict(weights=_rows(21, 21), tokens=["BOS"] + [str(i) for i in range(10)] * 2, period=10),
    "ablation_bars": lambda: dict(table={"none": (3.6, 0.3), "L0H0": (3.6, 0.8), "layer 0 (both)": (3.58, 4.0),
                                         "L1H0": (3.62, 1.43), "layer 1 (both)": (4.51, 4.57)}, vocab_size=32),
    "influence_maps": lambda: dict(maps={"with attention": _rand(10, 10), "all heads switched off": _rand(10, 10)}),
    "residual_contribution_bars": lambda: dict(values={n: (0.1, 1.0) for n in (
        "embed", "L0H0", "L0H1", "L0 bias", "L1H0", "L1H1", "L1 bias", "LN β + unembed bias")},
        ylabel="contribution to the correct token's logit", title="who writes the answer into the residual stream"),
    "head_weight_grid": lambda: dict(weights=_rand(30, 9), title="'it' -> 'animal'"),
    "generation_panel": lambda: dict(prompt="Once upon a time", continuation=" there was a little girl named Lily.",
                                     top_pieces=[" there", " in", ",", " a", " the"], top_probs=[.5, .2, .1, .1, .05],
                                     temperature=1.0, top_k=None),
    "cache_timing_plot": lambda: dict(with_cache=(list(range(1, 65)), [0.01] * 64),
                                      without_cache=(list(range(1, 65, 16)), [0.01 * i for i in range(1, 65, 16)])),
    "mask_grid": lambda: dict(masks=[causal_mask(14)[None].expand(1, 14, 14)[0] for _ in range(3)],
                              labels=[list("to be·········"), list("or not········"), list("to be: that is")],
                              titles=["'to be' (+9 pads)", "'or not' (+8 pads)", "'to be: that is' (+0 pads)"]),
    "masked_attention_panels": lambda: dict(scores=torch.randn(6, 6, generator=g), mask=causal_mask(6),
                                            labels=list("hello!")),
    "leakage_bars": lambda: dict(changes={"causal": torch.cat([torch.zeros(8), _rand(8)]),
                                          "no mask": _rand(16)}, first_changed=8),
    "extrapolation_figure": lambda: dict(lengths=list(range(4, 65, 4)),
                                         by_length={k: list(np.linspace(1, 0.2, 16)) for k in ("none", "sinusoidal", "learned")},
                                         by_position={k: list(np.linspace(1, 0.2, 64)) for k in ("none", "sinusoidal", "learned")},
                                         train_len=32, chance=0.1),
    "rotary_relative_figure": lambda: dict(scores=torch.randn(24, 24, generator=g)),
    "timing_figure": lambda: dict(lengths=[16, 32, 64, 128, 256, 512, 1024, 2048], d_model=64, times={
        "Python-loop RNN": list(np.logspace(-3, -1, 8)), "nn.RNN": list(np.logspace(-4, -2, 8)),
        "one self-attention layer": list(np.logspace(-4, -1.5, 8))}),
    "distance_figure": lambda: dict(distances=list(range(20, -1, -1)),
                                    norms={"RNN": list(np.logspace(-6, 0, 21)), "attention": [0.1] * 21}),
    "recall_figure": lambda: dict(ns=[4, 8, 16, 32, 64], accuracies={"RNN": [1, .9, .5, .2, .1], "attention": [1] * 5},
                                  chance=1 / 16),
    "next_token_bars": lambda: dict(probs=_rows(65), labels=[chr(32 + i) for i in range(65)]),
    "sample_panel": lambda: dict(prompt="ROMEO:", text="ROMEO:\nWhat say you, my lord? I will not be so bold\n" * 3,
                                 probs=_rows(65), labels=[chr(32 + i) for i in range(65)], temperature=0.8, top_k=10),
    "loss_curves": lambda: dict(histories={
        "ours": History(steps=STEPS, train_loss=LOSS, eval_steps=[100, 200, 300], eval_loss=LOSS[99::100]),
        "nn.TransformerEncoderLayer": History(steps=STEPS, train_loss=LOSS, eval_steps=[100, 200, 300],
                                              eval_loss=LOSS[99::100])}),
    "loss_curve": lambda: dict(history={"step": STEPS, "loss": LOSS}, resumed_at=150, floor=0.3),
    "cross_attention_grid": _cross_grid,
    "translation_figure": lambda: dict(zip(("model", "data"), _model_and_data()),
                                       text="seven hundred and seventy-seven thousand, seven hundred and seventy-seven",
                                       layer=1),
    "accuracy_by_length": lambda: dict(results={
        "half-trained": (list(range(1, 1000, 7)), [i % 11 != 0 for i in range(1, 1000, 7)]),
        "final": (list(range(1, 1000, 7)), [True] * len(range(1, 1000, 7)))},
        title="exact match on held-out numbers, by number of digits"),
}

FIGURES = sorted(n for n in viz.__all__ if n not in NOT_FIGURES)


def shown_texts(fig):
    """[(text, size in on-screen px)] for every non-empty text drawn, and the display scale."""
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
    renderer = fig.canvas.get_renderer()
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


@pytest.mark.parametrize("name", FIGURES)
def test_text_is_readable_in_the_notebook_column(name):
    torch.manual_seed(0)
    fig = getattr(viz, name)(**INPUTS.get(name, dict)())
    try:
        assert isinstance(fig, Figure), f"{name} returned {type(fig).__name__}, not a Figure"
        texts, scale = shown_texts(fig)
        assert texts, f"{name} drew no text at all"
        small = sorted({(round(px, 1), s[:30]) for s, px in texts if px < MIN_PX})
        assert not small, (f"{name}: {len(small)} texts under {MIN_PX} px when shown {scale:.0%} "
                           f"({fig.get_size_inches()[0]:.1f} in wide at {DPI} dpi in a {COLUMN_PX} px "
                           f"column): {small[:6]}")
        out = outside_canvas(fig)
        assert max(out) <= OUTSIDE_IN, (f"{name}: text or axes reach outside the figure by "
                                        f"(left, bottom, right, top) = {tuple(round(o, 2) for o in out)} in")
    finally:
        plt.close(fig)
