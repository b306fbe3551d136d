"""A small, general training loop with a progress bar (lessons 06, 07, 08).

    history = train(model, get_batch, optimizer, steps=500,
                    eval_batch=get_val_batch, eval_every=100)

One step: draw a batch, compute the loss, backpropagate, (clip), update, (schedule).
The loop knows nothing about the task: `get_batch(step)` makes a batch and
`loss_fn(model, batch)` turns it into a scalar loss. The default loss is next-token
cross-entropy for a language model, batch = (x, y):

    loss = mean over every position t of  -log p_model(y_t | x_0..x_t)

With teacher forcing, one forward pass scores all n positions of a sequence at once,
so every batch of shape (batch, n) gives batch·n training examples.
"""

import math
import time
from dataclasses import dataclass, field

import torch
import torch.nn.functional as F
from torch import nn

from .._checks import check_positive_int

__all__ = ["lm_loss", "History", "estimate_loss", "train", "warmup_cosine_schedule", "warmup_cosine"]


def lm_loss(model, batch):
    """Next-token cross-entropy: batch = (x, y), both (batch, n) ids; y is x shifted by one.

    model(x) -> logits (batch, n, vocab). The mean over all batch·n positions.
    """
    x, y = batch
    logits = model(x)  # (batch, n, vocab)
    return F.cross_entropy(logits.flatten(0, 1), y.flatten())


@dataclass
class History:
    """What happened during training, for plots and for printing.

    steps / train_loss: every step's training loss (1-based step numbers).
    eval_steps / eval_loss: the evaluation loss at the steps it was measured.
    seconds: wall time of the loop (evaluations included); tokens: training tokens seen
    (counted from the first tensor of each batch).
    """

    steps: list = field(default_factory=list)
    train_loss: list = field(default_factory=list)
    eval_steps: list = field(default_factory=list)
    eval_loss: list = field(default_factory=list)
    seconds: float = 0.0
    tokens: int = 0

    def smoothed(self, window=20):
        """The training loss averaged over the last `window` steps at every step."""
        check_positive_int("window", window)
        out, total = [], 0.0
        for i, loss in enumerate(self.train_loss):
            total += loss
            if i >= window:
                total -= self.train_loss[i - window]
            out.append(total / min(i + 1, window))
        return out

    def extend(self, other):
        """Append a later run (e.g. training resumed), renumbering its steps."""
        offset = self.steps[-1] if self.steps else 0
        self.steps += [s + offset for s in other.steps]
        self.train_loss += other.train_loss
        self.eval_steps += [s + offset for s in other.eval_steps]
        self.eval_loss += other.eval_loss
        self.seconds += other.seconds
        self.tokens += other.tokens
        return self


@torch.no_grad()
def estimate_loss(model, get_batch, n_batches=10, loss_fn=lm_loss):
    """The mean loss over `n_batches` batches from `get_batch(i)`, in eval mode.

    Eval mode switches dropout off; the model's previous mode is restored afterwards.
    """
    check_positive_int("n_batches", n_batches)
    was_training = model.training
    model.eval()
    try:
        return sum(float(loss_fn(model, get_batch(i))) for i in range(n_batches)) / n_batches
    finally:
        model.train(was_training)


def _count_tokens(batch):
    first = batch[0] if isinstance(batch, (tuple, list)) else batch
    return first.numel() if isinstance(first, torch.Tensor) else 0


def train(model, get_batch, optimizer, steps, loss_fn=lm_loss, eval_batch=None, eval_every=None,
          eval_batches=10, scheduler=None, clip_grad_norm=None, progress=True, description="training"):
    """Train `model` for `steps` optimizer steps; return a `History`.

    get_batch(step) -> a batch (anything `loss_fn` accepts; default (x, y) ids).
    loss_fn(model, batch) -> scalar loss tensor; default `lm_loss`.
    eval_batch(i) -> a held-out batch; with eval_every, the mean loss over
      `eval_batches` of them is measured every eval_every steps and after the last one.
    scheduler: stepped after every optimizer step (e.g. `warmup_cosine_schedule`).
    clip_grad_norm: if set, gradients are rescaled so their global norm is at most this.
    progress: show a tqdm progress bar (tqdm.auto: a widget in Jupyter, text elsewhere).
    """
    if not isinstance(model, nn.Module):
        raise TypeError(f"model must be an nn.Module, got {type(model).__name__}")
    if not isinstance(optimizer, torch.optim.Optimizer):
        raise TypeError(f"optimizer must be a torch.optim.Optimizer, got {type(optimizer).__name__}")
    if isinstance(steps, bool) or not isinstance(steps, int) or steps < 0:
        raise ValueError(f"steps must be an int >= 0, got {steps!r}")
    if eval_every is not None:
        check_positive_int("eval_every", eval_every)
        if eval_batch is None:
            raise ValueError("eval_every needs eval_batch, the function that makes held-out batches")

    history = History()
    bar = None
    if progress:
        from tqdm.auto import tqdm

        bar = tqdm(total=steps, desc=description, leave=True)
    model.train()
    start = time.perf_counter()
    try:
        for step in range(1, steps + 1):
            batch = get_batch(step)
            loss = loss_fn(model, batch)
            if not torch.isfinite(loss):
                raise FloatingPointError(f"the loss became {loss.item()} at step {step}; "
                                         "try a smaller learning rate or gradient clipping")
            optimizer.zero_grad(set_to_none=True)
            loss.backward()
            if clip_grad_norm is not None:
                nn.utils.clip_grad_norm_(model.parameters(), clip_grad_norm)
            optimizer.step()
            if scheduler is not None:
                scheduler.step()
            history.steps.append(step)
            history.train_loss.append(loss.item())
            history.tokens += _count_tokens(batch)
            if eval_every is not None and (step % eval_every == 0 or step == steps):
                history.eval_steps.append(step)
                history.eval_loss.append(estimate_loss(model, eval_batch, eval_batches, loss_fn))
            if bar is not None:
                recent = history.train_loss[-20:]
                shown = {"loss": f"{sum(recent) / len(recent):.3f}"}
                if history.eval_loss:
                    shown["eval"] = f"{history.eval_loss[-1]:.3f}"
                bar.set_postfix(shown, refresh=False)
                bar.update(1)
    finally:
        history.seconds = time.perf_counter() - start
        if bar is not None:
            bar.close()
    return history


def warmup_cosine_schedule(optimizer, warmup_steps, total_steps, min_ratio=0.1):
    """Linear warm-up to the optimizer's learning rate, then cosine decay to min_ratio of it.

    The schedule of nanoGPT's Shakespeare recipe: lr(step) = lr · f(step), with
    f rising from 0 to 1 over warmup_steps, then following half a cosine down to
    min_ratio at total_steps (and staying there). Returns a LambdaLR to pass to `train`.
    """
    if isinstance(warmup_steps, bool) or not isinstance(warmup_steps, int) or warmup_steps < 0:
        raise ValueError(f"warmup_steps must be an int >= 0, got {warmup_steps!r}")
    check_positive_int("total_steps", total_steps)
    if not 0 <= min_ratio <= 1:
        raise ValueError(f"min_ratio must be in [0, 1], got {min_ratio}")

    # LambdaLR calls the factor with the number of steps taken so far
    return torch.optim.lr_scheduler.LambdaLR(
        optimizer, lambda step: warmup_cosine(step, warmup_steps, total_steps, min_ratio))


def warmup_cosine(step, warmup_steps, total_steps, min_ratio=0.1):
    """The learning-rate multiplier of `warmup_cosine_schedule` at `step` (a float in [0, 1]).

    Linear warm-up (step + 1) / warmup_steps, then min_ratio + (1 - min_ratio)·½(1 + cos πp)
    with p going from 0 to 1 between warmup_steps and total_steps. Early steps use a small
    rate because Adam's moment estimates and the activations are still unreliable.
    """
    if step < warmup_steps:
        return (step + 1) / warmup_steps
    progress = min(1.0, (step - warmup_steps) / max(1, total_steps - warmup_steps))
    return min_ratio + (1 - min_ratio) * 0.5 * (1 + math.cos(math.pi * progress))
