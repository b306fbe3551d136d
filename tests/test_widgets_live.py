"""The explorers' wiring (course_lib/widgets/_wiring.py): the latest value wins.

In a kernel the figure is drawn by a worker thread; here the same code runs with
`threaded=True`, so a burst of changes, a streaming answer and an error are checked
without a browser (the browser test and benchmarks/widget_latency.py see it in JupyterLab).
"""
import re
import threading
import time

import matplotlib

matplotlib.use("Agg")

import ipywidgets as W  # noqa: E402
import matplotlib.pyplot as plt  # noqa: E402
import pytest  # noqa: E402
import torch  # noqa: E402

from course_lib.data.shakespeare import CharVocab  # noqa: E402
from course_lib.nn.decoding import generate_text  # noqa: E402
from course_lib.nn.models import DecoderOnlyLM  # noqa: E402
from course_lib.widgets import sampling_explorer  # noqa: E402
from course_lib.widgets._wiring import LiveFigure, Superseded, live_figure  # noqa: E402

PNG = b"\x89PNG\r\n\x1a\n"


def _status(w):
    m = re.search(r'data-wanted="(\d+)" data-shown="(\d+)" data-final="([01])"', w.status.value)
    return tuple(int(g) for g in m.groups())


def _figure(value):
    fig, ax = plt.subplots(figsize=(2, 1))
    ax.set_title(f"value {value}")
    return fig


def _title(w):
    return w.draw.last_figure.axes[0].get_title()


class SlowViz:
    """A viz function that takes `seconds` and records every value it was asked for."""

    def __init__(self, seconds=0.15):
        self.seconds, self.calls = seconds, []

    def __call__(self, x):
        self.calls.append(x)
        time.sleep(self.seconds)
        return _figure(x)


def test_without_a_kernel_every_change_is_drawn_at_once():
    viz = SlowViz(0)
    w = live_figure(viz, x=W.IntSlider(value=0, max=10))
    assert isinstance(w, LiveFigure) and "widget-interact" in w._dom_classes
    assert bytes(w.image.value).startswith(PNG) and _title(w) == "value 0"
    w.children[0].value = 3
    assert _title(w) == "value 3" and viz.calls == [0, 3]
    assert _status(w) == (1, 1, 1)
    w.update()
    assert viz.calls == [0, 3, 3]


def test_going_back_to_a_value_sends_new_bytes():
    # JupyterLab's widget manager drops an Image value equal to one it showed before, so
    # T 1.00 -> 1.12 -> 1.00 left the 1.12 figure on screen: each drawing is new bytes.
    from PIL import Image
    import io

    w = live_figure(_figure, value=W.IntSlider(value=0, max=10))
    slider, sent = w.children[0], []
    w.image.observe(lambda change: sent.append(bytes(change["new"])), names="value")
    for v in (1, 0, 1, 0):
        slider.value = v
    assert len(sent) == 4 and len(set(sent)) == 4, "every change must reach the browser"
    pixels = [Image.open(io.BytesIO(b)).convert("RGB").tobytes() for b in sent]
    assert pixels[0] == pixels[2] and pixels[1] == pixels[3] and pixels[0] != pixels[1]


def test_a_burst_draws_the_last_value_and_skips_those_left_behind():
    viz = SlowViz(0.15)
    slider = W.IntSlider(value=0, max=10)
    w = live_figure(viz, threaded=True, x=slider)
    start = time.monotonic()
    for value in range(1, 7):                      # six presses, faster than one drawing
        slider.value = value
    handled = time.monotonic() - start
    # Waiting for the drawings would take 6 × 0.15 = 0.9 s; handing over takes milliseconds alone
    # and took 0.106 s once beside the whole suite (the worker's drawing holds the GIL).
    assert handled < 0.45, f"six changes took {handled:.3f} s to hand over: they must not wait for drawing"
    assert w.wait(10)
    assert _title(w) == "value 6" and _status(w) == (6, 6, 1)
    # the worker takes the newest value each time it starts: at most one drawing before the
    # last (the value newest when it woke), none of the values left behind while it drew
    assert viz.calls[0] == 0 and viz.calls[-1] == 6 and len(viz.calls) <= 3, viz.calls
    assert viz.calls == sorted(viz.calls), viz.calls


def test_the_status_says_updating_until_the_figure_catches_up():
    gate = threading.Event()

    def viz(x):
        if x:
            gate.wait(5)
        return _figure(x)

    slider = W.IntSlider(value=0, max=10)
    w = live_figure(viz, threaded=True, x=slider)
    slider.value = 1
    time.sleep(0.05)
    assert _status(w) == (1, 0, 1) and "updating" in w.status.value
    gate.set()
    assert w.wait(5) and _status(w) == (1, 1, 1) and "updating" not in w.status.value


def test_a_stream_shows_a_first_answer_then_is_abandoned_for_a_newer_value():
    shown, finished = [], []

    def viz(show, x):
        show(lambda: _figure(f"{x} first"))
        for step in range(40):
            time.sleep(0.01)
            show()                                  # raises Superseded once x is left behind
        finished.append(x)
        return _figure(f"{x} done")

    slider = W.IntSlider(value=0, max=10)
    w = live_figure(viz, streams=True, threaded=True, x=slider)
    assert finished == [0]                          # the first figure is drawn to the end
    slider.value = 1
    deadline = time.monotonic() + 5
    while _title(w) != "value 1 first" and time.monotonic() < deadline:
        time.sleep(0.005)
    assert _title(w) == "value 1 first" and _status(w)[1:] == (1, 0)   # shown, not final
    slider.value = 2                                # mid-stream: 1 is dropped
    assert w.wait(5)
    assert finished == [0, 2] and _title(w) == "value 2 done" and _status(w) == (2, 2, 1)


def test_without_a_kernel_a_stream_skips_its_partial_figures():
    built = []

    def viz(show, x):
        show(lambda: built.append(x) or _figure(x))
        return _figure(f"{x} done")

    w = live_figure(viz, streams=True, x=W.IntSlider(value=0))
    assert built == [] and _title(w) == "value 0 done"


def test_an_error_is_shown_in_one_line_and_the_last_figure_stays():
    def viz(x):
        if x == 5:
            raise ValueError("x must not be 5")
        return _figure(x)

    slider = W.IntSlider(value=0, max=10)
    w = live_figure(viz, threaded=True, x=slider)
    before = w.image.value
    slider.value = 5
    assert w.wait(5)
    assert "ValueError: x must not be 5" in w.status.value and w.image.value == before
    slider.value = 6
    assert w.wait(5) and _title(w) == "value 6" and "Error" not in w.status.value
    with pytest.raises(ValueError, match="must not be 5"):    # without a kernel: raised
        live_figure(viz, x=W.IntSlider(value=5, max=10))


def test_superseded_is_what_show_raises():
    assert issubclass(Superseded, Exception)


VOCAB = CharVocab.from_text("ROMEO:\nabcdefghijklmnop ,.")


def test_lesson_06_sampler_streams_and_ends_on_the_text_of_the_last_settings():
    torch.manual_seed(0)
    model = DecoderOnlyLM(len(VOCAB), d_model=16, h=2, d_ff=32, n_layers=1, max_len=16)
    w = sampling_explorer(model, VOCAB, length=200)
    w._threaded = True                              # as in a kernel
    controls = {c.description: c for c in w.children if getattr(c, "description", "")}
    for seed in (1, 2, 3, 4):
        controls["seed"].value = seed
    assert w.wait(180)
    text = w.draw.last_figure.axes[1].texts[0].get_text().replace("\n", "")
    expected = generate_text(model, VOCAB, "ROMEO:\n", 200, 0.8, None, 4).replace("\n", "")
    assert text.startswith(expected[:60]), (text[:80], expected[:80])
    assert _status(w) == (4, 4, 1)


# ------------------------------------------------------------------ the PNG the page shows

def test_the_png_is_cropped_to_the_ink_at_the_figures_dpi():
    from PIL import Image
    import io

    from course_lib.widgets._wiring import figure_png

    fig, ax = plt.subplots(figsize=(4, 3), dpi=100)
    ax.plot([0, 1], [0, 1])
    png = figure_png(fig)
    width, height = Image.open(io.BytesIO(png)).size
    assert png.startswith(PNG) and width <= 400 and height <= 300
    assert width > 300 and height > 200                 # the axes fill most of the canvas
    blank = plt.figure(figsize=(2, 1))                  # no ink at all: the whole canvas
    assert Image.open(io.BytesIO(figure_png(blank))).size == (200, 100)


def _explorers():
    """Every explorer without a model to run (06's and 11's stream), built small."""
    from course_lib.experiments.induction import AttentionOnlyTransformer, repeated_sequences
    from course_lib.experiments.toy_tasks import BindingModel, bindings_batch
    from course_lib.widgets import (attention_explorer, depth_explorer, gradient_explorer, head_explorer,
                                    induction_head_browser, label_smoothing_explorer, pretrained_head_explorer,
                                    scaling_explorer, shapes_explorer, sinusoidal_explorer, temperature_explorer)
    tokens = "The animal didn't cross the street".split()

    def heads_04():
        torch.manual_seed(0)
        model = BindingModel(d_model=16, h=2, n_layers=2)
        return head_explorer(model, bindings_batch(3, 12, torch.Generator().manual_seed(0)).tokens)

    def families_09():
        g = torch.Generator().manual_seed(0)
        attn = {"a": torch.softmax(torch.randn(2, 3, 4, 4, generator=g), -1),
                "b": torch.softmax(torch.randn(2, 3, 5, 5, generator=g), -1)}
        return pretrained_head_explorer(attn, {"a": list("wxyz"), "b": list("vwxyz")},
                                        labels=[["broad"] * 3, ["[CLS]", "previous", "mixed"]])

    def induction_10():
        torch.manual_seed(0)
        model = AttentionOnlyTransformer(9, d_model=8, h=2, n_layers=2, max_len=11)
        return induction_head_browser(model, repeated_sequences(3, 5, 8, generator=torch.Generator().manual_seed(0)),
                                      period=5)

    return {"00": temperature_explorer, "01": gradient_explorer, "02 scaling": scaling_explorer,
            "02 attention": lambda: attention_explorer(tokens, torch.randn(6, 6, generator=torch.Generator().manual_seed(0))),
            "03": sinusoidal_explorer, "04": heads_04, "05": depth_explorer, "07": shapes_explorer,
            "08": label_smoothing_explorer, "09": families_09, "10": induction_10}


@pytest.mark.parametrize("name", list(_explorers()))
def test_nothing_an_explorer_draws_lies_outside_its_canvas(name):
    """The PNG is one draw of the canvas (no second, measuring draw as with a tight bbox),
    so whatever lies outside the canvas would be cut: nothing may, at either end of the
    first control's range (5 px of slack: a descender)."""
    w = _explorers()[name]()
    control = w.children[0]
    ends = ([control.options[0], control.options[-1]] if hasattr(control, "options") and control.options
            else [control.min, control.max])
    for value in ends:
        control.value = value[1] if isinstance(value, tuple) else value
        fig = w.draw.last_figure
        x0, y0, x1, y1 = fig.get_tightbbox().extents
        width, height = fig.get_size_inches()
        slack = 0.05
        assert x0 >= -slack and y0 >= -slack and x1 <= width + slack and y1 <= height + slack, \
            f"{name} at {value}: drawn {x0:.2f}..{x1:.2f} × {y0:.2f}..{y1:.2f} in, canvas {width} × {height} in"
        plt.close("all")


def test_a_figure_without_an_agg_canvas_is_drawn_too():
    # In a kernel's worker thread a figure sometimes came without the backend's canvas.
    from matplotlib.figure import Figure
    from PIL import Image
    import io

    from course_lib.widgets._wiring import figure_png

    fig = Figure(figsize=(2, 1), dpi=100)               # a FigureCanvasBase, no buffer_rgba
    fig.add_subplot().plot([0, 1], [1, 0])
    png = figure_png(fig, serial=7)
    image = Image.open(io.BytesIO(png))
    assert png.startswith(PNG) and image.size[0] <= 200 and image.text["course-live-figure"] == "7"


def test_a_figure_closed_under_the_worker_is_drawn_once_more():
    calls = []

    def viz(x):
        calls.append(x)
        if len(calls) == 2:          # pyplot reset the canvas while tight_layout ran
            raise AttributeError("'FigureCanvasBase' object has no attribute 'get_renderer'")
        return _figure(x)

    w = live_figure(viz, x=W.IntSlider(value=0, max=10))
    w.children[0].value = 4
    assert calls == [0, 4, 4] and _title(w) == "value 4" and _status(w) == (1, 1, 1)


def test_the_caption_says_what_the_figure_shows_and_follows_the_slider():
    """The caption (the picture's alt and the live text, widgets/_caption.py) is the
    figure's description for the value shown; a figure without one leaves it empty."""
    from course_lib.viz.describe import describe

    def described(x):
        fig = _figure(x)
        return describe(fig, f"A line at value {x}.")

    w = live_figure(described, x=W.IntSlider(value=2, max=10))
    assert w.children[-2] is w.caption and w.caption.text == "A line at value 2."
    w.children[0].value = 7
    assert w.caption.text == "A line at value 7."
    assert "role" in w.caption._esm and 'aria-live", "polite"' in w.caption._esm
    plain = live_figure(_figure, value=W.IntSlider(value=2, max=10))
    assert plain.caption.text == ""
