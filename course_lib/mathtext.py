"""TeX math -> words to speak, and HTML that needs no MathJax: the course's one reader of its
formulas' notation.

Words: MathJax's output reaches a screen reader one symbol per utterance (Orca, issue 43:
about 45 utterances for the scaled dot-product formula; "10 000" as "10. 000."), so every
formula a learner meets is also said as one phrase — "Attention of Q, K, V equals softmax of
Q K transpose over square root of d sub k, V" — in the concept checks (below), in the lessons'
Markdown of the learner's copy and of the HTML export (`speakable_markdown`: each formula
labelled with its words), and in the export's headings.

HTML, for the concept checks:

Why not MathJax: a concept check is an anywidget in JupyterLab (its own markup, outside
JupyterLab's Markdown and HTML renderers, which are what typeset `$…$`) and a script-built
paragraph in the HTML export (typeset once at load, before any feedback exists). And
MathJax's output reaches a screen reader one symbol per utterance (`DESIGN.md`, Orca). So
the small TeX subset the questions use (COMMON: letters, digits, `_` and `^`, `\\sqrt`,
`\\frac`, Greek, a few operators) is drawn here with `<sub>`, `<sup>` and a stacked fraction,
hidden from assistive technology, beside the same formula in words ("square root of d sub
k"), hidden from the eye. Text outside math keeps `` `code` ``, `**bold**` and `*italics*`.
An unknown command is shown and said by its name, so nothing silently disappears.
"""
from __future__ import annotations

import html
import re

__all__: list = []

_GREEK = {n: chr(c) for n, c in [
    ("alpha", 0x3B1), ("beta", 0x3B2), ("gamma", 0x3B3), ("delta", 0x3B4), ("epsilon", 0x3F5),
    ("varepsilon", 0x3B5), ("zeta", 0x3B6), ("eta", 0x3B7), ("theta", 0x3B8), ("iota", 0x3B9),
    ("kappa", 0x3BA), ("lambda", 0x3BB), ("mu", 0x3BC), ("nu", 0x3BD), ("xi", 0x3BE),
    ("pi", 0x3C0), ("rho", 0x3C1), ("sigma", 0x3C3), ("tau", 0x3C4), ("phi", 0x3D5),
    ("varphi", 0x3C6), ("chi", 0x3C7), ("psi", 0x3C8), ("omega", 0x3C9), ("Gamma", 0x393),
    ("Delta", 0x394), ("Theta", 0x398), ("Lambda", 0x39B), ("Pi", 0x3A0), ("Sigma", 0x3A3),
    ("Phi", 0x3A6), ("Psi", 0x3A8), ("Omega", 0x3A9)]}
# command: (shown, said)
_SYMBOLS = {
    "cdot": ("·", "dot"), "times": ("×", "times"), "le": ("≤", "less than or equal to"),
    "leq": ("≤", "less than or equal to"), "ge": ("≥", "greater than or equal to"),
    "geq": ("≥", "greater than or equal to"), "ne": ("≠", "not equal to"), "neq": ("≠", "not equal to"),
    "approx": ("≈", "approximately"), "to": ("→", "to"), "rightarrow": ("→", "to"),
    "infty": ("∞", "infinity"), "sum": ("∑", "sum"), "log": ("log", "log"), "exp": ("exp", "exp"),
    "max": ("max", "max"), "min": ("min", "min"), "top": ("⊤", "transpose"), "in": ("∈", "in"),
    "ldots": ("…", "dots"), "dots": ("…", "dots"), "cdots": ("⋯", "dots"), "pm": ("±", "plus or minus"),
    "odot": ("⊙", "element-wise times"), "sim": ("∼", "distributed as"), "mid": ("|", "given"),
    "lVert": ("‖", "norm"), "rVert": ("‖", "norm"), "Vert": ("‖", "norm"), "|": ("‖", "norm"),
    "{": ("{", ""), "}": ("}", ""), ",": (" ", ""), ";": (" ", ""), "!": ("", ""), ":": (" ", ""),
    "quad": (" ", ""), "qquad": (" ", ""), " ": (" ", ""), "left": ("", ""), "right": ("", ""),
    "big": ("", ""), "Big": ("", ""), "%": ("%", "percent"),
    "sin": ("sin", "sine"), "cos": ("cos", "cosine"), "tanh": ("tanh", "tanh"),
    "prod": ("∏", "product"), "neg": ("¬", "not"), "cap": ("∩", "intersection"),
    "partial": ("∂", "partial"), "ell": ("ℓ", "l"), "leftarrow": ("←", "becomes"),
    "mapsto": ("↦", "maps to"), "Longrightarrow": ("⟹", "implies"), "Rightarrow": ("⇒", "implies"),
    "div": ("÷", "divided by"), "bmod": ("mod", "mod"), "ln": ("ln", "log"), "arg": ("arg", "arg"),
    "lfloor": ("⌊", "floor of"), "rfloor": ("⌋", ""), "\\": ("<br>", "next row"),
}
# Said "of" when "(" follows them: a function applied ("softmax of …", "P E of pos").
_NAMED = {"log", "exp", "max", "min", "sine", "cosine", "tanh"}
_ROMAN = {"operatorname", "mathrm", "text", "textrm", "mathsf"}
_LETTER_STYLES = {"mathbb", "mathcal"}          # ℝ: said as its letter
_BOLD = {"mathbf", "boldsymbol", "bm", "textbf"}
_ACCENTS = {"hat": ("\u0302", "hat"), "tilde": ("\u0303", "tilde"), "bar": ("\u0304", "bar"),
            "vec": ("\u20D7", "vector")}
# char: (shown, said)
_CHARS = {"-": ("−", "minus"), "+": ("+", "plus"), "=": ("=", "equals"), "/": ("/", "over"),
          "<": ("<", "less than"), ">": (">", "greater than"), "'": ("′", "prime"), "*": ("∗", "times"),
          "(": ("(", ""), ")": (")", ","), "[": ("[", ""), "]": ("]", ""), ",": (",", ","),
          ".": (".", ""), "|": ("|", ""), "!": ("!", "factorial"), ":": (":", ""), "&": ("", "")}
_TOKEN = re.compile(r"\\(?:[A-Za-z]+|.)|[A-Za-z]|\d+(?:\.\d+)?|\s+|.", re.S)
# 10\,000 and 10{,}000: one number ("10 000" was read "10. 000.").
_GROUPED = re.compile(r"(?<=\d)(?:\\,|\{,\}|\\ )(?=\d{3}(?!\d))")


def _letters(run: list) -> list:
    """Letters set side by side, as said: three or more small letters are one name ("pos",
    "model"); others one by one ("Q K", "i j")."""
    if len(run) >= 3 and all(c.islower() for c in run):
        return ["".join(run)]
    return list(run)


_SPACED = set("=+−×·≈≤≥≠→<>∈±⊙∼")


def _spaced(symbol: str) -> str:
    """A relation or operator with a thin space on each side, as TeX sets it."""
    return f"\u2009{html.escape(symbol)}\u2009" if symbol in _SPACED else html.escape(symbol)


class _Reader:
    """A recursive reader over TeX tokens; every piece returns (html, [words])."""

    def __init__(self, tex: str):
        self.toks = [t for t in _TOKEN.findall(_GROUPED.sub("", tex)) if not t.isspace()]
        self.i = 0

    def peek(self):
        return self.toks[self.i] if self.i < len(self.toks) else None

    def take(self):
        tok = self.peek()
        self.i += 1
        return tok

    def expression(self, stop=None):
        shown, said, run, named = [], [], [], False
        while self.peek() is not None and self.peek() != stop:
            tok = self.peek()
            if tok == "(" and (named or run):
                said += _letters(run) + ["of"]     # a function applied: "softmax of", "P E of"
                run, named = [], False
                self.take()
                shown.append("(")
                continue
            h, w = self.scripted()
            shown.append(h)
            if not w and tok.startswith("\\"):
                said += _letters(run)              # \left, \, : nothing said; a name ends
                run = []
                continue
            if tok.isalpha() and len(tok) == 1 and w == [tok]:
                run.append(tok)                    # letters side by side: "pos", "Q K"
                continue
            said += _letters(run) + w
            run = []
            # a name a "(" applies: softmax, PE, exp, theta (with or without a script)
            named = bool(w) and (w[0] in _NAMED or tok[1:] in _ROMAN or tok[1:] in _GREEK)
            if tok.isalpha() and len(tok) == 1:
                named = True                       # a letter with a script: "f sub theta of x"
        said += _letters(run)
        if stop is not None and self.peek() == stop:
            self.take()
        return "".join(shown), said

    def scripted(self):
        shown, said = self.atom()
        big = said in (["sum"], ["product"])       # ∑ with limits: "sum over j equals 1 to n of"
        while self.peek() in ("_", "^"):
            mark = self.take()
            h, w = self.argument()
            if big:
                shown += f"<sub>{h}</sub>" if mark == "_" else f"<sup>{h}</sup>"
                said += (["over"] if mark == "_" else ["to"]) + w
                continue
            if mark == "_":
                shown += f"<sub>{h}</sub>"
                said += ["sub"] + w
                continue
            shown += f"<sup>{h}</sup>"
            said += (["transpose"] if w in (["transpose"], ["T"]) else ["squared"] if w == ["2"]
                     else ["inverse"] if w == ["minus", "1"]
                     else w if len(w) == 1 and w[0].isalpha() and w[0].isupper()   # W^Q: "W Q"
                     else ["to the power"] + w)
        if big and len(said) > 1:
            said += ["of"]
        return shown, said

    def argument(self):
        if self.peek() == "{":
            self.take()
            return self.expression("}")
        return self.atom()

    def atom(self):
        tok = self.take()
        if tok is None or tok == "}":
            return "", []
        if tok == "{":
            return self.expression("}")
        if tok.startswith("\\"):
            return self.command(tok[1:])
        if tok in _CHARS:
            shown, said = _CHARS[tok]
            return _spaced(shown), [said] if said else []
        if tok.isalpha():
            return f"<i>{html.escape(tok)}</i>", [tok]
        return html.escape(tok), [tok]

    def command(self, name):
        if name == "sqrt":
            h, w = self.argument()
            return (f'√<span class="course-math-root">{h}</span>',
                    ["square root of"] + w + (["end root"] if len(w) > 3 else []))
        if name in ("frac", "dfrac", "tfrac"):
            (top, said_top), (bottom, said_bottom) = self.argument(), self.argument()
            return (f'<span class="course-math-frac"><span>{top}</span><span>{bottom}</span></span>',
                    said_top + ["over"] + said_bottom)
        if name in _LETTER_STYLES or name == "mathbin":
            return self.argument()
        if name in ("begin", "end"):                # \begin{pmatrix} … \end{pmatrix}
            _, env = self.argument()
            kind = "matrix" if "matrix" in "".join(env) else " ".join(env)
            return "", ([kind] if name == "begin" else ["end", kind])
        if name == "underbrace":                    # \underbrace{n \times d}_{X W^Q}
            shown, said = self.argument()
            if self.peek() == "_":
                self.take()
                h, w = self.argument()
                return shown + f"<sub>{h}</sub>", said + ["labelled"] + w
            return shown, said
        if name == "xrightarrow":                   # \xrightarrow{\text{view}}
            h, w = self.argument()
            return f"→<sup>{h}</sup>", ["goes by"] + w + ["to"]
        if name in _ROMAN or name in _BOLD:
            (h, w), tag = self.argument(), "b" if name in _BOLD else "span"
            plain = re.sub(r"</?i>", "", h)          # roman: no italic letters
            return f"<{tag}>{plain}</{tag}>", [" ".join(w).replace(" ", "")] if name in _ROMAN else w
        if name in _ACCENTS:
            h, w = self.argument()
            mark, word = _ACCENTS[name]
            return h + mark, w + [word]
        if name in _GREEK:
            said = name.removeprefix("var")
            return _GREEK[name], [f"capital {said.lower()}" if said[0].isupper() else said]
        if name in _SYMBOLS:
            shown, said = _SYMBOLS[name]
            if shown.isalpha():                     # log, exp, max: an upright name, then a space
                return f"{shown}\u2009", [said]
            return _spaced(shown), [said] if said else []
        return html.escape(name), [name]


def tex_html(tex: str) -> tuple[str, str]:
    """(HTML, words) for the formula `tex` (without the $ signs): "\\sqrt{d_k}" ->
    ('√<span …><i>d</i><sub><i>k</i></sub></span>', "square root of d sub k")."""
    if not isinstance(tex, str):
        raise TypeError(f"tex_html takes the formula as a string, got {type(tex).__name__}")
    shown, said = _Reader(tex).expression()
    shown = shown.strip("\u2009")
    return shown, _tidy(" ".join(w for w in said if w))


def _tidy(words: str) -> str:
    """Pauses (commas) where they help: none doubled, none first or last."""
    words = re.sub(r"\s+([,.])", r"\1", words)
    words = re.sub(r",(\s*,)+", ",", words)
    return re.sub(r"^[,\s]+|[,\s]+$", "", words)


def math_span(tex: str) -> str:
    """The formula drawn (hidden from assistive technology) and said (hidden from the eye)."""
    shown, words = tex_html(tex)
    return (f'<span class="course-math"><span class="course-math-shown" aria-hidden="true">{shown}'
            f'</span><span class="course-sr">{html.escape(words)}</span></span>')


_MATH = re.compile(r"\$([^$]+)\$")
_CODE = re.compile(r"`([^`]+)`")


def _inline(text: str) -> str:
    """Markdown's inline marks outside code and math: **bold**, *italics*."""
    text = html.escape(text, quote=False)
    text = re.sub(r"\*\*(.+?)\*\*", r"<strong>\1</strong>", text)
    return re.sub(r"(?<![\w*])\*(?!\s)(.+?)(?<!\s)\*(?![\w*])", r"<em>\1</em>", text)


def markdown_html(text: str) -> str:
    """A question's Markdown (paragraphs, `code`, **bold**, *italics*, $math$) as HTML."""
    if not isinstance(text, str):
        raise TypeError(f"markdown_html takes a string, got {type(text).__name__}")
    paragraphs = [p.strip() for p in re.split(r"\n\s*\n", text.strip()) if p.strip()]
    out = []
    for para in paragraphs:
        pieces, pos = [], 0
        for m in re.finditer(r"`[^`]+`|\$[^$]+\$", para):
            pieces.append(_inline(para[pos:m.start()]))
            token = m.group(0)
            if token.startswith("`"):
                pieces.append(f"<code>{html.escape(token[1:-1])}</code>")
            else:
                pieces.append(math_span(token[1:-1]))
            pos = m.end()
        pieces.append(_inline(para[pos:]))
        out.append("".join(pieces).replace("\n", " "))
    return "".join(f"<p>{p}</p>" for p in out) if len(out) > 1 else (out[0] if out else "")


def plain_text(text: str) -> str:
    """A question's Markdown as plain text (nbval, a terminal): math as its TeX, marks dropped."""
    text = _MATH.sub(lambda m: m.group(1), text)
    text = _CODE.sub(lambda m: m.group(1), text)
    text = re.sub(r"\*\*(.+?)\*\*|(?<![\w*])\*(?!\s)(.+?)(?<!\s)\*(?![\w*])",
                  lambda m: m.group(1) or m.group(2), text)
    return re.sub(r"\s+", " ", text).strip()


def words(text: str) -> str:
    """A question's Markdown as words to speak: math in words, marks dropped."""
    text = _MATH.sub(lambda m: tex_html(m.group(1))[1], text)
    return plain_text(text)


# ----------------------------------------------------------------------------- lessons' Markdown
# Code (fenced blocks, `spans`) is left as it is; an escaped \$ is no formula.
_CODE_OR_MATH = re.compile(r"(?P<fence>^[ \t]*(?P<f>```|~~~).*?^[ \t]*(?P=f)[ \t]*$)|(?P<code>`+)(?P<c>.+?)(?P=code)"
                           r"|(?P<label><span inert>)?(?P<math>\$\$.+?\$\$|(?<![\\$])\$(?!\$)(?:\\\$|[^$])+?\$)",
                           re.S | re.M)
# A heading keeps its TeX: its words would change its anchor (the lessons' headings are words,
# tests/test_notebook_a11y.py; the export names a heading's formula in words, html_export/math_words.py).
_HEADING_LINE = re.compile(r" {0,3}#")
# The words in text of font size 0 (read, not seen), the typeset formula inert (seen, not read).
LABEL = '<span style="font-size:0">{words} </span><span inert>{math}</span>'


def speakable_markdown(source: str) -> str:
    """`source` (a Markdown cell) with each formula said in words, for a screen reader.

    `$\\sqrt{d_k}$` becomes `<span style="font-size:0">square root of d sub k </span><span
    inert>$\\sqrt{d_k}$</span>`: JupyterLab and the HTML export still typeset the TeX, which
    `inert` keeps from the screen reader, and the words (text of size 0: not seen) are read in
    their sentence — Orca: "the key length d sub k is 64." in one utterance, where MathJax's
    MathML gave one symbol per utterance. Why this markup: JupyterLab sanitizes every Markdown
    cell, trusted or not, and keeps `style` (font-size among its allowed properties) and
    `inert`, but drops `role` and `aria-*` (a `role="img"` label came out bare; and with
    `role="math"` Orca ignored the label, measured). A lone letter too: MathJax's `$q$` was an
    utterance of its own, cutting the sentence around it. Code and a formula already labelled
    are left as they are, and so is a heading (its anchor): running this twice changes nothing."""
    if not isinstance(source, str):
        raise TypeError(f"speakable_markdown takes a cell's Markdown as a string, got {type(source).__name__}")

    def label(m):
        math = m.group("math")
        if math is None or m.group("label") or _HEADING_LINE.match(source, source.rfind("\n", 0, m.start()) + 1):
            return m.group(0)
        tex = math[2:-2] if math.startswith("$$") else math[1:-1]
        return LABEL.format(words=html.escape(tex_html(tex)[1], quote=False), math=math)

    return _CODE_OR_MATH.sub(label, source)
