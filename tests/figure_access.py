"""How the figure tests judge a figure's accessibility: described, and told apart without colour.

`series_problems(fig)` finds, in each axes, the pairs of series (lines, bars, point sets
with a legend entry) that differ *only* by colour and whose colours come closer than
MIN_DELTA_E (CAM02-UCS) for a viewer with normal vision or with one of the three
colour-vision deficiencies, simulated at full severity with `colorspacious` (Machado et
al. 2009). Series with another line style, marker or hatch are told apart without colour.
"""
import itertools

import numpy as np
from colorspacious import cspace_convert
from matplotlib.colors import to_rgb

# ΔE in CAM02-UCS: about 1 is a just-noticeable difference side by side; thin lines in a
# legend need far more. 10 keeps every pair of the first five colours of the course palette
# (course_lib/viz/palette.py: at least 10.9 for every viewer; blue/orange 52)
# and rejects tab:red/tab:green (5.2 for deuteranopes), tab:orange/tab:green (1.6) and
# tab:blue/tab:purple (2.4 for protanopes).
MIN_DELTA_E = 10.0
DEFICIENCIES = ("deuteranomaly", "protanomaly", "tritanomaly")


def simulate(rgb, deficiency):
    """sRGB (0..1) as a viewer with `deficiency` at full severity sees it (None: normal)."""
    rgb = np.asarray(rgb, dtype=float)
    if deficiency is None:
        return rgb
    cvd = {"name": "sRGB1+CVD", "cvd_type": deficiency, "severity": 100}
    return np.clip(cspace_convert(rgb, cvd, "sRGB1"), 0, 1)


def delta_e(a, b, deficiency=None):
    """Distance of two colours in CAM02-UCS as seen with `deficiency`."""
    ja, jb = (cspace_convert(simulate(to_rgb(c), deficiency), "sRGB1", "CAM02-UCS") for c in (a, b))
    return float(np.linalg.norm(ja - jb))


def worst_delta_e(a, b):
    """(smallest ΔE over normal vision and the three deficiencies, which one)."""
    return min((delta_e(a, b, d), d or "normal") for d in (None,) + DEFICIENCIES)


def series(ax):
    """[(label, colour, style)] of the series of `ax` that have a legend entry."""
    out = []
    for line in ax.get_lines():
        if not line.get_label().startswith("_") and line.get_visible():
            out.append((line.get_label(), line.get_color(), ("line", line.get_linestyle(), line.get_marker())))
    for bars in ax.containers:
        label = bars.get_label()
        patches = [p for p in bars if hasattr(p, "get_facecolor")]
        if patches and label and not label.startswith("_"):
            p = patches[0]
            out.append((label, p.get_facecolor(), ("bar", p.get_hatch() or "")))
    for coll in ax.collections:
        label = coll.get_label()
        if label and not label.startswith("_") and len(coll.get_facecolors()):
            paths = coll.get_paths()
            out.append((label, coll.get_facecolors()[0],
                        ("points", len(paths[0].vertices) if paths else 0)))
    return out


def series_problems(fig):
    """Pairs of series told apart only by colours too close for some viewer."""
    problems = []
    for ax in fig.axes:
        for (la, ca, sa), (lb, cb, sb) in itertools.combinations(series(ax), 2):
            if sa != sb:
                continue                    # another line style, marker or hatch
            d, who = worst_delta_e(ca, cb)
            if d < MIN_DELTA_E:
                problems.append(f"{la!r} vs {lb!r}: ΔE {d:.1f} for {who} (same style {sa})")
    return problems


def _luminance(colour):
    def channel(c):
        return c / 12.92 if c <= 0.03928 else ((c + 0.055) / 1.055) ** 2.4
    r, g, b = (channel(c) for c in to_rgb(colour))
    return 0.2126 * r + 0.7152 * g + 0.0722 * b


def contrast(fg, bg="white"):
    """WCAG 2.1 contrast ratio of two colours (1 to 21)."""
    a, b = sorted((_luminance(fg), _luminance(bg)), reverse=True)
    return (a + 0.05) / (b + 0.05)


def low_contrast_texts(fig):
    """Texts on the white figure or axes background below WCAG AA (4.5:1; 3:1 from 14 pt
    bold or 18 pt). Texts inside an axes that shows an image (cell annotations, which
    pick black or white for their cell) are left to their figure's own rule."""
    from matplotlib.text import Text
    bad = []
    for text in fig.findobj(Text):
        if not (text.get_visible() and text.get_text().strip()):
            continue
        ax = text.axes
        if ax is not None and ax.images:
            continue
        bbox = text.get_bbox_patch()
        bg = bbox.get_facecolor() if bbox is not None else (ax.get_facecolor() if ax is not None else fig.get_facecolor())
        if to_rgb(bg) != (1.0, 1.0, 1.0):
            continue                            # on a coloured box: not judged here
        size, bold = text.get_fontsize(), str(text.get_fontweight()) in ("bold", "700", "heavy")
        need = 3.0 if size >= 18 or (bold and size >= 14) else 4.5
        alpha = text.get_alpha()
        fg = to_rgb(text.get_color())
        if alpha is not None and alpha < 1:     # blended onto white
            fg = tuple(alpha * c + (1 - alpha) for c in fg)
        if contrast(fg) < need:
            bad.append(f"{text.get_text()[:30]!r} {contrast(fg):.1f}:1")
    return bad
