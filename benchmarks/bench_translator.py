"""How fast does the lesson-08 translator learn? Time to ≥ 99 % exact match on the 1 000
held-out numbers, plus time to 100 % on the copy and reverse toy tasks.

    python benchmarks/bench_translator.py                 # 1 and 2 threads, all tasks
    nice python benchmarks/bench_translator.py --threads 2 --tasks numbers

Design goal (DESIGN.md §5): ≥ 99 % exact match on 1 000 held-out numbers within 60 s of
training on 2 CPU cores. The recipe is lesson 08's `TranslatorConfig()` (d_model 64, 2+2
pre-norm layers, batch 64, AdamW 3e-3, 50 warm-up steps, cosine to step 300, label
smoothing 0.1, clipping 1.0). Every `--eval-every` steps training pauses, greedy
decoding translates the held-out numbers, and the clock (wall and CPU time of the
training steps only — evaluation is not counted) is read. Reported: the training time
at the first evaluation at or above the target, and the accuracy after the full
schedule. The toy tasks (copy / reverse a random digit sequence, same model and
recipe with a longer schedule) report the time to the first evaluation at 100 % on
1 000 fresh sequences.

On a machine shared with other work, wall time depends on the load; the load average
is printed, and CPU time is printed beside wall time.
"""

import argparse
import os
import time

import numpy as np
import torch

from course_lib.console import utf8_output
from course_lib.nn.decoding import greedy_decode
from course_lib.data.translation import NumberTranslationData, Vocab, shift_targets
from course_lib.experiments.translator import TrainState, TranslatorConfig, train_translator
from course_lib.experiments.translator_eval import evaluate_exact_match


class _Clock:
    """Wall and CPU seconds spent inside `with clock:` blocks only."""

    def __init__(self):
        self.wall = self.cpu = 0.0

    def __enter__(self):
        self._w, self._c = time.perf_counter(), time.process_time()

    def __exit__(self, *exc):
        self.wall += time.perf_counter() - self._w
        self.cpu += time.process_time() - self._c


def run_numbers(config, eval_every, target):
    data = NumberTranslationData()
    state = TrainState.fresh(data, config)
    clock, hit, log = _Clock(), None, []
    while state.step < config.total_steps:
        with clock:
            train_translator(state, data, steps=eval_every, progress=False)
        acc = evaluate_exact_match(state.model, data)["exact_match"]
        log.append((state.step, acc))
        if hit is None and acc >= target:
            hit = (state.step, clock.wall, clock.cpu)
    return hit, acc, clock, log


TOY_LENGTH = 16


class ToyData:
    """Copy or reverse a random digit sequence: the same interface train_translator uses."""

    def __init__(self, task, length=TOY_LENGTH, seed=0):
        self.task, self.length = task, length
        self.src_vocab = self.tgt_vocab = Vocab([str(d) for d in range(10)])
        self.rng = np.random.default_rng(seed)

    def sample_train(self, k):
        return self.rng.integers(0, 10, size=(k, self.length))

    def make_batch(self, seqs):
        seqs = np.asarray(seqs) + 3  # ids 0-2 are <pad>, <bos>, <eos>
        targets = seqs[:, ::-1] if self.task == "reverse" else seqs
        v = self.tgt_vocab
        tgt_in, labels = shift_targets(targets.tolist(), v.bos_id, v.eos_id, v.pad_id)
        return torch.as_tensor(seqs), tgt_in, labels


def run_toy(task, config, eval_every):
    data = ToyData(task)
    test = np.random.default_rng(123).integers(0, 10, size=(1000, data.length))
    src, _, labels = data.make_batch(test)
    state = TrainState.fresh(data, config)
    clock, hit, acc = _Clock(), None, 0.0
    while state.step < config.total_steps and hit is None:
        with clock:
            train_translator(state, data, steps=eval_every, progress=False)
        out = greedy_decode(state.model, data.tgt_vocab.bos_id, data.length + 1, data.tgt_vocab.eos_id, src=src)
        acc = float((out[:, 1:] == labels[:, : out.shape[1] - 1]).all(dim=1).float().mean())
        if acc == 1.0:
            hit = (state.step, clock.wall, clock.cpu)
    return hit, acc, clock


def fmt_hit(hit):
    return "not reached" if hit is None else f"{hit[1]:.1f} s wall / {hit[2]:.1f} s CPU (step {hit[0]})"


def main(argv=None):
    utf8_output()                # UTF-8 output whatever the console's locale
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--threads", default="1,2", help="comma-separated thread counts to try")
    p.add_argument("--tasks", default="numbers,copy,reverse")
    p.add_argument("--eval-every", type=int, default=25)
    p.add_argument("--target", type=float, default=0.99)
    args = p.parse_args(argv)
    tasks = args.tasks.split(",")
    print(f"cores: {os.cpu_count()}, load average at start: {os.getloadavg()[0]:.1f}, torch {torch.__version__}")
    for threads in [int(t) for t in args.threads.split(",")]:
        torch.set_num_threads(threads)
        print(f"\n=== {threads} thread(s) ===")
        if "numbers" in tasks:
            config = TranslatorConfig()
            hit, acc, clock, log = run_numbers(config, args.eval_every, args.target)
            print(f"numbers EN->DE: time to >= {args.target:.0%} exact match on 1000 held-out numbers: "
                  f"{fmt_hit(hit)}")
            print(f"  after the full schedule ({config.total_steps} steps, {clock.wall:.1f} s wall / "
                  f"{clock.cpu:.1f} s CPU of training): exact match {acc:.1%}")
            print("  exact match every", args.eval_every, "steps:", " ".join(f"{a:.3f}" for _, a in log))
        for task in ("copy", "reverse"):
            if task in tasks:
                config = TranslatorConfig(total_steps=2000, warmup=50)
                hit, acc, clock = run_toy(task, config, args.eval_every)
                print(f"{task} {TOY_LENGTH} digits: time to 100 % exact match on 1000 sequences: {fmt_hit(hit)}"
                      + ("" if hit else f" (best {acc:.1%} after {clock.wall:.1f} s)"))
        print(f"load average now: {os.getloadavg()[0]:.1f}")


if __name__ == "__main__":
    main()
