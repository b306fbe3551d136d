"""Lesson 06's mask, masked-attention, leakage and loss-curve figures."""
import matplotlib

matplotlib.use("Agg")

import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
import pytest  # noqa: E402
import torch  # noqa: E402

from course_lib.nn.attention import causal_mask  # noqa: E402
from course_lib.nn.training import History  # noqa: E402
from course_lib.viz import leakage_bars, loss_curves, mask_grid, masked_attention_panels  # noqa: E402


def test_mask_grid_draws_the_mask_and_readable_labels():
    fig = mask_grid([causal_mask(4), causal_mask(3)], labels=[list("a b "), list("xyz")], titles=["one", "two"])
    assert len(fig.axes) == 2
    np.testing.assert_array_equal(fig.axes[0].images[0].get_array(), causal_mask(4).int().numpy())
    assert [t.get_text() for t in fig.axes[0].get_xticklabels()] == ["a", "␣", "b", "␣"]
    plt.close(fig)


@pytest.mark.parametrize("call, message", [
    (lambda: mask_grid(torch.ones(3, 3)), "bool"),
    (lambda: mask_grid(torch.ones(2, 3, 3, dtype=torch.bool)), "2-D"),
    (lambda: mask_grid([]), "at least one"),
    (lambda: mask_grid(causal_mask(3), labels=list("ab")), "2 labels for 3"),
    (lambda: mask_grid([causal_mask(3)], titles=["a", "b"]), "titles"),
    (lambda: masked_attention_panels(torch.randn(3, 3), causal_mask(4)), "mask has shape"),
    (lambda: masked_attention_panels(torch.randn(3), causal_mask(3)), "2-D"),
    (lambda: leakage_bars({}, 2), "non-empty"),
    (lambda: leakage_bars({"a": torch.zeros(5)}, 5), "first_changed"),
    (lambda: leakage_bars({"a": torch.zeros(5), "b": torch.zeros(4)}, 2), "same length"),
    (lambda: loss_curves({}), "History"),
    (lambda: loss_curves(History(steps=[1], train_loss=[1.0]), smooth=0), "smooth"),
])
def test_bad_arguments_are_named(call, message):
    with pytest.raises(ValueError, match=message):
        call()


def test_masked_attention_weights_are_a_masked_softmax():
    scores = torch.randn(5, 5)
    fig = masked_attention_panels(scores, causal_mask(5), labels=list("hello"))
    weights = np.asarray(fig.axes[2].images[0].get_array())
    np.testing.assert_allclose(weights.sum(-1), 1, rtol=1e-5)
    assert (np.triu(weights, 1) == 0).all()
    assert sum(t.get_text() == "−∞" for t in fig.axes[1].texts) == 10     # the 10 blocked cells
    plt.close(fig)


def test_leakage_bars_mark_exact_zeros():
    fig = leakage_bars({"causal": torch.tensor([0.0, 0.0, 0.0, 1.0, 2.0]),
                        "leaky": torch.tensor([0.1, 0.2, 0.1, 1.0, 2.0])}, first_changed=3)
    assert [t.get_text() for t in fig.axes[0].texts] == ["0", "0", "0"]
    assert fig.axes[1].texts == [] or all(t.get_text() != "0" for t in fig.axes[1].texts)
    assert "= 0" in fig.axes[0].get_title() and "0.2" in fig.axes[1].get_title()
    plt.close(fig)


def test_loss_curves_draw_train_eval_and_references():
    h = History(steps=list(range(1, 11)), train_loss=[3.0 - 0.1 * i for i in range(10)],
                eval_steps=[5, 10], eval_loss=[2.6, 2.2])
    fig = loss_curves({"run": h}, smooth=3, reference={"bigram": 2.5})
    ax = fig.axes[0]
    assert len(ax.lines) == 4        # raw, smoothed, validation, reference
    np.testing.assert_allclose(ax.lines[2].get_ydata(), [2.6, 2.2])
    plt.close(fig)
