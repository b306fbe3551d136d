"""Sinusoidal, learned and rotary positions."""

import math

import pytest
import torch

from course_lib.nn.positional import (
    LearnedPositionalEmbedding,
    SinusoidalPositionalEncoding,
    apply_rotary,
    shift_matrix,
    sinusoidal_table,
)

ATOL = 1e-5


@pytest.mark.parametrize("d_model,base", [(16, 10000.0), (6, 100.0)])
def test_table_equals_closed_form(d_model, base):
    pe = sinusoidal_table(50, d_model, base)
    assert pe.shape == (50, d_model) and pe.dtype == torch.float32
    for pos in range(50):
        for i in range(d_model // 2):
            angle = pos / base ** (2 * i / d_model)
            assert pe[pos, 2 * i].item() == pytest.approx(math.sin(angle), abs=1e-6)
            assert pe[pos, 2 * i + 1].item() == pytest.approx(math.cos(angle), abs=1e-6)


def test_odd_d_model_ends_with_a_sine():
    pe = sinusoidal_table(10, 5)
    angle = torch.arange(10.0) / 10000 ** (4 / 5)
    torch.testing.assert_close(pe[:, 4], torch.sin(angle), atol=1e-6, rtol=0)
    torch.testing.assert_close(pe[:, :4], sinusoidal_table(10, 5)[:, :4])


@pytest.mark.parametrize("k", [1, 3, 17])
def test_shift_is_one_linear_map_for_every_position(k):
    """PE(pos + k) = M_k PE(pos) with the same M_k for all pos."""
    d_model, length = 32, 200
    pe = sinusoidal_table(length + k, d_model).double()
    m = shift_matrix(k, d_model).double()
    torch.testing.assert_close(pe[:length] @ m.T, pe[k:], atol=ATOL, rtol=0)
    # M_k is a rotation: orthogonal, and shifts compose (M_j M_k = M_{j+k}).
    torch.testing.assert_close(m @ m.T, torch.eye(d_model, dtype=torch.float64), atol=ATOL, rtol=0)
    torch.testing.assert_close(shift_matrix(2, d_model).double() @ m, shift_matrix(k + 2, d_model).double(), atol=ATOL, rtol=0)


def test_shift_matrix_found_by_least_squares_is_the_closed_form():
    """Fit one matrix to all (PE(pos), PE(pos+k)) pairs: it is M_k, and it fits exactly."""
    # base 100 so that even the slowest pair turns through several radians in 300
    # positions; with base 10000 its columns are nearly constant and the fit is ill-posed.
    d_model, k, base = 8, 5, 100.0
    pe = sinusoidal_table(300, d_model, base).double()
    fitted = torch.linalg.lstsq(pe[:-k], pe[k:]).solution.T
    torch.testing.assert_close(fitted, shift_matrix(k, d_model, base).double(), atol=1e-4, rtol=0)


def test_sinusoidal_module_adds_the_table():
    enc = SinusoidalPositionalEncoding(d_model=8, max_len=20)
    x = torch.randn(2, 7, 8)
    torch.testing.assert_close(enc(x), x + sinusoidal_table(7, 8))
    assert len(list(enc.parameters())) == 0 and "pe" not in enc.state_dict()


def test_learned_module_adds_trainable_rows():
    emb = LearnedPositionalEmbedding(max_len=10, d_model=4)
    x = torch.zeros(3, 6, 4)
    out = emb(x)
    torch.testing.assert_close(out, emb.weight[:6].expand(3, 6, 4))
    out.sum().backward()
    assert emb.weight.grad[:6].ne(0).all() and emb.weight.grad[6:].eq(0).all()


def test_rotary_scores_depend_on_relative_position_only():
    g = torch.Generator().manual_seed(0)
    q, k = torch.randn(1, 16, generator=g), torch.randn(1, 16, generator=g)

    def score(m, n):
        return (apply_rotary(q, offset=m) * apply_rotary(k, offset=n)).sum().item()

    assert score(5, 2) == pytest.approx(score(13, 10), abs=ATOL)
    assert score(0, 0) == pytest.approx((q * k).sum().item(), abs=ATOL)
    assert score(5, 2) != pytest.approx(score(5, 4), abs=1e-3)


def test_rotary_preserves_norms():
    x = torch.randn(2, 4, 9, 8)  # (batch, heads, n, d)
    out = apply_rotary(x)
    assert out.shape == x.shape
    torch.testing.assert_close(out.norm(dim=-1), x.norm(dim=-1), atol=ATOL, rtol=0)
