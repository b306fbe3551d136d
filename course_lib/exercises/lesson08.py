"""Lesson 08 — teacher forcing, greedy decoding, one step of beam search.

`shift_targets(seqs, bos_id, eos_id, pad_id)`: decoder input and labels for teacher forcing.
`greedy_decode(model, src, bos_id, eos_id, max_len)`: translate by always taking the argmax.
`beam_step(scores, log_probs, beam_size)`: keep the best beam_size extensions of all beams.

Length: three exercises, each with its planted wrong answers, the properties of a right answer and
the small inputs the counterexample search tries (issue 44).

Their outputs hold integer ids, so each exercise passes `run=` (the shared tests for
float outputs — NaN, float64 — do not apply); tests/test_translation_exercises.py
checks stubs, crashes and None for them instead.
"""
import torch

from .feedback import Property, fmt
from .framework import Exercise, Mistake

__all__ = ["check_shift_targets", "check_greedy_decode", "check_beam_step"]


def _call(fn, args):
    return fn(*args)


# --------------------------------------------------------------------------- teacher forcing


def _pad(rows, pad_id, left=False, extra=0):
    """rows of ids -> (len(rows), longest + extra) LongTensor, padded with pad_id."""
    n = max(len(r) for r in rows) + extra
    out = torch.full((len(rows), n), pad_id, dtype=torch.long)
    for i, r in enumerate(rows):
        if r:
            if left:
                out[i, n - len(r):] = torch.tensor(r)
            else:
                out[i, : len(r)] = torch.tensor(r)
    return out


def shift_targets_reference(seqs, bos_id, eos_id, pad_id):
    """seqs: list of target id lists. Returns (tgt_in, labels), LongTensors (batch, longest + 1):
    tgt_in = <bos> y1 … yn, labels = y1 … yn <eos>, both right-padded with pad_id."""
    tgt_in = _pad([[bos_id] + list(s) for s in seqs], pad_id)
    labels = _pad([list(s) + [eos_id] for s in seqs], pad_id)
    return tgt_in, labels


def _shift_inputs(gen):
    specials = (torch.randperm(9, generator=gen)[:3] + 1).tolist()  # distinct, never 0
    bos_id, eos_id, pad_id = specials
    lengths = torch.randint(1, 7, (4,), generator=gen).tolist()
    lengths[0] = 6  # at least one long and one short sequence, so padding is needed
    lengths[1] = 2
    seqs = [torch.randint(10, 30, (n,), generator=gen).tolist() for n in lengths]
    return seqs, bos_id, eos_id, pad_id


def _rows_start_with_bos(args, out, again):
    tgt_in, bos = out[0], args[1]
    bad = (tgt_in[:, 0] != bos).nonzero()
    if len(bad):
        b = int(bad[0])
        return (f"your tgt_in row {b} starts with {int(tgt_in[b, 0])}, not <bos> = {bos}: the decoder "
                f"reads <bos> first, at every row")
    return None


def _one_eos_per_label_row(args, out, again):
    labels, eos = out[1], args[2]
    counts = (labels == eos).sum(-1)
    bad = (counts != 1).nonzero()
    if len(bad):
        b = int(bad[0])
        return (f"your labels row {b} holds <eos> (id {eos}) {int(counts[b])} times: each target "
                f"sentence ends once, so each row of labels has exactly one <eos>")
    return None


NO_EOS_HINT = ("your labels have no <eos>: y1 … yn with nothing after y_n, so the model is never "
               "taught to end a sentence. Each row of labels ends with <eos>: y1 … yn <eos>")
NO_BOS_HINT = ("your tgt_in rows lack <bos>: they start at y1, so position t reads y_{t+1}, the very "
               "label it must predict, and the model learns to copy. Start every row with <bos>: "
               "<bos> y1 … yn")


SHIFT_TARGETS = Exercise(
    name="shift_targets",
    reference=shift_targets_reference,
    make_inputs=_shift_inputs,
    run=_call,
    output_names=("tgt_in", "labels"),
    mistakes=[
        Mistake("your labels equal the decoder input: the model would just learn to copy what it reads. "
                "The labels are the input shifted one step left: y1 … yn <eos>",
                lambda s, b, e, p: (shift_targets_reference(s, b, e, p)[0],) * 2),
        Mistake("input and labels are swapped: the decoder *reads* <bos> y1 … yn and must *predict* "
                "y1 … yn <eos>",
                lambda s, b, e, p: shift_targets_reference(s, b, e, p)[::-1]),
        Mistake("you padded with 0; pad with pad_id (the loss ignores exactly that id)",
                lambda s, b, e, p: shift_targets_reference(s, b, e, 0)),
        Mistake("you padded on the left; pad on the right, so position t of every row is the t-th "
                "target token (the positional encodings count from the start)",
                lambda s, b, e, p: (_pad([[b] + x for x in s], p, left=True),
                                    _pad([x + [e] for x in s], p, left=True))),
        Mistake("your tgt_in rows still hold <eos>: cutting the last *column* off <bos> y1 … yn <eos> "
                "removes <eos> from the longest row only — every shorter row keeps its <eos> where its "
                "padding should start. Print tgt_in beside seqs: a row is <bos> y1 … yn, then pad_id "
                "only. The decoder never reads <eos>; it learns to predict it, in labels",
                lambda s, b, e, p: (_pad([[b] + x + [e] for x in s], p)[:, :-1],
                                    shift_targets_reference(s, b, e, p)[1])),
        Mistake("your tgt_in rows are <bos> y1 … yn <eos>, one column too many: the decoder reads "
                "<bos> y1 … yn and never <eos>, which appears only in labels, as the last token to "
                "predict",
                lambda s, b, e, p: (_pad([[b] + x + [e] for x in s], p),
                                    shift_targets_reference(s, b, e, p)[1])),
        *[Mistake(NO_EOS_HINT, lambda s, b, e, p, extra=extra: (shift_targets_reference(s, b, e, p)[0],
                                                               _pad(s, p, extra=extra)))
          for extra in (1, 0)],
        *[Mistake(NO_BOS_HINT, lambda s, b, e, p, extra=extra: (_pad(s, p, extra=extra),
                                                               shift_targets_reference(s, b, e, p)[1]))
          for extra in (1, 0)],
        Mistake("the labels are padded with <eos>; use pad_id, otherwise the loss trains the model to "
                "predict <eos> again and again after the end",
                lambda s, b, e, p: (shift_targets_reference(s, b, e, p)[0],
                                    _pad([x + [e] * (max(map(len, s)) - len(x) + 1) for x in s], p))),
    ],
    alternatives=[
        lambda s, b, e, p: (
            torch.nn.utils.rnn.pad_sequence([torch.tensor([b] + x) for x in s], batch_first=True, padding_value=p),
            torch.nn.utils.rnn.pad_sequence([torch.tensor(x + [e]) for x in s], batch_first=True, padding_value=p)),
        # build the padded block once, then slice it: tgt_in = full[:, :-1], labels = full[:, 1:]
        lambda s, b, e, p: (lambda full: (full[:, :-1].masked_fill(full[:, :-1] == e, p), full[:, 1:]))(
            _pad([[b] + x + [e] for x in s], p)),
    ],
    properties=[Property(_rows_start_with_bos), Property(_one_eos_per_label_row)],
    small_inputs=lambda gen: [([[11]], 1, 2, 0), ([[11, 12]], 1, 2, 0), ([[11, 12], [13]], 1, 2, 0),
                              ([[11, 12, 14], [13], [15, 16]], 1, 2, 0)],
)


def check_shift_targets(fn):
    """Check a learner's `shift_targets(seqs, bos_id, eos_id, pad_id)`; never raises."""
    return SHIFT_TARGETS.check(fn)


# --------------------------------------------------------------------------- greedy decoding


def greedy_decode_reference(model, src, bos_id, eos_id, max_len):
    """Exactly max_len steps of argmax decoding (no early stop). Returns (batch, max_len + 1) ids."""
    src_mask = model.source_mask(src)
    memory = model.encode(src, src_mask)  # encode the source once
    ys = torch.full((src.shape[0], 1), bos_id, dtype=torch.long)
    for _ in range(max_len):
        logits = model.decode(ys, memory, src_mask)  # (batch, t, vocab)
        next_token = logits[:, -1].argmax(dim=-1)  # the newest position's prediction
        ys = torch.cat([ys, next_token[:, None]], dim=1)
    return ys


def _greedy_inputs(gen):
    from ..nn.models import EncoderDecoder

    model = EncoderDecoder(12, 12, d_model=16, h=2, d_ff=32, n_enc=1, n_dec=1, dropout=0.0, max_len=16, pad_id=0)
    with torch.no_grad():  # seeded weights, zero biases: the predictions depend on the input
        for name, p in model.named_parameters():
            if p.dim() > 1:
                p.copy_(torch.randn(p.shape, generator=gen) / p.shape[-1] ** 0.5)
            else:
                p.fill_(1.0 if name.endswith("weight") else 0.0)  # LayerNorm γ = 1, all biases 0
    model.eval()
    src = torch.randint(3, 12, (4, 6), generator=gen)
    src[1, 3:] = 0  # padding
    src[2, 2:] = 0
    return model, src, 1, 2, 6


def _starts_with_bos(args, out, again):
    bos = args[2]
    bad = (out[:, 0] != bos).nonzero()
    if len(bad):
        b = int(bad[0])
        return f"your ys row {b} starts with {int(out[b, 0])}, not <bos> = {bos}: decoding starts from <bos>"
    return None


def _greedy_variant(first_position=False, no_mask=False, no_feedback=False, re_encode=False,
                    last_only=False, flat_next=False):
    def decode(model, src, bos_id, eos_id, max_len):
        src_mask = None if no_mask else model.source_mask(src)
        memory = model.encode(src, src_mask)
        ys = torch.full((src.shape[0], 1), bos_id, dtype=torch.long)
        for _ in range(max_len):
            inp = torch.full_like(ys, bos_id) if no_feedback else ys[:, -1:] if last_only else ys
            logits = model(src, inp) if re_encode else model.decode(inp, memory, src_mask)
            pick = logits[:, 0] if first_position else logits[:, -1]
            ys = torch.cat([ys, pick.argmax(-1) if flat_next else pick.argmax(-1)[:, None]], dim=1)
        return ys
    return decode


def _greedy_stop_at_eos(per_row=False, before_append=False, all_rows=False):
    """The early-stop slip: break (or freeze a row) once <eos> appears."""
    def decode(model, src, bos_id, eos_id, max_len):
        src_mask = model.source_mask(src)
        memory = model.encode(src, src_mask)
        ys = torch.full((src.shape[0], 1), bos_id, dtype=torch.long)
        done = torch.zeros(src.shape[0], dtype=torch.bool)
        for _ in range(max_len):
            next_token = model.decode(ys, memory, src_mask)[:, -1].argmax(-1)
            if per_row:                       # a finished row keeps repeating <eos>
                next_token = torch.where(done, eos_id, next_token)
                done = done | (next_token == eos_id)
            elif before_append and (next_token == eos_id).any():
                break
            ys = torch.cat([ys, next_token[:, None]], dim=1)
            if all_rows and (next_token == eos_id).all():   # "stop when every sentence is finished"
                break
            if not per_row and not all_rows and (next_token == eos_id).any():
                break
        return ys
    return decode


EARLY_STOP_HINT = ("you stopped at <eos>: this exercise runs exactly max_len steps of plain argmax "
                   "(no early stop), so the result is always (batch, max_len + 1). eos_id is not "
                   "needed here — the text is cut at the first <eos> later, when ids become words")


def _greedy_preallocated(model, src, bos_id, eos_id, max_len):
    ys = torch.full((src.shape[0], max_len + 1), bos_id, dtype=torch.long)
    memory = model.encode(src)
    for t in range(max_len):
        ys[:, t + 1] = model.decode(ys[:, : t + 1], memory, model.source_mask(src))[:, t].argmax(-1)
    return ys


GREEDY_DECODE = Exercise(
    name="greedy_decode",
    reference=greedy_decode_reference,
    make_inputs=_greedy_inputs,
    run=_call,
    output_names=("ys",),       # as the prompt names it
    mistakes=[
        Mistake("you took the prediction of the first position (logits[:, 0]) every step; the next "
                "token is predicted at the *last* position: logits[:, -1]",
                _greedy_variant(first_position=True)),
        Mistake("the decoder never saw its own predictions: feed back ys (everything generated so "
                "far) at each step", _greedy_variant(no_feedback=True)),
        Mistake("you fed the decoder only the last token (ys[:, -1:]), so each step it sees one "
                "word and not what it already wrote. There is no cache here: feed the whole "
                "prefix, model.decode(ys, memory, src_mask), and take logits[:, -1]",
                _greedy_variant(last_only=True)),
        Mistake("padded source positions are attended to: pass src_mask = model.source_mask(src) to "
                "model.encode and model.decode", _greedy_variant(no_mask=True)),
        Mistake(EARLY_STOP_HINT, _greedy_stop_at_eos()),
        Mistake(EARLY_STOP_HINT, _greedy_stop_at_eos(before_append=True)),
        Mistake(EARLY_STOP_HINT, _greedy_stop_at_eos(per_row=True)),
        Mistake(EARLY_STOP_HINT, _greedy_stop_at_eos(all_rows=True)),
        # torch.cat of (batch, t) and (batch,) raises at the first step, always, and its error
        # ("Tensors must have same number of dimensions: got 2 and 1") names it.
        Mistake("your next token has shape (batch,): one id per sentence but no position axis, so "
                "torch.cat cannot join it to ys (batch, t). Keep that axis, (batch, 1): "
                "next_token[:, None], or argmax(-1, keepdim=True)",
                _greedy_variant(flat_next=True), by_error=True),
    ],
    alternatives=[
        _greedy_variant(re_encode=True),  # model(src, ys) re-encodes each step: slower, same ids
        _greedy_preallocated,
    ],
    properties=[Property(_starts_with_bos)],
)


def check_greedy_decode(fn):
    """Check a learner's `greedy_decode(model, src, bos_id, eos_id, max_len)`; never raises."""
    return GREEDY_DECODE.check(fn)


# --------------------------------------------------------------------------- beam search


def beam_step_reference(scores, log_probs, beam_size):
    """scores (batch, k), log_probs (batch, k, V) -> (new_scores, beam_idx, token_idx),
    each (batch, beam_size): the best of all k·V candidates scores[b, i] + log_probs[b, i, v]."""
    vocab = log_probs.shape[-1]
    candidates = scores[..., None] + log_probs  # (batch, k, V)
    new_scores, flat = candidates.flatten(1).topk(beam_size, dim=-1)  # over all k·V
    return new_scores, flat // vocab, flat % vocab


def _beam_inputs(gen):
    batch, k, vocab = 2, 3, 7
    scores = -torch.rand(batch, k, generator=gen) * 3
    log_probs = torch.log_softmax(torch.randn(batch, k, vocab, generator=gen) * 2.5, dim=-1)
    # make sure the best candidates do not all come from the best beam, and not one per beam
    log_probs[:, 0, 0] = -0.05
    log_probs[:, 0, 1] = -0.2
    scores[:, 0] = 0.0
    return scores, log_probs, k


def _scores_add_up(args, out, again):
    """new_scores[b, r] = scores[b, beam] + log_probs[b, beam, token] for the survivors returned."""
    scores, log_probs, _ = args
    new_scores, beam, token = out
    b = torch.arange(scores.shape[0])[:, None]
    want = scores[b, beam] + log_probs[b, beam, token]
    bad = ((new_scores - want).abs() > 1e-5).nonzero()
    if len(bad):
        i, r = (int(t) for t in bad[0])
        return (f"your survivor {r} of sentence {i} does not add up: new_scores[{i}, {r}] is "
                f"{fmt(new_scores[i, r].item())}, but scores[{i}, {int(beam[i, r])}] + log_probs[{i}, "
                f"{int(beam[i, r])}, {int(token[i, r])}] — the beam and token you returned — is "
                f"{fmt(want[i, r].item())}")
    if (new_scores[:, 1:] > new_scores[:, :-1] + 1e-6).any():
        return "your new_scores are not sorted from best to worst: the best survivor comes first"
    return None


def _per_beam_best(scores, log_probs, beam_size):
    best, token = (scores[..., None] + log_probs).max(dim=-1)  # one candidate per beam
    new_scores, beam = best.topk(beam_size, dim=-1)
    return new_scores, beam, token.gather(1, beam)


BEAM_STEP = Exercise(
    name="beam_step",
    reference=beam_step_reference,
    make_inputs=_beam_inputs,
    run=_call,
    output_names=("new_scores", "beam_idx", "token_idx"),
    mistakes=[
        Mistake("the beams' scores so far were not added: a candidate's score is scores[b, i] + "
                "log_probs[b, i, v] (the log-probability of the whole prefix)",
                lambda s, lp, k: (lambda sc, f: (sc, f // lp.shape[-1], f % lp.shape[-1]))(
                    *lp.flatten(1).topk(k, dim=-1))),
        Mistake("log-probabilities add (log p·q = log p + log q); you multiplied them",
                lambda s, lp, k: (lambda sc, f: (sc, f // lp.shape[-1], f % lp.shape[-1]))(
                    *(s[..., None] * lp).flatten(1).topk(k, dim=-1))),
        Mistake("you kept only each beam's best token; beam search keeps the best beam_size of *all* "
                "k·V candidates, so two survivors may extend the same beam", _per_beam_best),
        Mistake("you swapped // and %: f % V is the position inside one beam's row of V "
                "candidates (the token), f // V the row (the beam) — beam_idx = flat // V, "
                "token_idx = flat % V",
                lambda s, lp, k: (lambda sc, f: (sc, f % lp.shape[-1], f // lp.shape[-1]))(
                    *(s[..., None] + lp).flatten(1).topk(k, dim=-1))),
        Mistake("beam and token are swapped in your decoding of the flat index: you read it as "
                "f = token·k + beam (beam = f mod k, token = f // k). Flattening (batch, k, V) lays "
                "out beam 0's V candidates, then beam 1's …, so f counts whole rows of V: the beam is "
                "f // V, the token f mod V",
                lambda s, lp, k: (lambda sc, f: (sc, f % lp.shape[1], f // lp.shape[1]))(
                    *(s[..., None] + lp).flatten(1).topk(k, dim=-1))),
        Mistake("you divided the flat index by k, the number of beams; the flattened (k, V) rows each "
                "hold V candidates, one per token, so the row (the beam) is f // V and the position "
                "in it (the token) f mod V",
                lambda s, lp, k: (lambda sc, f: (sc, f // lp.shape[1], f % lp.shape[1]))(
                    *(s[..., None] + lp).flatten(1).topk(k, dim=-1))),
        Mistake("your candidates were flattened token-major — (batch, V, k), e.g. after a transpose — "
                "but decoded as if beam-major, f // V and f mod V: in that layout f = token·k + beam. "
                "Flatten (batch, k, V) as it comes, and each row of V candidates is one beam",
                lambda s, lp, k: (lambda sc, f: (sc, f // lp.shape[2], f % lp.shape[2]))(
                    *(s[..., None] + lp).transpose(1, 2).flatten(1).topk(k, dim=-1))),
        Mistake("you ran topk on each beam's row of V candidates (dim=-1 of (batch, k, V)), which keeps "
                "beam_size tokens *per beam*: (batch, k, beam_size). Beam search ranks all k·V "
                "candidates of a sentence together: flatten the last two axes first, then one topk",
                lambda s, lp, k: (lambda t: (t.values, t.indices // lp.shape[-1], t.indices % lp.shape[-1]))(
                    (s[..., None] + lp).topk(k, dim=-1))),
        Mistake("your new_scores hold only the new token's log-probability, log_probs[b, i, v]: you "
                "ranked by the totals but returned the last term. A beam's score is its whole "
                "prefix's, scores[b, i] + log_probs[b, i, v]",
                lambda s, lp, k: (lambda sc, f: (lp.flatten(1).gather(1, f), f // lp.shape[-1], f % lp.shape[-1]))(
                    *(s[..., None] + lp).flatten(1).topk(k, dim=-1))),
        Mistake("you flattened the batch axis too (candidates.flatten()), so one topk ranked the "
                "candidates of every sentence together, shape (beam_size,). Each sentence keeps its own "
                "beams: flatten only the last two axes, candidates.flatten(1), and take topk along dim=-1",
                lambda s, lp, k: (lambda sc, f: (sc, f // lp.shape[-1], f % lp.shape[-1]))(
                    *(s[..., None] + lp).flatten().topk(k))),
        Mistake("flat / V is true division: it gives a float (2.43 …), and beam_idx must hold integer "
                "indices. The beam is the whole part, flat // V (and the token flat % V)",
                lambda s, lp, k: (lambda sc, f: (sc, f / lp.shape[-1], f % lp.shape[-1]))(
                    *(s[..., None] + lp).flatten(1).topk(k, dim=-1))),
        Mistake("you kept the *lowest* scores; log-probabilities are ≤ 0 and the best is the largest "
                "(topk keeps the largest by default)",
                lambda s, lp, k: (lambda sc, f: (sc, f // lp.shape[-1], f % lp.shape[-1]))(
                    *(s[..., None] + lp).flatten(1).topk(k, dim=-1, largest=False))),
    ],
    alternatives=[
        lambda s, lp, k: (lambda srt, idx: (srt[:, :k], idx[:, :k] // lp.shape[-1], idx[:, :k] % lp.shape[-1]))(
            *(s[..., None] + lp).reshape(s.shape[0], -1).sort(dim=-1, descending=True)),
        lambda s, lp, k: __import__("course_lib.nn.decoding", fromlist=["x"]).beam_step(s, lp, k),
    ],
    properties=[Property(_scores_add_up)],
    small_inputs=lambda gen: [
        (torch.tensor([[0.0, -1.0]]), torch.log(torch.tensor([[[0.5, 0.5], [0.9, 0.1]]])), 2),
        (torch.tensor([[0.0, -0.5]]), torch.log(torch.tensor([[[0.2, 0.3, 0.5], [0.6, 0.3, 0.1]]])), 2),
    ],
)


def check_beam_step(fn):
    """Check a learner's `beam_step(scores, log_probs, beam_size)`; never raises."""
    return BEAM_STEP.check(fn)
