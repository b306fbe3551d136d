"""The transformer the course builds, one concept per module, and how it is trained and decoded.

    attention     softmax attention, scaled dot-product, masks (causal, padding)     02, 06
    positional    sinusoidal, learned and rotary tables;  rotary: rotary attention  03
    layers        MultiHeadAttention, FeedForward, LayerNorm, encoder/decoder layers 04, 05, 07
    models        Encoder, Decoder, EncoderDecoder, DecoderOnlyLM                   06, 07, 08, 10
    rnn           the small recurrent network                                        01
    decoding      greedy, sampling, beam search: one calling convention for both kinds 06, 08
    training      train/eval loop, schedules;  checkpoints: save and resume a run    06, 07, 08
    modern        RMSNorm, SwiGLU, grouped-query attention, KV cache                 11
    llama         SmolLM2 (a Llama) in these pieces;  generation: KV-cached decoding 11
    pretrained    MiniLM (a BERT) in our Encoder;  torch_compat: weights to/from torch 04, 05, 07, 09

The names in the `__all__` of attention, decoding, layers, models, modern, positional, rnn,
rotary and training are re-exported here: `from course_lib.nn import MultiHeadAttention,
causal_mask`. The other modules are imported by
name (`from course_lib.nn.llama import LlamaLM`). Core code imports no plotting, widgets, notebook
tooling, data or lesson experiment (tests/test_package_layout.py checks).
"""
from . import attention, decoding, layers, models, modern, positional, rnn, rotary, training  # noqa: F401
from .attention import *  # noqa: F401,F403
from .positional import *  # noqa: F401,F403
from .rotary import *  # noqa: F401,F403
from .layers import *  # noqa: F401,F403
from .models import *  # noqa: F401,F403
from .rnn import *  # noqa: F401,F403
from .modern import *  # noqa: F401,F403
from .decoding import *  # noqa: F401,F403
from .training import *  # noqa: F401,F403

__all__ = [
    *attention.__all__,
    *positional.__all__,
    *rotary.__all__,
    *layers.__all__,
    *models.__all__,
    *rnn.__all__,
    *modern.__all__,
    *decoding.__all__,
    *training.__all__,
]
