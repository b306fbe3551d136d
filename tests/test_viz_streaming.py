"""Lessons 06 and 11's streaming explorers on live plots (issue 22): a partial answer is a
blit over the kept frame, not a new figure, and shows the picture of the plain figure.

`SamplePanel` (sample_panel) and `GenerationPanel` (generation_panel) are walked along a
text that grows and the changes a learner makes (T, top-k, T = 0, the prompt); the
explorers run threaded, as in a kernel, with a tiny model.
"""
import threading

import matplotlib

matplotlib.use("Agg")

import ipywidgets as W  # noqa: E402
import matplotlib.pyplot as plt  # noqa: E402
import pytest  # noqa: E402
import torch  # noqa: E402
from matplotlib.backends.backend_agg import FigureCanvasAgg, RendererAgg  # noqa: E402

import course_lib.widgets.llm as llm_widget  # noqa: E402
import course_lib.widgets.sampling as sampling_widget  # noqa: E402
from course_lib.data.shakespeare import CharVocab  # noqa: E402
from course_lib.nn.decoding import next_token_probs  # noqa: E402
from course_lib.nn.generation import generate_text  # noqa: E402
from course_lib.nn.llama import LlamaConfig, LlamaLM  # noqa: E402
from course_lib.nn.models import DecoderOnlyLM  # noqa: E402
from course_lib.viz.llm import GenerationPanel, generation_panel  # noqa: E402
from course_lib.viz.sampling import SamplePanel, sample_panel  # noqa: E402
from course_lib.widgets import llm_generation_explorer, sampling_explorer  # noqa: E402
from course_lib.widgets._wiring import Superseded, figure_png, live_figure  # noqa: E402

from test_viz_live import assert_same_picture, full_draws  # noqa: E402,F401
from test_widgets_llm import CHARS, CharTokenizer, SpecialCharTokenizer  # noqa: E402

LABELS = list("ROMEO:\nabcdefghijklmnopqrstuvwxyzABCDFGHIJKLNPQSTUVWXYZ ,.;!?'-&3$")
# Glyphs taller or deeper than a plain line ($, Å, |, brackets) move the lines under them
# in matplotlib's multi-line layout: the live text, drawn line by line, must follow.
SAMPLE = ("ROMEO:\nWhat say you, my lord? I will not be so bold\nTo tell thee (what) I think of it, $3 & Å.\n" * 4
          + "x" * 150)
CONTINUATION = " far away. But, in fact, the [animal] was | {just} standing in front of a trash can, É." * 3
PROMPT = "The animal didn't cross the street because it was too"
PIECES = [" hot", " tired", " far", " busy", "<|endoftext|>", " big", " dangerous", " close", " much", " cold",
          " afraid", " small", " late", " slow", " heavy"]


@pytest.fixture
def draws(full_draws):
    """Whole-figure draws (FigureCanvasAgg.draw) from here on."""
    return full_draws


def _sample_values(prompt, T, k, cut, pending):
    logits = torch.randn(len(LABELS), generator=torch.Generator().manual_seed(0)) * 2
    text = (prompt + SAMPLE[7:])[:cut]
    return dict(prompt=prompt, text=text, probs=next_token_probs(logits, T, k), temperature=T, top_k=k,
                pending=pending)


def _growing(length, start, step):
    """Cut points of a text that grows: start, start + step, …, the whole of it."""
    return [*range(start, length, step), length]


def test_lesson_06_live_panel_shows_the_plain_figure_as_the_sample_grows_and_settings_change():
    plot = SamplePanel(LABELS)
    for prompt, T, k in [("ROMEO:\n", 0.8, None), ("ROMEO:\n", 1.4, None), ("ROMEO:\n", 1.4, 5), ("ROMEO:\n", 1.4, 9),
                         ("ROMEO:\n", 0.0, None), ("", 0.8, None), ("ROMEO:\n", 0.8, None)]:
        length = len(prompt) + len(SAMPLE) - 7
        # the first settings: the sample as it grows past the 16 lines shown; then its start
        cuts = _growing(length, len(prompt), 130) if T == 0.8 and k is None else [len(prompt), len(prompt) + 90]
        for cut in cuts:
            for pending in (True, False) if cut == length else (True,):
                v = _sample_values(prompt, T, k, cut, pending)
                plain = sample_panel(v["prompt"], v["text"], v["probs"], LABELS, T, k, pending=pending)
                assert_same_picture(plot(**v), plain, f"06, prompt {prompt!r}, T {T}, top-k {k}, {cut} characters")
                plt.close(plain)


def _generation_values(prompt, T, k, n, cut, pending):
    probs = torch.softmax(torch.randn(15, generator=torch.Generator().manual_seed(1)), 0).sort(descending=True).values
    probs = probs.tolist()[:n] + [0.0] * (15 - n)
    return dict(prompt=prompt, continuation=CONTINUATION[:cut], top_pieces=PIECES, top_probs=probs, temperature=T,
                top_k=k, special=[p == "<|endoftext|>" for p in PIECES], pending=pending)


def test_lesson_11_live_panel_shows_the_plain_figure_as_the_text_grows_and_settings_change():
    plot = GenerationPanel()
    for prompt, T, k, n in [(PROMPT, 0.8, 50, 15), (PROMPT, 1.3, 50, 15), (PROMPT, 0.0, 50, 1), (PROMPT, 0.9, 3, 3),
                            ("Once", 0.9, 3, 3), (PROMPT, 0.8, 50, 15)]:
        # the first settings: the continuation as it grows past the 14 lines shown; then its start
        for cut in _growing(len(CONTINUATION), 0, 65) if (prompt, T) == (PROMPT, 0.8) else [0, 90]:
            for pending in (True, False) if cut == len(CONTINUATION) else (True,):
                v = _generation_values(prompt, T, k, n, cut, pending)
                plain = generation_panel(**v)
                assert_same_picture(plot(**v), plain, f"11, prompt {prompt!r}, T {T}, top-k {k}, {cut} characters")
                plt.close(plain)


def test_a_growing_text_and_a_new_temperature_redraw_no_frame(draws):
    plot = GenerationPanel()
    first = plot(**_generation_values(PROMPT, 0.8, 50, 15, 0, True))
    for cut in _growing(len(CONTINUATION), 5, 17):                 # a continuation streams in
        assert plot(**_generation_values(PROMPT, 0.8, 50, 15, cut, cut < len(CONTINUATION))) is first
    plot(**_generation_values(PROMPT, 1.2, 50, 15, 0, True))       # a new T: the same pieces
    assert len(draws) == 1, f"the whole figure drawn {len(draws)} times"
    plot(**_generation_values(PROMPT, 0.0, 50, 1, 0, True))        # one bar: a new layout
    assert len(draws) == 2

    plot = SamplePanel(LABELS)
    first = plot(**_sample_values("ROMEO:\n", 0.8, None, 7, True))
    for cut in _growing(len(SAMPLE), 8, 23):
        assert plot(**_sample_values("ROMEO:\n", 0.8, None, cut, cut < len(SAMPLE))) is first
    plot(**_sample_values("ROMEO:\n", 1.5, None, 7, True))
    assert len(draws) == 3
    plot(**_sample_values("ROMEO:\n", 1.5, 4, 7, True))            # zero bars: an x label, a new layout
    plot(**_sample_values("ROMEO:\n", 1.5, 6, 7, True))            # other characters under the bars: the frame
    assert len(draws) == 5
    plt.close("all")


def test_lines_already_shown_are_copied_back_not_rendered_again(monkeypatch):
    rendered = []
    draw_text = RendererAgg.draw_text
    monkeypatch.setattr(RendererAgg, "draw_text", lambda self, gc, x, y, s, *a, **k: (
        rendered.append(s), draw_text(self, gc, x, y, s, *a, **k))[1])
    plot = GenerationPanel(width=30)
    v = _generation_values(PROMPT, 0.8, 50, 15, 60, True)
    plot(**v)
    rendered.clear()
    fig = plot(**v)
    assert rendered == [], rendered
    before, old = figure_png(fig), fig.axes[1].texts[0].get_text().split("\n")
    v["continuation"] += " and so"                                 # the text grows at its end
    new = plot(**v).axes[1].texts[0].get_text().split("\n")
    assert len(new) > 2 and rendered == [line for i, line in enumerate(new) if i >= len(old) or old[i] != line]
    v["continuation"] = v["continuation"][:-7]                      # back: every line was shown before
    rendered.clear()
    assert figure_png(plot(**v)) == before and rendered == []
    plt.close("all")


def _controls(w):
    return {c.description: c for c in w.children if getattr(c, "description", "")}


VOCAB = CharVocab.from_text("ROMEO:\nabcdefghijklmnop ,.")


def _explorer_06():
    torch.manual_seed(0)
    model = DecoderOnlyLM(len(VOCAB), d_model=16, h=2, d_ff=32, n_layers=1, max_len=16)
    return sampling_explorer(model, VOCAB, length=60)


def _tiny_llama():
    torch.manual_seed(0)
    model = LlamaLM(LlamaConfig(vocab_size=len(CHARS), d_model=16, n_layers=2, h=2, h_kv=1, d_ff=24, max_len=128))
    with torch.no_grad():
        model.embed.weight.mul_(0.5)
    return model.eval()


def _explorer_11():
    return llm_generation_explorer(_tiny_llama(), SpecialCharTokenizer(), prompt="Once", tokens=40)


@pytest.mark.parametrize("lesson", ["06", "11"])
def test_streaming_partial_answers_are_blits_on_one_figure(lesson, monkeypatch, draws):
    # every token a partial answer, as a slow model on a laptop would show them
    monkeypatch.setattr(sampling_widget, "STREAM_EVERY", 0.0)
    monkeypatch.setattr(llm_widget, "STREAM_EVERY", 0.0)
    w = _explorer_06() if lesson == "06" else _explorer_11()
    w._threaded = True                                  # as in a kernel: partial answers are shown
    shown = []
    w.image.observe(lambda change: shown.append(w.draw.last_figure), names="value")
    before = len(draws)
    _controls(w)["temperature T"].value = 1.2
    assert w.wait(60)
    assert len(shown) > 20, f"{len(shown)} pictures: the partial answers were not shown"
    assert len({id(fig) for fig in shown}) == 1, "a new figure for a partial answer"
    assert len(draws) == before, f"{len(draws) - before} whole-figure draws for one new temperature"
    fig = shown[-1]
    x0, y0, x1, y1 = fig.get_tightbbox().extents
    width, height = fig.get_size_inches()
    assert x0 >= -0.05 and y0 >= -0.05 and x1 <= width + 0.05 and y1 <= height + 0.05
    plt.close("all")


@pytest.mark.parametrize("lesson", ["06", "11"])
def test_a_streaming_answer_never_shrinks_the_picture(lesson, monkeypatch):
    """The partial answers of a new setting start with a short text: cropped to their ink
    they were shorter than the picture before, and the page below jumped (issue 29)."""
    from course_lib.widgets._look_ahead import png_size

    monkeypatch.setattr(sampling_widget, "STREAM_EVERY", 0.0)
    monkeypatch.setattr(llm_widget, "STREAM_EVERY", 0.0)
    w = _explorer_06() if lesson == "06" else _explorer_11()
    w._threaded = True
    first = png_size(bytes(w.image.value))              # the whole first sample
    sizes = []
    w.image.observe(lambda change: sizes.append((png_size(bytes(change["new"])), w._final)), names="value")
    _controls(w)["seed"].value = 3
    assert w.wait(60)
    heights = [first[1]] + [size[1] for size, final in sizes if not final]
    assert len(heights) > 5, "the partial answers were not shown"
    assert heights == sorted(heights), f"a partial answer shrank the picture: {heights}"
    plt.close("all")


def test_lesson_11_explorer_shows_generate_texts_and_the_plain_figure():
    model, tokenizer = _tiny_llama(), CharTokenizer()
    w = llm_generation_explorer(model, tokenizer, prompt="Once", tokens=20)
    c = _controls(w)
    # the prompt's cache is reused from one setting to the next: the text stays generate_text's
    vocab = len(CHARS)
    for T, seed, tokens, top_k in [(0.8, 0, 20, vocab), (1.0, 3, 35, vocab), (0.0, 3, 35, vocab), (1.5, 5, 10, 4)]:
        c["temperature T"].value, c["seed"].value, c["new tokens"].value, c["top-k (0 = off)"].value = \
            T, seed, tokens, top_k
        shown = w.draw.last_figure.axes[1].texts[0].get_text()       # wrapped: compare the words
        assert shown.split() == generate_text(model, tokenizer, "Once", tokens, T, top_k, seed).split(), (T, seed)
    probs = next_token_probs(model(torch.tensor([tokenizer.encode("Once")]), last_only=True)[0, -1].detach(), 1.5, 4)
    top = torch.topk(probs, 4)
    plain = generation_panel("Once", generate_text(model, tokenizer, "Once", 10, 1.5, 4, 5)[4:],
                             [tokenizer.decode([i]) for i in top.indices.tolist()], top.values.tolist(), 1.5, 4)
    assert_same_picture(w.draw.last_figure, plain, "lesson 11's explorer")
    plt.close("all")


def test_a_newer_value_stops_the_forward_pass_between_blocks():
    model = _tiny_llama()
    calls = []

    def show():
        calls.append(1)
        if len(calls) == 2:                             # a newer value, wanted during the first block
            raise Superseded

    with pytest.raises(Superseded), llm_widget._stoppable(model, show):
        model(torch.tensor([[1, 2, 3]]))
    assert len(calls) == 2                              # stopped before the second of two blocks
    model(torch.tensor([[1, 2, 3]]))                    # afterwards the model runs as before
    assert len(calls) == 2

    errors = []                                         # another thread (a notebook cell) is not stopped
    with llm_widget._stoppable(model, lambda: (_ for _ in ()).throw(Superseded())):
        thread = threading.Thread(target=lambda: errors.append(model(torch.tensor([[1, 2]])).shape))
        thread.start()
        thread.join()
    assert errors == [torch.Size([1, 2, len(CHARS)])]


def test_a_partial_answer_left_behind_while_it_was_drawn_is_not_sent():
    slider = W.IntSlider(value=0, max=10)
    titles = []

    def figure(title):
        fig, ax = plt.subplots(figsize=(2, 1))
        ax.set_title(title)
        return fig

    def viz(show, x):
        def partial():
            if x == 1:
                slider.value = 2                        # the learner moves on while it is drawn
            return figure(f"{x} partial")
        show(partial)
        return figure(f"{x} done")

    w = live_figure(viz, streams=True, threaded=True, x=slider)
    w.image.observe(lambda change: titles.append(w.draw.last_figure.axes[0].get_title()), names="value")
    slider.value = 1
    assert w.wait(10)
    assert "1 partial" not in titles and titles[-1] == "2 done", titles
    plt.close("all")
