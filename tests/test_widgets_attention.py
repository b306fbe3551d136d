"""Lesson 02's figures and widgets, without a kernel."""
import math

import matplotlib

matplotlib.use("Agg")

import matplotlib.pyplot as plt  # noqa: E402
import pytest  # noqa: E402
import torch  # noqa: E402

from course_lib.exercises.lesson02 import ATTENTION  # noqa: E402
from course_lib.viz import (attention_explorer_view, attention_matrix_heatmap, lookup_figure,  # noqa: E402
                            scaling_figure, scaling_view, softmax_saturation)
from course_lib.viz.describe import description  # noqa: E402
from course_lib.widgets import attention_explorer, scaling_explorer  # noqa: E402

TOKENS = ["the", "cat", "sat", "on", "it"]


@pytest.fixture(autouse=True)
def one_thread():
    before = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(before)
    plt.close("all")


def _bars(fig, ax=0):
    return [round(p.get_height(), 6) for p in fig.axes[ax].patches if hasattr(p, "get_height")
            and type(p).__name__ == "Rectangle" and p.get_width() < 1.5]


# ------------------------------------------------------------------ measurements

def test_unscaled_score_variance_grows_like_d_k_and_scaling_undoes_it():
    for d in (4, 64, 512):
        raw, scaled = softmax_saturation(d, scaled=False), softmax_saturation(d, scaled=True)
        assert raw["variance"] == pytest.approx(d, rel=0.2)
        assert scaled["variance"] == pytest.approx(1.0, rel=0.2)


def test_unscaled_softmax_saturates_and_its_gradient_vanishes():
    small, big = softmax_saturation(2, scaled=False), softmax_saturation(1024, scaled=False)
    assert big["max_prob"] > 0.9 > small["max_prob"]
    assert big["entropy"] < 0.3 < small["entropy"]
    assert big["grad_norm"] < small["grad_norm"] / 3
    # with scaling the statistics do not depend on d_k
    a, b = softmax_saturation(2, scaled=True), softmax_saturation(1024, scaled=True)
    assert a["max_prob"] == pytest.approx(b["max_prob"], abs=0.1)
    assert b["entropy"] <= math.log(16)


def test_attention_trials_include_masked_and_unmasked_calls():
    masks = [args[3] for args in ATTENTION._inputs()]
    assert any(m is None for m in masks) and any(m is not None for m in masks)


# ------------------------------------------------------------------ widgets

def test_the_explorers_score_std_follows_sqrt_d_k():
    """Issue 45: the explorer printed std 18.2 at d_k = 128 and 17.8 at 256 (a new random query
    per value), right after the lesson's "std ≈ √d_k". Its std is now the one over many queries:
    rising with d_k, within 10 % of √d_k; near 1 whatever d_k with the scaling."""
    import re

    from course_lib.viz.attention import D_K_CHOICES, ScalingPlot
    plot = ScalingPlot()
    stds = {sc: [float(re.search(r"score std ([\d.]+)", plot.describe(d, sc)["text"]).group(1))
                 for d in D_K_CHOICES] for sc in (False, True)}
    assert all(a < b for a, b in zip(stds[False], stds[False][1:])), stds[False]
    for d, std in zip(D_K_CHOICES, stds[False]):
        assert std == pytest.approx(math.sqrt(d), rel=0.1), (d, std)
    assert all(abs(std - 1) < 0.1 for std in stds[True]), stds[True]


def test_d_k_slider_and_scaling_toggle_redraw_the_weights():
    w = scaling_explorer(d_k=4, scaled=False)
    d_k, scaled = w.children[:2]
    w.update()
    small = _bars(w.draw.last_figure)
    d_k.value = 1024
    big = _bars(w.draw.last_figure)
    assert small != big and max(big) > max(small)        # no scaling: larger d_k, sharper
    scaled.value = True
    tamed = _bars(w.draw.last_figure)
    assert max(tamed) < max(big)
    assert sum(tamed) == pytest.approx(1.0, abs=1e-4)


def test_query_and_temperature_redraw_the_explorer():
    scores = torch.arange(25, dtype=torch.float32).reshape(5, 5) % 7 - 3.0
    w = attention_explorer(TOKENS, scores, query=0)
    query, temperature = w.children[:2]
    w.update()
    first = _bars(w.draw.last_figure)
    query.value = 4
    other = _bars(w.draw.last_figure)
    assert first != other
    assert other == pytest.approx(torch.softmax(scores[4], 0).tolist(), abs=1e-5)
    temperature.value = 0.1
    sharp = _bars(w.draw.last_figure)
    assert max(sharp) > max(other)
    heat = w.draw.last_figure.axes[1].images[0].get_array()
    assert heat.shape == (5, 5)


def test_explorer_refuses_scores_of_the_wrong_size():
    with pytest.raises(ValueError, match=r"scores must be \(5, 5\)"):
        attention_explorer(TOKENS, torch.zeros(4, 4))


# ------------------------------------------------------------------ figures

def test_lookup_figure_reports_hard_and_soft_answers():
    fig = lookup_figure([[1.0, 0.0], [0.0, 1.0]], [10.0, 20.0], [12.0, 0.0], ["a", "b"])
    labels = [t.get_text() for t in fig.axes[1].get_legend().get_texts()]
    assert "returns 10.00" in labels[0] and "returns 10.00" in labels[1]   # soft ≈ hard here


def test_lookup_figure_says_the_values_unit():
    """Issue 29: "returns 4.00 / 7.66" did not say kg."""
    fig = lookup_figure([[1.0, 0.0], [0.0, 1.0]], [4.0, 30.0], [2.0, 0.0], ["cat", "dog"], unit="kg")
    labels = [t.get_text() for t in fig.axes[1].get_legend().get_texts()]
    assert all(label.endswith(" kg") for label in labels)
    assert "v=4 kg" in [t.get_text() for t in fig.axes[0].texts][0]
    assert description(fig).text.count(" kg") == 2


def test_scaling_figure_labels_the_top_of_a_short_log_axis():
    """Issue 29: the gradient panel spans less than a decade (0.05 … 0.31) and was labelled only
    0.05, 0.1, 0.2: the top of the data had no label near it."""
    d_values = [1, 2, 4, 8, 16, 32, 64, 128, 256, 512, 1024]
    raw = {k: [] for k in ("variance", "max_prob", "entropy", "grad_norm")}
    scaled = {k: [] for k in raw}
    for d in d_values:
        for stats, s in ((raw, False), (scaled, True)):
            for k, v in softmax_saturation(d, scaled=s).items():
                stats[k].append(v)
    fig = scaling_figure(d_values, raw, scaled)
    ticks = fig.axes[3].get_yticks()
    top = max(raw["grad_norm"] + scaled["grad_norm"])
    assert max(ticks) >= 0.9 * top and max(ticks) <= fig.axes[3].get_ylim()[1], (ticks, top)


def test_static_figures_draw():
    stats = {k: [1.0, 2.0] for k in ("variance", "max_prob", "entropy", "grad_norm")}
    figs = [scaling_figure([1, 2], stats, stats), scaling_view(8, True),
            attention_matrix_heatmap(torch.eye(3), ["a", "b", "c"], highlight=1),
            attention_explorer_view(TOKENS, torch.zeros(5, 5), query=2, temperature=0.5)]
    assert all(f.axes for f in figs)


@pytest.mark.parametrize("call, message", [
    (lambda: lookup_figure([[1.0, 2.0, 3.0]], [1.0], [1.0, 1.0], ["a"]), "keys must have 2 columns"),
    (lambda: lookup_figure([[1.0, 2.0]], [1.0, 2.0], [1.0, 1.0], ["a"]), "values must be 1 numbers"),
    (lambda: lookup_figure([[1.0, 2.0]], [1.0], [1.0], ["a"]), "query must be 2 numbers"),
    (lambda: lookup_figure([[1.0, 2.0]], [1.0], [1.0, 1.0], ["a", "b"]), "2 key_labels for 1 rows"),
    (lambda: softmax_saturation(0), "d_k must be a positive int"),
    (lambda: softmax_saturation(4, n_keys=1), "n_keys must be an int >= 2"),
    (lambda: scaling_figure([1, 2], {}, {}), "raw is missing 'variance'"),
    (lambda: attention_matrix_heatmap(torch.eye(2), ["a"]), "1 tokens for 2 rows"),
    (lambda: attention_matrix_heatmap(torch.eye(2), ["a", "b"], highlight=5), "highlight must be a row index"),
    (lambda: attention_explorer_view(TOKENS, torch.zeros(5, 5), temperature=0), "temperature must be > 0"),
    (lambda: attention_explorer_view(TOKENS, torch.zeros(5, 5), query=9), "query must be a token index"),
    (lambda: attention_explorer_view(TOKENS[:2], torch.zeros(3, 2)), "scores must be square"),
])
def test_bad_arguments_are_named(call, message):
    with pytest.raises(ValueError, match=message):
        call()
