"""Lesson 10 — the residual stream and induction heads.

- `next_token_losses(logits, tokens)`: the per-position loss of a language model,
  position t predicting token t+1.
- `induction_score(weights, period)`: how much each head attends, in the repeated
  copy of [BOS, s, s], to the token *after* the previous occurrence of the current one.
"""
import torch
import torch.nn.functional as F

from .feedback import Property, fmt, in_range, unchanged_when
from .framework import Exercise, Mistake

__all__ = ["check_next_token_losses", "check_induction_score"]


# ----------------------------------------------------------------------------- losses
def next_token_losses_reference(logits, tokens):
    """logits (batch, n, V), tokens (batch, n) -> (batch, n-1), entry t = -log p(tokens[t+1])."""
    return F.cross_entropy(logits[:, :-1].transpose(1, 2), tokens[:, 1:], reduction="none")


def _loss_inputs(gen, sizes=(2, 6, 9)):
    batch, n, vocab = sizes
    return torch.randn(batch, n, vocab, generator=gen) * 2, torch.randint(0, vocab, (batch, n), generator=gen)


def _loss_probes(gen):
    """vocab = n − 1, then vocab = n (the trials have vocab > n): there F.cross_entropy without the
    transpose takes the positions for the classes and runs — shifted as asked on the first, not
    shifted on the second — so the class-axis hint is matched by its numbers, not by the
    "Expected target size" error that other slips (a wrong shift as well) raise alike."""
    return [_loss_inputs(gen, sizes=(3, 6, 5)), _loss_inputs(gen, sizes=(3, 6, 6))]


def _losses_are_minus_log_probabilities(args, out, again):
    """Each loss is −log p for a probability 0 < p ≤ 1: it is ≥ 0."""
    bad = (out < -1e-6).nonzero()
    if len(bad):
        idx = tuple(int(t) for t in bad[0])
        return (f"your losses are not all ≥ 0: losses{list(idx)} is {fmt(out[idx].item())}. A loss is "
                f"−log p of a probability 0 < p ≤ 1, so it is ≥ 0 (−p, or log p, is not)")
    return None


def _first_token_changed(args):
    logits, tokens = args
    tokens = tokens.clone()
    tokens[:, 0] = (tokens[:, 0] + 1) % logits.shape[-1]
    return logits, tokens


def _last_logits_changed(args):
    logits, tokens = args
    logits = logits.clone()
    logits[:, -1] += torch.linspace(-2.0, 2.0, logits.shape[-1])
    return logits, tokens


CLASS_AXIS_HINT = ("F.cross_entropy wants the class axis second: logits of shape (batch, vocab, "
                   "seq), not (batch, seq, vocab) — pass logits[:, :-1].transpose(1, 2) with "
                   "tokens[:, 1:] (or flatten both: (batch·seq, vocab) and (batch·seq,))")


NO_REDUCTION_HINT = ("you returned one number, the mean over every position: F.cross_entropy "
                     "averages unless told not to. Pass reduction=\"none\" to keep one loss per "
                     "position, shape (batch, n-1)")


NEXT_TOKEN_LOSSES = Exercise(
    name="next_token_losses",
    reference=next_token_losses_reference,
    make_inputs=_loss_inputs,
    mistakes=[
        Mistake("position t's logits were scored against token t; they predict the *next* token: "
                "use logits[:, :-1] with tokens[:, 1:]",
                lambda lo, t: F.cross_entropy(lo[:, 1:].transpose(1, 2), t[:, 1:], reduction="none")),
        Mistake("you paired logits[:, :-1] with tokens[:, :-1]: position t must be scored against "
                "token t+1, i.e. tokens[:, 1:]",
                lambda lo, t: F.cross_entropy(lo[:, :-1].transpose(1, 2), t[:, :-1], reduction="none")),
        Mistake("you shifted the wrong way: logits[:, 1:] against tokens[:, :-1] scores each "
                "position against the token *before* it. Position t predicts token t+1: drop the "
                "last logits and the first token — logits[:, :-1] with tokens[:, 1:]",
                lambda lo, t: F.cross_entropy(lo[:, 1:].transpose(1, 2), t[:, :-1], reduction="none")),
        # Not transposed, F.cross_entropy raises "Expected target size [2, 9], got [2, 5]" on the
        # trials (shifted as asked, or not shifted at all); on the probes, vocab = n − 1 or n, it
        # runs, and the hint is matched by its numbers.
        Mistake(CLASS_AXIS_HINT,
                lambda lo, t: F.cross_entropy(lo[:, :-1], t[:, 1:], reduction="none")),
        Mistake(CLASS_AXIS_HINT,
                lambda lo, t: F.cross_entropy(lo, t, reduction="none")),
        Mistake("you applied softmax before cross_entropy, which applies log-softmax itself; "
                "pass the raw logits",
                lambda lo, t: F.cross_entropy(lo[:, :-1].softmax(-1).transpose(1, 2), t[:, 1:],
                                              reduction="none")),
        Mistake("you took -logit of the right token without normalizing; the loss is "
                "-log_softmax(logits)[token], not -logits[token]",
                lambda lo, t: -lo[:, :-1].gather(-1, t[:, 1:, None])[..., 0]),
        Mistake("the sign is flipped: the loss is -log p(token), which is ≥ 0",
                lambda lo, t: -F.cross_entropy(lo[:, :-1].transpose(1, 2), t[:, 1:], reduction="none")),
        Mistake(NO_REDUCTION_HINT,
                lambda lo, t: F.cross_entropy(lo[:, :-1].transpose(1, 2), t[:, 1:])),
        Mistake(NO_REDUCTION_HINT,
                lambda lo, t: F.cross_entropy(lo[:, :-1].reshape(-1, lo.shape[-1]), t[:, 1:].reshape(-1))),
    ],
    alternatives=[
        lambda lo, t: -lo[:, :-1].log_softmax(-1).gather(-1, t[:, 1:, None]).squeeze(-1),
        lambda lo, t: F.cross_entropy(lo[:, :-1].reshape(-1, lo.shape[-1]), t[:, 1:].reshape(-1),
                                      reduction="none").view(t.shape[0], -1),
    ],
    probes=_loss_probes,
    properties=[
        Property(_losses_are_minus_log_probabilities),
        unchanged_when(_first_token_changed, "your losses change when the first token changes, and the "
                                             "first token is never a label: position t is scored "
                                             "against token t+1"),
        unchanged_when(_last_logits_changed, "your losses change when the logits of the last position "
                                             "change, and the last position has no next token to "
                                             "predict: it takes no part in the losses"),
    ],
    small_inputs=lambda gen: [
        (torch.tensor([[[0.0, 0.0], [1.0, 0.0]]]), torch.tensor([[0, 1]])),
        (torch.tensor([[[2.0, 0.0], [1.0, 0.0]]]), torch.tensor([[1, 0]])),
        (torch.tensor([[[2.0, 0.0, -1.0], [1.0, 0.0, 3.0], [0.0, 1.0, 0.0]]]), torch.tensor([[2, 1, 0]]))],
)


def check_next_token_losses(fn):
    """Check a learner's `next_token_losses(logits, tokens)`; prints a verdict, never raises."""
    return NEXT_TOKEN_LOSSES.check(fn)


# ----------------------------------------------------------------------------- induction score
def induction_score_reference(weights, period):
    """weights (h, n, n) on [BOS, s, s] with n = 1 + 2·period -> (h,).

    Mean over the repeated copy, i = period+1 .. 2·period, of A[i, i - period + 1].
    """
    i = torch.arange(period + 1, 2 * period + 1)
    return weights[:, i, i - period + 1].mean(dim=-1)


def _induction_inputs(gen):
    h, period = 3, 5
    n = 1 + 2 * period
    scores = torch.randn(h, n, n, generator=gen) * 2
    causal = torch.ones(n, n, dtype=torch.bool).tril()
    return torch.softmax(scores.masked_fill(~causal, -torch.inf), dim=-1), period


def _induction_small(gen):
    """period 1 (n = 3), one head, the weights written out; then period 2 and 3, random causal rows."""
    yield torch.tensor([[[1.0, 0.0, 0.0], [0.5, 0.5, 0.0], [0.2, 0.3, 0.5]]]), 1
    for h, period in ((1, 2), (2, 3)):
        n = 1 + 2 * period
        scores = torch.randn(h, n, n, generator=gen)
        yield torch.softmax(scores.masked_fill(~torch.ones(n, n, dtype=torch.bool).tril(), -torch.inf), -1), period


def _diag(w, period, offset, start):
    i = torch.arange(start, 2 * period + 1)
    return w[:, i, i + offset].mean(dim=-1)


def _window(w, period, start, stop):
    """A[i, i - period + 1] averaged over i = start .. stop - 1 (an off-by-one range)."""
    i = torch.arange(start, stop)
    return w[:, i, i - period + 1].mean(dim=-1)


INDUCTION_SCORE = Exercise(
    name="induction_score",
    reference=induction_score_reference,
    make_inputs=_induction_inputs,
    mistakes=[
        Mistake("you read A[i, i - period]: the previous occurrence of the *same* token (a "
                "'duplicate-token' pattern); the induction head looks one further, at the token "
                "that came after it: i - period + 1",
                lambda w, p: _diag(w, p, -p, p + 1)),
        Mistake("you read A[i, i - period - 1], the token *before* the previous occurrence; the "
                "induction target is the one after it: i - period + 1",
                lambda w, p: _diag(w, p, -p - 1, p + 1)),
        Mistake("you averaged the whole diagonal A[i, i - period + 1], first copy included; "
                "only queries in the repeated copy (i = period+1 .. 2·period) can do induction",
                lambda w, p: torch.diagonal(w, offset=-(p - 1), dim1=-2, dim2=-1).mean(dim=-1)),
        Mistake("your range stops one short: arange's end is exclusive, so the last repeated "
                "position i = 2·period was left out — use torch.arange(period + 1, 2 * period + 1)",
                lambda w, p: _window(w, p, p + 1, 2 * p)),
        # Always an IndexError (index 2·period + 1 on an axis of n = 2·period + 1 positions), and
        # the error names it: the hint says only what the error shows, whichever index ran past.
        Mistake("you read position 2·period + 1 = n, one past the last: the positions are "
                "0 .. n − 1 = 2·period. The repeated copy's queries are i = period + 1 .. 2·period "
                "(torch.arange(period + 1, 2 * period + 1)), each reading key i − period + 1",
                lambda w, p: _window(w, p, p + 2, 2 * p + 2), by_error=True),
        Mistake("your range is one position early, i = period .. 2·period − 1, as if the sequence "
                "started at 0 with the first copy: position 0 is BOS, so the first copy sits at "
                "1 .. period and the repeated one at period + 1 .. 2·period. Your first query is the "
                "first copy's last token, and the last repeated token is left out",
                lambda w, p: _window(w, p, p, 2 * p)),
        Mistake("your range starts one late, at i = period + 2: the first repeated token, "
                "i = period + 1, was left out",
                lambda w, p: _window(w, p, p + 2, 2 * p + 1)),
        Mistake("your sum stops one short — the end of range() is exclusive, so i = 2·period was left "
                "out — and you still divided by period: the mean of period − 1 terms needs "
                "period − 1, but the range should hold all period repeated positions",
                lambda w, p: _window(w, p, p + 1, 2 * p) * (p - 1) / p),
        Mistake("your sum starts one late, at i = period + 2, so the first repeated token "
                "i = period + 1 was left out — and you still divided by period: the range should "
                "hold all period repeated positions, i = period + 1 .. 2·period",
                lambda w, p: _window(w, p, p + 2, 2 * p + 1) * (p - 1) / p),
        Mistake("you started at i = period, the last token of the first copy; the repeated copy "
                "starts at i = period + 1 (position 0 is BOS)",
                lambda w, p: _diag(w, p, -p + 1, p)),
    ],
    alternatives=[
        lambda w, p: torch.diagonal(w, offset=-(p - 1), dim1=-2, dim2=-1)[:, 2:].mean(dim=-1),
        lambda w, p: torch.stack([sum(w[hd, i, i - p + 1] for i in range(p + 1, 2 * p + 1)) / p
                                  for hd in range(w.shape[0])]),
    ],
    properties=[in_range(0.0, 1.0, "scores", "a mean of attention weights lies between 0 and 1")],
    small_inputs=_induction_small,
)


def check_induction_score(fn):
    """Check a learner's `induction_score(weights, period)`; prints a verdict, never raises."""
    return INDUCTION_SCORE.check(fn)
