"""Judging the lesson 08 translator: exact match, per-token accuracy, kinds of error (lesson 08).

- `evaluate_exact_match`: greedy (or beam) translation of held-out numbers, every piece right;
  `token_accuracy`: teacher-forced, per target position.
- `error_kind` / `ERROR_KINDS`: a wrong translation classified by its first wrong piece.
- `translate`: one input (a number or English words) with the decoder's cross-attention;
  `attention_for_bertviz`: every layer's attention for `course_lib.viz.bertviz_views.show`.

Decoding is `course_lib.nn.decoding`; the data `course_lib.data.translation`.
"""

import numpy as np
import torch

from ..data.translation import BOS, parse_source

__all__ = [
    "token_accuracy",
    "evaluate_exact_match",
    "translate",
    "attention_for_bertviz",
    "error_kind",
    "ERROR_KINDS",
]


@torch.no_grad()
def token_accuracy(model, data, numbers, batch_size=1000):
    """Teacher-forced per-token accuracy: the fraction of target positions (including
    <eos>, excluding padding) where argmax p(y_t | y_<t, x) is the right piece."""
    model.eval()
    right = total = 0
    for i in range(0, len(numbers), batch_size):
        src, tgt_in, labels = data.make_batch(numbers[i : i + batch_size])
        pred = model(src, tgt_in).argmax(-1)
        keep = labels != data.tgt_vocab.pad_id
        right += int((pred == labels)[keep].sum())
        total += int(keep.sum())
    return right / total


@torch.no_grad()
def evaluate_exact_match(model, data, numbers=None, batch_size=1000, beam_size=None):
    """Greedy (or beam) translation of each number; exact match = every piece right.

    Returns {"exact_match": fraction, "numbers": array, "predicted": list of piece
    lists, "expected": list of piece lists, "correct": bool array}.
    """
    from ..nn.decoding import beam_search, greedy_decode

    numbers = data.held_out if numbers is None else np.asarray(numbers)
    model.eval()
    predicted, expected = [], []
    v = data.tgt_vocab
    for i in range(0, len(numbers), batch_size):
        chunk = numbers[i : i + batch_size]
        src, _, _ = data.make_batch(chunk)
        max_len = max(len(data.tgt_ids(int(n))) for n in chunk) + 4
        if beam_size:
            out = beam_search(model, v.bos_id, max_len, v.eos_id, beam_size=beam_size, src=src)
        else:
            out = greedy_decode(model, v.bos_id, max_len, v.eos_id, src=src)
        predicted += [v.decode(row) for row in out]
        expected += [v.decode(data.tgt_ids(int(n))) for n in chunk]
    correct = np.array([p == e for p, e in zip(predicted, expected)])
    return {"exact_match": float(correct.mean()), "numbers": numbers, "predicted": predicted,
            "expected": expected, "correct": correct}


TENS = ("zwanzig", "dreißig", "vierzig", "fünfzig", "sechzig", "siebzig", "achtzig", "neunzig")
ERROR_KINDS = {
    "ein / eins": "German writes 'eins' only at the very end of a number and 'ein' before 'und', "
                  "'hundert', 'tausend'; the model used the other one",
    "eins before tausend": "num2words writes 'einhunderteinstausend' for 101 000 (correct German: "
                           "'einhunderteintausend'); the model wrote 'ein'",
    "units before tens": "a units word + 'und' was added to, or dropped from, a tens word "
                         "(e.g. 'neunzig' vs 'sieben und neunzig')",
    "hundert / tausend dropped": "the model ended with 'eins' where 'ein' + 'hundert' or 'tausend' "
                                 "(and more) belongs: it dropped the rest of the number",
    "too short / too long": "the translation stopped early or went on after the right end",
    "other": "another first wrong piece (read the line)",
}


def error_kind(expected, predicted):
    """Classify a wrong translation by its first differing piece (keys of ERROR_KINDS).

    expected, predicted: lists of German pieces. Returns None if they are equal.
    """
    if expected == predicted:
        return None
    i = next((i for i, (e, p) in enumerate(zip(expected, predicted)) if e != p), min(len(expected), len(predicted)))
    e = expected[i] if i < len(expected) else None
    p = predicted[i] if i < len(predicted) else None
    if {e, p} == {"eins", "ein"}:
        if p == "eins" and i + 1 == len(predicted) and expected[i + 1 : i + 2] in (["hundert"], ["tausend"]):
            return "hundert / tausend dropped"       # 1 100: 'ein tausend eins' for '… ein hundert'
        if p == "ein" and predicted[i + 1 : i + 2] == ["und"] and expected[i + 1 : i + 2] != ["und"]:
            return "units before tens"               # 601 091: 'ein und neunzig' for 'eins tausend'
        return "eins before tausend" if expected[i : i + 2] == ["eins", "tausend"] else "ein / eins"
    if e in TENS and p not in TENS and predicted[i + 1 : i + 2] == ["und"]:
        return "units before tens"
    if p in TENS and e not in TENS and expected[i + 1 : i + 2] == ["und"]:
        return "units before tens"
    if (e is None and p == "und") or (p is None and e == "und"):
        return "units before tens"  # '… neun' vs '… neun und dreißig'
    if e is None or p is None:
        return "too short / too long"
    return "other"


@torch.no_grad()
def translate(model, data, text, beam_size=None, max_len=20):
    """Translate one input (number or English words). Returns a dict with the
    English tokens, German pieces, the joined German word, and the cross-attention
    of every decoder layer (h, n_tgt, n_src) for the decoded sequence.
    """
    from ..nn.models import collect_attention
    from ..nn.decoding import beam_search, greedy_decode

    words, ids = parse_source(data, text)
    v = data.tgt_vocab
    src = torch.tensor([ids])
    model.eval()
    if beam_size:
        out = beam_search(model, v.bos_id, max_len, v.eos_id, beam_size=beam_size, src=src)
    else:
        out = greedy_decode(model, v.bos_id, max_len, v.eos_id, src=src)
    pieces = v.decode(out[0])
    tgt_in = torch.tensor([[v.bos_id] + v.encode(pieces)])
    attn = collect_attention(model, src, tgt_in)
    cross = [a[0] for a in attn["cross"]]  # each (h, n_tgt, n_src)
    return {"source": words, "pieces": pieces, "german": "".join(pieces), "cross": cross,
            "decoder_inputs": [BOS] + pieces}


def attention_for_bertviz(model, data, text):
    """Every layer's attention for one translation, ready for bertviz.

    Returns {"attention": {"encoder": [...], "decoder": [...], "cross": [...]},
    "src_tokens": English words, "tgt_tokens": <bos> + German pieces (the decoder's
    inputs)}. Each list holds one tensor per layer shaped (1, heads, seq_q, seq_k):
    encoder (1, h, n_src, n_src), decoder (1, h, n_tgt, n_tgt), cross (1, h, n_tgt, n_src).
    With `course_lib.viz.bertviz_views`:
        show("model", v["attention"], src_tokens=v["src_tokens"], tgt_tokens=v["tgt_tokens"])
    """
    from ..nn.models import collect_attention

    result = translate(model, data, text)
    v = data.tgt_vocab
    src = torch.tensor([data.src_vocab.encode(result["source"])])
    tgt_in = torch.tensor([[v.bos_id] + v.encode(result["pieces"])])
    attn = collect_attention(model, src, tgt_in)
    return {"attention": {k: list(w) for k, w in attn.items()}, "src_tokens": result["source"],
            "tgt_tokens": result["decoder_inputs"]}
