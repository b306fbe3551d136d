"""Whole models: EncoderDecoder ≡ nn.Transformer, causality, padding, attention maps."""

import pytest
import torch
from torch import nn

from course_lib.nn.attention import causal_mask, padding_mask
from course_lib.nn.layers import MultiHeadAttention
from course_lib.nn.models import DecoderOnlyLM, Encoder, EncoderDecoder, TokenEmbedding, collect_attention, keep_attention
from course_lib.nn.torch_compat import (
    copy_from_torch,
    copy_from_torch_transformer,
    to_torch_key_padding_mask,
    to_torch_mask,
    to_torch_state_dict,
)

ATOL = 1e-5
D, H, D_FF = 16, 4, 32
PAD = 0


def close(a, b, atol=ATOL):
    torch.testing.assert_close(a, b, atol=atol, rtol=0)


def _batch():
    src = torch.tensor([[5, 6, 7, 8, 9, 3], [5, 6, 7, 0, 0, 0]])  # (batch, n_src), 0 = pad
    tgt = torch.tensor([[1, 4, 5, 6, 2], [1, 4, 2, 0, 0]])  # (batch, n_tgt)
    return src, tgt


@pytest.mark.filterwarnings("ignore:enable_nested_tensor is True")  # nn.Transformer's own, harmless
@pytest.mark.parametrize("norm_first", [False, True])
def test_encoder_decoder_equals_nn_transformer(norm_first):
    """Same logits and the same gradient for every weight of the transformer core."""
    torch.manual_seed(0)
    theirs = nn.Transformer(D, H, 2, 2, D_FF, dropout=0.0, batch_first=True, norm_first=norm_first)
    for p in theirs.parameters():  # biases and LayerNorm γ, β away from 0 and 1
        nn.init.normal_(p, std=0.3)
    ours = EncoderDecoder(10, 12, D, H, D_FF, 2, 2, dropout=0.0, norm_first=norm_first, pad_id=PAD, final_norm=True)
    copy_from_torch_transformer(ours, theirs)
    src, tgt = _batch()
    target = torch.randn(2, 5, 12)

    logits = ours(src, tgt)  # masks from pad_id, causal added by the model
    (logits * target).sum().backward()

    src_pad = to_torch_key_padding_mask(padding_mask(src, PAD))
    # nn.Transformer, fed our embeddings and read out by our projection:
    x_src = ours.pos(ours.src_embed(src)).detach()
    x_tgt = ours.pos(ours.tgt_embed(tgt)).detach()
    hidden = theirs(x_src, x_tgt, tgt_mask=to_torch_mask(causal_mask(5)),
                    src_key_padding_mask=src_pad, memory_key_padding_mask=src_pad,
                    tgt_key_padding_mask=to_torch_key_padding_mask(padding_mask(tgt, PAD)))
    ref = hidden @ ours.out.weight.T.detach() + ours.out.bias.detach()
    (ref * target).sum().backward()

    close(logits, ref)
    for stack in ("encoder", "decoder"):
        ours_grads = to_torch_state_dict({n: p.grad for n, p in getattr(ours, stack).named_parameters()})
        theirs_grads = {n: p.grad for n, p in getattr(theirs, stack).named_parameters()}
        assert ours_grads.keys() == theirs_grads.keys()
        for name, grad in theirs_grads.items():
            close(ours_grads[name], grad)


def test_decoder_only_blocks_equal_torch_encoder_with_causal_mask():
    """A GPT stack ≡ nn.TransformerEncoder(norm_first=True) run with a causal mask."""
    torch.manual_seed(1)
    layer = nn.TransformerEncoderLayer(D, H, D_FF, dropout=0.0, batch_first=True, norm_first=True)
    theirs = nn.TransformerEncoder(layer, 2, norm=nn.LayerNorm(D), enable_nested_tensor=False)
    ours = copy_from_torch(Encoder(D, H, D_FF, 2, norm_first=True), theirs)
    x = torch.randn(2, 7, D)
    close(ours(x, mask=causal_mask(7)), theirs(x, mask=to_torch_mask(causal_mask(7)), is_causal=True))


def _change_after(tokens, t, vocab):
    changed = tokens.clone()
    changed[:, t + 1:] = (changed[:, t + 1:] + 1 + torch.arange(changed.shape[1] - t - 1)) % (vocab - 1) + 1
    assert not torch.equal(changed, tokens)
    return changed


@pytest.mark.parametrize("norm_first,positions", [(True, "learned"), (False, "sinusoidal")])
def test_decoder_only_lm_is_causal(norm_first, positions):
    torch.manual_seed(2)
    lm = DecoderOnlyLM(20, D, H, D_FF, n_layers=2, max_len=16, norm_first=norm_first, positions=positions)
    tokens = torch.randint(1, 20, (2, 10))
    logits = lm(tokens)
    assert logits.shape == (2, 10, 20)
    for t in (0, 4, 8):
        close(lm(_change_after(tokens, t, 20))[:, : t + 1], logits[:, : t + 1], atol=1e-6)


def test_encoder_decoder_is_causal_in_the_target():
    torch.manual_seed(3)
    model = EncoderDecoder(10, 12, D, H, D_FF, 2, 2, dropout=0.0)
    src, tgt = torch.randint(1, 10, (2, 6)), torch.randint(1, 12, (2, 7))
    logits = model(src, tgt)
    for t in (0, 3, 5):
        close(model(src, _change_after(tgt, t, 12))[:, : t + 1], logits[:, : t + 1], atol=1e-6)


def test_source_padding_does_not_change_the_output():
    torch.manual_seed(4)
    model = EncoderDecoder(10, 12, D, H, D_FF, 2, 2, dropout=0.0, norm_first=True, pad_id=PAD)
    src, tgt = torch.tensor([[5, 6, 7]]), torch.tensor([[1, 4, 5, 6]])
    padded = torch.tensor([[5, 6, 7, PAD, PAD, PAD]])
    close(model(padded, tgt), model(src, tgt))
    memory = model.encode(padded)
    close(model.decode(tgt, memory, model.source_mask(padded)), model(src, tgt))


def test_token_embedding_is_a_scaled_row_lookup():
    emb = TokenEmbedding(7, 4)
    tokens = torch.tensor([[0, 3, 6]])
    one_hot = torch.nn.functional.one_hot(tokens, 7).float()
    close(emb(tokens), one_hot @ emb.weight * 2.0)  # √d_model = 2


def test_collect_attention_encoder_decoder():
    model = EncoderDecoder(10, 12, D, H, D_FF, n_enc=2, n_dec=3, dropout=0.1, pad_id=PAD)
    src, tgt = _batch()
    maps = collect_attention(model, src, tgt)
    assert set(maps) == {"encoder", "decoder", "cross"}
    assert [w.shape for w in maps["encoder"]] == [(2, H, 6, 6)] * 2
    assert [w.shape for w in maps["decoder"]] == [(2, H, 5, 5)] * 3
    assert [w.shape for w in maps["cross"]] == [(2, H, 5, 6)] * 3
    for w in maps["cross"]:
        assert (w[1, ..., 3:] == 0).all()  # padded source positions get no attention
        close(w.sum(-1), torch.ones(2, H, 5))
    assert model.training  # mode restored
    assert all(not m.keep_weights and m.last_weights is None for m in model.modules() if isinstance(m, MultiHeadAttention))


def test_collect_attention_decoder_only_is_lower_triangular():
    lm = DecoderOnlyLM(20, D, H, D_FF, n_layers=2, max_len=16)
    maps = collect_attention(lm, torch.randint(0, 20, (1, 9)))
    assert list(maps) == ["decoder"] and len(maps["decoder"]) == 2
    for w in maps["decoder"]:
        assert w.shape == (1, H, 9, 9) and torch.equal(w.triu(1), torch.zeros_like(w))


def test_keep_attention_matches_need_weights():
    mha = MultiHeadAttention(D, H)
    x = torch.randn(2, 5, D)
    with keep_attention(mha):
        out = mha(x)
        kept = mha.last_weights
    ref, weights = mha(x, need_weights=True)
    close(out, ref)
    close(kept, weights.detach())
    assert mha.last_weights is None
