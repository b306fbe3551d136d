"""Move weights between our modules and PyTorch's own, to show they compute the same.

Lessons 04, 05 and 07 copy the weights of `nn.MultiheadAttention`,
`nn.TransformerEncoderLayer`, `nn.TransformerDecoderLayer` and `nn.Transformer` into
ours and compare outputs. PyTorch's modules must be built with `batch_first=True`.

Only the names and one layout differ:

    ours                                  PyTorch
    w_q, w_k, w_v  (three nn.Linear)      in_proj_weight / in_proj_bias (stacked [Q; K; V])
    w_o                                   out_proj
    cross_attn                            multihead_attn
    ffn.w_1, ffn.w_2                      linear1, linear2
    norm1, norm2, norm3, layers.i, norm   the same

Masks have opposite polarity: ours True = may attend, PyTorch's bool masks True = blocked.
"""

import torch
import torch.nn.functional as F
from torch import nn

from .layers import DecoderLayer, EncoderLayer, MultiHeadAttention
from .rnn import ElmanRNN

__all__ = [
    "to_torch_state_dict",
    "from_torch_state_dict",
    "copy_from_torch",
    "mha_from_torch",
    "encoder_layer_from_torch",
    "decoder_layer_from_torch",
    "copy_from_torch_transformer",
    "rnn_from_torch",
    "to_torch_mask",
    "to_torch_key_padding_mask",
]

_RENAMES = [("w_o.", "out_proj."), ("cross_attn.", "multihead_attn."), ("ffn.w_1.", "linear1."), ("ffn.w_2.", "linear2.")]


def _rename(name, pairs):
    dotted = "." + name  # anchor so "w_o." only matches a whole name segment
    for old, new in pairs:
        dotted = dotted.replace("." + old, "." + new)
    return dotted[1:]


def to_torch_state_dict(state):
    """Our names -> PyTorch's; w_q, w_k, w_v are stacked into in_proj_weight/bias.

    Works on any {name: tensor} dict: a state_dict, or {name: param.grad} to compare
    gradients with a PyTorch module's.
    """
    out, qkv = {}, {}
    for name, t in state.items():
        prefix, _, leaf = name.rpartition(".")  # e.g. "layers.0.self_attn.w_q", "weight"
        head, _, proj = prefix.rpartition(".")
        if proj in ("w_q", "w_k", "w_v"):
            key = f"{head}.in_proj_{leaf}" if head else f"in_proj_{leaf}"
            qkv.setdefault(key, {})[proj] = t
        else:
            out[_rename(name, _RENAMES)] = t
    for key, parts in qkv.items():
        out[_rename(key, _RENAMES)] = torch.cat([parts["w_q"], parts["w_k"], parts["w_v"]])
    return out


def from_torch_state_dict(state):
    """PyTorch's names -> ours; in_proj_weight/bias is split into w_q, w_k, w_v."""
    out = {}
    back = [(new, old) for old, new in _RENAMES]
    for name, t in state.items():
        prefix, _, leaf = name.rpartition(".")
        if leaf in ("in_proj_weight", "in_proj_bias"):
            kind = leaf.removeprefix("in_proj_")
            for proj, part in zip(("w_q", "w_k", "w_v"), t.chunk(3)):
                name_ours = f"{prefix}.{proj}.{kind}" if prefix else f"{proj}.{kind}"
                out[_rename(name_ours, back)] = part
        else:
            out[_rename(name, back)] = t
    return out


def copy_from_torch(ours, theirs):
    """Load `theirs`' weights into `ours` (same architecture, strict: every tensor must match).

    Pairs: MultiHeadAttention / nn.MultiheadAttention, LayerNorm / nn.LayerNorm,
    EncoderLayer / nn.TransformerEncoderLayer, DecoderLayer / nn.TransformerDecoderLayer,
    Encoder / nn.TransformerEncoder, Decoder / nn.TransformerDecoder. Returns ours.
    """
    _check_batch_first(theirs)
    ours.load_state_dict(from_torch_state_dict(theirs.state_dict()))
    return ours


def _check_batch_first(theirs):
    for m in theirs.modules():
        if isinstance(m, nn.MultiheadAttention) and not m.batch_first:
            raise ValueError("the PyTorch module must be built with batch_first=True: ours are (batch, n, d_model)")


def _activation_name(layer):
    act = layer.activation
    if act is F.relu or isinstance(act, nn.ReLU):
        return "relu"
    if act is F.gelu or isinstance(act, nn.GELU):
        return "gelu"
    raise ValueError(f"unsupported activation {act!r}; ours has 'relu' and 'gelu'")


def mha_from_torch(theirs):
    """A MultiHeadAttention with the same sizes and weights as an nn.MultiheadAttention."""
    ours = MultiHeadAttention(theirs.embed_dim, theirs.num_heads, theirs.dropout, bias=theirs.in_proj_bias is not None)
    return copy_from_torch(ours, theirs)


def _layer_kwargs(theirs):
    return dict(d_model=theirs.self_attn.embed_dim, h=theirs.self_attn.num_heads, d_ff=theirs.linear1.out_features,
                dropout=theirs.dropout.p, norm_first=theirs.norm_first,
                activation=_activation_name(theirs), eps=theirs.norm1.eps)


def encoder_layer_from_torch(theirs):
    """An EncoderLayer equal to an nn.TransformerEncoderLayer(batch_first=True)."""
    return copy_from_torch(EncoderLayer(**_layer_kwargs(theirs)), theirs)


def decoder_layer_from_torch(theirs):
    """A DecoderLayer equal to an nn.TransformerDecoderLayer(batch_first=True)."""
    return copy_from_torch(DecoderLayer(**_layer_kwargs(theirs)), theirs)


def copy_from_torch_transformer(ours, theirs):
    """Copy nn.Transformer's encoder and decoder into an EncoderDecoder's.

    nn.Transformer always ends each stack with a LayerNorm, so build ours with
    final_norm=True. Embeddings and the output projection have no counterpart in
    nn.Transformer and are left alone. Returns ours.
    """
    copy_from_torch(ours.encoder, theirs.encoder)
    copy_from_torch(ours.decoder, theirs.decoder)
    return ours


def rnn_from_torch(theirs):
    """An ElmanRNN equal to a one-layer nn.RNN(batch_first=True).

    nn.RNN has two biases (b_ih + b_hh); they only ever appear summed, so b is their sum.
    """
    if theirs.num_layers != 1 or theirs.bidirectional or not theirs.batch_first:
        raise ValueError("need nn.RNN(..., num_layers=1, bidirectional=False, batch_first=True)")
    ours = ElmanRNN(theirs.input_size, theirs.hidden_size, theirs.nonlinearity)
    with torch.no_grad():
        ours.U.copy_(theirs.weight_ih_l0)
        ours.W.copy_(theirs.weight_hh_l0)
        if theirs.bias:
            ours.b.copy_(theirs.bias_ih_l0 + theirs.bias_hh_l0)
        else:
            ours.b.zero_()
    return ours


def to_torch_mask(mask):
    """Our attention mask (True = may attend) -> PyTorch's attn_mask (True = blocked)."""
    return ~mask


def to_torch_key_padding_mask(mask):
    """Our padding mask (batch, 1, 1, n_k), True = real token -> PyTorch's
    key_padding_mask (batch, n_k), True = padding."""
    return ~mask.reshape(mask.shape[0], mask.shape[-1])
