"""Rotary positions inside attention: scores and outputs depend on relative position only."""
import pytest
import torch

from course_lib.nn.layers import MultiHeadAttention
from course_lib.nn.attention import causal_mask
from course_lib.nn.positional import apply_rotary
from course_lib.nn.rotary import RotarySelfAttention, rotary_scores


def test_scores_are_rotated_dot_products():
    g = torch.Generator().manual_seed(0)
    q, k = torch.randn(5, 8, generator=g), torch.randn(7, 8, generator=g)
    expected = apply_rotary(q) @ apply_rotary(k).T
    torch.testing.assert_close(rotary_scores(q, k), expected)


def test_scores_do_not_change_when_the_sequence_moves():
    g = torch.Generator().manual_seed(1)
    q, k = torch.randn(2, 6, 16, generator=g), torch.randn(2, 6, 16, generator=g)
    base = rotary_scores(q, k, base=100.0)
    moved = rotary_scores(q, k, base=100.0, q_offset=37, k_offset=37)
    torch.testing.assert_close(base, moved, atol=1e-4, rtol=0)


def test_same_content_everywhere_gives_a_toeplitz_matrix():
    g = torch.Generator().manual_seed(2)
    q = torch.randn(1, 8, generator=g).expand(12, 8)
    k = torch.randn(1, 8, generator=g).expand(12, 8)
    s = rotary_scores(q, k)
    for offset in range(-11, 12):
        d = s.diagonal(offset)
        assert (d.max() - d.min()).abs() < 1e-4


def test_scores_check_their_inputs():
    with pytest.raises(ValueError, match="d_k"):
        rotary_scores(torch.randn(3, 8), torch.randn(3, 6))
    with pytest.raises(TypeError, match="floating-point"):
        rotary_scores(torch.ones(3, 8, dtype=torch.long), torch.randn(3, 8))


def test_layer_output_does_not_depend_on_the_offset():
    torch.manual_seed(0)
    layer = RotarySelfAttention(d_model=16, h=2)
    x = torch.randn(3, 9, 16)
    with torch.no_grad():
        torch.testing.assert_close(layer(x), layer(x, offset=123), atol=1e-4, rtol=0)


def test_layer_of_one_token_is_plain_attention():
    """Position 0 is not rotated, so on one token rotary = MultiHeadAttention with the same weights."""
    torch.manual_seed(0)
    rope = RotarySelfAttention(d_model=8, h=2)
    plain = MultiHeadAttention(d_model=8, h=2)
    plain.load_state_dict(rope.state_dict())
    x = torch.randn(4, 1, 8)
    with torch.no_grad():
        torch.testing.assert_close(rope(x), plain(x))


def test_weights_path_matches_the_fast_path_and_rows_sum_to_one():
    torch.manual_seed(0)
    layer = RotarySelfAttention(d_model=16, h=4)
    x = torch.randn(2, 6, 16)
    mask = causal_mask(6)
    with torch.no_grad():
        fast = layer(x, mask=mask)
        slow, weights = layer(x, mask=mask, need_weights=True)
    torch.testing.assert_close(fast, slow, atol=1e-5, rtol=0)
    assert weights.shape == (2, 4, 6, 6)
    torch.testing.assert_close(weights.sum(-1), torch.ones(2, 4, 6))
    assert (weights.triu(1) == 0).all()


def test_rotary_makes_attention_order_aware():
    """Without positions, swapping two tokens swaps their outputs; with rotary it does not."""
    torch.manual_seed(0)
    layer = RotarySelfAttention(d_model=8, h=1)
    plain = MultiHeadAttention(d_model=8, h=1)
    plain.load_state_dict(layer.state_dict())
    x = torch.randn(1, 4, 8)
    perm = torch.tensor([1, 0, 2, 3])
    with torch.no_grad():
        torch.testing.assert_close(plain(x[:, perm]), plain(x)[:, perm], atol=1e-5, rtol=0)
        assert not torch.allclose(layer(x[:, perm]), layer(x)[:, perm], atol=1e-3)


@pytest.mark.parametrize("kwargs, error, message", [
    (dict(d_model=6, h=2), ValueError, "d_model/h = 3 is odd"),
    (dict(d_model=8, h=2, base=1.0), ValueError, "base must be > 1"),
    (dict(d_model=8, h=3), ValueError, "not divisible"),
])
def test_layer_refuses_bad_sizes(kwargs, error, message):
    with pytest.raises(error, match=message):
        RotarySelfAttention(**kwargs)


def test_layer_checks_its_input():
    layer = RotarySelfAttention(d_model=8, h=2)
    with pytest.raises(ValueError, match="d_model=4"):
        layer(torch.randn(1, 3, 4))
    with pytest.raises(ValueError, match="3 dims"):
        layer(torch.randn(3, 8))
