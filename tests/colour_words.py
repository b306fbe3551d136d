"""Which colours a picture draws, and which colours a text names (issue 38 §1).

`drawn_words(png)` classifies every pixel of a PNG to its nearest reference colour (the
course palette, course_lib/viz/palette.py, and the named regions of the colour maps it
allows, plus white, black and greys for the background and antialiasing) and returns the
colour words whose references cover at least MIN_PIXELS pixels. `colour_words(text)` finds
the colour words of a sentence. A text may name only colours its figure draws.

Names follow what learners call the Okabe–Ito colours: VERMILLION (#D55E00) is read as
orange, not red, so prose calls it "orange-red" (or vermillion); ORANGE (#E69F00) is
"orange"; "red" is a red: the red end of RdBu, matplotlib's red. Grey, black and white are
not checked: every figure has them in its text and antialiasing.
"""
from __future__ import annotations

import functools
import io
import re

import numpy as np
from matplotlib import colormaps
from matplotlib.colors import to_rgb

from course_lib.viz import palette as P


def _cmap(name, *at):
    return [tuple(colormaps[name](x)[:3]) for x in at]


# reference colour -> its name; the nearest reference decides a pixel's name.
REFERENCES: list[tuple[str, tuple]] = (
    [("orange-red", to_rgb(P.VERMILLION)), ("orange", to_rgb(P.ORANGE)), ("blue", to_rgb(P.BLUE)),
     ("sky blue", to_rgb(P.SKY)), ("green", to_rgb(P.GREEN)), ("purple", to_rgb(P.PURPLE)),
     ("yellow", to_rgb(P.YELLOW))]
    + [("red", c) for c in [to_rgb("tab:red"), (1.0, 0.0, 0.0)] + _cmap("RdBu_r", 0.75, 0.8, 0.9, 1.0)]
    + [("blue", c) for c in [to_rgb("tab:blue")] + _cmap("RdBu_r", 0.0, 0.1, 0.2)
       + _cmap("Blues", 0.5, 0.7, 0.9, 1.0) + _cmap("viridis", 0.25, 0.35)]
    + [("orange", c) for c in _cmap("Oranges", 0.55)]
    + [("green", c) for c in [to_rgb("tab:green")] + _cmap("viridis", 0.65, 0.8)]
    + [("teal", c) for c in _cmap("viridis", 0.5)]
    + [("yellow", c) for c in _cmap("viridis", 1.0)]
    + [("purple", c) for c in _cmap("viridis", 0.0, 0.1) + _cmap("Purples", 0.6, 0.8, 1.0)
       + _cmap("PuOr", 0.85, 1.0)]
    + [("brown", c) for c in _cmap("Oranges", 0.9, 1.0)]
    + [("neutral", (g, g, g)) for g in np.linspace(0, 1, 11)]
    # a palette colour's antialiased edges on white: near it, its own; further out, no colour
    + [(n, tuple(0.8 * np.asarray(to_rgb(c)) + 0.2)) for n, c in (
        ("orange-red", P.VERMILLION), ("orange", P.ORANGE), ("blue", P.BLUE), ("sky blue", P.SKY),
        ("green", P.GREEN), ("purple", P.PURPLE), ("yellow", P.YELLOW))]
    + [("neutral", tuple(a * np.asarray(to_rgb(c)) + (1 - a))) for a in (0.25, 0.5, 0.7)
       for c in (P.VERMILLION, P.ORANGE, P.BLUE, P.SKY, P.GREEN, P.PURPLE, P.YELLOW)]
    + [("neutral", c) for c in _cmap("RdBu_r", 0.35, 0.45, 0.55, 0.65) + _cmap("Blues", 0.05, 0.2)
       + _cmap("Oranges", 0.05, 0.15) + _cmap("Purples", 0.05, 0.2)]
)
TOLERANCE = 0.14        # a pixel farther than this (RGB, 0..1) from every reference has no name
MIN_PIXELS = 25         # a dashed line or a small box of a colour covers far more

# The words a text may use, and the reference names each accepts.
WORDS = {
    "red": {"red"}, "orange-red": {"orange-red"}, "red-orange": {"orange-red"},
    "vermillion": {"orange-red"}, "vermilion": {"orange-red"}, "dark orange": {"orange-red"},
    "orange": {"orange"}, "yellow": {"yellow"}, "green": {"green", "teal"},
    "bluish green": {"green"}, "teal": {"teal", "green"}, "blue": {"blue", "sky blue"},
    "sky blue": {"sky blue"}, "light blue": {"sky blue", "blue"}, "purple": {"purple"},
    "violet": {"purple"}, "pink": {"purple"}, "reddish purple": {"purple"}, "brown": {"brown"},
}
_WORD = re.compile(r"(?<![\w-])(" + "|".join(sorted(map(re.escape, WORDS), key=len, reverse=True))
                   + r")(?![\w-])", re.IGNORECASE)


def colour_words(text: str) -> list[str]:
    """The colour words of `text`, lower case, longest match first ("sky blue", not "blue")."""
    return [m.group(1).lower() for m in _WORD.finditer(text or "")]


def _pixels(png: bytes) -> np.ndarray:
    import matplotlib.image as mpimg
    img = mpimg.imread(io.BytesIO(png), format="png")
    if img.dtype != np.float32 and img.dtype != np.float64:
        img = img / 255.0
    rgb = img[..., :3].reshape(-1, 3).astype(np.float32)
    if img.shape[-1] == 4:                                   # transparent: on white
        a = img[..., 3].reshape(-1, 1).astype(np.float32)
        rgb = rgb * a + (1 - a)
    return rgb


@functools.lru_cache(maxsize=256)
def name_counts(png: bytes) -> dict[str, int]:
    """How many pixels of `png` are nearest to (and within TOLERANCE of) each reference name.
    Kept per picture: a lesson's markdown cells ask about the same figures again and again."""
    rgb = _pixels(png)
    refs = np.asarray([c for _, c in REFERENCES], dtype=np.float32)
    names = np.asarray([n for n, _ in REFERENCES])
    # Each colour as one integer: np.unique over a 1-D array, not over rows (several times faster).
    q = (rgb * 255).round().astype(np.uint32)
    packed, counts = np.unique((q[:, 0] << 16) | (q[:, 1] << 8) | q[:, 2], return_counts=True)
    uniq = np.stack([(packed >> 16) & 255, (packed >> 8) & 255, packed & 255], axis=1)
    u = uniq.astype(np.float32) / 255
    d = np.linalg.norm(u[:, None, :] - refs[None, :, :], axis=-1)
    best = d.argmin(1)
    ok = d[np.arange(len(u)), best] <= TOLERANCE
    out: dict[str, int] = {}
    for n, c in zip(names[best[ok]], counts[ok]):
        out[n] = out.get(n, 0) + int(c)
    return out


def drawn_words(png: bytes) -> set[str]:
    """The colour words (keys of WORDS) that name something `png` draws."""
    counts = name_counts(png)
    present = {n for n, c in counts.items() if c >= MIN_PIXELS}
    return {w for w, accepted in WORDS.items() if accepted & present}


def undrawn(text: str, pngs: list[bytes]) -> list[str]:
    """The colour words of `text` that none of `pngs` draws."""
    drawn = set().union(*(drawn_words(p) for p in pngs)) if pngs else set()
    return sorted({w for w in colour_words(text) if w not in drawn})
