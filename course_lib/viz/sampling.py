"""Figures for lesson 06's sampling: the next-token distribution and a sampled text.

`sample_panel` is drawn by `SamplePanel`, a live plot (`course_lib.viz.live`): lesson 06's
explorer shows the text as it grows, and each partial answer only redraws the bars and
the text over a frame drawn once. `BarsOverText` is the layout it shares with lesson 11's
`generation_panel`.
"""
from __future__ import annotations

import textwrap

import matplotlib.pyplot as plt
import torch
from matplotlib.artist import Artist
from matplotlib.text import Text
from matplotlib.transforms import Bbox, IdentityTransform

from .describe import describe, first_lines, fmt
from .live import LivePlot
from .palette import BLUE, GREY

__all__ = ["next_token_bars", "sample_panel"]


def _label(ch):
    return {"\n": "\\n", " ": "␣"}.get(ch, ch)


def _spoken(name):
    """A bar's label (as drawn) in words: ␣ -> 'space', \\n -> 'newline', c -> 'c'."""
    return {"␣": "space", "\\n": "newline"}.get(name, f"'{name}'")


def _bars_words(heights, names, what="character", said=5):
    """(phrase, table, derived numbers) for next-token bars, most likely first."""
    heights = [float(h) for h in heights]
    zeros = sum(h == 0 for h in heights)
    words = ", ".join(f"{_spoken(nm)} {fmt(h)}" for nm, h in zip(names[:said], heights[:said]))
    words += f"; the {len(heights)} bars hold {fmt(sum(heights))} of the probability"
    if zeros:
        words += f", {zeros} of them exactly 0"
    table = ([what, "probability"], [[_spoken(nm), h] for nm, h in zip(names, heights)])
    return words, table, [sum(heights), zeros, len(heights)]


def _check_probs(probs, labels):
    p = torch.as_tensor(probs, dtype=torch.float64)
    if p.dim() != 1:
        raise ValueError(f"probs must be 1-D (vocab,), got shape {tuple(p.shape)}")
    if len(labels) != p.shape[0]:
        raise ValueError(f"got {len(labels)} labels for {p.shape[0]} probabilities")
    return p


def _most_likely(p, labels, top):
    """Indices of the `top` largest of p (a list of vocab floats), most likely first; ties
    (the zeros top-k leaves) in the vocabulary's order, not topk's."""
    return sorted(range(len(p)), key=lambda i: (-p[i], str(labels[i])))[:top]


_ZERO_LABEL = "characters with probability 0 (cut by top-k) in alphabetical order"


def _bars(ax, p, labels, top, title):
    idx = _most_likely(p.tolist(), labels, min(top, p.shape[0]))
    values = p[idx]
    ax.bar(range(len(idx)), values.numpy(), color=[_bar_colour(v) for v in values.tolist()])
    ax.set_xticks(range(len(idx)), [_label(labels[i]) for i in idx], fontfamily="monospace")
    if (values == 0).any():
        ax.set_xlabel(_ZERO_LABEL, fontsize=8)
    ax.set_ylim(0, 1.05)
    ax.set_ylabel("probability")
    ax.set_title(title, fontsize=10)
    return [_label(labels[i]) for i in idx], values.tolist()


def next_token_bars(probs, labels, top=20, title="next-token distribution"):
    """The `top` most likely next tokens as bars. probs: (vocab,), labels: vocab strings
    (newline is drawn as \\n, space as ␣). Returns the Figure."""
    if isinstance(top, bool) or not isinstance(top, int) or top < 1:
        raise ValueError(f"top must be an int >= 1, got {top!r}")
    p = _check_probs(probs, labels)
    fig, ax = plt.subplots(figsize=(7, 2.4))
    names, heights = _bars(ax, p, labels, top, title)
    fig.tight_layout()
    words, table, extra = _bars_words(heights, names, "token")
    return describe(fig, f"{title[:1].upper() + title[1:]}: the {len(names)} most likely next tokens of {len(labels)}, "
                         f"probability as bar height: {words}.", table=table, extra_values=[*extra, len(labels)])


def _keep_tops(fig, height):
    """Give `fig` `height` inches, every axes keeping its distance from the top edge; the
    last axes (the text panel, text anchored at its top) takes up the difference."""
    width, old = fig.get_size_inches()
    boxes = [ax.get_position() for ax in fig.axes]
    fig.set_size_inches(width, height)
    for ax, box in zip(fig.axes, boxes):
        top = (1 - box.y1) * old                   # inches from the top edge
        h = box.height * old + (height - old if ax is fig.axes[-1] else 0.0)
        ax.set_position([box.x0, 1 - (top + h) / height, box.width, h / height])


class _Remembered(Artist):
    """A moving Text of a live plot, drawn line by line, the pixels of each line kept: a
    line drawn again at a place where it was drawn before, on the same canvas, is copied
    back instead of rendered. Matplotlib renders text glyph by glyph (~0.2 ms each on a
    2-core laptop), so without this most of a partial answer's cost is drawing again the
    lines it already showed (and the titles, which take turns between a few texts).

    Only for text over plain background no other moving artist touches (titles, the
    sample): the pixels copied back are then what rendering would give. The live plot
    draws this in place of `text` (`set_animated` is passed on to it); any other drawing
    of the figure (the plain figure, savefig) draws `text` itself.
    """

    KEEP = 64      # lines kept (~40 kB each): the last few values' texts and titles

    def __init__(self, text):
        super().__init__()
        self.text, self._line, self._kept = text, Text(), {}   # (line, x, y, renderer) -> its pixels

    def set_animated(self, b):
        self.text.set_animated(b)
        super().set_animated(b)

    def draw(self, renderer):
        text = self.text
        if not text.get_visible() or not text.get_text():
            return
        if text.get_rotation():                 # the line boxes below assume horizontal text
            text.draw(renderer)
            return
        _, info, _ = text._get_layout(renderer)          # where matplotlib puts each line
        posx, posy = text.get_transform().transform(text.get_unitless_position())
        for line, (width, ascent, descent), (x, y) in info:
            if line:
                self._draw_line(line, posx + x, posy + y, width, ascent, descent, renderer)

    def _draw_line(self, line, x, y, width, ascent, descent, renderer):
        """One line at baseline (x, y), display pixels; (width, ascent, descent): its box."""
        fig = self.text.get_figure(root=True)
        where = (line, x, y, renderer)
        if where in self._kept:
            fig.canvas.restore_region(self._kept[where])
            return
        single = self._line
        single.update_from(self.text)
        single.set(figure=fig, transform=IdentityTransform(), position=(x, y), text=line,
                   horizontalalignment="left", verticalalignment="baseline", clip_on=False)
        single.draw(renderer)
        # The line's box (a multi-line text's boxes tile it, 1 px or more of margin around
        # the ink), widened by the pixels copy_from_bbox would cut off at its top and right.
        box = Bbox.intersection(Bbox.from_extents(x - 2, y - descent, x + width + 2, y + ascent + 1), fig.bbox)
        if box is not None:
            if len(self._kept) >= self.KEEP:
                del self._kept[next(iter(self._kept))]      # the oldest
            self._kept[where] = fig.canvas.copy_from_bbox(box)


class BarsOverText(LivePlot):
    """Next-token bars (top) over a text that grows (bottom): lesson 06's sample and
    lesson 11's generation.

    The text panel is `text_base + per_line · lines` inches high, as its text needs. The
    bars keep the geometry tight_layout gives them over a text of `typical_lines` lines,
    whatever the text, so a text that grows never moves the frame: the live figure is
    built once, tall enough for `max_lines` (its PNG is cropped to the ink), and each
    partial answer redraws only the bars, the titles and the text. The plain figure
    (`figure`) is cut to its own text.

    A subclass sets the sizes and implements `derive(**values)` (the arguments checked and
    turned into what is drawn; it must return `lines`, the text's lines), `build_bars(ax,
    **derived)` (returns the moving artists of the bars panel), `update_bars(**derived)`
    and `text_title(widest=False, **derived)` (widest: the longest this title gets for
    these values, used for the layout).
    """

    width = 8.0               # inches
    extra = 1.75              # inches of figure above and below the text panel's height (the bars
                              # panel's share: small enough that lesson 06's explorer fits a laptop screen)
    bars_ratio = 1.3          # height ratio of the bars panel to the text panel (whose ratio is its height):
                              # at most ~1.8 with this `extra`, or a short text is cut (tests/test_viz_streaming.py)
    text_base, per_line = 0.5, 0.17
    # The bars as tall as the figure made them before (when it was sized to its text) for
    # lesson 06's default sample; never more lines than max_lines.
    typical_lines, max_lines = 6, 16
    fontsize = 9

    def derive(self, **values):
        raise NotImplementedError

    def _text_height(self, lines):
        return self.text_base + self.per_line * lines

    def _height(self, lines):
        return self.extra + self._text_height(lines)

    @property
    def figsize(self):
        return (self.width, self._height(self.typical_lines))

    def __call__(self, **values):
        return super().__call__(**self.derive(**values))

    def figure(self, **values):
        values = self.derive(**values)
        fig = super().figure(**values)
        _keep_tops(fig, self._height(len(values["lines"])))      # no blank canvas under the text
        return fig

    def build(self, fig, **values):
        self.ax_bars, self.ax_text = fig.subplots(
            2, 1, gridspec_kw={"height_ratios": [self.bars_ratio, self._text_height(self.typical_lines)]})
        moving = self.build_bars(self.ax_bars, **values)
        self.ax_text.axis("off")
        # Laid out around typical_lines empty lines (as tall as lines of text) and the widest
        # title: what tight_layout measures does not depend on how far the text has grown.
        self.text = self.ax_text.text(0.0, 1.0, "\n" * (self.typical_lines - 1), va="top", ha="left",
                                      family="monospace", fontsize=self.fontsize, transform=self.ax_text.transAxes)
        self.title = self.ax_text.set_title(self.text_title(widest=True, **values), fontsize=10, loc="left")
        fig.tight_layout()
        _keep_tops(fig, self._height(self.max_lines))            # room for the longest text
        return [*moving, _Remembered(self.text), _Remembered(self.title)]

    def update(self, **values):
        self.update_bars(**values)
        self.text.set_text("\n".join(values["lines"]))
        self.title.set_text(self.text_title(**values))


class SamplePanel(BarsOverText):
    """Lesson 06's `sample_panel` as a live plot: labels (the vocabulary) fixed, the
    distribution and the text as values (see `sample_panel` for their meaning).

    Moving: the bars' heights and colours, both titles, the text. Frame drawn again: when
    the characters under the bars change (top-k, T = 0, the prompt). New layout: when an x
    label for zero bars comes or goes, or the prompt (in the text's title) changes.
    """

    redraw_on = ("names",)
    rebuild_on = ("zeros", "prompt")

    def __init__(self, labels, top=20, width=72):
        self.labels, self.top, self.wrap = list(labels), top, width

    def derive(self, prompt, text, probs, temperature, top_k, pending=False):
        """-> the values drawn: heights and names of the bars (most likely first), whether
        one is zero, the text's lines."""
        if not text.startswith(prompt):
            raise ValueError("text must start with the prompt")
        p = _check_probs(probs, self.labels).tolist()
        idx = _most_likely(p, self.labels, min(self.top, len(p)))
        heights = tuple(p[i] for i in idx)
        lines = []
        for para in (text + " …" if pending else text).split("\n"):
            lines.extend(textwrap.wrap(para, self.wrap, replace_whitespace=False, drop_whitespace=False) or [""])
        return dict(prompt=prompt, sampled=len(text) - len(prompt), temperature=temperature, top_k=top_k,
                    pending=pending, heights=heights, names=tuple(_label(self.labels[i]) for i in idx),
                    zeros=0.0 in heights, lines=tuple(lines[:self.max_lines]))

    def build_bars(self, ax, heights, names, zeros, **values):
        self.bars = ax.bar(range(len(heights)), heights, color=[_bar_colour(h) for h in heights])
        ax.set_xticks(range(len(names)), names, fontfamily="monospace")
        self._names = names
        if zeros:
            ax.set_xlabel(_ZERO_LABEL, fontsize=8)
        ax.set_ylim(0, 1.05)
        ax.set_ylabel("probability")
        self.bars_title = ax.set_title(self._bars_title(**values), fontsize=10)
        return [*self.bars, _Remembered(self.bars_title)]

    def update_bars(self, heights, names, **values):
        for bar, h in zip(self.bars, heights):
            bar.set_height(h)
            bar.set_facecolor(_bar_colour(h))      # not set_color: that would give the bar an edge
        if names != self._names:                   # the frame is drawn again (redraw_on)
            self.ax_bars.set_xticks(range(len(names)), names, fontfamily="monospace")
            self._names = names
        self.bars_title.set_text(self._bars_title(**values))

    def describe(self, prompt, sampled, pending, heights, names, lines, **values):
        words, table, extra = _bars_words(heights, names)
        title, sample = self._bars_title(**values), "\n".join(lines).strip()
        top = max(range(len(heights)), key=lambda i: heights[i]) if len(heights) else None
        first = f"; first character {names[top]!r} {fmt(heights[top])}" if top is not None else ""
        return dict(text=f"Probability of the {title}: {words}. "
                         f"Below, the sample{' so far' if pending else ''} (the prompt {prompt!r} + {sampled} sampled "
                         f"characters): “{sample}”", table=table, extra_values=extra,
                    result=f"Sample{' so far' if pending else ''}: “{first_lines(sample)}”{first}.")

    @staticmethod
    def _bars_title(temperature, top_k, **_):
        mode = "greedy (T = 0)" if temperature == 0 else f"T = {temperature:.2f}"
        return f"first new character after the prompt — {mode}, top-k = {'all' if top_k is None else top_k}"

    @staticmethod
    def text_title(prompt, sampled, pending, widest=False, **_):
        if widest:                                 # the layout leaves room for this one
            sampled, pending = 1000, True
        so_far = " so far, sampling …" if pending else ""
        return f"sample: prompt {prompt!r} + {sampled} sampled characters{so_far}"


def _bar_colour(p):
    return BLUE if p > 0 else GREY


def sample_panel(prompt, text, probs, labels, temperature, top_k, top=20, width=72, pending=False):
    """Sampling, seen from both ends: the distribution for the first new token (top) and
    the whole sampled text (bottom, the prompt included).

    prompt: the prompt string; text: prompt + continuation; probs: (vocab,) the
    distribution the first new token was drawn from. pending: the text is still growing
    (drawn with a trailing " …"). Returns the Figure.
    """
    return SamplePanel(labels, top, width).figure(prompt=prompt, text=text, probs=probs, temperature=temperature,
                                                  top_k=top_k, pending=pending)
