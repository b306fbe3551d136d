"""The instructor's guide's tables, computed from the checkers and the lessons.

    python tools/exercise_list.py                                   # print the tables
    python tools/exercise_list.py --update docs/instructor_guide.md # rewrite them in the guide
    python tools/exercise_list.py --check docs/instructor_guide.md  # exit 1 if the guide is stale

Sources, so that nothing in the tables is typed by hand except the two estimates:

- the exercises: `course_lib.exercises` REGISTRY (name, lesson, planted mistakes and
  their hints), matched to the lesson notebook that calls `check_<name>(...)` (the
  "Exercise N.M — title" heading above it, the solution between BEGIN/END SOLUTION,
  and the name the student stub raises, which `course_lib.classroom.student reset --exercise`
  takes);
- reading time: the words of the lesson's prose at READING_WPM words per minute,
  rounded to 5 minutes;
- the widgets: every lesson cell that calls a `course_lib.widgets` function, with the
  labels of its controls from the saved widget state;
- difficulty and minutes: ESTIMATES below — a judgement from reading each solution,
  not a measurement. A new exercise without an estimate shows "?" and fails
  tests/test_instructor_guide.py until one is added here.

The generated parts of the guide sit between `<!-- generated:NAME -->` and
`<!-- end generated:NAME -->`; everything else in the guide is prose.
"""
from __future__ import annotations

import argparse
import re
import sys
from dataclasses import dataclass, field
from pathlib import Path

from course_lib.console import utf8_output


ROOT = Path(__file__).resolve().parent.parent
NOTEBOOKS = ROOT / "notebooks"
GUIDE = ROOT / "docs" / "instructor_guide.md"
READING_WPM = 150      # technical prose with formulas, read carefully
BLOCKS = ("lessons", "exercises", "widgets", "mistakes")

# (difficulty 1-3, minutes for a learner who has just read the section): judgement.
ESTIMATES = {
    "center_rows": (1, 3),
    "rnn_forward": (2, 10),
    "grad_norm": (2, 10),
    "softmax": (1, 5),
    "attention": (2, 10),
    "self_attention": (2, 10),
    "sinusoidal_table": (3, 15),
    "add_learned_positions": (1, 5),
    "split_heads": (2, 8),
    "merge_heads": (1, 5),
    "multi_head_attention": (3, 15),
    "feed_forward": (1, 5),
    "layer_norm": (2, 8),
    "encoder_block": (2, 8),
    "causal_mask": (1, 3),
    "masked_attention": (2, 8),
    "next_token_probs": (3, 15),
    "generate": (3, 15),
    "cross_attention": (2, 10),
    "decoder_layer": (2, 10),
    "shift_targets": (2, 10),
    "greedy_decode": (2, 10),
    "beam_step": (3, 15),
    "previous_token_score": (2, 8),
    "mean_pool": (2, 8),
    "next_token_losses": (2, 8),
    "induction_score": (3, 12),
    "rms_norm": (1, 5),
    "apply_rope": (3, 15),
    "swiglu": (1, 5),
    "grouped_query_attention": (2, 10),
    "cached_attention_step": (2, 10),
}
STARS = {1: "★ easy", 2: "★★ medium", 3: "★★★ harder"}


@dataclass
class ExerciseInfo:
    name: str
    lesson: str
    hints: list[str]
    number: str = "?"
    title: str = "(not called from any lesson)"
    solution_lines: int = 0
    stub_names: list[str] = field(default_factory=list)
    order: int = 10**6

    @property
    def checker(self):
        return f"check_{self.name}"

    @property
    def estimate(self):
        return ESTIMATES.get(self.name)


def _lessons():
    return sorted(NOTEBOOKS.glob("[0-9][0-9]_*.ipynb"))


def _registry():
    import course_lib.exercises  # noqa: F401  (fills the registry)
    from course_lib.exercises.framework import REGISTRY
    return REGISTRY


def _solution_lines(source: str) -> int:
    n, inside = 0, False
    for line in source.splitlines():
        s = line.strip()
        if s == "### BEGIN SOLUTION":
            inside = True
        elif s == "### END SOLUTION":
            inside = False
        elif inside and s and not s.startswith("#"):
            n += 1
    return n


def collect() -> list[ExerciseInfo]:
    """Every registered exercise, in the order the lessons ask them."""
    import nbformat
    from course_lib.classroom.student import BEGIN, strip_solutions

    infos = {}
    for name, ex in _registry().items():
        hints = list(dict.fromkeys(m.hint for m in ex.mistakes))   # distinct, in order
        infos[name] = ExerciseInfo(name=name, lesson=ex.lesson, hints=hints)
    order = 0
    for path in _lessons():
        nb = nbformat.read(path, as_version=4)
        heading, solutions = None, []
        for cell in nb.cells:
            if cell.cell_type == "markdown":
                for m in re.finditer(r"^#+\s*Exercise\s+(\d+\.\d+)\s*[—–-]+\s*(.+?)\s*$", cell.source, re.M):
                    heading, solutions = (m.group(1), m.group(2)), []
                continue
            if cell.cell_type != "code":
                continue
            if BEGIN in cell.source:
                solutions.append(cell.source)
            for name in re.findall(r"\bcheck_(\w+)\(", cell.source):
                info = infos.get(name)
                if info is None or info.order < 10**6 or heading is None:
                    continue
                order += 1
                info.order = order
                info.number, info.title = heading
                info.solution_lines = sum(_solution_lines(s) for s in solutions)
                info.stub_names = [n for s in solutions for n in
                                   re.findall(r'raise NotImplementedError\("(\w+):', strip_solutions(s))]
    return sorted(infos.values(), key=lambda i: (i.lesson, i.order, i.name))


# ----------------------------------------------------------------------------- rendering
def _md(text: str) -> str:
    return text.replace("|", "\\|")


def _title(nb, fallback):
    for cell in nb.cells:
        if cell.cell_type == "markdown":
            m = re.search(r"^#\s+(.+)$", cell.source, re.M)
            if m:
                return m.group(1).strip()
    return fallback


def _words(nb) -> int:
    text = " ".join(c.source for c in nb.cells if c.cell_type == "markdown")
    text = re.sub(r"\$\$.*?\$\$|\$[^$]*\$", " formula ", text, flags=re.S)   # a formula ~ a word
    return len(re.findall(r"[A-Za-z0-9']+", text))


def _reading_minutes(nb) -> int:
    """Words at READING_WPM, rounded to 5 minutes: an estimate, and stable under small edits."""
    return max(5, 5 * round(_words(nb) / READING_WPM / 5))


def render_lessons(infos) -> str:
    import nbformat

    rows = ["| lesson | reading | exercises | exercise time | widgets |",
            "|---|---|---|---|---|"]
    widgets = {}
    for lesson, _, _ in widget_inventory():
        widgets[lesson] = widgets.get(lesson, 0) + 1
    total_read = total_ex = 0
    for path in _lessons():
        nb = nbformat.read(path, as_version=4)
        lesson = path.name[:2]
        read = _reading_minutes(nb)
        mine = [i for i in infos if i.lesson == lesson]
        minutes = sum(i.estimate[1] for i in mine if i.estimate)
        total_read, total_ex = total_read + read, total_ex + minutes
        rows.append(f"| {_md(_title(nb, path.stem))} | {read} min | {len(mine)} | "
                    f"{minutes} min | {widgets.get(lesson, 0)} |")
    rows.append(f"| **all lessons** | {total_read} min | {len(infos)} | {total_ex} min | "
                f"{sum(widgets.values())} |")
    return "\n".join(rows)


def render_exercises(infos) -> str:
    rows = ["| # | exercise | checker | difficulty | time | solution lines | mistakes it names | "
            "`reset --exercise` |",
            "|---|---|---|---|---|---|---|---|"]
    for i in infos:
        est = i.estimate
        stars, minutes = (STARS[est[0]], f"{est[1]} min") if est else ("?", "?")
        stubs = ", ".join(f"`{n}`" for n in dict.fromkeys(i.stub_names)) or "—"
        rows.append(f"| {i.number} | {_md(i.title)} | `{i.checker}` | {stars} | {minutes} | "
                    f"{i.solution_lines} | {len(i.hints)} | {stubs} |")
    return "\n".join(rows)


def render_mistakes(infos) -> str:
    out = []
    for i in infos:
        out.append(f"**{i.number} {i.title}** (`{i.checker}`)\n")
        out.extend(f"- {h}" for h in i.hints)
        out.append("")
    return "\n".join(out).rstrip()


def widget_inventory() -> list[tuple[str, str, list[str]]]:
    """(lesson, widget function, control labels) for every cell that shows a course widget.

    A widget cell is one with a line that calls a name of `course_lib.widgets.__all__`; its
    controls are read from the widget state saved in the lesson (listed as "?" when the
    lesson was saved without it).
    """
    import nbformat
    import course_lib.widgets

    sys.path.insert(0, str(Path(__file__).resolve().parent))
    from export_html import WIDGET_STATE, WIDGET_VIEW, StaticWidget

    names = set(course_lib.widgets.__all__)
    rows = []
    for path in _lessons():
        nb = nbformat.read(path, as_version=4)
        static = StaticWidget(nb.metadata.get("widgets", {}).get(WIDGET_STATE, {}).get("state", {}))
        for cell in nb.cells:
            if cell.cell_type != "code":
                continue
            calls = [c for c in re.findall(r"^(\w+)\(", cell.source, re.M) if c in names]
            if not calls:
                continue
            controls = []
            for out in cell.get("outputs", []):
                view = out.get("data", {}).get(WIDGET_VIEW)
                if view:
                    static.convert(view.get("model_id", ""))
                    controls += [label for label, _ in static.controls]
            rows.append((path.name[:2], calls[-1], controls or ["?"]))
    return rows


def render_widgets(_infos=None) -> str:
    rows = ["| lesson | widget | controls |", "|---|---|---|"]
    for lesson, fn, controls in widget_inventory():
        rows.append(f"| {lesson} | `{fn}` | {_md(', '.join(controls))} |")
    return "\n".join(rows)


RENDER = {"lessons": render_lessons, "exercises": render_exercises, "widgets": render_widgets,
          "mistakes": render_mistakes}


def generate() -> dict[str, str]:
    infos = collect()
    return {name: RENDER[name](infos) for name in BLOCKS}


# ----------------------------------------------------------------------------- the guide
def _block_re(name):
    return re.compile(r"(<!-- generated:%s\b[^>]*-->\n)(.*?)\n?(<!-- end generated:%s -->)" % (name, name), re.S)


def read_blocks(text: str) -> dict[str, str]:
    found = {}
    for name in BLOCKS:
        m = _block_re(name).search(text)
        if m:
            found[name] = m.group(2)
    return found


def fill(text: str, blocks: dict[str, str]) -> str:
    for name, body in blocks.items():
        pattern = _block_re(name)
        if not pattern.search(text):
            raise ValueError(f"the guide has no <!-- generated:{name} --> … <!-- end generated:{name} --> block")
        text = pattern.sub(lambda m: m.group(1) + body + "\n" + m.group(3), text)
    return text


def main(argv=None) -> int:
    utf8_output()                # the tables hold "★" and "—": any console, any locale
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    group = ap.add_mutually_exclusive_group()
    group.add_argument("--update", metavar="GUIDE", type=Path, help="rewrite the generated blocks of GUIDE")
    group.add_argument("--check", metavar="GUIDE", type=Path, help="exit 1 if GUIDE's blocks are stale")
    args = ap.parse_args(argv)
    blocks = generate()
    if not (args.update or args.check):
        for name in BLOCKS:
            print(f"<!-- {name} -->\n{blocks[name]}\n")
        return 0
    path = args.update or args.check
    text = path.read_text(encoding="utf-8")
    try:
        new = fill(text, blocks)
    except ValueError as e:
        print(f"exercise_list: {path}: {e}", file=sys.stderr)
        return 1
    if args.check:
        stale = [n for n in BLOCKS if read_blocks(text).get(n) != blocks[n]]
        if stale:
            print(f"{path}: generated tables out of date ({', '.join(stale)}); run "
                  f"python tools/exercise_list.py --update {path}")
            return 1
        print(f"{path}: generated tables up to date")
        return 0
    if new != text:
        path.write_text(new, encoding="utf-8")
        print(f"{path}: tables updated")
    else:
        print(f"{path}: tables already up to date")
    return 0


if __name__ == "__main__":
    sys.exit(main())
