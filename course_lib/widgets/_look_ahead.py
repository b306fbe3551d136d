"""Looking ahead: an explorer draws, while the learner pauses, the pictures one step away.

A slider moves one step per key press (or a few per drag). While the learner looks at a
picture, the kernel is idle; an explorer's worker thread uses that time to draw the
pictures for each control one step up and one step down (the control touched last
first, in the direction it last moved) and keeps them. The next press then finds its
picture drawn: it is sent at once, whatever the drawing costs (a frame drawn again, a
small model run). A value not drawn ahead is drawn as before.

Here: which values lie one step away (`neighbours`), the kept pictures (`Pictures`),
whether a notebook cell is running (`cell_running`: no drawing ahead while the learner's
code runs, e.g. during Run All), and how a kept PNG gets a new serial number
(`with_serial`). The worker itself is in `_wiring.py`.
"""
from __future__ import annotations

import math
import struct
import time
import zlib
from collections import OrderedDict

__all__: list = []

SERIAL_KEY = "course-live-figure"


def with_serial(png: bytes, serial) -> bytes:
    """`png` with a text chunk `course-live-figure: serial` before its end chunk.

    JupyterLab drops an Image value equal to one it showed before, so a picture shown
    again must be new bytes; a tEXt chunk may lie anywhere between IHDR and IEND.
    """
    if not png.endswith(b"IEND\xaeB`\x82"):
        raise ValueError("not a complete PNG (no IEND chunk at its end)")
    data = SERIAL_KEY.encode("latin-1") + b"\0" + str(serial).encode("latin-1")
    chunk = struct.pack(">I", len(data)) + b"tEXt" + data + struct.pack(">I", zlib.crc32(b"tEXt" + data))
    return png[:-12] + chunk + png[-12:]


def png_size(png: bytes) -> tuple:
    """(width, height) in pixels of PNG bytes, read from the IHDR chunk."""
    return struct.unpack(">II", png[16:24])


def key_of(values: dict) -> tuple:
    """A hashable key for the controls' values; floats to 12 significant digits, so that
    0.9 and 0.9000000000000001 (one step of 0.05 from 0.85) are the same picture."""
    def norm(v):
        return float(f"{v:.12g}") if isinstance(v, float) else v
    return tuple(sorted((name, norm(v)) for name, v in values.items()))


def _steps(control) -> list:
    """The values one step down and one step up from the control's value (those that exist)."""
    value = control.value
    options = getattr(control, "options", None)
    if options is not None:                         # Dropdown, SelectionSlider, ToggleButtons
        index = getattr(control, "index", None)
        if index is None or not options:
            return []
        values = [o[1] if isinstance(o, tuple) else o for o in options]
        return [values[i] for i in (index - 1, index + 1) if 0 <= i < len(values)]
    if isinstance(value, bool):                     # Checkbox, ToggleButton
        return [not value]
    if not all(hasattr(control, a) for a in ("min", "max", "step")) or control.step in (None, 0):
        return []
    if hasattr(control, "base"):                    # FloatLogSlider: min, max, step are exponents
        if value <= 0:
            return []
        exponent = math.log(value, control.base)
        return [round(control.base ** e, 12) for e in (exponent - control.step, exponent + control.step)
                if control.min - 1e-9 <= e <= control.max + 1e-9]
    out = []
    for v in (value - control.step, value + control.step):
        if control.min <= v <= control.max:
            out.append(round(v, 10) if isinstance(v, float) else v)
    return out


def neighbours(controls: dict, touched=None, direction: int = 1) -> list[dict]:
    """The controls' values with one control moved one step, most likely next first: the
    control `touched` last, in `direction` (+1 up, -1 down), then back; then the others.

    controls: {name: widget}. Returns a list of {name: value} dicts.
    """
    current = {name: c.value for name, c in controls.items()}
    order = sorted(controls, key=lambda name: name != touched)
    out = []
    for name in order:
        steps = _steps(controls[name])          # [down, up] where both exist
        if len(steps) == 2 and not (name == touched and direction < 0):
            steps = steps[::-1]                 # up first
        out += [dict(current, **{name: v}) for v in steps]
    return out


class Pictures:
    """The last `size` pictures drawn (PNG bytes without a serial) and what each shows in
    words (the figure's description), by the values' key."""

    def __init__(self, size: int = 32):
        self.size, self._kept, self._texts = size, OrderedDict(), {}

    def get(self, values: dict):
        key = key_of(values)
        png = self._kept.get(key)
        if png is not None:
            self._kept.move_to_end(key)
        return png

    def text(self, values: dict) -> str:
        """The description kept with the picture for `values` ("" if none)."""
        return self._texts.get(key_of(values), "")

    def __contains__(self, values: dict) -> bool:
        return key_of(values) in self._kept

    def keep(self, values: dict, png: bytes, text: str = "") -> None:
        key = key_of(values)
        self._kept[key], self._texts[key] = png, text
        self._kept.move_to_end(key)
        while len(self._kept) > self.size:
            old, _ = self._kept.popitem(last=False)
            self._texts.pop(old, None)

    def clear(self) -> None:
        self._kept.clear()
        self._texts.clear()

    def __len__(self):
        return len(self._kept)


class _CellClock:
    """Whether a notebook cell runs now, and since when none has (IPython's events)."""

    def __init__(self):
        self.running, self.since, self.shells = True, time.monotonic(), set()

    def watch(self, shell) -> bool:
        """Follow `shell`'s cells (called from inside a running cell: it counts as running).
        True the first time `shell` is watched."""
        if id(shell) in self.shells:
            return False
        self.shells.add(id(shell))
        self.running = True
        shell.events.register("pre_run_cell", self._started)
        shell.events.register("post_run_cell", self._finished)
        return True

    def _started(self, *_):
        self.running = True

    def _finished(self, *_):
        self.running, self.since = False, time.monotonic()

    def idle_for(self) -> float:
        """Seconds since the last cell finished; 0 while one runs."""
        return 0.0 if self.running else time.monotonic() - self.since


CELLS = _CellClock()
