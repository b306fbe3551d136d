"""Lesson 06's sampling widget and figures, without a kernel."""
import matplotlib

matplotlib.use("Agg")

import matplotlib.pyplot as plt  # noqa: E402
import pytest  # noqa: E402
import torch  # noqa: E402

from course_lib.nn.models import DecoderOnlyLM  # noqa: E402
from course_lib.data.shakespeare import CharVocab  # noqa: E402
from course_lib.viz import next_token_bars, sample_panel  # noqa: E402
from course_lib.widgets import sampling_explorer  # noqa: E402

VOCAB = CharVocab.from_text("ROMEO:\nabcdefghijklmnop ,.")


@pytest.fixture(scope="module")
def model():
    torch.manual_seed(0)
    return DecoderOnlyLM(len(VOCAB), d_model=16, h=2, d_ff=32, n_layers=1, max_len=16)


def _controls(w):
    return {c.description: c for c in w.children if hasattr(c, "description") and c.description}


def _drawn(w):
    fig = w.draw.last_figure
    bars = [round(p.get_height(), 6) for p in fig.axes[0].patches]
    text = fig.axes[1].texts[0].get_text()
    return bars, text


def test_every_control_redraws(model):
    w = sampling_explorer(model, VOCAB, length=40)
    c = _controls(w)
    assert set(c) == {"prompt", "temperature T", "top-k (0 = off)", "characters", "seed"}
    w.update()
    first = _drawn(w)
    assert first[1].startswith("ROMEO:\n") or first[1].startswith("ROMEO:")
    c["seed"].value = 3
    after_seed = _drawn(w)
    assert after_seed[0] == first[0] and after_seed[1] != first[1]    # same distribution, new draw
    c["temperature T"].value = 0.0
    bars, _ = _drawn(w)
    assert bars[0] == 1.0 and sum(bars) == 1.0                          # greedy: one-hot
    c["temperature T"].value = 1.0
    c["top-k (0 = off)"].value = 3
    bars, _ = _drawn(w)
    assert sum(b > 0 for b in bars) == 3 and sum(bars) == pytest.approx(1.0)
    c["characters"].value = 100
    assert len(w.draw.last_figure.axes[1].texts[0].get_text().replace("\n", "")) > 80
    c["prompt"].value = "abc"
    assert _drawn(w)[1].startswith("abc")
    plt.close("all")


def test_same_settings_same_text_and_unknown_characters_are_dropped(model):
    w = sampling_explorer(model, VOCAB, prompt="ab", length=40)
    w.update()
    once = _drawn(w)
    w.update()
    assert _drawn(w) == once
    _controls(w)["prompt"].value = "aXbZ"                 # X and Z are not in the vocabulary
    assert _drawn(w)[1].startswith("ab")
    plt.close("all")


def test_figures_check_their_arguments():
    probs = torch.softmax(torch.randn(len(VOCAB)), 0)
    fig = next_token_bars(probs, VOCAB.itos, top=5)
    heights = [p.get_height() for p in fig.axes[0].patches]
    assert len(heights) == 5 and heights == sorted(heights, reverse=True)
    with pytest.raises(ValueError, match="labels"):
        next_token_bars(probs, VOCAB.itos[:3])
    with pytest.raises(ValueError, match="top"):
        next_token_bars(probs, VOCAB.itos, top=0)
    with pytest.raises(ValueError, match="start with the prompt"):
        sample_panel("ab", "xyz", probs, VOCAB.itos, 1.0, None)
    with pytest.raises(ValueError, match="1-D"):
        sample_panel("ab", "abc", probs[None], VOCAB.itos, 1.0, None)
    plt.close("all")
