"""Lesson 05's configurable block and the experiments built on it."""
import pytest
import torch

from course_lib.nn.layers import EncoderLayer
from course_lib.experiments.stacks import (ARRANGEMENTS, AttentionOnlyRegressor, Block, FeedForwardRegressor, abs_batch,
                               binding_stack, first_layer_grad_norm, layer_profile, residual_contributions,
                               train_regressor)
from course_lib.experiments.toy_tasks import bindings_batch


@pytest.fixture(autouse=True)
def one_thread():
    """Tiny models: one thread is much faster than two on a busy machine."""
    before = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(before)


@pytest.mark.parametrize("norm_first", [False, True])
def test_block_with_residual_and_norm_is_the_encoder_layer(norm_first):
    torch.manual_seed(0)
    layer = EncoderLayer(16, 2, 32, norm_first=norm_first)
    for p in layer.parameters():                   # non-trivial γ, β too
        torch.nn.init.normal_(p, std=0.3)
    block = Block(16, 2, 32, residual=True, norm="pre" if norm_first else "post")
    block.load_state_dict(layer.state_dict())
    x = torch.randn(2, 5, 16)
    with torch.no_grad():
        assert torch.allclose(block(x), layer(x), atol=1e-5)


def test_bad_wiring_is_refused():
    with pytest.raises(ValueError, match="needs residual=True"):
        Block(8, 2, 16, residual=False, norm="post")
    with pytest.raises(ValueError, match="norm must be"):
        Block(8, 2, 16, norm="middle")


@pytest.mark.parametrize("name, exact", [("pre-norm", True), ("residual only", True), ("post-norm", False)])
def test_the_stream_is_the_sum_of_its_parts_only_without_post_norm(name, exact):
    residual, norm = ARRANGEMENTS[name]
    torch.manual_seed(0)
    model = binding_stack(3, residual, norm)
    tokens = bindings_batch(4, 12, torch.Generator().manual_seed(0)).tokens
    parts, final = residual_contributions(model, tokens)
    assert [p[0] for p in parts][:3] == ["embedding", "block 0 attn", "block 0 ffn"] and len(parts) == 7
    total = sum(p[1] for p in parts)
    assert torch.allclose(total, final, atol=1e-5) == exact


def test_gradients_vanish_without_residuals():
    plain = first_layer_grad_norm(8, *ARRANGEMENTS["plain"])
    residual = first_layer_grad_norm(8, *ARRANGEMENTS["residual only"])
    assert residual > 1000 * plain > 0


def test_layer_profile_lengths():
    grads, rms = layer_profile(5, *ARRANGEMENTS["pre-norm"])
    assert len(grads) == len(rms) == 5 and all(g > 0 for g in grads) and all(r > 0 for r in rms)


def test_attention_only_on_one_token_is_an_affine_map():
    torch.manual_seed(0)
    model = AttentionOnlyRegressor(n_layers=3, d_model=8)
    a, b = torch.randn(5, 1, 1), torch.randn(5, 1, 1)
    with torch.no_grad():
        assert torch.allclose(model((a + b) / 2), (model(a) + model(b)) / 2, atol=1e-5)


def test_abs_batch_and_a_quick_fit():
    x, y = abs_batch(4, 3, torch.Generator().manual_seed(0))
    assert x.shape == y.shape == (4, 3, 1) and torch.equal(y, x.abs())
    torch.manual_seed(0)
    assert train_regressor(FeedForwardRegressor(), steps=200) < 0.05
