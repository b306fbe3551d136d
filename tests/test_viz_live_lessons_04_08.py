"""Lessons 04, 05, 07 and 08's live plots beyond the registry's walk (tests/test_viz_live.py
walks each slider from the explorer's defaults): layouts that follow the data (05's tick
labels, 08's value past its panel) must not depend on the value the slider came from,
the frame is drawn again only when the panels moved, and a diagram's shapes are traced
once per set of sizes without touching torch's thread count."""
import matplotlib

matplotlib.use("Agg")

import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
import pytest  # noqa: E402
import torch  # noqa: E402

from course_lib.viz import encoder_decoder  # noqa: E402
from course_lib.viz.blocks import LayerProfilePlot  # noqa: E402
from course_lib.viz.encoder_decoder import EncoderDecoderDiagram  # noqa: E402
from course_lib.viz.heads import AttentionMaps  # noqa: E402
from course_lib.viz.translation import LabelSmoothingBars  # noqa: E402

from test_viz_live import assert_walk_matches as _walk, full_draws  # noqa: E402,F401


@pytest.fixture(autouse=True)
def _close():
    yield
    plt.close("all")


def test_label_smoothing_layout_does_not_depend_on_where_the_slider_came_from():
    # Near ε = 0.5 the value on the right reaches past its panel and constrained layout
    # narrows it; run from the previous ε's layout it lands a fraction of a pixel elsewhere.
    _walk(LabelSmoothingBars(), [dict(smoothing=s) for s in (0.1, 0.5, 0.46, 0.44, 0.46, 0.1, 0.48, 0.0)], "08")


def test_label_smoothing_draws_the_frame_only_when_the_panels_move(full_draws):
    plot = LabelSmoothingBars()
    plot(smoothing=0.1)
    full_draws.clear()
    for s in (0.0, 0.2, 0.3, 0.1):          # the value stays inside its panel: one layout
        plot(smoothing=s)
    assert full_draws == []
    plot(smoothing=0.5)                     # the panel narrows: a new frame
    assert len(full_draws) == 1


def _profile(wiring, depth):
    """Stand-in for a stack's profile: 'vanishing' gradients reach 1e-23 (wider tick labels)."""
    g = np.logspace(-23, 0, depth) if wiring == "vanishing" else np.full(depth, 0.5 if wiring == "flat" else 0.05)
    return g, np.linspace(0.1, 1.0, depth)


def test_layer_profile_follows_its_tick_labels_from_any_start(full_draws):
    plot = LayerProfilePlot(_profile, title=lambda wiring, depth: f"{wiring}, {depth} blocks")
    steps = [dict(wiring=w, depth=d) for w, d in [("flat", 6), ("vanishing", 24), ("flat", 24), ("vanishing", 6),
                                                  ("flat", 1), ("vanishing", 24), ("flat", 6)]]
    _walk(plot, steps, "05")
    full_draws.clear()
    for wiring in ("low", "flat", "low"):   # other curves, same ticks: the frame is kept
        plot(wiring=wiring, depth=6)
    assert full_draws == []
    plot(wiring="vanishing", depth=6)       # down to 1e-23: the y range is fixed, the frame is kept
    assert full_draws == []
    plot(wiring="flat", depth=24)           # more blocks: other x ticks, a new frame
    assert len(full_draws) == 1


def test_a_head_explorer_example_keeps_the_figure_and_lays_out_its_tokens():
    g = torch.Generator().manual_seed(0)
    weights = [torch.softmax(torch.randn(2, 2, 4, 4, generator=g), -1) for _ in range(2)]
    labels = [["a1", "b2", "a?", "b?"], ["c3", "dd4", "c?", "W?"]]        # other widths: another layout
    marks = {"previous token": torch.eye(4, dtype=torch.bool).roll(-1, 1).expand(2, 4, 4),
             "binding": torch.rand(2, 4, 4, generator=g) > 0.7}
    plot = AttentionMaps(weights, labels, marks, title=lambda example, layer, head: f"L{layer} H{head} ({example})")
    first = plot(example=0, layer=0, head=0)
    _walk(plot, [dict(example=e, layer=l, head=h) for e, l, h in [(1, 0, 1), (1, 1, 1), (0, 1, 0), (1, 0, 0)]], "04")
    assert plot(example=0, layer=0, head=0) is first


def test_the_diagram_traces_each_set_of_sizes_once_and_leaves_torch_threads_alone(monkeypatch):
    calls = []
    trace = encoder_decoder.trace_shapes
    monkeypatch.setattr(encoder_decoder, "trace_shapes", lambda **sizes: calls.append(sizes) or trace(**sizes))
    encoder_decoder._traced.cache_clear()
    threads = torch.get_num_threads()
    plot = EncoderDecoderDiagram()
    sizes = dict(batch=2, n_src=5, n_tgt=3, d_model=16, h=4, tgt_vocab=40)
    for batch in (2, 3, 2, 3):
        plot(**dict(sizes, batch=batch))
    assert len(calls) == 2 and calls[0]["d_ff"] == 64          # d_ff = 4 · d_model
    assert torch.get_num_threads() == threads
    with pytest.raises(ValueError, match="divisible"):
        plot(**dict(sizes, d_model=10))
    encoder_decoder._traced.cache_clear()
