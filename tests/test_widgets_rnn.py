"""Lesson 01's figures and widget, without a kernel."""
import math

import matplotlib

matplotlib.use("Agg")

import matplotlib.pyplot as plt  # noqa: E402
import pytest  # noqa: E402
import torch  # noqa: E402

from course_lib.viz import (distance_figure, gradient_norm_figure, gradient_norm_view,  # noqa: E402
                            jacobian_norms, recall_figure, timing_figure)
from course_lib.viz.rnn import _base_problem  # noqa: E402
from course_lib.widgets import gradient_explorer  # noqa: E402


@pytest.fixture(autouse=True)
def one_thread():
    """Small models on a shared CPU: one thread is much faster, and restored afterwards."""
    before = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(before)


def _bold_curve(fig):
    """The y data of the widget's highlighted (thickest) curve."""
    line = max(fig.axes[0].get_lines(), key=lambda l: l.get_linewidth())
    return [round(float(y), 12) for y in line.get_ydata()]


def test_jacobian_norms_match_autograd():
    """The chain-rule product equals autograd's ∂h_n/∂h_0 through the same recurrence."""
    n, d, radius, scale = 12, 32, 0.9, 0.5
    W0, drive, h0 = _base_problem(d, n, 0)
    W = W0 * radius

    def h_n(h):
        for t in range(n):
            h = torch.tanh(W @ h + scale * drive[t])
        return h

    J = torch.autograd.functional.jacobian(h_n, h0)
    expected = torch.linalg.matrix_norm(J, ord=2).item()
    got = jacobian_norms(radius, "tanh", n=n, d=d, input_scale=scale)[-1].item()
    assert got == pytest.approx(expected, rel=1e-9)


def test_linear_norms_follow_the_spectral_radius():
    small, big = jacobian_norms(0.5, "linear"), jacobian_norms(1.1, "linear")
    assert small[0] == big[0] == 1.0
    assert small[-1] < 1e-20 < 1e3 < big[-1]           # vanishing vs exploding
    # geometric: the last 50 steps shrink by about 0.5^50
    assert (small[-1] / small[50]).item() == pytest.approx(0.5 ** 50, rel=0.5)


def test_tanh_never_exceeds_the_linear_bound_on_each_factor():
    # σ' <= 1, so every tanh factor is at most as large as W's: norms stay below ‖W‖^t.
    W0, _, _ = _base_problem(32, 100, 0)
    step = torch.linalg.matrix_norm(W0 * 1.1, ord=2).item()
    norms = jacobian_norms(1.1, "tanh")
    assert all(n <= step ** t * (1 + 1e-9) for t, n in enumerate(norms.tolist()))


def test_set_spectral_radius_is_what_the_base_problem_uses():
    W0, _, _ = _base_problem(32, 100, 0)
    assert torch.linalg.eigvals(W0).abs().max().item() == pytest.approx(1.0, rel=1e-9)


def test_moving_the_radius_slider_redraws_the_gradient_curve():
    w = gradient_explorer()
    radius, nonlinearity, strength = w.children[:3]
    w.update()
    before = _bold_curve(w.draw.last_figure)
    radius.value = 0.5
    after = _bold_curve(w.draw.last_figure)
    assert before != after and after[-1] < before[-1]
    nonlinearity.value = "linear"
    linear = _bold_curve(w.draw.last_figure)
    assert linear != after
    strength.value = 1.5                     # a linear RNN's Jacobian ignores the inputs
    assert _bold_curve(w.draw.last_figure) == linear
    plt.close("all")


def test_input_strength_matters_for_tanh():
    w = gradient_explorer(radius=2.0, nonlinearity="tanh", input_scale=0.0)
    w.update()
    before = _bold_curve(w.draw.last_figure)
    w.children[2].value = 1.5                # more saturation: the gradient shrinks
    after = _bold_curve(w.draw.last_figure)
    assert after[-1] < before[-1]
    plt.close("all")


def test_static_figures_draw():
    figs = [
        timing_figure([16, 32, 64], {"RNN": [1e-3, 2e-3, 4e-3], "one self-attention layer": [1e-4] * 3}, 64),
        gradient_norm_figure(radii=(0.5, 1.1), nonlinearities=("linear",), n=20),
        gradient_norm_view(1.0, "relu", n=20),
        distance_figure([2, 1, 0], {"RNN": [1e-3, 1e-2, 1.0], "attention": [0.1, 0.1, 0.2]}),
        recall_figure([2, 4, 8], {"RNN": [1.0, 0.5, 0.1], "attention": [1.0, 1.0, 1.0]}, chance=1 / 8),
    ]
    assert all(f.axes for f in figs)
    plt.close("all")


def test_measured_figures_keep_every_point_visible():
    """Issue 29: the wall-time legend covered the Python-loop RNN at n = 512, 1024 (legends now
    sit under their panels), and the RNN's 100 % markers hid under attention's (the earlier
    series is drawn as larger hollow rings around the later, filled markers)."""
    lengths = [16, 32, 64, 128, 256, 512, 1024, 2048]
    fig = timing_figure(lengths, {"RNN": [n * 1e-5 for n in lengths], "one self-attention layer": [1e-4] * 8}, 64)
    fig.canvas.draw()
    for ax in fig.axes:
        legend = ax.get_legend().get_window_extent()
        assert legend.y1 < ax.get_window_extent().y0                # entirely below the panel
    fig = recall_figure([2, 4, 8], {"RNN": [1.0, 1.0, 0.1], "attention": [1.0, 1.0, 1.0]}, chance=1 / 8)
    rnn, attention = fig.axes[0].lines[:2]
    assert rnn.get_markerfacecolor() == "none" and rnn.get_markersize() > attention.get_markersize()
    assert attention.get_zorder() > rnn.get_zorder()


@pytest.mark.parametrize("call, message", [
    (lambda: timing_figure([16], {"RNN": [1.0]}, 64), "at least 2 values"),
    (lambda: timing_figure([16, 32], {"RNN": [1.0]}, 64), "has 1 values for 2"),
    (lambda: jacobian_norms(0.0), "radius must be a positive number"),
    (lambda: jacobian_norms(1.0, "sigmoid"), "nonlinearity must be one of"),
    (lambda: jacobian_norms(1.0, n=0), "n must be a positive int"),
    (lambda: gradient_norm_figure(radii=()), "at least one spectral radius"),
    (lambda: recall_figure([1, 2], {"RNN": [1.0, 1.0]}, chance=0), "chance must be a probability"),
    (lambda: distance_figure([1, 2], {}), "must map a label"),
])
def test_bad_arguments_are_named(call, message):
    with pytest.raises(ValueError, match=message):
        call()
    plt.close("all")


def test_gradient_figure_axis_shows_growth_and_names_the_curves_it_cuts():
    """Issue 38 §2: an axis from 1e-40 to 1e5 flattened the exploding ρ = 1.1 curve. The axis
    spans at most MAX_DECADES decades, no decade above the largest value is left empty (the axis
    once ran to 1e12 with no data above 1e4), and a curve that falls out of the plot says where
    it ends, in a text on the figure."""
    from course_lib.viz.rnn import MAX_DECADES

    radii, n = (0.5, 1.1), 100
    fig = gradient_norm_figure(radii=radii, nonlinearities=("linear", "tanh"), n=n)
    low, high = fig.axes[0].get_ylim()
    values = torch.cat([jacobian_norms(r, nl, n) for r in radii for nl in ("linear", "tanh")])
    values = values[values > 0]
    assert values.max().item() <= high <= 10 * values.max().item()
    assert round(math.log10(high / low)) <= MAX_DECADES
    grows = jacobian_norms(1.1, "linear", n)
    assert math.log10(grows[-1].item()) - math.log10(grows[0].item()) >= 0.15 * math.log10(high / low), \
        "the exploding curve should rise over a visible part of the axis"
    notes = [t.get_text() for ax in fig.axes for t in ax.texts]
    for r, nl in ((0.5, "linear"), (0.5, "tanh")):
        end = jacobian_norms(r, nl, n)[-1].item()
        assert end < low and any(f"ρ = {r:g} ↓" in t and f"at t = {n}" in t for t in notes), notes
    plt.close("all")
