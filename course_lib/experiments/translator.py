"""Training the lesson 08 translator: the recipe (lesson 08; the dates extension reuses it).

- `TranslatorConfig`: model size and training settings; `build_translator`: a fresh
  EncoderDecoder sized for the data's vocabularies.
- `TrainState`: everything a run needs to continue — model, AdamW, schedule, step, loss
  history — with `save` / `load` (course_lib.nn.checkpoints).
- `train_translator`: teacher forcing, label-smoothed cross-entropy (pads ignored), gradient
  clipping, AdamW, warm-up then cosine decay; the pieces the lesson shows one by one are
  `smoothed_targets` and `label_smoothed_cross_entropy` (the schedule is lesson 06's
  `course_lib.nn.training.warmup_cosine_schedule`, decaying to 0).

The data: `course_lib.data.translation` (numbers) or `course_lib.data.dates`; judging the
result: `course_lib.experiments.translator_eval`.
"""

import time
from dataclasses import dataclass, field

import torch
import torch.nn.functional as F

from ..nn.training import warmup_cosine_schedule
from .translator_eval import evaluate_exact_match

__all__ = [
    "label_smoothed_cross_entropy",
    "smoothed_targets",
    "TranslatorConfig",
    "build_translator",
    "train_translator",
    "TrainState",
]


def smoothed_targets(labels, vocab_size, smoothing):
    """The label-smoothed target distribution: 1 - ε on the right token, ε spread
    uniformly over all vocab_size tokens (so the right one gets 1 - ε + ε/V).
    labels: (...,) ids -> (..., vocab_size) probabilities. This is what
    F.cross_entropy(label_smoothing=ε) compares against.
    """
    one_hot = F.one_hot(labels, vocab_size).float()
    return one_hot * (1 - smoothing) + smoothing / vocab_size


def label_smoothed_cross_entropy(logits, labels, smoothing=0.1, pad_id=0):
    """Mean over non-pad positions of −Σ_v q(v) log p(v), q = smoothed_targets.

    logits: (batch, n, vocab); labels: (batch, n). Equal to
    F.cross_entropy(logits.transpose(1, 2), labels, ignore_index=pad_id, label_smoothing=ε).
    """
    log_p = logits.log_softmax(dim=-1)
    q = smoothed_targets(labels, logits.shape[-1], smoothing)
    per_position = -(q * log_p).sum(dim=-1)  # (batch, n)
    keep = labels != pad_id
    return per_position[keep].mean()


@dataclass
class TranslatorConfig:
    """Model and training settings used by lesson 08 and benchmarks/bench_translator.py."""

    d_model: int = 64
    h: int = 4
    d_ff: int = 256
    n_enc: int = 2
    n_dec: int = 2
    dropout: float = 0.0
    norm_first: bool = True
    batch_size: int = 64
    lr: float = 3e-3
    warmup: int = 50
    total_steps: int = 300
    label_smoothing: float = 0.1
    clip: float = 1.0
    seed: int = 0


def build_translator(data, config=None):
    """A fresh EncoderDecoder sized for `data`'s vocabularies (seeded by config.seed)."""
    from ..nn.models import EncoderDecoder

    c = config or TranslatorConfig()
    torch.manual_seed(c.seed)
    return EncoderDecoder(len(data.src_vocab), len(data.tgt_vocab), d_model=c.d_model, h=c.h, d_ff=c.d_ff,
                          n_enc=c.n_enc, n_dec=c.n_dec, dropout=c.dropout, norm_first=c.norm_first,
                          max_len=32, pad_id=data.src_vocab.pad_id)


def _optimizer(model, c):
    return torch.optim.AdamW(model.parameters(), lr=c.lr, betas=(0.9, 0.98), weight_decay=0.01)


def _scheduler(optimizer, c):
    return warmup_cosine_schedule(optimizer, c.warmup, c.total_steps, min_ratio=0.0)


@dataclass
class TrainState:
    """Everything needed to continue a run: the model, its optimizer and schedule, the
    step count and the loss history (one entry per step)."""

    model: torch.nn.Module
    optimizer: torch.optim.Optimizer
    scheduler: object
    config: TranslatorConfig
    step: int = 0
    history: dict = field(default_factory=lambda: {"step": [], "loss": [], "lr": [], "grad_norm": []})

    @classmethod
    def fresh(cls, data, config=None):
        c = config or TranslatorConfig()
        model = build_translator(data, c)
        opt = _optimizer(model, c)
        return cls(model, opt, _scheduler(opt, c), c)

    def save(self, path, data=None):
        """Checkpoint everything (and `data`'s sampler state, so the batches continue too)."""
        from dataclasses import asdict

        from ..nn.checkpoints import save_checkpoint

        extra = {} if data is None else {"sampler": data.rng.bit_generator.state}
        return save_checkpoint(path, self.model, self.optimizer, self.scheduler, self.step,
                               self.history, asdict(self.config), extra)

    @classmethod
    def load(cls, path, data):
        """Rebuild a TrainState from a checkpoint: same config, weights, optimizer
        moments, schedule position, step and history (loaded with weights_only=True)."""
        from ..nn.checkpoints import load_checkpoint, read_config

        config = TranslatorConfig(**read_config(path))
        state = cls.fresh(data, config)
        info = load_checkpoint(path, state.model, state.optimizer, state.scheduler)
        state.step, state.history = info["step"], info["history"]
        if "sampler" in info["extra"]:
            data.rng.bit_generator.state = info["extra"]["sampler"]
        return state


def train_translator(state, data, steps=None, seconds=None, progress=True, callback=None,
                     eval_every=None, eval_numbers=None):
    """Train `state.model` in place for `steps` more steps (or until `seconds` pass,
    or until state.config.total_steps), one fresh random batch per step.

    Each step: teacher-forced forward, label-smoothed cross-entropy (pads ignored),
    backward, gradient clipping to norm `clip`, AdamW step, warm-up schedule step.
    Appends to state.history; `callback(state)` (if given) runs after each step and
    may return True to stop. With eval_every, exact match on eval_numbers is
    recorded in state.history["eval"] as (step, accuracy, seconds).
    Returns state.
    """
    from tqdm.auto import tqdm

    c, model = state.config, state.model
    limit = c.total_steps - state.step if steps is None else min(steps, c.total_steps - state.step)
    model.train()
    start = time.perf_counter()
    bar = tqdm(total=limit, disable=not progress, desc="training", leave=True)
    hist = state.history
    for _ in range(limit):
        src, tgt_in, labels = data.make_batch(data.sample_train(c.batch_size))
        logits = model(src, tgt_in)
        loss = F.cross_entropy(logits.transpose(1, 2), labels, ignore_index=data.tgt_vocab.pad_id,
                               label_smoothing=c.label_smoothing)
        state.optimizer.zero_grad(set_to_none=True)
        loss.backward()
        grad_norm = torch.nn.utils.clip_grad_norm_(model.parameters(), c.clip)
        state.optimizer.step()
        hist["step"].append(state.step)
        hist["loss"].append(loss.item())
        hist["lr"].append(state.optimizer.param_groups[0]["lr"])
        hist["grad_norm"].append(float(grad_norm))
        state.scheduler.step()
        state.step += 1
        bar.update(1)
        if state.step % 20 == 0:
            bar.set_postfix(loss=f"{loss.item():.3f}")
        if eval_every and state.step % eval_every == 0:
            acc = evaluate_exact_match(model, data, eval_numbers)["exact_match"]
            hist.setdefault("eval", []).append((state.step, acc, time.perf_counter() - start))
            model.train()
        if callback is not None and callback(state):
            break
        if seconds is not None and time.perf_counter() - start > seconds:
            break
    bar.close()
    model.eval()
    return state
