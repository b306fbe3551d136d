"""Every figure says what it shows, from its own data, and does not lean on colour alone (issue 28).

Each `course_lib.viz` function, called with the lesson-sized inputs of
tests/test_viz_readable.py, must return a Figure with a description (`describe`): a real
sentence, not nbconvert's placeholder, whose every number is supported by something the
figure draws (`unsupported_numbers`), so a description cannot go stale. Its series must
stay apart for viewers with any of the three colour-vision deficiencies
(tests/figure_access.py), and its colour maps must be perceptually uniform or
colour-blind safe.
"""
import base64

import matplotlib

matplotlib.use("Agg")

import matplotlib.pyplot as plt  # noqa: E402
import pytest  # noqa: E402
import torch  # noqa: E402

import course_lib.viz as viz  # noqa: E402
from course_lib.viz.describe import (  # noqa: E402
    describe, description, figure_mimebundle, is_placeholder, unsupported_numbers)
from course_lib.viz.palette import ALLOWED_CMAPS  # noqa: E402
from figure_access import contrast, low_contrast_texts, series_problems, worst_delta_e  # noqa: E402
from test_viz_readable import FIGURES, INPUTS  # noqa: E402


def _figure(name):
    torch.manual_seed(0)
    return getattr(viz, name)(**INPUTS.get(name, dict)())


@pytest.mark.parametrize("name", FIGURES)
def test_every_figure_is_described_from_its_data(name):
    fig = _figure(name)
    try:
        desc = description(fig)
        assert desc is not None, f"{name} returns a figure without describe(fig, text)"
        assert not is_placeholder(desc.text), f"{name}: {desc.text!r} says nothing with numbers"
        bad = unsupported_numbers(fig)
        assert not bad, f"{name}: numbers {bad} in its description are not drawn: {desc.text!r}"
    finally:
        plt.close(fig)


@pytest.mark.parametrize("name", FIGURES)
def test_every_figure_is_readable_without_colour(name):
    fig = _figure(name)
    try:
        problems = series_problems(fig)
        assert not problems, f"{name}: series told apart only by colour: {problems}"
        faint = low_contrast_texts(fig)
        assert not faint, f"{name}: texts below WCAG AA contrast on white: {faint[:5]}"
        cmaps = {im.get_cmap().name for ax in fig.axes for im in ax.images}
        assert cmaps <= ALLOWED_CMAPS, f"{name}: colour maps {cmaps - ALLOWED_CMAPS} are not colour-blind safe"
    finally:
        plt.close(fig)


def _weights_figure():
    fig, ax = plt.subplots()
    ax.bar(range(3), [0.6, 0.3, 0.1])
    return fig


def test_a_planted_wrong_number_is_caught():
    fig = describe(_weights_figure(), "Weights over 3 keys: 0.60, 0.30, 0.10.")
    assert unsupported_numbers(fig) == []
    describe(fig, "Weights over 3 keys: 0.61, 0.30, 0.10.")     # stale by 0.01
    assert unsupported_numbers(fig) == ["0.61"]
    describe(fig, "Weights over 3 keys: 0.6, 0.3, 0.1, summing to 1.00.", extra_values=[1.0])
    assert unsupported_numbers(fig) == []
    plt.close(fig)


def test_placeholders_and_empty_descriptions_are_refused():
    assert is_placeholder("No description has been provided for this image")
    assert is_placeholder("a heatmap")
    assert not is_placeholder("Attention of 'it' over 9 keys: 'animal' 0.60")
    with pytest.raises(ValueError, match="empty"):
        describe(_weights_figure(), "  ")
    plt.close("all")


def test_a_described_figure_carries_its_alt_in_metadata_and_html():
    fig = describe(_weights_figure(), 'Weights over 3 keys: "a" 0.60, <b> 0.30.',
                   table=(["key", "weight"], [["a", 0.6], ["b", 0.3], ["c", 0.1]]))
    data, meta = figure_mimebundle(fig)
    assert meta == {"image/png": {"alt": 'Weights over 3 keys: "a" 0.60, <b> 0.30.'}}
    assert base64.b64decode(data["image/png"])[:4] == b"\x89PNG"
    html = data["text/html"]
    assert 'alt="Weights over 3 keys: &quot;a&quot; 0.60, &lt;b&gt; 0.30."' in html
    assert '<th scope="col">weight</th>' in html and "<td>0.60</td>" in html
    plt.close(fig)
    assert figure_mimebundle(_weights_figure()) is None      # undescribed: IPython's own PNG
    plt.close("all")


def test_the_contrast_check_rejects_light_grey_text():
    assert contrast("black") == 21 and 4.5 <= contrast("#6E6E6E") < 5.2   # palette.GREY
    fig, ax = plt.subplots()
    ax.text(0.5, 0.5, "uniform", color="0.6")
    assert low_contrast_texts(fig) and "uniform" in low_contrast_texts(fig)[0]
    ax.texts[0].set_color("#6E6E6E")
    assert low_contrast_texts(fig) == []
    plt.close(fig)


def test_the_colour_check_rejects_red_green_and_accepts_styles():
    assert worst_delta_e("tab:red", "tab:green")[0] < 10
    fig, ax = plt.subplots()
    ax.plot([0, 1], color="tab:red", label="wrong")
    ax.plot([1, 0], color="tab:green", label="right")
    assert len(series_problems(fig)) == 1
    ax.lines[1].set_linestyle("--")
    assert series_problems(fig) == []
    plt.close(fig)
