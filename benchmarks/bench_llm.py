"""Lesson 11: our cached generation vs transformers' `generate`, on the same SmolLM2 weights.

    python benchmarks/bench_llm.py                 # 128 new tokens, 3 rounds, 1 thread
    python benchmarks/bench_llm.py --rounds 1      # a quick look

Both models run on the *same tensors*: our `LlamaLM` loaded by `course_lib.nn.llama.load_gguf`,
and transformers' `LlamaForCausalLM` built around those tensors (`reference_sharing_weights`,
default "sdpa" attention, its own DynamicCache). Same prompt, greedy, exactly
`--new-tokens` new tokens each (no early stop at end-of-sequence), one thread. The two are
timed in turns, alternating which goes first, so a busy machine slows both alike; the
script checks that both produced the same tokens.

It prints, per round and as the median over rounds:

- tokens/s of ours and of theirs (wall clock, and per CPU second of this process — the
  steadier figure on a shared machine) and the ratio ours/theirs (goal: ≥ 1.0);
- the speed-up of our KV cache: `--cache-tokens` (256) new tokens with and without the cache.
"""
from __future__ import annotations

import argparse
import statistics
import time

import torch

from course_lib.console import utf8_output
from course_lib.nn.generation import generate
from course_lib.nn.llama import load_gguf, load_tokenizer, reference_sharing_weights
from course_lib.utils import set_threads

PROMPT = "Once upon a time"


def _timed(fn):
    wall, cpu = time.perf_counter(), time.process_time()
    out = fn()
    return out, time.perf_counter() - wall, time.process_time() - cpu


def main(argv=None):
    utf8_output()                # UTF-8 output whatever the console's locale
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--new-tokens", type=int, default=128)
    p.add_argument("--cache-tokens", type=int, default=256)
    p.add_argument("--rounds", type=int, default=3)
    p.add_argument("--threads", type=int, default=1)
    args = p.parse_args(argv)
    set_threads(args.threads)

    model, tokenizer = load_gguf(), load_tokenizer()
    theirs = reference_sharing_weights(model, attn_implementation="sdpa")
    ids = torch.tensor([tokenizer.encode(PROMPT)])
    n = args.new_tokens

    def ours_run():
        return generate(model, ids, n)

    def theirs_run():
        with torch.no_grad():
            return theirs.generate(ids, max_new_tokens=n, min_new_tokens=n, do_sample=False)

    ours_run(), theirs_run()       # warm-up: first-call allocations, lazy imports
    rows = []
    print(f"greedy, prompt {PROMPT!r} ({ids.shape[1]} tokens), {n} new tokens, {args.threads} thread(s)")
    print(f"{'round':>5} {'ours tok/s':>11} {'theirs tok/s':>13} {'ratio':>6} {'ratio (CPU time)':>17}")
    for r in range(args.rounds):
        order = [("ours", ours_run), ("theirs", theirs_run)]
        results = dict((name, _timed(fn)) for name, fn in (order if r % 2 == 0 else order[::-1]))
        (a, a_wall, a_cpu), (b, b_wall, b_cpu) = results["ours"], results["theirs"]
        if not torch.equal(a, b):
            raise SystemExit("ours and transformers' generate produced different tokens")
        rows.append((n / a_wall, n / b_wall, b_wall / a_wall, b_cpu / a_cpu))
        print(f"{r:>5} {rows[-1][0]:>11.1f} {rows[-1][1]:>13.1f} {rows[-1][2]:>6.2f} {rows[-1][3]:>17.2f}")
    med = [statistics.median(col) for col in zip(*rows)]
    print(f"{'median':>5} {med[0]:>11.1f} {med[1]:>13.1f} {med[2]:>6.2f} {med[3]:>17.2f}")
    print(f"ours / transformers' generate: {med[2]:.2f}x tokens/s (wall), {med[3]:.2f}x (CPU time); goal >= 1.0")

    m = args.cache_tokens
    (c, c_wall, c_cpu) = _timed(lambda: generate(model, ids, m))
    (u, u_wall, u_cpu) = _timed(lambda: generate(model, ids, m, use_cache=False))
    same = torch.equal(c, u)
    print(f"{m} new tokens: with the KV cache {c_wall:.1f} s, without {u_wall:.1f} s -> "
          f"{u_wall / c_wall:.1f}x faster with the cache ({u_cpu / c_cpu:.1f}x in CPU time); same tokens: {same}")


if __name__ == "__main__":
    main()
