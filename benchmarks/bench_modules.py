"""Forward+backward time of our modules vs PyTorch's own, measured in the same run.

    python benchmarks/bench_modules.py              # 1 thread, both sizes
    python benchmarks/bench_modules.py --threads 2 --repeats 20

Compares, with copied weights and dropout 0 (train mode, so PyTorch takes its
regular autograd path, not the inference-only fast path):
  - MultiHeadAttention (self-attention, no mask) vs nn.MultiheadAttention(batch_first=True)
  - Encoder + Decoder (EncoderDecoder's core: 2+2 layers, d_ff = 4·d_model, causal
    target mask) vs nn.Transformer(batch_first=True)
Timings are interleaved (ours, theirs, ours, theirs …) after a warm-up, so a busy
machine slows both alike; the table shows each side's median time and the median of
the per-pair ratios ours / theirs. Goal: ratio ≤ 1.10.
"""

import argparse
import statistics
import time

import torch
from torch import nn

from course_lib.console import utf8_output
from course_lib.nn.attention import causal_mask
from course_lib.nn.layers import MultiHeadAttention
from course_lib.nn.models import Decoder, Encoder
from course_lib.nn.torch_compat import copy_from_torch, to_torch_mask

SIZES = [  # (batch, n, d_model, h, d_ff)
    (32, 64, 128, 4, 512),
    (32, 128, 256, 4, 1024),
]


def time_pair(ours_step, theirs_step, repeats, min_seconds=5.0, warmup=2):
    """Time the two steps alternately (ours, theirs, theirs, ours, ours, theirs …).

    Runs at least `repeats` pairs, and more for fast steps until `min_seconds` have
    passed. Returns (median ours, median theirs, median of the per-pair ratios, pairs):
    each ratio compares two runs made back to back, so load that comes and goes on a
    busy machine hits both sides of a pair alike.
    """
    for _ in range(warmup):
        ours_step()
        theirs_step()
    ours, theirs = [], []
    begin = time.perf_counter()
    pair = [(ours_step, ours), (theirs_step, theirs)]
    while len(ours) < repeats or time.perf_counter() - begin < min_seconds:
        pair.reverse()  # who goes first alternates too
        for step, times in pair:
            start = time.perf_counter()
            step()
            times.append(time.perf_counter() - start)
    ratio = statistics.median(a / b for a, b in zip(ours, theirs))
    return statistics.median(ours), statistics.median(theirs), ratio, len(ours)


def mha_steps(batch, n, d_model, h):
    theirs = nn.MultiheadAttention(d_model, h, batch_first=True)
    ours = copy_from_torch(MultiHeadAttention(d_model, h), theirs)
    x = torch.randn(batch, n, d_model, requires_grad=True)

    def ours_step():  # self-attention, no mask: the module itself, nothing else
        ours(x).sum().backward()

    def theirs_step():
        theirs(x, x, x, need_weights=False)[0].sum().backward()

    return ours_step, theirs_step


def transformer_steps(batch, n, d_model, h, d_ff, layers=2):
    theirs = nn.Transformer(d_model, h, layers, layers, d_ff, dropout=0.0, batch_first=True)
    encoder = copy_from_torch(Encoder(d_model, h, d_ff, layers, final_norm=True), theirs.encoder)
    decoder = copy_from_torch(Decoder(d_model, h, d_ff, layers, final_norm=True), theirs.decoder)
    src = torch.randn(batch, n, d_model, requires_grad=True)
    tgt = torch.randn(batch, n, d_model, requires_grad=True)
    mask = causal_mask(n)
    torch_mask = to_torch_mask(mask)

    def ours_step():
        decoder(tgt, encoder(src), self_mask=mask).sum().backward()

    def theirs_step():  # tgt_is_causal lets PyTorch use its causal SDPA kernel: its best path
        theirs(src, tgt, tgt_mask=torch_mask, tgt_is_causal=True).sum().backward()

    return ours_step, theirs_step


def main():
    utf8_output()                # UTF-8 output whatever the console's locale
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--threads", type=int, default=1, help="torch threads (default 1: steady timings on a busy machine)")
    parser.add_argument("--repeats", type=int, default=10, help="timed runs per module (median is reported)")
    parser.add_argument("--min-seconds", type=float, default=10.0, help="keep alternating fast steps at least this long")
    args = parser.parse_args()
    torch.set_num_threads(args.threads)
    torch.manual_seed(0)
    print(f"torch {torch.__version__}, {args.threads} thread(s), forward+backward, median of interleaved runs\n")
    print(f"{'module':<34}{'batch':>6}{'n':>5}{'d':>5}{'h':>3}{'runs':>6}{'ours ms':>10}{'torch ms':>10}{'ratio':>7}")
    for batch, n, d_model, h, d_ff in SIZES:
        rows = [
            ("MultiHeadAttention / nn.MHA", mha_steps(batch, n, d_model, h)),
            ("Encoder+Decoder / nn.Transformer", transformer_steps(batch, n, d_model, h, d_ff)),
        ]
        for name, (ours_step, theirs_step) in rows:
            ours, theirs, ratio, runs = time_pair(ours_step, theirs_step, args.repeats, args.min_seconds)
            flag = "" if ratio <= 1.10 else "  > 1.10"
            print(f"{name:<34}{batch:>6}{n:>5}{d_model:>5}{h:>3}{runs:>6}{ours * 1e3:>10.1f}{theirs * 1e3:>10.1f}"
                  f"{ratio:>7.2f}{flag}", flush=True)


if __name__ == "__main__":
    main()
