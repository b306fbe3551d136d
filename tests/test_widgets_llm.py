"""Lesson 11's figures and generation widget, without a kernel (a tiny random LlamaLM and a
character tokenizer stand in for SmolLM2)."""
import matplotlib

matplotlib.use("Agg")

import matplotlib.pyplot as plt  # noqa: E402
import pytest  # noqa: E402
import torch  # noqa: E402

from course_lib.nn.llama import LlamaConfig, LlamaLM  # noqa: E402
from course_lib.viz import block_comparison, cache_timing_plot, generation_panel, head_weight_grid  # noqa: E402
from course_lib.widgets import llm_generation_explorer  # noqa: E402

CHARS = "Once upon a time, there was\n"


class CharTokenizer:
    """The three methods the widget uses, one character per token."""
    eos_token_id = None

    def encode(self, text):
        return [CHARS.index(c) for c in text if c in CHARS]

    def decode(self, ids, skip_special_tokens=False):
        return "".join(CHARS[int(i)] for i in ids)


@pytest.fixture(scope="module")
def model():
    torch.manual_seed(0)
    m = LlamaLM(LlamaConfig(vocab_size=len(CHARS), d_model=16, n_layers=1, h=2, h_kv=1, d_ff=24, max_len=128))
    with torch.no_grad():
        m.embed.weight.mul_(0.5)  # a spread-out distribution: sampling visibly differs from greedy
    return m.eval()


def _controls(w):
    return {c.description: c for c in w.children if hasattr(c, "description") and c.description}


def _drawn(w):
    fig = w.draw.last_figure
    return [round(p.get_height(), 6) for p in fig.axes[0].patches], fig.axes[1].texts[0].get_text()


def test_every_control_redraws(model):
    w = llm_generation_explorer(model, CharTokenizer(), prompt="Once", tokens=20)
    c = _controls(w)
    assert set(c) == {"prompt", "temperature T", "top-k (0 = off)", "new tokens", "seed"}
    w.update()
    bars, text = _drawn(w)
    assert text.startswith("Once") and len(text) == 4 + 20
    c["seed"].value = 3
    assert _drawn(w)[0] == bars and _drawn(w)[1] != text          # same distribution, another draw
    c["temperature T"].value = 0.0
    greedy_bars, _ = _drawn(w)
    assert greedy_bars == [1.0]                                    # greedy: one bar, no zero-height runners-up
    c["temperature T"].value = 1.0
    c["top-k (0 = off)"].value = 3
    assert len(_drawn(w)[0]) == 3 and all(b > 0 for b in _drawn(w)[0])
    c["new tokens"].value = 40
    assert len(_drawn(w)[1]) == 4 + 40
    c["prompt"].value = "a time"
    assert _drawn(w)[1].startswith("a time")
    c["prompt"].value = ""                                         # an empty box continues "Once"
    assert _drawn(w)[1].startswith("Once")
    plt.close("all")


class SpecialCharTokenizer(CharTokenizer):
    """Even ids play special tokens, as `<|endoftext|>` (id 0) does in SmolLM2's tokenizer."""
    all_special_ids = list(range(0, len(CHARS), 2))


def test_special_tokens_are_labelled(model):
    for tokenizer, is_special in ((SpecialCharTokenizer(), lambda i: i % 2 == 0), (CharTokenizer(), lambda i: False)):
        w = llm_generation_explorer(model, tokenizer, prompt="Once", tokens=5)
        w.update()
        ids = torch.topk(torch.softmax(model(torch.tensor([tokenizer.encode("Once")]), last_only=True)[0, -1], -1),
                         15).indices.tolist()
        labels = [t.get_text() for t in w.draw.last_figure.axes[0].get_xticklabels()]
        assert [label.endswith(" (special)") for label in labels] == [is_special(i) for i in ids], labels
        assert any(map(is_special, ids)) == (tokenizer.__class__ is SpecialCharTokenizer)
    plt.close("all")


def test_same_settings_same_text(model):
    a = llm_generation_explorer(model, CharTokenizer(), prompt="upon", tokens=15)
    b = llm_generation_explorer(model, CharTokenizer(), prompt="upon", tokens=15)
    a.update()
    b.update()
    assert _drawn(a) == _drawn(b)
    plt.close("all")


def test_figures_draw_and_check_their_inputs():
    assert len(block_comparison().axes) == 1
    grid = torch.rand(5, 3)
    fig = head_weight_grid(grid, "t", top=2)
    assert sum(t.get_text() != "" for t in fig.axes[0].texts) == 2
    fig = head_weight_grid(grid, "t", highlight=[(4, 0), (0, 2)])     # the cells the text discusses
    assert [t.get_position() for t in fig.axes[0].texts] == [(0, 4), (2, 0)]
    assert len(fig.axes[0].patches) == 2
    with pytest.raises(ValueError, match=r"highlight \(5, 0\) is outside the 5 × 3 grid"):
        head_weight_grid(grid, "t", highlight=[(5, 0)])
    with pytest.raises(ValueError, match=r"weights must be \(layers, heads\), got shape \(5,\)"):
        head_weight_grid(torch.rand(5), "t")
    fig = generation_panel("Once", " upon", ["a", " b"], [0.7, 0.3], 0.8, None)
    assert "top-k = all" in fig.axes[0].get_title()
    fig = generation_panel("Once", " upon", ["a", "<|endoftext|>", "b"], [0.7, 0.3, 0.0], 0.8, None,
                           special=[False, True, False])
    assert len(fig.axes[0].patches) == 2                              # the zero-probability bar is left out
    assert [t.get_text() for t in fig.axes[0].get_xticklabels()] == ["a", "<|endoftext|> (special)"]
    assert "2 most likely with probability > 0" in fig.axes[0].get_title()
    with pytest.raises(ValueError, match=r"got 1 special flags for 2 pieces"):
        generation_panel("Once", "", ["a", "b"], [0.5, 0.5], 1.0, None, special=[True])
    with pytest.raises(ValueError, match=r"got 2 pieces for 1 probabilities"):
        generation_panel("Once", "", ["a", "b"], [1.0], 0.0, None)
    fig = cache_timing_plot(([1, 2, 3], [0.1, 0.1, 0.1]), ([1, 3], [0.1, 0.3]))
    assert len(fig.axes[1].lines) == 2
    with pytest.raises(ValueError, match=r"need ≥ 2 increasing positions"):
        cache_timing_plot(([3, 2], [0.1, 0.1]), ([1, 3], [0.1, 0.3]))
    plt.close("all")
