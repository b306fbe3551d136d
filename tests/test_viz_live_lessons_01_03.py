"""Lessons 01–03's live plots beyond the registry's walk (tests/test_viz_live.py walks each
slider from the explorer's defaults): the controls it does not walk (lesson 02's scaling
checkbox), several values changed at once, which changes redraw the frame, and lesson 01's
cache (a radius step computes one curve, not five)."""
import matplotlib

matplotlib.use("Agg")

import matplotlib.pyplot as plt  # noqa: E402
import pytest  # noqa: E402
import torch  # noqa: E402

from course_lib.viz import rnn  # noqa: E402
from course_lib.viz.attention import AttentionExplorerPlot, ScalingPlot  # noqa: E402
from course_lib.viz.positional import SinusoidalOverviewPlot  # noqa: E402
from course_lib.viz.rnn import GradientNormPlot  # noqa: E402

from test_viz_live import assert_walk_matches as _walk, full_draws  # noqa: E402,F401


@pytest.fixture(autouse=True)
def _close():
    yield
    plt.close("all")


def test_scaling_checkbox_and_d_k_together():
    _walk(ScalingPlot(), [dict(d_k=d, scaled=s) for d in (1, 1024, 8) for s in (True, False, True)], "02 scaling")


def test_attention_query_and_temperature_together():
    tokens = "The animal didn't cross the street".split()
    scores = torch.randn(6, 6, generator=torch.Generator().manual_seed(1)) * 3
    _walk(AttentionExplorerPlot(tokens, scores),
          [dict(query=q, temperature=t) for q, t in ((5, 0.1), (2, 10.0), (0, 0.3), (3, 1.0))], "02 attention")


def test_gradient_plot_every_nonlinearity_at_several_radii_and_strengths():
    _walk(GradientNormPlot(), [dict(radius=r, nonlinearity=nl, input_scale=s)
                               for r, s in ((0.3, 2.0), (3.0, 0.0), (1.35, 1.1))
                               for nl in ("relu", "linear", "tanh")], "01")


def test_sinusoidal_shapes_and_base_together():
    _walk(SinusoidalOverviewPlot(), [dict(d_model=256, length=10, base=10.0), dict(d_model=8, length=400, base=1e5),
                                     dict(d_model=8, length=400, base=316.2), dict(d_model=136, length=200, base=1e4)],
          "03")


def test_sinusoidal_shapes_redraw_the_frame_and_the_base_only_blits(full_draws):
    draws = full_draws
    plot = SinusoidalOverviewPlot()
    fig = plot(d_model=64, length=100, base=1e4)
    for base in (10.0, 100.0, 1e5):
        assert plot(d_model=64, length=100, base=base) is fig
    assert len(draws) == 1, "a base step drew the whole figure"
    assert plot(d_model=16, length=100, base=1e5) is fig and len(draws) == 2       # new ticks: the frame again
    assert plot(d_model=16, length=30, base=1e5) is fig and len(draws) == 3
    assert fig.axes[0].images[0].get_array().shape == (16, 30) and fig.axes[1].images[0].get_array().shape == (30, 30)


def test_a_radius_step_computes_one_curve_and_a_linear_rnn_ignores_the_input_strength():
    rnn._jacobian_norms.cache_clear()
    plot = GradientNormPlot()
    plot(radius=1.0, nonlinearity="tanh", input_scale=0.7)
    misses = rnn._jacobian_norms.cache_info().misses
    plot(radius=1.45, nonlinearity="tanh", input_scale=0.7)             # the grey curves are kept
    assert rnn._jacobian_norms.cache_info().misses == misses + 1
    plot(radius=1.45, nonlinearity="linear", input_scale=0.7)
    misses = rnn._jacobian_norms.cache_info().misses
    plot(radius=1.45, nonlinearity="linear", input_scale=1.9)            # D_t = I: nothing to compute
    assert rnn._jacobian_norms.cache_info().misses == misses


def test_the_live_plots_refuse_bad_values_with_the_old_messages():
    with pytest.raises(ValueError, match="radius must be a positive number"):
        GradientNormPlot()(radius=0.0, nonlinearity="tanh", input_scale=0.5)
    with pytest.raises(ValueError, match="nonlinearity must be one of"):
        GradientNormPlot()(radius=1.0, nonlinearity="sigmoid", input_scale=0.5)
    with pytest.raises(ValueError, match="d_k must be a positive int"):
        ScalingPlot()(d_k=0, scaled=True)
    with pytest.raises(ValueError, match="base must be a number > 1"):
        SinusoidalOverviewPlot()(d_model=8, length=10, base=1.0)
