"""TeX -> the words a screen reader should say ("\\sqrt{d_k}" -> "square root of d sub k").

Headings are what a screen-reader user navigates by, and a heading with a formula is
read badly from MathJax's output: "3. Why divide by" and then the formula's pieces, or
nothing of it at all in the heading's name (measured with Orca and in Chromium's
accessibility tree: "3. Why divide by ?"). `label_headings` gives each such heading its
words as its accessible name (`aria-label`).

`tex_words` covers the notation of the lessons' prose (sub- and superscripts, roots,
fractions, Greek letters, the usual operators); an unknown command is said by its name.
"""
from __future__ import annotations

import html
import re

_COMMANDS = {
    "infty": "infinity", "cdot": "dot", "times": "times", "top": "transpose", "to": "to",
    "rightarrow": "to", "leftarrow": "from", "le": "less than or equal to", "leq": "less than or equal to",
    "ge": "greater than or equal to", "geq": "greater than or equal to", "ne": "not equal to",
    "neq": "not equal to", "approx": "approximately", "sim": "distributed as", "in": "in",
    "sum": "sum", "prod": "product", "log": "log", "exp": "exp", "max": "max", "min": "min",
    "ldots": "dots", "dots": "dots", "cdots": "dots", "mid": "given", "odot": "element-wise times",
    "otimes": "tensor", "pm": "plus or minus", "partial": "partial", "nabla": "gradient",
    "lVert": "norm", "rVert": "norm", "Vert": "norm", "|": "norm", "langle": "", "rangle": "",
    "{": "", "}": "", "left": "", "right": "", "big": "", "Big": "", ",": "", ";": "", "!": "",
    ":": "", "quad": "", "qquad": "", " ": "",
}
_GREEK = ("alpha beta gamma delta epsilon varepsilon zeta eta theta vartheta iota kappa lambda mu "
          "nu xi pi rho sigma tau upsilon phi varphi chi psi omega Gamma Delta Theta Lambda Xi Pi "
          "Sigma Phi Psi Omega").split()
_TEXT_COMMANDS = {"mathrm", "text", "operatorname", "mathbf", "boldsymbol", "mathit", "mathbb",
                  "mathcal", "textrm", "textit", "textbf", "mathsf", "bm"}
_CHARS = {"+": "plus", "-": "minus", "=": "equals", "/": "over", "<": "less than", ">": "greater than",
          "'": "prime", "*": "times", "|": "", "(": "", ")": "", "[": "", "]": "", ",": ",", ".": ".",
          "!": "factorial", ":": ""}
_TOKEN = re.compile(r"\\(?:[A-Za-z]+|.)|[A-Za-z]+|\d+(?:\.\d+)?|\s+|.", re.S)


def _tokens(tex):
    return [t for t in _TOKEN.findall(tex) if not t.isspace()]


class _Reader:
    def __init__(self, tex):
        self.toks, self.i = _tokens(tex), 0

    def peek(self):
        return self.toks[self.i] if self.i < len(self.toks) else None

    def take(self):
        tok = self.peek()
        self.i += 1
        return tok

    def expression(self, stop=None):
        """Words up to `stop` (a closing "}" or "]") or the end."""
        words = []
        while self.peek() is not None and self.peek() != stop:
            words += self.atom_with_scripts()
        if stop is not None and self.peek() == stop:
            self.take()
        return words

    def atom_with_scripts(self):
        words = self.atom()
        while self.peek() in ("_", "^"):
            mark = self.take()
            arg = self.argument()
            if mark == "_":
                words += ["sub"] + arg
            elif arg in (["transpose"], ["T"]):
                words += ["transpose"]
            elif arg == ["2"]:
                words += ["squared"]
            elif arg == ["minus", "1"]:
                words += ["inverse"]
            else:
                words += ["superscript"] + arg
        return words

    def argument(self):
        """One argument: a {group} or a single token."""
        if self.peek() == "{":
            self.take()
            return self.expression("}")
        return self.atom()

    def atom(self):
        tok = self.take()
        if tok is None or tok == "}":
            return []
        if tok == "{":
            return self.expression("}")
        if tok.startswith("\\"):
            return self.command(tok[1:])
        if tok in _CHARS:
            return [_CHARS[tok]] if _CHARS[tok] else []
        return [tok]

    def command(self, name):
        if name == "sqrt":
            index = None
            if self.peek() == "[":                  # \sqrt[3]{x}
                self.take()
                index = self.expression("]")
            inner = self.argument()
            return (["root", *index, "of"] if index else ["square root of"]) + inner
        if name in ("frac", "dfrac", "tfrac"):
            top, bottom = self.argument(), self.argument()
            return top + ["over"] + bottom
        if name in _TEXT_COMMANDS:
            return self.argument()
        if name in ("hat", "tilde", "bar", "vec", "overline"):
            return self.argument() + [{"hat": "hat", "tilde": "tilde", "bar": "bar", "vec": "vector",
                                       "overline": "bar"}[name]]
        if name in _GREEK:
            return [name if name[0].islower() else f"capital {name.lower()}"]
        if name.startswith("var") and name[3:] in _GREEK:
            return [name[3:]]
        if name in _COMMANDS:
            return [_COMMANDS[name]] if _COMMANDS[name] else []
        return [name]


def tex_words(tex: str) -> str:
    """The formula `tex` (without $ signs) in words."""
    words = _Reader(tex).expression()
    text = " ".join(w for w in words if w)
    return re.sub(r"\s+([,.])", r"\1", text).strip()


_MATH = re.compile(r"\$\$(.+?)\$\$|\$(.+?)\$|\\\((.+?)\\\)", re.S)
_HEADING = re.compile(r"<h([1-6])\b([^>]*)>(.*?)</h\1>", re.S)
_ANCHOR = re.compile(r'<a class="anchor-link"[^>]*>.*?</a>', re.S)


def _words_of(fragment):
    """An HTML fragment with TeX in it -> plain words."""
    def say(m):
        return " " + tex_words(html.unescape(next(g for g in m.groups() if g is not None))) + " "
    text = re.sub(r"<[^>]+>", "", _MATH.sub(say, _ANCHOR.sub("", fragment)))
    return re.sub(r"\s+([?.,:;!])", r"\1", re.sub(r"\s+", " ", html.unescape(text))).strip()


def label_headings(body: str) -> tuple[str, int]:
    """Give every heading of the page that holds a formula its words; returns (page, count).

    <h2 id=…>3. Why divide by $\\sqrt{d_k}$?<a class="anchor-link" …>¶</a></h2> gets
    aria-label="3. Why divide by square root of d sub k?"; its content stays as it is, for
    MathJax to typeset (and its assistive MathML to carry the formula's structure).
    """
    count = 0

    def label(m):
        nonlocal count
        level, attrs, inner = m.groups()
        if not _MATH.search(_ANCHOR.sub("", inner)) or "aria-label" in attrs:
            return m.group(0)
        count += 1
        words = html.escape(_words_of(inner), quote=True)
        return f'<h{level}{attrs} aria-label="{words}">{inner}</h{level}>'

    return _HEADING.sub(label, body), count
