"""Lesson 06, part 2 — sampling: exercises 6.3 and 6.4 (the masking ones, 6.1 and 6.2, are in
lesson06_masking.py; both modules count as lesson 06 — see Exercise.lesson).

Exercise 6.3 `next_token_probs(logits, temperature, top_k)`: logits (batch, vocab) ->
    probabilities (batch, vocab), the distribution sampling draws from — greedy (T = 0) as a
    one-hot row, temperature, top-k.
Exercise 6.4 `generate(model, tokens, max_new_tokens, temperature, top_k, generator)`:
    tokens (batch, n) -> (batch, n + max_new_tokens), the sampling loop — score, choose,
    append, repeat, never feeding more than model.max_len tokens.

6.4 returns integer ids, so it is wired with `run=` and the suite's generic "NaN output" probe
(which only makes sense for floats) skips it; tests/test_lesson06_exercises.py checks stubs and
crashes for it instead.
"""
import itertools

import torch
import torch.nn.functional as F

from ..nn.decoding import next_token_probs as _library_probs
from ..nn.decoding import sample as _library_sample
from ..nn.models import DecoderOnlyLM
from .feedback import Property, rows_are_distributions
from .framework import Exercise, Mistake

__all__ = ["check_next_token_probs", "check_generate"]


# Seeds torch's global generator during the sampling check: out of the range the checker's own
# generators are seeded from (< 2**31), so a draw that forgot generator= never equals the right one.
_GLOBAL_SEED = 2**31 + 2024


def _call_one_thread(fn, args):
    """Run on one thread: for a model this small, a second thread only waits (on a busy
    machine it made each check ~4x slower). A draw without `generator=` falls back on torch's
    global generator: seeded here (in a fork, so the learner's own state is left alone), it
    gives the same wrong draws every time, and the mistake can be named."""
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        with torch.random.fork_rng(devices=[]):
            torch.manual_seed(_GLOBAL_SEED)
            return fn(*args)
    finally:
        torch.set_num_threads(threads)


# ---------------------------------------------------------------- 6.3 next-token distribution

# Each trial uses the next setting: every mode (plain, greedy, temperature, top-k) is hit.
_PROB_SETTINGS = [(1.0, None), (0.5, 3), (0.0, None), (2.0, 2), (1.5, None)]
_prob_setting = itertools.cycle(_PROB_SETTINGS)


def next_token_probs_reference(logits, temperature, top_k):
    """logits (batch, vocab) -> probabilities (batch, vocab); T = 0 is a one-hot argmax."""
    return _library_probs(logits, temperature, top_k)


def _prob_inputs(gen):
    temperature, top_k = next(_prob_setting)
    return torch.randn(3, 7, generator=gen) * 2, temperature, top_k


def _at_most_k_tokens(args, out, again):
    """With top_k = k, at most k tokens of a row have a probability above 0 (more only on ties)."""
    logits, t, k = args
    if k is None or t == 0:
        return None
    kept = (out > 0).sum(-1)
    kth = torch.topk(logits, k, dim=-1).values[..., -1:]
    allowed = (logits >= kth).sum(-1)
    bad = kept > allowed
    if bad.any():
        b = int(bad.nonzero()[0])
        return (f"with top_k = {k} your row {b} gives {int(kept[b])} tokens a probability above 0: "
                f"only the {k} largest logits may keep one")
    return None


def _greedy_is_one_hot(args, out, again):
    """At temperature 0 each row is one-hot at the argmax."""
    logits, t, k = args
    if t != 0:
        return None
    want = F.one_hot(logits.argmax(-1), logits.shape[-1]).to(out.dtype)
    bad = (out - want).abs().amax(-1) > 1e-6
    if bad.any():
        b = int(bad.nonzero()[0])
        return (f"at temperature 0 your row {b} is not one-hot at its largest logit: greedy puts "
                f"probability 1 on token {int(logits[b].argmax())} and 0 on every other")
    return None


def _probs(logits, t, k, keep=None, fill=float("-inf"), t_op=lambda x, t: x / t):
    """The reference with one step changed, to plant mistakes."""
    if t == 0:
        return F.one_hot(logits.argmax(-1), logits.shape[-1]).float()
    if k is not None:
        keep = keep or (lambda x, kth: x >= kth)
        kth = torch.topk(logits, k, dim=-1).values[..., -1:]
        logits = logits.masked_fill(~keep(logits, kth), fill)
    return torch.softmax(t_op(logits, t), dim=-1)


def _smallest_k(logits, t, k):
    if t == 0 or k is None:
        return _probs(logits, t, k)
    kth = torch.topk(logits, k, dim=-1, largest=False).values[..., -1:]
    return torch.softmax(logits.masked_fill(logits > kth, float("-inf")) / t, -1)


def _no_greedy_branch(logits, t, k):
    """T = 0 not handled: logits / 0 is ±inf, and their softmax NaN."""
    if k is not None:
        kth = torch.topk(logits, k, dim=-1).values[..., -1:]
        logits = logits.masked_fill(logits < kth, float("-inf"))
    return torch.softmax(logits / t, dim=-1)


def _top_k_whole_batch(threshold):
    """Top-k with one threshold for the whole batch instead of each row's own k-th largest."""
    def probs(logits, t, k):
        if t == 0 or k is None:
            return _probs(logits, t, k)
        return torch.softmax(logits.masked_fill(logits < threshold(logits, k), float("-inf")) / t, -1)
    return probs


def _top_k_after_softmax(logits, t, k):
    p = _probs(logits, t, None)
    if t == 0 or k is None:
        return p
    kth = torch.topk(p, k, dim=-1).values[..., -1:]
    return p * (p >= kth)


def _probs_loop(logits, temperature, top_k):
    rows = []
    for row in logits:
        if temperature == 0:
            p = torch.zeros_like(row)
            p[row.argmax()] = 1.0
        else:
            kept = row.clone()
            if top_k is not None:
                kept[row < sorted(row.tolist(), reverse=True)[top_k - 1]] = float("-inf")
            p = torch.exp(kept / temperature - (kept / temperature).max())
            p = p / p.sum()
        rows.append(p)
    return torch.stack(rows)


NEXT_TOKEN_PROBS = Exercise(
    name="next_token_probs",
    reference=next_token_probs_reference,
    make_inputs=_prob_inputs,
    trials=len(_PROB_SETTINGS),
    output_names=("probs",),
    mistakes=[
        Mistake("you multiplied the logits by the temperature; divide: softmax(logits / T), so "
                "T < 1 sharpens and T > 1 flattens",
                lambda x, t, k: _probs(x, t, k, t_op=lambda x, t: x * t)),
        Mistake("your rows sum to 1/T: you divided the *probabilities* by T. The temperature "
                "divides the logits, before the softmax",
                lambda x, t, k: _probs(x, t, k, t_op=lambda x, t: x) / (t if t else 1)),
        Mistake("the temperature has no effect: your probabilities are plain softmax(logits). "
                "Dividing the probabilities by T and then renormalizing cancels out "
                "(p/T ÷ Σ p/T = p); T divides the *logits*: softmax(logits / T)",
                lambda x, t, k: _probs(x, t, k, t_op=lambda x, t: x)),
        Mistake("your rows don't sum to 1: you raised the probabilities to the power 1/T and "
                "stopped there. p^(1/T) is proportional to exp(logits / T), so either divide each "
                "row by its sum or, simpler, take softmax(logits / T)",
                lambda x, t, k: _probs(x, t, k, t_op=lambda x, t: x) ** (1 / t if t else 1)),
        Mistake("top-k kept the k *smallest* logits; keep the largest: torch.topk(logits, k) "
                "(largest=True is the default)",
                _smallest_k),
        Mistake("top-k kept only k-1 tokens: the k-th largest logit must stay — mask where "
                "logits < kth (strictly), not <=",
                lambda x, t, k: _probs(x, t, k, keep=lambda x, kth: x > kth)),
        Mistake("the tokens outside the top k still get probability: you set their logits to 0, "
                "but exp(0) ≠ 0. Set them to -inf",
                lambda x, t, k: _probs(x, t, k, fill=0.0)),
        Mistake("after top-k your rows no longer sum to 1: you zeroed probabilities after the "
                "softmax. Filter the *logits* (-inf) and then take the softmax",
                _top_k_after_softmax),
        Mistake("top-k is ignored: keep only the k largest logits (the rest -inf) before the softmax",
                lambda x, t, k: _probs(x, t, None)),
        Mistake("temperature 0 is not handled: you divided by it, logits / 0 is ±inf, and the "
                "softmax of infinities is NaN. T = 0 means greedy — a one-hot row with the 1 at the "
                "argmax — so it needs its own case before any division",
                _no_greedy_branch),
        Mistake("your top-k ran over the whole batch at once: you kept the k largest logits of all "
                "the rows together, so a row whose logits all fall below them keeps no token — "
                "every logit −inf — and its softmax is 0/0 = NaN. Each row is a distribution of "
                "its own, with its own k largest logits",
                _top_k_whole_batch(lambda x, k: torch.topk(x.flatten(), k).values[-1])),
        Mistake("your top-k used one threshold for the whole batch (the smallest of the rows' k-th "
                "largest logits), so a row with larger logits keeps more than k tokens. Each row "
                "needs its own k-th largest",
                _top_k_whole_batch(lambda x, k: torch.topk(x, k, dim=-1).values.min())),
        Mistake("your top-k ran down the batch axis (dim=0): it compared the rows with each other, "
                "token by token. The k tokens are chosen within one row, along the vocabulary axis",
                _top_k_whole_batch(lambda x, k: torch.topk(x, k, dim=0).values[-1:])),
    ],
    alternatives=[
        _probs_loop,
        lambda x, t, k: _probs(x, t, k, keep=lambda x, kth: ~(x < kth)),
        # p^(1/T), renormalized, is softmax(logits / T) exactly
        lambda x, t, k: (lambda p: p / p.sum(-1, keepdim=True))(
            _probs(x, t, k, t_op=lambda x, t: x) ** (1 / t if t else 1)),
    ],
    properties=[rows_are_distributions(0, "probabilities"), Property(_greedy_is_one_hot),
                Property(_at_most_k_tokens)],
    small_inputs=lambda gen: [(torch.tensor([[2.0, 1.0, 0.0]]), t, k)
                              for t, k in ((1.0, None), (0.0, None), (0.5, None), (1.0, 2), (2.0, 1))],
)


def check_next_token_probs(fn):
    """Check a learner's `next_token_probs(logits, temperature, top_k)`."""
    return NEXT_TOKEN_PROBS.check(fn)


# ---------------------------------------------------------------- 6.4 the sampling loop

_GEN_SETTINGS = [(0.0, None), (1.0, None), (0.6, 3), (1.8, None)]
_gen_setting = itertools.cycle(_GEN_SETTINGS)
_VOCAB, _MAX_LEN, _NEW = 9, 8, 10


def generate_reference(model, tokens, max_new_tokens, temperature=1.0, top_k=None, generator=None):
    """tokens (batch, n) -> (batch, n + max_new_tokens), drawn as course_lib.nn.decoding.sample."""
    return _library_sample(model, tokens, max_new_tokens, temperature, top_k, generator)


def _generate_inputs(gen, setting=None, prompt_length=3, new=_NEW):
    temperature, top_k = setting or next(_gen_setting)
    seed = int(torch.randint(0, 2**31 - 1, (1,), generator=gen))
    with torch.random.fork_rng():
        torch.manual_seed(seed)
        model = DecoderOnlyLM(_VOCAB, d_model=16, h=2, d_ff=32, n_layers=1, max_len=_MAX_LEN).eval()
        with torch.no_grad():
            model.lm_head.weight.mul_(4.0)   # peakier distributions: mistakes show sooner
    prompt = torch.randint(0, _VOCAB, (2, prompt_length), generator=gen)
    sampler = torch.Generator().manual_seed(seed)
    return model, prompt, new, temperature, top_k, sampler


def _generate_probes(gen):
    """A prompt longer than max_len (10 > 8), two greedy steps: the uncropped sequence raises
    "tokens has length 10" at once, where a crop one too long (max_len + 1) says "length 9" — on
    the trials both say 9 — so the whole-sequence hint goes to the whole sequence only."""
    return [_generate_inputs(gen, setting=(0.0, None), prompt_length=_MAX_LEN + 2, new=2)]


def _loop(model, tokens, n, t, k, g, context=lambda x, m: x[:, -m:], position=-1,
          feed_back=True, choose=None, cat_dim=1):
    """The reference loop with one step changed, to plant mistakes."""
    prompt = tokens
    for _ in range(n):
        source = tokens if feed_back else prompt
        logits = model(context(source, model.max_len))[:, position, :]
        if choose is not None:
            next_id = choose(logits, t, k, g)
        elif t == 0:
            next_id = logits.argmax(-1, keepdim=True)
        else:
            next_id = torch.multinomial(_library_probs(logits, t, k), 1, generator=g)
        tokens = torch.cat([tokens, next_id], dim=cat_dim)
    return tokens


def _starts_with_the_prompt(args, out, again):
    prompt = args[1]
    n = prompt.shape[1]
    if out.shape[0] != prompt.shape[0] or out.shape[1] < n or torch.equal(out[:, :n], prompt):
        return None
    return (f"your tokens do not start with the prompt: the first {n} columns should be the prompt "
            f"{prompt[0].tolist()} (row 0), and yours are {out[0, :n].tolist()}")


def _ids_in_the_vocabulary(args, out, again):
    vocab = args[0].lm_head.weight.shape[0]
    if ((out < 0) | (out >= vocab)).any():
        return f"your tokens hold ids outside the vocabulary 0 … {vocab - 1}: {out.flatten().tolist()[:12]} …"
    return None


def _draw(probs, g):
    return torch.multinomial(probs, 1, generator=g)


def _greedy_or(draw):
    """A `choose` that is right at temperature 0 and draws with `draw(logits, t, k, g)` above it."""
    return lambda x, t, k, g: x.argmax(-1, keepdim=True) if t == 0 else draw(x, t, k, g)


def _generate_row_by_row(model, tokens, n, t=1.0, k=None, g=None):
    # Each step handles the sequences one at a time; draws happen in the same order.
    for _ in range(n):
        picks = []
        for row in tokens:
            logits = model(row[None, -model.max_len:])[0, -1]
            if t == 0:
                picks.append(logits.argmax())
            else:
                picks.append(torch.multinomial(_library_probs(logits, t, k), 1, generator=g)[0])
        tokens = torch.cat([tokens, torch.stack(picks)[:, None]], dim=1)
    return tokens


GENERATE = Exercise(
    name="generate",
    reference=generate_reference,
    make_inputs=_generate_inputs,
    run=_call_one_thread,
    trials=len(_GEN_SETTINGS),
    probes=_generate_probes,
    output_names=("tokens",),
    mistakes=[
        Mistake("you used the logits of the *first* position; the next token is predicted by "
                "the last one: model(context)[:, -1, :]",
                lambda *a: _loop(*a, position=0)),
        Mistake("every new token is predicted from the prompt alone: feed the growing sequence "
                "back in (tokens = torch.cat([tokens, next_id], dim=1) and use `tokens` next time)",
                lambda *a: _loop(*a, feed_back=False)),
        Mistake("you kept the *first* max_len tokens as context; keep the most recent ones: "
                "tokens[:, -model.max_len:]",
                lambda *a: _loop(*a, context=lambda x, m: x[:, :m])),
        # Uncropped, the sequence outgrows the positional table and the model raises "tokens has
        # length …, longer than the positional table": always a crash, named by its error (the
        # probe's long prompt tells it from a crop one token too long).
        Mistake("you fed the whole sequence to the model: once it is longer than model.max_len "
                "(the positional table's size) the model cannot take it. Crop to the most recent "
                "tokens each step: model(tokens[:, -model.max_len:])",
                lambda *a: _loop(*a, context=lambda x, m: x), by_error=True),
        Mistake("your loop is always greedy: for temperature > 0 draw the next token with "
                "torch.multinomial(probs, 1, generator=generator)",
                lambda *a: _loop(*a, choose=lambda x, t, k, g: x.argmax(-1, keepdim=True))),
        Mistake("the temperature is ignored: divide the logits by T before the softmax",
                lambda *a: _loop(*a, choose=lambda x, t, k, g: _draw(_library_probs(x, 1.0, k), g))),
        Mistake("top-k is ignored: only the k most likely tokens may be drawn",
                lambda *a: _loop(*a, choose=lambda x, t, k, g: _draw(_library_probs(x, t, None), g))),
        Mistake("you divided the logits by the temperature twice: next_token_probs divides them by T "
                "itself, so your draws come from temperature T² (0.36 for T = 0.6). Pass it the raw "
                "logits",
                lambda *a: _loop(*a, choose=_greedy_or(lambda x, t, k, g: _draw(_library_probs(x / t, t, k), g)))),
        Mistake("you returned only the new tokens, (batch, max_new_tokens); the result is the prompt "
                "followed by them, (batch, n + max_new_tokens): keep appending to `tokens` and return "
                "it whole",
                lambda model, tokens, *a: _loop(model, tokens, *a)[:, tokens.shape[1]:]),
        # The next three crash at their first step: the reference's own inputs have a prompt of 3
        # tokens and logits of both signs. The first two always crash, and their errors name them
        # ("… except in dimension 0", "got 2 and 1": a cat of a 1-d next token).
        Mistake("you appended along dim=0, the batch axis: torch.cat([tokens, next_id], dim=0) would "
                "add new *sequences*. Each new token goes at the end of its own row, along the "
                "positions: dim=1",
                lambda *a: _loop(*a, cat_dim=0), by_error=True),
        Mistake("your next token has shape (batch,): one id per sequence but no position axis, so "
                "torch.cat cannot join it to tokens (batch, n). Keep that axis, (batch, 1): "
                "argmax(-1, keepdim=True), or next_id[:, None]",
                lambda *a: _loop(*a, choose=lambda x, t, k, g: x.argmax(-1) if t == 0
                                 else _draw(_library_probs(x, t, k), g).squeeze(-1)), by_error=True),
        Mistake("torch.multinomial draws from *probabilities* (≥ 0); you gave it logits, which can be "
                "negative. Turn them into the distribution first — next_token_probs(logits, "
                "temperature, top_k) — and draw from that",
                lambda *a: _loop(*a, choose=_greedy_or(lambda x, t, k, g: torch.multinomial(x / t, 1, generator=g)))),
        Mistake("your draws do not use `generator`: torch.multinomial without generator= takes its "
                "randomness from torch's global state, so the same call draws other tokens each "
                "time and no one can reproduce them. Greedy (temperature 0) already matches; pass "
                "the `generator` you were given to every draw",
                lambda *a: _loop(*a, choose=lambda x, t, k, g: torch.multinomial(_library_probs(x, t, k), 1))),
    ],
    alternatives=[_generate_row_by_row],
    properties=[Property(_starts_with_the_prompt), Property(_ids_in_the_vocabulary)],
)


def check_generate(fn):
    """Check a learner's sampling loop `generate(model, tokens, max_new_tokens, ...)`."""
    return GENERATE.check(fn)
