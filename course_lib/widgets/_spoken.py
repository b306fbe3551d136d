"""What an explorer says: a short caption that leads with what changed, symbols in words.

A figure's description (`course_lib.viz.describe`) holds every number that matters, 40 to
110 words for the explorers; a screen reader read all of it at every settled value, the
changed number buried in it, and "‖∂α/∂s‖" as "norm of vector partial derivative α /
partial derivative s norm of vector" (issue 37, measured with Orca). So the live caption is

    "<what changed> <its new value>: <the description's first sentence or clauses>"

cut at about `WORDS` words on a sentence or clause boundary, with the symbols written as
words (`in_words`). The whole description stays under it, in a disclosure.
"""
from __future__ import annotations

import re
import unicodedata

__all__: list = []

WORDS = 25

_SYMBOLS = [
    ("√", "square root of "), ("∑", "sum "), ("Σ", "sum "), ("∂", "d "),
    ("·", " dot "), ("⋅", " dot "), ("×", " by "), ("−", " minus "), ("±", " plus or minus "),
    ("…", " to "), ("→", " to "), ("←", " from "), ("≈", " about "), ("≤", " at most "),
    ("≥", " at least "), ("≠", " not equal to "), ("∞", "infinity"), ("ᵀ", " transposed"),
    ("²", " squared"), ("%", " percent"), ("“", '"'), ("”", '"'),
    ("α", "alpha"), ("β", "beta"), ("γ", "gamma"), ("δ", "delta"), ("Δ", "delta"),
    ("ε", "epsilon"), ("θ", "theta"), ("λ", "lambda"), ("μ", "mu"), ("ρ", "rho"),
    ("σ", "sigma"), ("τ", "tau"), ("φ", "phi"), ("ω", "omega"),
]
_SUBSCRIPTS = str.maketrans("₀₁₂₃₄₅₆₇₈₉ᵢⱼₖₜ", "0123456789ijkt")


def in_words(text: str) -> str:
    """`text` with its mathematical symbols written as words, as a speech synthesiser
    should say them: "‖∂α/∂s‖" -> "norm of d alpha over d s", "√d_k" -> "square root of
    d sub k", "q·k" -> "q dot k"; mathematical italic letters (U+1D400-U+1D7FF) become
    plain ones."""
    text = re.sub(r"‖([^‖]+)‖", r"norm of \1", text)
    text = re.sub(r"([A-Za-z\u0370-\u03ff])([₀-₉ᵢⱼₖₜ]+)", lambda m: f"{m[1]} sub {m[2].translate(_SUBSCRIPTS)}", text)
    for symbol, words in _SYMBOLS:
        text = text.replace(symbol, words)
    # d_k -> d sub k, h_0 -> h sub 0, d_model -> d model (a name, not an index)
    text = re.sub(r"\b([A-Za-z])_\{?([A-Za-z0-9]{1,2})\}?\b", r"\1 sub \2", text)
    text = re.sub(r"\b([A-Za-z]+)_([A-Za-z]{3,})\b", r"\1 \2", text)
    text = re.sub(r"(?<=[A-Za-z)])\s*/\s*(?=[A-Za-z(])", " over ", text)   # ∂α/∂s, not 3/4
    text = "".join(unicodedata.normalize("NFKC", c) if 0x1D400 <= ord(c) <= 0x1D7FF else c for c in text)
    return " ".join(text.split())


def _words(text: str) -> int:
    return len(text.split())


def _boundaries(text: str):
    """Indices just after each ",", ";" or ":" of `text` outside brackets and quotes."""
    depth, quote = 0, False
    for i, c in enumerate(text):
        if c in "([":
            depth += 1
        elif c in ")]":
            depth = max(0, depth - 1)
        elif c == '"':
            quote = not quote
        elif c in ",;:" and depth == 0 and not quote:
            yield i


def short(text: str, words: int = WORDS) -> str:
    """The first sentences of `text` that fit in about `words` words; a first sentence
    longer than that is cut at its last clause boundary (",", ";", ":" outside brackets)
    that fits, else after `words` words; a cut text ends with " …"."""
    sentences = re.split(r"(?<=[.!?])\s+(?=[A-Z'\"(])", " ".join(text.split()))
    out = ""
    for sentence in sentences:
        if out and _words(out + " " + sentence) > words:
            break
        out = (out + " " + sentence).strip()
    if _words(out) <= words + 3:
        return out
    cut = " ".join(out.split()[:words])
    ends = [i for i in _boundaries(cut) if _words(cut[:i]) >= words // 2]
    return (cut[:ends[-1]] if ends else cut) + " …"


def caption(description: str, lead: str = "", words: int = WORDS) -> str:
    """The explorer's live caption: `lead` (what changed: "d_k 128"), then the start of the
    figure's `description`, about `words` spoken words in all, symbols in words."""
    if not description:
        return ""
    lead = in_words(lead)
    body = short(in_words(description), max(8, words - _words(lead)))
    return f"{lead}: {body}" if lead else body


def value_text(control, value) -> str:
    """`value` of `control` as the control shows it (its readout, its option's label)."""
    options = getattr(control, "options", None)
    if options is not None:
        for option in options:
            label, v = option if isinstance(option, tuple) else (option, option)
            if v == value:
                return str(label)
        return str(value)
    if isinstance(value, bool):
        return "on" if value else "off"
    if isinstance(value, str):
        return "changed"
    fmt = getattr(control, "readout_format", None)
    if fmt and isinstance(value, (int, float)):
        try:
            return format(value, fmt)
        except (ValueError, TypeError):
            pass
    return str(value)


def lead(control, value) -> str:
    """What changed, as the caption starts: "<the control's label> <its new value>"."""
    name = (getattr(control, "description", "") or "").strip()
    return f"{name} {value_text(control, value)}".strip()
