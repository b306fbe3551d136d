"""Scaled dot-product attention and masks, checked against PyTorch's own kernel."""

import math

import pytest
import torch
import torch.nn.functional as F

from course_lib.nn.attention import causal_mask, padding_mask, safe_softmax, scaled_dot_product_attention

ATOL = 1e-5


@pytest.fixture
def qkv():
    g = torch.Generator().manual_seed(0)
    q = torch.randn(2, 3, 5, 8, generator=g)  # (batch, heads, n_q, d_k)
    k = torch.randn(2, 3, 7, 8, generator=g)  # (batch, heads, n_k, d_k)
    v = torch.randn(2, 3, 7, 4, generator=g)  # (batch, heads, n_k, d_v)
    return q, k, v


def test_equals_torch_without_mask(qkv):
    q, k, v = qkv
    out, weights = scaled_dot_product_attention(q, k, v)
    assert out.shape == (2, 3, 5, 4) and weights.shape == (2, 3, 5, 7)
    torch.testing.assert_close(out, F.scaled_dot_product_attention(q, k, v), atol=ATOL, rtol=0)
    torch.testing.assert_close(weights.sum(-1), torch.ones(2, 3, 5), atol=ATOL, rtol=0)


def test_weights_are_the_closed_form(qkv):
    q, k, v = qkv
    _, weights = scaled_dot_product_attention(q, k, v)
    expected = torch.softmax(q @ k.transpose(-2, -1) / math.sqrt(8), dim=-1)
    torch.testing.assert_close(weights, expected, atol=ATOL, rtol=0)


def test_equals_torch_with_random_bool_mask(qkv):
    q, k, v = qkv
    mask = torch.rand(2, 1, 5, 7, generator=torch.Generator().manual_seed(1)) > 0.4
    mask[..., 0] = True  # every query keeps at least one key
    out, weights = scaled_dot_product_attention(q, k, v, mask=mask)
    torch.testing.assert_close(out, F.scaled_dot_product_attention(q, k, v, attn_mask=mask), atol=ATOL, rtol=0)
    assert (weights.masked_select(~mask.expand_as(weights)) == 0).all()


def test_equals_torch_with_causal_mask():
    g = torch.Generator().manual_seed(2)
    q, k, v = (torch.randn(3, 6, 8, generator=g) for _ in range(3))  # no heads axis
    out, weights = scaled_dot_product_attention(q, k, v, mask=causal_mask(6))
    torch.testing.assert_close(out, F.scaled_dot_product_attention(q, k, v, is_causal=True), atol=ATOL, rtol=0)
    assert torch.equal(weights.triu(1), torch.zeros_like(weights))


def test_equals_torch_with_padding_mask(qkv):
    q, k, v = qkv
    tokens = torch.tensor([[5, 6, 7, 8, 9, 0, 0], [5, 6, 7, 0, 0, 0, 0]])
    mask = padding_mask(tokens, pad_id=0)
    assert mask.shape == (2, 1, 1, 7)
    out, weights = scaled_dot_product_attention(q, k, v, mask=mask)
    torch.testing.assert_close(out, F.scaled_dot_product_attention(q, k, v, attn_mask=mask), atol=ATOL, rtol=0)
    assert (weights[1, ..., 3:] == 0).all()


def test_fully_masked_rows_give_zeros_not_nan(qkv):
    q, k, v = (t.clone().requires_grad_() for t in qkv)
    mask = torch.ones(5, 7, dtype=torch.bool)
    mask[2] = False  # query 2 may attend to nothing
    out, weights = scaled_dot_product_attention(q, k, v, mask=mask)
    assert not out.isnan().any() and not weights.isnan().any()
    assert (out[..., 2, :] == 0).all() and (weights[..., 2, :] == 0).all()
    torch.testing.assert_close(out, F.scaled_dot_product_attention(q, k, v, attn_mask=mask), atol=ATOL, rtol=0)
    out.sum().backward()
    assert all(t.grad.isfinite().all() for t in (q, k, v))


def test_safe_softmax_matches_softmax_on_normal_rows():
    scores = torch.randn(4, 9)
    torch.testing.assert_close(safe_softmax(scores), torch.softmax(scores, -1))
    scores[1] = float("-inf")
    weights = safe_softmax(scores)
    assert (weights[1] == 0).all()
    torch.testing.assert_close(weights[0], torch.softmax(scores[0], -1))


def test_dropout_returns_pre_dropout_weights(qkv):
    q, k, v = qkv
    torch.manual_seed(3)
    out, weights = scaled_dot_product_attention(q, k, v, dropout_p=0.5)
    torch.testing.assert_close(weights.sum(-1), torch.ones(2, 3, 5), atol=ATOL, rtol=0)
    torch.manual_seed(3)
    torch.testing.assert_close(out, F.dropout(weights, 0.5) @ v, atol=ATOL, rtol=0)


def test_causal_mask_is_the_lower_triangle():
    m = causal_mask(4)
    assert m.dtype == torch.bool and m.shape == (4, 4)
    assert m.tolist() == [[1, 0, 0, 0], [1, 1, 0, 0], [1, 1, 1, 0], [1, 1, 1, 1]]
    assert causal_mask(0).shape == (0, 0)


def test_masks_combine_with_and():
    tokens = torch.tensor([[3, 4, 0], [3, 0, 0]])
    both = causal_mask(3) & padding_mask(tokens, pad_id=0)
    assert both.shape == (2, 1, 3, 3)
    assert both[1, 0].tolist() == [[1, 0, 0], [1, 0, 0], [1, 0, 0]]


def test_permutation_equivariance():
    """Attention alone has no notion of order: permuting inputs permutes outputs."""
    x = torch.randn(1, 6, 8)
    perm = torch.randperm(6)
    out, _ = scaled_dot_product_attention(x, x, x)
    out_perm, _ = scaled_dot_product_attention(x[:, perm], x[:, perm], x[:, perm])
    torch.testing.assert_close(out_perm, out[:, perm], atol=ATOL, rtol=0)
