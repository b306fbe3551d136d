"""Lesson 09's helpers: the three families on digit reversal, and head-pattern statistics."""
import pytest
import torch

from course_lib.experiments.families import (
    KINDS,
    EncoderTagger,
    make_reverser,
    needed_positions,
    reversal_batch,
    reverse_with,
    train_reverser,
)
from course_lib.experiments.head_patterns import classify_heads, offset_score, pattern_scores, stack_layers


# ----------------------------------------------------------------------------- head patterns
def _pattern_layers(n=6):
    """One layer, 6 heads, each a pure pattern: previous, next, self, [CLS], [SEP], uniform."""
    eye = torch.eye(n)
    prev = torch.roll(eye, -1, dims=1)
    prev[0] = eye[0]
    nxt = torch.roll(eye, 1, dims=1)
    nxt[-1] = eye[-1]
    cls = torch.zeros(n, n)
    cls[:, 0] = 1
    sep = torch.zeros(n, n)
    sep[:, -1] = 1
    uniform = torch.full((n, n), 1 / n)
    return [torch.stack([prev, nxt, eye, cls, sep, uniform])[None]]      # [(1, 6, n, n)]


def test_pattern_scores_and_labels_on_pure_patterns():
    scores = pattern_scores(_pattern_layers())
    assert scores["previous"][0, 0] == 1 and scores["previous"][0, 1] == 0
    assert scores["next"][0, 1] == 1 and scores["next"][0, 0] == 0
    assert scores["[CLS]"][0, 3] == 1 and scores["[SEP]"][0, 4] == 1
    assert scores["broad"][0, 5] == pytest.approx(1.0)                  # uniform: entropy = log n
    assert scores["broad"][0, 0] == pytest.approx(0.0, abs=1e-6)
    assert classify_heads(scores) == [["previous", "next", "self", "[CLS]", "[SEP]", "broad"]]


def test_padding_is_left_out():
    layers = _pattern_layers(6)
    padded = torch.zeros(1, 6, 8, 8)
    padded[..., :6, :6] = layers[0]
    padded[..., 6:, :] = 1 / 8                     # garbage in the padded rows
    a = pattern_scores(layers)
    b = pattern_scores([padded], lengths=[6])
    for k in a:
        torch.testing.assert_close(a[k], b[k])


def test_mixed_heads_and_argument_checks():
    spread = torch.softmax(torch.randn(1, 1, 6, 6) * 3, -1)
    scores = {k: torch.zeros(1, 1) for k in ("previous", "next", "self", "[CLS]", "[SEP]")}
    scores["broad"] = torch.tensor([[0.3]])
    assert classify_heads(scores) == [["mixed"]]
    with pytest.raises(ValueError, match="lengths has 2 entries"):
        pattern_scores([spread], lengths=[6, 6])
    with pytest.raises(ValueError, match="between 4 and n=6"):
        pattern_scores([spread], lengths=[3])
    with pytest.raises(ValueError, match="no query position"):
        offset_score(torch.ones(2, 2), 5)
    with pytest.raises(ValueError, match="non-empty list"):
        stack_layers([])
    with pytest.raises(ValueError, match="threshold"):
        classify_heads(scores, threshold=0)


# ----------------------------------------------------------------------------- families
def test_needed_positions():
    q, k = needed_positions("encoder-only", 4)
    assert q.tolist() == [0, 1, 2, 3] and k.tolist() == [3, 2, 1, 0]
    q, k = needed_positions("decoder-only", 4)
    assert q.tolist() == [4, 5, 6, 7] and k.tolist() == [3, 2, 1, 0]
    with pytest.raises(ValueError, match="kind must be one of"):
        needed_positions("rnn")


@pytest.mark.parametrize("kind", KINDS)
def test_untrained_models_answer_in_the_right_shape(kind):
    torch.manual_seed(0)
    model = make_reverser(kind, n=5)
    src, target = reversal_batch(3, n=5, generator=torch.Generator().manual_seed(0))
    assert torch.equal(target, src.flip(1))
    out = reverse_with(kind, model, src)
    assert out.shape == (3, 5) and out.dtype == torch.long and out.max() <= 10   # 10: SEP / start id


def test_causal_tagger_cannot_see_the_future():
    torch.manual_seed(0)
    tagger = EncoderTagger(10, 10, causal=True, max_len=6)
    x = torch.randint(0, 10, (1, 6))
    y = x.clone()
    y[0, -1] = (y[0, -1] + 1) % 10
    with torch.no_grad():
        a, b = tagger(x), tagger(y)
    assert torch.equal(a[:, :-1], b[:, :-1]) and not torch.equal(a[:, -1], b[:, -1])


@pytest.mark.slow
def test_bidirectional_encoder_reverses_and_causal_one_fails_the_first_half():
    torch.set_num_threads(1)
    src, target = reversal_batch(300, generator=torch.Generator().manual_seed(123))
    acc = {}
    for kind in ("encoder-only", "causal encoder"):
        model, _ = train_reverser(kind, steps=150, seed=0)
        acc[kind] = (reverse_with(kind, model, src) == target).float().mean(0)
    assert acc["encoder-only"].min() > 0.95
    assert acc["causal encoder"][:3].max() < 0.3            # needs future tokens: chance level
    assert acc["causal encoder"][3:].min() > 0.95
