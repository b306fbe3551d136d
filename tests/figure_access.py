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
