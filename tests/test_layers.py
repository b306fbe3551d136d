"""MultiHeadAttention, FeedForward, LayerNorm and the encoder/decoder layers,
each proven equal to PyTorch's module with copied weights."""

import pytest
import torch
import torch.nn.functional as F
from torch import nn

from course_lib.nn.attention import causal_mask, padding_mask, scaled_dot_product_attention
from course_lib.nn.layers import DecoderLayer, EncoderLayer, FeedForward, LayerNorm, MultiHeadAttention
from course_lib.nn.torch_compat import (
    decoder_layer_from_torch,
    encoder_layer_from_torch,
    mha_from_torch,
    to_torch_key_padding_mask,
    to_torch_mask,
    to_torch_state_dict,
)

ATOL = 1e-5
D, H = 16, 4


def close(a, b, atol=ATOL):
    torch.testing.assert_close(a, b, atol=atol, rtol=0)


@pytest.fixture
def pair():
    torch.manual_seed(0)
    theirs = nn.MultiheadAttention(D, H, batch_first=True)
    nn.init.normal_(theirs.in_proj_bias)  # PyTorch starts biases at 0; make them count
    return mha_from_torch(theirs), theirs


def _tokens():
    return torch.tensor([[4, 5, 6, 7, 8, 9], [4, 5, 6, 7, 0, 0], [4, 5, 0, 0, 0, 0]])


def test_mha_self_attention_equals_torch(pair):
    ours, theirs = pair
    x = torch.randn(3, 6, D)
    out, weights = ours(x, need_weights=True)
    ref, ref_w = theirs(x, x, x, need_weights=True, average_attn_weights=False)
    close(out, ref)
    close(weights, ref_w)
    assert weights.shape == (3, H, 6, 6)
    close(ours(x), ref)  # fast path


def test_mha_cross_attention_equals_torch(pair):
    ours, theirs = pair
    x_q, x_kv = torch.randn(3, 4, D), torch.randn(3, 6, D)
    out, weights = ours(x_q, x_kv, need_weights=True)
    ref, ref_w = theirs(x_q, x_kv, x_kv, average_attn_weights=False)
    close(out, ref)
    close(weights, ref_w)
    assert weights.shape == (3, H, 4, 6)
    close(ours(x_q, x_kv), ref)


def test_mha_key_padding_mask_equals_torch(pair):
    ours, theirs = pair
    x = torch.randn(3, 6, D)
    mask = padding_mask(_tokens(), pad_id=0)  # (batch, 1, 1, n_k)
    out, weights = ours(x, mask=mask, need_weights=True)
    ref, ref_w = theirs(x, x, x, key_padding_mask=to_torch_key_padding_mask(mask), average_attn_weights=False)
    close(out, ref)
    close(weights, ref_w)
    close(ours(x, mask=mask), ref)


def test_mha_causal_mask_equals_torch(pair):
    ours, theirs = pair
    x = torch.randn(3, 6, D)
    mask = causal_mask(6)
    out, weights = ours(x, mask=mask, need_weights=True)
    ref, ref_w = theirs(x, x, x, attn_mask=to_torch_mask(mask), average_attn_weights=False)
    close(out, ref)
    close(weights, ref_w)
    close(ours(x, mask=mask), ref)


def test_mha_causal_and_padding_together(pair):
    ours, theirs = pair
    x = torch.randn(3, 6, D)
    mask = causal_mask(6) & padding_mask(_tokens(), 0)
    ref, ref_w = theirs(x, x, x, attn_mask=to_torch_mask(causal_mask(6)),
                        key_padding_mask=to_torch_key_padding_mask(padding_mask(_tokens(), 0)),
                        average_attn_weights=False)
    out, weights = ours(x, mask=mask, need_weights=True)
    close(out, ref)
    close(weights, ref_w)


def test_fast_path_equals_weights_path_including_empty_rows():
    torch.manual_seed(1)
    mha = MultiHeadAttention(D, H)
    x_q, x_kv = torch.randn(2, 5, D), torch.randn(2, 7, D)
    mask = torch.rand(2, 1, 5, 7) > 0.5
    mask[0, 0, 3] = False  # a query that may attend to nothing
    fast = mha(x_q, x_kv, mask=mask)
    slow, weights = mha(x_q, x_kv, mask=mask, need_weights=True)
    close(fast, slow)
    assert not fast.isnan().any() and (weights[0, :, 3] == 0).all()


def test_mha_gradients_equal_torch(pair):
    ours, theirs = pair
    x = torch.randn(2, 5, D)
    mask = causal_mask(5)
    ours(x, mask=mask).pow(2).sum().backward()
    theirs(x, x, x, attn_mask=to_torch_mask(mask), need_weights=False)[0].pow(2).sum().backward()
    ours_grads = to_torch_state_dict({n: p.grad for n, p in ours.named_parameters()})
    for name, p in theirs.named_parameters():
        close(ours_grads[name], p.grad)


def test_mha_equals_a_loop_over_heads():
    """Heads as a batch axis (reshape) = h separate attentions on column slices."""
    torch.manual_seed(2)
    mha = MultiHeadAttention(D, H)
    x = torch.randn(2, 5, D)
    d_k = D // H
    q, k, v = mha.w_q(x), mha.w_k(x), mha.w_v(x)
    heads = [scaled_dot_product_attention(*(t[..., i * d_k:(i + 1) * d_k] for t in (q, k, v)))[0] for i in range(H)]
    close(mha(x), mha.w_o(torch.cat(heads, dim=-1)))


@pytest.mark.parametrize("fused", [False, True])
def test_layer_norm_equals_torch(fused):
    torch.manual_seed(3)
    ours, theirs = LayerNorm(D, fused=fused), nn.LayerNorm(D)
    assert ours.state_dict().keys() == theirs.state_dict().keys()
    with torch.no_grad():
        theirs.weight.normal_(), theirs.bias.normal_()
    ours.load_state_dict(theirs.state_dict())
    x = (torch.randn(3, 5, D) * 4 + 2).requires_grad_()
    out = ours(x)
    close(out, theirs(x))
    grads = torch.autograd.grad(out.pow(3).sum(), (x, ours.weight, ours.bias))
    ref = torch.autograd.grad(theirs(x).pow(3).sum(), (x, theirs.weight, theirs.bias))
    for a, b in zip(grads, ref):
        torch.testing.assert_close(a, b, atol=1e-5, rtol=1e-5)


def test_layer_norm_step_by_step_equals_fused():
    by_hand, fused = LayerNorm(D, fused=False), LayerNorm(D)
    with torch.no_grad():
        by_hand.weight.normal_(), by_hand.bias.normal_()
    fused.load_state_dict(by_hand.state_dict())
    x = torch.randn(2, 7, D) * 3
    close(by_hand(x), fused(x))


def test_layer_norm_is_a_z_score_per_position():
    z = LayerNorm(D, fused=False)(torch.randn(4, D) * 10 + 3)
    close(z.mean(-1), torch.zeros(4))
    close(z.var(-1, unbiased=False), torch.ones(4), atol=1e-4)  # eps shrinks it a little


@pytest.mark.parametrize("activation", ["relu", "gelu"])
def test_feed_forward_is_the_formula(activation):
    ffn = FeedForward(D, 32, activation=activation)
    x = torch.randn(2, 3, D)
    act = {"relu": F.relu, "gelu": F.gelu}[activation]
    close(ffn(x), act(x @ ffn.w_1.weight.T + ffn.w_1.bias) @ ffn.w_2.weight.T + ffn.w_2.bias)


def _randomize_norms(module):
    with torch.no_grad():  # γ = 1, β = 0 would hide a swapped norm
        for m in module.modules():
            if isinstance(m, nn.LayerNorm):
                m.weight.normal_(1, 0.2), m.bias.normal_(0, 0.2)


@pytest.mark.parametrize("norm_first", [False, True])
def test_encoder_layer_equals_torch(norm_first):
    torch.manual_seed(4)
    theirs = nn.TransformerEncoderLayer(D, H, 32, dropout=0.0, batch_first=True, norm_first=norm_first)
    _randomize_norms(theirs)
    ours = encoder_layer_from_torch(theirs)
    x = torch.randn(3, 6, D)
    mask = padding_mask(_tokens(), 0)
    close(ours(x), theirs(x))
    close(ours(x, mask=mask), theirs(x, src_key_padding_mask=to_torch_key_padding_mask(mask)))
    close(ours(x, mask=causal_mask(6)), theirs(x, src_mask=to_torch_mask(causal_mask(6))))


@pytest.mark.parametrize("norm_first", [False, True])
def test_decoder_layer_equals_torch(norm_first):
    torch.manual_seed(5)
    theirs = nn.TransformerDecoderLayer(D, H, 32, dropout=0.0, batch_first=True, norm_first=norm_first)
    _randomize_norms(theirs)
    ours = decoder_layer_from_torch(theirs)
    y, memory = torch.randn(3, 5, D), torch.randn(3, 6, D)
    src_mask = padding_mask(_tokens(), 0)
    out = ours(y, memory, self_mask=causal_mask(5), cross_mask=src_mask)
    ref = theirs(y, memory, tgt_mask=to_torch_mask(causal_mask(5)), memory_key_padding_mask=to_torch_key_padding_mask(src_mask))
    close(out, ref)


def test_pre_norm_and_post_norm_differ():
    torch.manual_seed(6)
    post = EncoderLayer(D, H, 32)
    pre = EncoderLayer(D, H, 32, norm_first=True)
    pre.load_state_dict(post.state_dict())
    x = torch.randn(2, 4, D)
    assert not torch.allclose(pre(x), post(x))
    close(post(x).mean(-1), torch.zeros(2, 4))  # post-norm output is freshly normalized


def test_dropout_is_active_in_training_only():
    layer = DecoderLayer(D, H, 32, dropout=0.5)
    y, memory = torch.randn(2, 4, D), torch.randn(2, 3, D)
    assert not torch.equal(layer(y, memory), layer(y, memory))
    layer.eval()
    assert torch.equal(layer(y, memory), layer(y, memory))
