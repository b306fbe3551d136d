"""Every explorer's caption (issue 43 §4): what a screen reader says after each settled value.

At each end of every control's range the caption (course_lib/widgets/_spoken.py) must be at
most 30 words as spoken, never cut with "…", carry at least one number (lesson 06's and 11's
generators: the generated text) that the figure's description states — the result, not only
the value that changed — and not say its lead twice ("layer 0: layer 0, head 0: …"); the
caption shown keeps the lesson's symbols (d_ff, √d_k) and the spoken one has them in words.
"""
import re

import matplotlib

matplotlib.use("Agg")

import matplotlib.pyplot as plt  # noqa: E402
import pytest  # noqa: E402
import torch  # noqa: E402

from course_lib.widgets import _spoken  # noqa: E402
from test_widgets_live import _explorers as _model_free_explorers  # noqa: E402

_NUMBER = re.compile(r"(?<![\w.])[-−]?\d+(?:\.\d+)?(?:e[-+]?\d+)?")
_QUOTED = re.compile(r"“([^”]+)”")


def _generators():
    """Lesson 06's sampler and lesson 11's generator, built small. (Lesson 08's translator is
    an `interactive` over a figure, with no caption of its own.)"""
    from course_lib.data.shakespeare import CharVocab
    from course_lib.nn.models import DecoderOnlyLM
    from course_lib.widgets import llm_generation_explorer, sampling_explorer
    from test_widgets_llm import CHARS, CharTokenizer, LlamaConfig, LlamaLM

    def sampler_06():
        torch.manual_seed(0)
        vocab = CharVocab.from_text("ROMEO:\nabcdefghijklmnop ,.")
        model = DecoderOnlyLM(len(vocab), d_model=16, h=2, d_ff=32, n_layers=1, max_len=16)
        return sampling_explorer(model, vocab, length=40)

    def generator_11():
        torch.manual_seed(0)
        model = LlamaLM(LlamaConfig(vocab_size=len(CHARS), d_model=16, n_layers=1, h=2, h_kv=1, d_ff=24, max_len=128))
        return llm_generation_explorer(model.eval(), CharTokenizer(), prompt="Once", tokens=12)

    return {"06 sampler": sampler_06, "11 generator": generator_11}


def _explorers():
    return {**_model_free_explorers(), **_generators()}


def _ends(control):
    """The values at both ends of a control's range (a text box: another text)."""
    options = getattr(control, "options", None)
    if options:
        return [o[1] if isinstance(o, tuple) else o for o in (options[-1], options[0])]
    if isinstance(control.value, bool):
        return [not control.value, control.value]
    if isinstance(control.value, str):
        return [control.value[:2] or "a"]
    return [control.max, control.min]


def _problems(caption, spoken, description, lead):
    found = []
    if len(spoken.split()) > 30:
        found.append(f"{len(spoken.split())} words spoken")
    if caption.rstrip().endswith("…") or spoken.rstrip().endswith("…"):
        found.append("cut with …")
    lead = " ".join(lead.split())
    body = caption[len(lead) + 2:] if lead and caption.startswith(lead + ": ") else caption
    text_numbers = set(_NUMBER.findall(description))
    if not (set(_NUMBER.findall(body)) & text_numbers) and not _QUOTED.search(body):
        found.append("no number of the figure's result")
    if lead and body is not caption and _key(lead) in _key(" ".join(body.split()[:6])):
        found.append("the lead said twice")
    if spoken != _spoken.in_words(caption):
        found.append("the spoken form is not the caption in words")
    return found


def _key(text):
    return " ".join(re.sub(r"[^\w.]+", " ", _spoken.in_words(text).lower()).split())


@pytest.mark.parametrize("name", list(_explorers()))
def test_every_caption_is_short_whole_and_carries_the_result(name):
    w = _explorers()[name]()
    w.update()
    seen, problems = 0, []
    for control in w._controls.values():
        for value in _ends(control):
            control.value = value
            cap = w.caption
            seen += 1
            lead = _spoken.lead(control, value)
            for p in _problems(cap.said, cap.spoken, cap.text, lead):
                problems.append(f"{control.description}={value!r}: {p}: {cap.said!r}")
    plt.close("all")
    assert seen and not problems, "\n".join(problems)


def test_the_shown_caption_keeps_the_symbols_and_the_spoken_one_says_them():
    from course_lib.widgets import shapes_explorer
    w = shapes_explorer()
    w.children[1].value = 12                       # n_src
    assert "n_src" in w.caption.said and "n src" in w.caption.spoken and "n_src" not in w.caption.spoken
    plt.close("all")


def test_a_lead_the_description_already_starts_with_is_said_once():
    said = _spoken.caption("layer 0, head 0: the previous token gets 0.91 on average.", "layer 0")
    assert said == "layer 0, head 0: the previous token gets 0.91 on average."
    assert _spoken.caption("gradient 0.5 at block 3.", "blocks 3") == "blocks 3: gradient 0.5 at block 3."


def test_a_long_description_is_cut_at_a_clause_never_with_an_ellipsis():
    text = ("plain, 12 blocks (freshly initialised): over 12 blocks (1 = nearest the input; log scales), the "
            "gradient norm of each block's parameters goes from 1.2e-13 at block 1 to 0.13 at block 12, and so on "
            "for a long while, said in words that a caption has no room for at all today")
    said = _spoken.caption(text, "blocks 12")
    assert not said.endswith("…") and said.endswith(".") and len(_spoken.in_words(said).split()) <= 30, said
    assert said.count("(") == said.count(")"), said
    result = _spoken.caption(text, "blocks 12", result="gradient norm from 1.2e-13 at block 1 to 0.13 at block 12.")
    assert result == "blocks 12: gradient norm from 1.2e-13 at block 1 to 0.13 at block 12.", result
