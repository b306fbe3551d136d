"""What an explorer says: a short caption that leads with what changed, then the result.

A figure's description (`course_lib.viz.describe`) holds every number that matters, 40 to
110 words for the explorers; a screen reader read all of it at every settled value, the
changed number buried in it, and "‖∂α/∂s‖" as "norm of vector partial derivative α /
partial derivative s norm of vector" (issue 37, measured with Orca). So the live caption is

    "<what changed> <its new value>: <the figure's result>"

at most `WORDS` words as spoken: the result is the description's `result` (written by the
figure, result first), else the description's first sentences or clauses that fit — never
cut mid-clause, never ended with "…". A description that already starts with what changed
("layer 0, head 0: …" after "layer 0") is not led by it twice. The caption a sighted
learner reads keeps the lesson's symbols (d_ff, n_src, √d_k); the spoken one has them in
words (`in_words`). The whole description stays under it, in a disclosure.
"""
from __future__ import annotations

import re
import unicodedata

__all__: list = []

WORDS = 30

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


def _spoken_words(text: str) -> int:
    return _words(in_words(text))


def _fits(text: str, words: int) -> str:
    """The first sentences of `text` that fit in `words` spoken words; a first sentence longer
    than that ends at its last clause boundary (",", ";", ":" outside brackets and quotes)
    that fits, with a full stop — never a cut clause, never "…". "" if not even a clause fits."""
    sentences = re.split(r"(?<=[.!?])\s+(?=[A-Z'\"(])", " ".join(text.split()))
    out = ""
    for sentence in sentences:
        if _spoken_words((out + " " + sentence).strip()) > words:
            break
        out = (out + " " + sentence).strip()
    if out:
        return out
    first = sentences[0]
    ends = [i for i in _boundaries(first) if _spoken_words(first[:i]) <= words]
    return first[:ends[-1]].rstrip(" ,;:") + "." if ends else ""


def short(text: str, words: int = WORDS) -> str:
    """The start of `text` that fits in `words` spoken words (see `_fits`); when not even its
    first clause fits, its first `words` words (a cut mid-clause, the last resort)."""
    fitted = _fits(text, words)
    if fitted:
        return fitted
    kept: list[str] = []
    for word in text.split():
        if _spoken_words(" ".join(kept + [word])) > words:
            break
        kept.append(word)
    return " ".join(kept)


def _key(text: str) -> str:
    return " ".join(re.sub(r"[^\w.]+", " ", in_words(text).lower()).split())


def caption(description: str, lead: str = "", result: str = "", words: int = WORDS) -> str:
    """The explorer's caption as shown: `lead` (what changed: "d_k 128"), then the figure's
    `result` (else the start of its `description`), at most `words` words when spoken
    (`in_words`); the lesson's symbols kept. A body that names the lead in its first words
    ("layer 0, head 0: …" after "layer 0") is not led by it again."""
    body = " ".join((result or description or "").split())
    if not body:
        return ""
    lead = " ".join(lead.split())
    if lead and _key(lead) in _key(" ".join(body.split()[:8])):
        lead = ""
    room = words - _spoken_words(lead) if lead else words
    said = short(body, max(8, room))
    return f"{lead}: {said}" if lead else said


def spoken(text: str) -> str:
    """A caption as a screen reader should hear it: its symbols in words."""
    return in_words(text)


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
