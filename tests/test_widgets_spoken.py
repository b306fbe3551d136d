"""What an explorer says (issue 37.2): a short caption that leads with what changed, symbols
in words (course_lib/widgets/_spoken.py), and the caption widget that answers the page's
"is a kernel there?" (_caption.py). The page's side is checked in Chromium
(tests/test_screen_reader.py, tests/test_browser.py)."""
import matplotlib

matplotlib.use("Agg")

import ipywidgets as W  # noqa: E402
import matplotlib.pyplot as plt  # noqa: E402

from course_lib.viz.describe import describe  # noqa: E402
from course_lib.widgets import _spoken  # noqa: E402
from course_lib.widgets._caption import NOT_LIVE, FigureCaption  # noqa: E402
from course_lib.widgets._wiring import live_figure  # noqa: E402

LONG = ("Gradient norm ‖∂h_t/∂h_0‖ against the step t = 0 … 100 (log scale) for σ = tanh, input strength "
        "0.50: with ρ = 1.00 (bold) it reaches 7.4e-13 at t = 100, where ρ^t is 1.00; the grey curves reach "
        "4.8e-40 for ρ = 0.5, 8.5e-17 for ρ = 0.9.")


def test_symbols_are_written_as_words():
    said = _spoken.in_words("gradient norm ‖∂α/∂s‖ 0.16 with √d_k, q·k, h₀, 𝑑 and ε = 0.1, 3 × 4, Wᵀ")
    assert said == ("gradient norm norm of d alpha over d s 0.16 with square root of d sub k, q dot k, "
                    "h sub 0, d and epsilon = 0.1, 3 by 4, W transposed")
    assert not _spoken.MATH_ITALIC.search(said) if hasattr(_spoken, "MATH_ITALIC") else True
    assert _spoken.in_words("d_model = 64") == "d model = 64"


def test_a_caption_leads_with_what_changed_and_stays_short():
    said = _spoken.caption(LONG, "spectral radius ρ of W 1.10")
    # Shown with the lesson's symbols, cut at a clause (never "…": issue 43), at most 30 words spoken.
    assert said.startswith("spectral radius ρ of W 1.10: Gradient norm ‖∂h_t/∂h_0‖"), said
    assert len(_spoken.in_words(said).split()) <= 30 and not said.endswith("…"), said
    assert not any(c in _spoken.in_words(said) for c in "‖∂ρσ")
    short = "Softmax of 4 scores at T = 0.50: 'cat' 0.86. They sum to 1."
    assert _spoken.caption(short, "temperature T 0.50") == f"temperature T 0.50: {short}"
    assert _spoken.caption("", "x 1") == ""


def test_a_cut_falls_on_a_clause_outside_brackets():
    text = ("plain, 12 blocks (freshly initialised): over 12 blocks (1 = nearest the input; log scales), the "
            "gradient norm of each block's parameters goes from 1.2e-13 at block 1 to 0.13 at block 12")
    said = _spoken.short(text, 20)
    assert said.endswith(".") and "…" not in said and said.count("(") == said.count(")"), said


def test_values_are_said_as_the_control_shows_them():
    assert _spoken.lead(W.FloatSlider(value=0.8, description="temperature T"), 1.25) == "temperature T 1.25"
    assert _spoken.lead(W.FloatLogSlider(value=1.0, description="T"), 1.12201845) == "T 1.12"
    assert _spoken.lead(W.IntSlider(value=3, description="seed"), 4) == "seed 4"
    assert _spoken.lead(W.SelectionSlider(options=[16, 64, 256], value=64, description="d_k"), 256) == "d_k 256"
    assert _spoken.lead(W.Dropdown(options=[("0: The", 0), ("1: cat", 1)], value=0, description="query"), 1) \
        == "query 1: cat"
    assert _spoken.lead(W.Checkbox(value=False, description="scaled"), True) == "scaled on"
    assert _spoken.lead(W.Textarea(value="a", description="prompt"), "b") == "prompt changed"


def _figure(x):
    fig, ax = plt.subplots(figsize=(2, 1))
    ax.plot([0, x])
    return describe(fig, f"A line up to {x}; it rises by {x} over one step, which is all it does in this picture.")


def test_the_explorer_says_the_changed_value_first_and_keeps_the_whole_description():
    w = live_figure(_figure, x=W.IntSlider(value=2, max=10, description="height"))
    assert w.caption.title == "Explorer: height"
    assert w.caption.said == "A line up to 2; it rises by 2 over one step, which is all it does in this picture."
    w.children[0].value = 7
    assert w.caption.text == "A line up to 7; it rises by 7 over one step, which is all it does in this picture."
    assert w.caption.said.startswith("height 7: A line up to 7") and len(w.caption.said.split()) <= 30
    assert live_figure(_figure, title="Explorer: a line", x=W.IntSlider()).caption.title == "Explorer: a line"
    plt.close("all")


def test_the_caption_answers_a_ping_and_its_page_says_not_live_without_one():
    caption = FigureCaption()
    sent = []
    caption.send = sent.append
    caption._answer(caption, {"ping": 123}, [])
    caption._answer(caption, {"something": "else"}, [])
    assert sent == [{"pong": 123}]
    esm = caption._esm
    # the page asks, and without an answer says so on every control and holds its keys
    for part in ("model.send({ ping", "msg:custom", "aria-disabled", "aria-describedby", "NOT_LIVE",
                 "tabindex", "aria-hidden", "stopPropagation", "text-transform: none", "<h4>" if False else "h4"):
        assert part in esm, part
    assert "Not live" in NOT_LIVE and "run this cell" in NOT_LIVE
