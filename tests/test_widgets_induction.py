"""Lesson 09 and 10 widgets and figures, without a kernel: moving a control redraws
different data."""
import matplotlib

matplotlib.use("Agg")

import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
import pytest  # noqa: E402
import torch  # noqa: E402

from course_lib.experiments.induction import AttentionOnlyTransformer, repeated_sequences  # noqa: E402
from course_lib.viz import (  # noqa: E402
    ablation_bars,
    family_attention_maps,
    head_pattern_grid,
    induction_head_map,
    induction_loss_curves,
    induction_score_grid,
    influence_maps,
    it_attention_grid,
    position_loss_plot,
    residual_contribution_bars,
    similarity_heatmap,
)
from course_lib.widgets import induction_head_browser, pretrained_head_explorer  # noqa: E402


def _image(fig):
    return np.asarray(fig.axes[0].images[0].get_array()).copy()


@pytest.fixture
def small_model():
    torch.manual_seed(0)
    return AttentionOnlyTransformer(9, d_model=8, h=2, n_layers=2, max_len=11)


def test_induction_browser_redraws_on_every_slider(small_model):
    tokens = repeated_sequences(3, 5, 8, generator=torch.Generator().manual_seed(0))
    w = induction_head_browser(small_model, tokens, period=5)
    layer, head, example = w.children[:3]
    w.update()
    seen = [_image(w.draw.last_figure)]
    for slider, value in ((head, 1), (layer, 0), (example, 2)):
        slider.value = value
        seen.append(_image(w.draw.last_figure))
        assert not np.array_equal(seen[-1], seen[-2]), slider.description
    assert "layer 0, head 1" in w.draw.last_figure.axes[0].get_title()
    assert w.draw.last_figure.axes[0].get_yticklabels()[0].get_text() == "BOS"
    plt.close("all")


def test_induction_browser_checks_the_shape(small_model):
    with pytest.raises(ValueError, match=r"tokens must be \(examples, 11\)"):
        induction_head_browser(small_model, torch.zeros(2, 9, dtype=torch.long), period=5)


def test_pretrained_head_explorer_redraws():
    g = torch.Generator().manual_seed(0)
    attn = {"a": torch.softmax(torch.randn(2, 3, 4, 4, generator=g), -1),
            "b": torch.softmax(torch.randn(2, 3, 5, 5, generator=g), -1)}
    tokens = {"a": list("wxyz"), "b": list("vwxyz")}
    labels = [["broad"] * 3, ["[CLS]", "previous", "mixed"]]
    w = pretrained_head_explorer(attn, tokens, labels=labels)
    sentence, layer, head = w.children[:3]
    w.update()
    before = _image(w.draw.last_figure)
    head.value = 2
    assert not np.array_equal(before, _image(w.draw.last_figure))
    layer.value = 1
    assert w.draw.last_figure.axes[0].get_title() == "layer 1, head 2 — mixed"
    sentence.value = "b"
    assert _image(w.draw.last_figure).shape == (5, 5)
    plt.close("all")
    with pytest.raises(ValueError, match="same sentence names"):
        pretrained_head_explorer(attn, {"a": list("wxyz")})


def test_figures_draw_and_validate():
    figs = [
        family_attention_maps([{"weights": torch.eye(3), "title": "t"}, {"weights": torch.ones(2, 3) / 3}]),
        it_attention_grid(torch.rand(2, 2, 3, 4), ["tired", "wide"], ["animal", "street"]),
        head_pattern_grid([["previous", "broad"], ["[CLS]", "mixed"]],
                          {"previous": torch.ones(2, 2), "broad": torch.ones(2, 2), "[CLS]": torch.ones(2, 2)}),
        similarity_heatmap(torch.eye(3), ["a", "b", "c"]),
        induction_loss_curves({"step": list(range(30)), "first": [3.0] * 30, "repeated": [1.0] * 30}, 32),
        position_loss_plot({"x": torch.rand(8)}, period=4),
        induction_score_grid({"prev": torch.rand(2, 2), "ind": torch.rand(2, 2)}),
        induction_head_map(torch.eye(9), [str(i) for i in range(9)], period=4),
        ablation_bars({"none": (3.5, 0.3), "all": (4.0, 4.1)}, vocab_size=32),
        influence_maps({"a": torch.rand(4, 4), "b": torch.eye(4)}),
        residual_contribution_bars({"embed": (0.0, 0.1), "L1H0": (0.0, 4.0)}),
    ]
    assert all(len(f.axes) >= 1 for f in figs)
    plt.close("all")
    for call, message in [
        (lambda: family_attention_maps([]), "non-empty list"),
        (lambda: family_attention_maps([{"weights": torch.ones(2, 2, 2)}]), "2-D attention matrix"),
        (lambda: family_attention_maps([{"weights": torch.ones(2, 2), "q_tokens": ["a"]}]), "q_tokens has 1"),
        (lambda: head_pattern_grid([["sideways"]]), "unknown pattern labels"),
        (lambda: similarity_heatmap(torch.ones(2, 3), ["a", "b"]), "square"),
        (lambda: induction_head_map(torch.eye(8), list("abcdefgh"), period=4), r"must be \(9, 9\)"),
        (lambda: induction_loss_curves({"step": [0]}, 3), "no 'first'"),
        (lambda: position_loss_plot({"x": torch.rand(7)}, period=4), "2·period = 8"),
        (lambda: it_attention_grid(torch.rand(2, 2, 3), ["a", "b"], ["c", "d"]), "n_sentences"),
    ]:
        with pytest.raises(ValueError, match=message):
            call()
    plt.close("all")
