"""What a check says past its planted mistakes (issue 44): never a recipe, always a fact.

When no planted mistake reproduces the learner's output, a check names

1. the first **property** of every right answer that their output breaks, in words and with a
   number ("your rows do not sum to 1: row 0 sums to 3.2"), and failing that
2. the **smallest input** on which their function differs from the reference — tried from tiny
   cases up (one row of 2–3 entries, d = 2, one head, one batch) — with the expected output and
   theirs side by side, to 3 digits.

A :class:`Property` is a predicate on (inputs, the learner's output, a way to run their code
again on other inputs). It only speaks once the answer is known to be wrong, and a property that
raises is skipped: this module never raises into a check.
"""
from __future__ import annotations

import math
import time
from dataclasses import dataclass
from typing import Any, Callable

import torch

# How numbers and tensors are written (fmt and first_difference are the checkers' too).
from .showing import (_as_tuple, _index, _not_finite, _raised, _same_kind, _which, describe_small,
                      first_difference, fmt, side_by_side)

SEARCH_BUDGET_S = 0.5   # the counterexample search stops trying smaller inputs after this long


@dataclass
class Property:
    """A fact every right answer has.

    test(args, out, again) -> None when it holds, else a sentence saying what failed, with a
    number. `args` are the check's inputs, `out` the learner's output on them, and `again(args2)`
    the learner's output on other inputs (it raises if their code fails there: the property is
    then skipped).
    """

    test: Callable[[tuple, Any, Callable[[tuple], Any]], str | None]
    name: str = ""


def smallest_counterexample(candidates, run_reference, run_learner, close, names, output_names,
                            atol, budget_s: float = SEARCH_BUDGET_S, crashes_only: bool = False,
                            show: Callable | None = None) -> str | None:
    """Try the inputs of `candidates()` (smallest first) until the learner's function differs from
    the reference; describe that input, the expected output and theirs. None when none differs
    within the time budget. `run_reference(args)` and `run_learner(args)` return the framework's
    Result (value, error, where) of one call, as the check makes it. crashes_only: look for the
    smallest input on which the learner's function raises, and for nothing else. show(args): how
    to write an input (default: in full, `describe_small`)."""
    start = time.perf_counter()
    try:
        for args in candidates():
            if time.perf_counter() - start > budget_s:
                return None
            want = run_reference(args)
            if want.error is not None or want.value is None:
                continue            # not an input the exercise allows
            got = run_learner(args)
            if getattr(got, "not_implemented", False):
                return None
            shown = show(args) if show is not None else describe_small(names, args)
            if got.error is not None:
                return f"your function fails on a small input ({shown}): it raised {_raised(got)}"
            if crashes_only or got.value is None or not _same_kind(got.value, want.value):
                continue            # the kind of output is named elsewhere
            if not close(got.value, want.value, atol):
                bad = next(((n, g) for n, g in zip(output_names, _as_tuple(got.value)) if _not_finite(g)), None)
                lead = (f"your `{bad[0]}` contains {'NaN' if torch.isnan(bad[1]).any() else 'inf'} even on "
                        f"this small input" if bad is not None
                        else "your function differs from the reference on this small input")
                return f"{lead} — {shown}: {side_by_side(got.value, want.value, output_names, atol)}"
    except Exception:   # noqa: BLE001 — the search is a courtesy; it must never fail a check
        return None
    return None


def smallest_crash(ex, fn) -> str | None:
    """Code that crashed on the check's inputs: the smallest of `ex.small_inputs` on which it
    crashes too, with the error and the learner's line; None when none does (or there are none).
    An exercise that describes its inputs itself (a class: its constructor's sizes) is described so."""
    if ex.small_inputs is None:
        return None
    return smallest_counterexample(lambda: ex.small_inputs(torch.Generator().manual_seed(0)),
                                   lambda a: ex._call(ex.reference, a), lambda a: ex._call(fn, a),
                                   None, ex._names(), ex.output_names, ex.atol, crashes_only=True,
                                   show=ex.describe)


def where_not_finite(ex, inputs, runs) -> str:
    """'`weights` contains NaN values: weights[1, 0] is nan (7 of its 35 entries are not finite) on
    the check's input (scores (5, 7)) …' — the first output entry that is not finite."""
    for args, res in zip(inputs, runs):
        for name, t in zip(ex.output_names, _as_tuple(res.value)):
            if not _not_finite(t):
                continue
            t = t.detach()
            bad = ~torch.isfinite(t)
            idx = tuple(int(i) for i in bad.nonzero()[0])
            kind = "NaN" if torch.isnan(t).any() else "inf"
            entry = f"{name}{_index(idx)} is {fmt(t[idx].item())}" if idx else f"it is {fmt(t.item())}"
            return (f"`{name}` contains {kind} values: {entry} ({int(bad.sum())} of its {t.numel()} "
                    f"entries are not finite) on the check's input ({ex._describe(args)}) — look for "
                    f"a division by zero or exp overflow")
    return "your output contains NaN or inf values — look for a division by zero or exp overflow"


def check_properties(properties, trials, again) -> str | None:
    """The first failing property's sentence over the check's trials [(args, out)], or None."""
    for prop in properties:
        for args, out in trials:
            try:
                said = prop.test(args, out, again)
            except Exception:   # noqa: BLE001 — a property that cannot be evaluated says nothing
                said = None
            if said:
                return said
    return None


# ---------------------------------------------------------------- common properties

def _perturbed(t: torch.Tensor, seed: int) -> torch.Tensor:
    gen = torch.Generator().manual_seed(seed)
    return t + (0.5 + t.abs().mean()) * torch.randn(t.shape, generator=gen, dtype=t.dtype)


def every_input_matters(names, run_reference, close, atol):
    """A property over all float tensor inputs: when changing input `name` changes the reference's
    output, it must change the learner's too ("your output does not change when W3 changes")."""
    def test(args, out, again):
        for i, (name, a) in enumerate(zip(names, args)):
            if not (isinstance(a, torch.Tensor) and a.is_floating_point() and a.numel()):
                continue
            args2 = args[:i] + (_perturbed(a, 100 + i),) + args[i + 1:]
            ref1, ref2 = run_reference(args).value, run_reference(args2).value
            if ref1 is None or ref2 is None or close(ref1, ref2, atol):
                continue            # the right answer does not depend on it either
            if close(again(args2), out, atol):
                return (f"your output does not change when `{name}` changes, and the right one "
                        f"does: the values of `{name}` never reach your output")
        return None
    return Property(test, "every input matters")


def pick(out, i):
    """Output number i of a tuple output (0 for a single tensor)."""
    return out[i] if isinstance(out, (tuple, list)) else out


def rows_are_distributions(which: int = 0, what: str = "weights", row_word: str = "row"):
    """Every entry ≥ 0 and every slice along the last axis sums to 1."""
    def test(args, out, again):
        w = pick(out, which).detach().double()
        if (w < -1e-6).any():
            idx = tuple(int(i) for i in (w < -1e-6).nonzero()[0])
            return (f"your {what} are not all ≥ 0: {what}{_index(idx)} is {fmt(w[idx].item())} — "
                    f"each {row_word} should be a probability distribution")
        sums = w.sum(-1)
        bad = (sums - 1).abs() > 1e-4
        if bad.any():
            idx = tuple(int(i) for i in bad.nonzero()[0])
            return (f"your {what}' {row_word}s do not sum to 1: {row_word} {_which(idx)} sums to "
                    f"{fmt(sums[idx].item())} — each {row_word} should be a probability distribution "
                    f"over the last axis")
        return None
    return Property(test, f"{what} rows sum to 1")


def unchanged_when(change, said, which=None, atol=1e-5):
    """The learner's output (or output `which`) stays the same when `change(args)` changes the
    inputs in a way the right answer ignores; `said` is the sentence to say when it does not."""
    def test(args, out, again):
        args2 = change(args)
        if args2 is None:
            return None
        a, b = (out, again(args2)) if which is None else (pick(out, which), pick(again(args2), which))
        for x, y in zip(_as_tuple(a), _as_tuple(b)):
            diff = first_difference(y, x, atol) if x.shape == y.shape else ((), 0.0, 0.0, 1)
            if diff is not None:
                return said + (f" (entry {_index(diff[0])} moved from {fmt(diff[2])} to {fmt(diff[1])})"
                               if diff[0] else "")
        return None
    return Property(test, said)


def permutation_equivariant(position_axis: int, said: str, atol=1e-5, arg=0):
    """Without positions, permuting the positions of input `arg` permutes the output the same way."""
    def test(args, out, again):
        x = args[arg]
        n = x.shape[position_axis]
        perm = torch.roll(torch.arange(n), 1)
        args2 = args[:arg] + (x.index_select(position_axis, perm),) + args[arg + 1:]
        want = pick(out, 0).index_select(position_axis, perm)
        got = pick(again(args2), 0)
        if got.shape == want.shape and first_difference(got, want, atol) is None:
            return None
        return said
    return Property(test, "permutation equivariance")


def explain(ex, fn, inputs, runs, expected, close, finite_only: bool = False) -> str | None:
    """The first property of the right answer that `fn`'s outputs break, else the smallest input of
    `ex.small_inputs` where `fn` differs; None when neither speaks. finite_only: judge properties
    on the inputs where `fn`'s output is finite only (a NaN breaks every property alike)."""
    names = ex._names()
    run_reference = lambda a: ex._call(ex.reference, a)   # noqa: E731

    def again(args):
        res = ex._call(fn, args)
        if res.error is not None or res.value is None:
            raise ValueError("the learner's code gave no output here")
        return res.value

    properties = list(ex.properties)
    if len(names) == len(inputs[0]):     # first: "W3 is never used" says the most
        properties.insert(0, every_input_matters(names, run_reference, close, ex.atol))
    trials = [(a, r.value) for a, r in zip(inputs, runs)
              if not (finite_only and any(_not_finite(t) for t in _as_tuple(r.value)))]
    said = check_properties(properties, trials, again)
    if said:
        return said
    if ex.small_inputs is not None:
        said = smallest_counterexample(lambda: ex.small_inputs(torch.Generator().manual_seed(0)),
                                       run_reference, lambda a: ex._call(fn, a), close, names,
                                       ex.output_names, ex.atol)
        if said:
            return said
    return None


def past_the_mistakes(ex, fn, inputs, runs, expected, close) -> str:
    """What exercise `ex` says when no planted mistake explains a wrong output of the right kind:
    the first property of the right answer it breaks, else the smallest input where `fn` differs
    (from `ex.small_inputs`, else the first of the check's own inputs where it differs)."""
    said = explain(ex, fn, inputs, runs, expected, close)
    if said:
        return said
    for args, res, want in zip(inputs, runs, expected):
        if not close(res.value, want, ex.atol):
            return (f"your function differs from the reference on the check's input "
                    f"({ex._describe(args)}): {side_by_side(res.value, want, ex.output_names, ex.atol)}")
    return "your function differs from the reference"


def _mask_like(mask, w):
    """A True = may-attend mask broadcast to the weights' shape (batch, …, n_q, n_k)."""
    try:
        return mask.expand(w.shape)           # (n_q, n_k) or (batch, n_q, n_k)
    except RuntimeError:
        return mask[:, None, :].expand(w.shape)   # a padding mask (batch, n_k)


def blocked_weights_are_zero(mask_arg: int, weights_out: int = 1):
    """A key the mask blocks gets weight exactly 0."""
    def test(args, out, again):
        mask, w = args[mask_arg], pick(out, weights_out)
        if mask is None:
            return None
        bad = ~_mask_like(mask, w) & (w.abs() > 1e-6)
        if not bad.any():
            return None
        idx = tuple(int(i) for i in bad.nonzero()[0])
        return (f"your weights give a blocked key some weight: weights{_index(idx)} is "
                f"{fmt(w[idx].item())} where the mask is False — a blocked key's weight is exactly 0")
    return Property(test, "blocked weights are 0")


def blocked_keys_ignored(mask_arg: int, key_args=(1, 2), atol: float = 1e-5):
    """Changing a key (and its value) that the mask blocks for query i leaves query i's output
    and weights unchanged: a blocked key takes no part in the softmax."""
    def test(args, out, again):
        mask = args[mask_arg]
        if mask is None:
            return None
        w = pick(out, 1) if isinstance(out, (tuple, list)) else None
        blocked = ~(_mask_like(mask, w) if w is not None else mask.expand(
            args[key_args[0]].shape[0], *mask.shape[-2:]))
        if not blocked.any():
            return None
        b, *_, i, j = (int(t) for t in blocked.nonzero()[0])
        args2 = list(args)
        for a in key_args:
            t = args2[a].clone()
            t[b, ..., j, :] += 3.0
            args2[a] = t
        out2 = again(tuple(args2))
        for k, (x, y) in enumerate(zip(_as_tuple(out), _as_tuple(out2))):
            if first_difference(y[b, ..., i, :], x[b, ..., i, :], atol) is not None:
                what = "weights" if k == 1 else "output"
                return (f"your {what} for query {i} (batch {b}) change when key {j} changes, though "
                        f"the mask blocks key {j} for that query: a blocked key must take no part in "
                        f"the softmax")
        return None
    return Property(test, "a blocked key changes nothing")


def out_is_weights_times_v(v_arg: int = 2, atol: float = 1e-4):
    """The output is the weights times the values, out = weights @ v."""
    def test(args, out, again):
        o, w = pick(out, 0), pick(out, 1)
        want = w @ args[v_arg]
        diff = first_difference(o, want, atol) if o.shape == want.shape else None
        if diff is None:
            return None
        return (f"your out is not your weights @ v: out{_index(diff[0])} is {fmt(diff[1])}, "
                f"weights @ v gives {fmt(diff[2])}")
    return Property(test, "out = weights @ v")


def rows_have_mean_zero(what: str = "rows", which: int = 0, atol: float = 1e-4):
    """Every slice along the last axis has mean 0."""
    def test(args, out, again):
        means = pick(out, which).detach().double().mean(-1)
        bad = means.abs() > atol
        if not bad.any():
            return None
        idx = tuple(int(i) for i in bad.nonzero()[0])
        return f"your {what} do not have mean 0: row {_which(idx)} has mean {fmt(means[idx].item())}"
    return Property(test, "rows have mean 0")


def in_range(lo: float, hi: float, what: str, why: str, which: int = 0):
    """Every entry lies in [lo, hi]."""
    def test(args, out, again):
        t = pick(out, which).detach().double()
        bad = (t < lo - 1e-6) | (t > hi + 1e-6)
        if not bad.any():
            return None
        idx = tuple(int(i) for i in bad.nonzero()[0])
        where = f"{what}{_index(idx)}" if idx else what
        bounds = f"below {fmt(lo)}" if hi == math.inf else f"outside [{fmt(lo)}, {fmt(hi)}]"
        return f"your {where} is {fmt(t[idx].item())}, {bounds} — {why}"
    return Property(test, f"{what} in range")


def same_numbers_rearranged(what: str, arg: int = 0):
    """The output holds exactly the input's numbers, only moved (a reshape, a transpose)."""
    def test(args, out, again):
        got, want = pick(out, 0).flatten().sort().values, args[arg].flatten().sort().values
        if got.shape != want.shape:
            return None             # the shape is named elsewhere
        diff = first_difference(got, want, 1e-6)
        if diff is None:
            return None
        return (f"your {what} do not hold the same numbers as the input, only moved (sorted, yours "
                f"has {fmt(diff[1])} where the input has {fmt(diff[2])}): splitting and joining heads "
                f"rearranges the entries and computes nothing new")
    return Property(test, "entries rearranged")
