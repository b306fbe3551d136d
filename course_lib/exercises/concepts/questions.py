"""Concept checks: the questions a lesson asks back, one source for every place they appear.

A lesson's questions live in `lessonNN.py` beside this file (`QUESTIONS = [...]`); the
notebook cell names one (`ask("2.q1")`), the way a check cell names its checker, so the
notebook, the HTML export, the class board, `course.py questions` and the tests all read the
same text, options, feedback and answer.

Three kinds:
- `Choice`: multiple choice. Exactly one option is right; every wrong option is a real
  misconception, and its feedback says why it is wrong and where the lesson shows it.
- `Number`: a number within a tolerance, with feedback for too low, too high and right.
- `Predict`: a `Choice` asked *before* the cell that computes the answer (`reveal` names
  it); in the learner's copy that cell's output is cleared, so the prediction comes first.

Text, options and feedback are Markdown; `$…$` is math, written in the TeX subset that the
course's own reader (`course_lib.mathtext`) turns into readable text and MathML in the widget,
in JupyterLab and in the HTML export alike (no MathJax needed). `verify`, where given,
recomputes what the lesson computes — or, for a number that comes from training or pretrained
weights, reads it from the lesson's saved output (`saved_output`), which nbval holds to a re-run
on another machine — and asserts that the right answer, and any number the question quotes,
agrees with it (tests call it, so a question can never drift from its lesson).
"""
from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Callable, Sequence

CHOICE, NUMBER, PREDICT = "choice", "number", "predict"
LETTERS = "abcdefgh"

REGISTRY: dict[str, "Question"] = {}    # every question, by id ("2.q1"), in lesson order


@dataclass(frozen=True)
class Option:
    """One answer of a multiple-choice question: its text and the feedback it gets."""

    text: str
    feedback: str
    right: bool = False


@dataclass
class Question:
    """One concept check. `id` is "<lesson number>.q<n>" ("2.q1", "11.q4")."""

    id: str
    text: str
    kind: str = CHOICE
    options: Sequence[Option] = ()
    # Number: the right value, the tolerance (absolute) and the feedback on each side.
    answer: float | None = None
    tolerance: float = 0.0
    right: str = ""            # Number: feedback for an answer within the tolerance
    too_low: str = ""
    too_high: str = ""
    # Predict: which cell's output answers the question (its output is cleared in the
    # learner's copy; the cell carries the tag "concept-answer").
    reveal: str = ""
    verify: Callable[[], None] | None = field(default=None, repr=False)

    def __post_init__(self):
        m = re.fullmatch(r"(\d+)\.q(\d+)", self.id)
        if not m:
            raise ValueError(f"a question id looks like '2.q1', got {self.id!r}")
        if self.id in REGISTRY:
            raise ValueError(f"two questions have the id {self.id!r}")
        if self.kind not in (CHOICE, NUMBER, PREDICT):
            raise ValueError(f"{self.id}: kind must be choice, number or predict, got {self.kind!r}")
        if self.kind == NUMBER:
            if self.answer is None or not self.tolerance > 0:
                raise ValueError(f"{self.id}: a number question needs an answer and a tolerance > 0")
            if not (self.right and self.too_low and self.too_high):
                raise ValueError(f"{self.id}: a number question needs feedback for right, "
                                 "too low and too high")
        else:
            if len(self.options) < 3 or len(self.options) > len(LETTERS):
                raise ValueError(f"{self.id}: a choice question needs 3 to {len(LETTERS)} options")
            if sum(o.right for o in self.options) != 1:
                raise ValueError(f"{self.id}: exactly one option must be right")
            if any(not o.feedback.strip() for o in self.options):
                raise ValueError(f"{self.id}: every option needs its own feedback")
        if self.kind == PREDICT and not self.reveal:
            raise ValueError(f"{self.id}: a prediction names the cell that answers it (reveal)")
        REGISTRY[self.id] = self

    @property
    def lesson(self) -> str:
        """'02' for '2.q1'."""
        return f"{int(self.id.split('.')[0]):02d}"

    @property
    def number(self) -> int:
        return int(self.id.split(".q")[1])

    def option_key(self, index: int) -> str:
        return LETTERS[index]

    def judge(self, answer) -> tuple[bool, str]:
        """(right?, feedback) for an answer: an option's letter ("b") or index, or a number."""
        if self.kind == NUMBER:
            try:
                value = float(str(answer).replace(",", ".").strip())
            except ValueError:
                return False, "Type a number, e.g. 16 or 0.5."
            if abs(value - self.answer) <= self.tolerance:
                return True, self.right
            return False, self.too_low if value < self.answer else self.too_high
        index = LETTERS.index(answer) if isinstance(answer, str) and answer in LETTERS else answer
        if not isinstance(index, int) or not 0 <= index < len(self.options):
            raise ValueError(f"{self.id}: no option {answer!r} (options: "
                             f"{', '.join(LETTERS[:len(self.options)])})")
        option = self.options[index]
        return option.right, option.feedback

    def right_key(self) -> str:
        """The right option's letter (a number question: its value as text)."""
        if self.kind == NUMBER:
            return f"{self.answer:g}"
        return LETTERS[next(i for i, o in enumerate(self.options) if o.right)]


def Choice(id: str, text: str, options: Sequence[Option], **kw) -> Question:   # noqa: N802
    return Question(id, text, CHOICE, tuple(options), **kw)


def Predict(id: str, text: str, options: Sequence[Option], reveal: str, **kw) -> Question:  # noqa: N802
    return Question(id, text, PREDICT, tuple(options), reveal=reveal, **kw)


def Number(id: str, text: str, answer: float, tolerance: float, right: str, too_low: str,  # noqa: N802
           too_high: str, **kw) -> Question:
    return Question(id, text, NUMBER, (), answer=answer, tolerance=tolerance, right=right,
                    too_low=too_low, too_high=too_high, **kw)


def all_questions(lesson: str | None = None) -> list[Question]:
    """Every question (of one lesson: "02" or "2"), in lesson and number order."""
    import importlib
    import pkgutil
    from pathlib import Path
    for info in pkgutil.iter_modules([str(Path(__file__).parent)]):
        if re.fullmatch(r"lesson\d\d", info.name):
            importlib.import_module(f"{__package__}.{info.name}")
    chosen = [q for q in REGISTRY.values()
              if lesson is None or q.lesson == f"{int(lesson):02d}"]
    return sorted(chosen, key=lambda q: (q.lesson, q.number))


def saved_output(lesson: str, source_contains: str) -> str:
    """The text the instructor notebook of `lesson` ("09") printed, in the code cells whose
    source contains `source_contains`: the saved outputs that nbval compares with a re-run of
    the lesson (on a simulated other CPU), so a number read here is the lesson's own number on
    any machine nbval passes on. For `verify` functions; needs the repository's notebooks/."""
    import json
    from pathlib import Path
    root = Path(__file__).resolve().parents[3] / "notebooks"
    (path,) = sorted(root.glob(f"{int(lesson):02d}_*.ipynb"))
    texts = []
    for cell in json.loads(path.read_text(encoding="utf-8"))["cells"]:
        if cell["cell_type"] != "code" or source_contains not in "".join(cell["source"]):
            continue
        for out in cell.get("outputs", []):
            text = out.get("text") or out.get("data", {}).get("text/plain", "")
            texts.append(text if isinstance(text, str) else "".join(text))
    if not texts:
        raise AssertionError(f"lesson {lesson}: no saved output of a cell containing {source_contains!r}")
    return "\n".join(texts)


def printed(lesson: str, source_contains: str, pattern: str) -> tuple[str, ...]:
    """The groups of `pattern` (a regex) in `saved_output(lesson, source_contains)`; a clear
    error if the lesson no longer prints it."""
    text = saved_output(lesson, source_contains)
    m = re.search(pattern, text)
    if not m:
        raise AssertionError(f"lesson {lesson} no longer prints {pattern!r}; it printed:\n{text[:800]}")
    return m.groups()


def get(question_id: str) -> Question:
    """The question with this id; a clear error naming the ids that exist."""
    all_questions()
    if question_id not in REGISTRY:
        lesson = question_id.split(".")[0]
        near = [q.id for q in REGISTRY.values() if q.id.split(".")[0] == lesson]
        raise KeyError(f"no concept check {question_id!r}; "
                       f"{'this lesson has ' + ', '.join(near) if near else 'ids look like 2.q1'}")
    return REGISTRY[question_id]
