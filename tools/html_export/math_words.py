"""TeX -> the words a screen reader should say ("\\sqrt{d_k}" -> "square root of d sub k").

Headings are what a screen-reader user navigates by, and a heading with a formula is
read badly from MathJax's output: "3. Why divide by" and then the formula's pieces, or
nothing of it at all in the heading's name (measured with Orca and in Chromium's
accessibility tree: "3. Why divide by ?"). `label_headings` gives each such heading its
words as its accessible name (`aria-label`).

The words come from `course_lib.mathtext`, the course's one reader of its notation.
"""
from __future__ import annotations

import html
import re

from course_lib.mathtext import tex_html


def tex_words(tex: str) -> str:
    """The formula `tex` (without $ signs) in words: the course's one reader of TeX
    (`course_lib.mathtext`, also behind the concept checks and the lessons' formula labels)."""
    return tex_html(tex)[1]


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
        if not _MATH.search(_ANCHOR.sub("", inner)) or "aria-label" in attrs or "<span inert" in inner:
            return m.group(0)      # (a formula said in words already: course_lib.mathtext)
        count += 1
        words = html.escape(_words_of(inner), quote=True)
        return f'<h{level}{attrs} aria-label="{words}">{inner}</h{level}>'

    return _HEADING.sub(label, body), count

