"""Concept checks: questions that ask a lesson's ideas back (see `questions.py`).

In a lesson: `from course_lib.exercises.concepts import ask; ask("2.q1")`.
`python3 course.py questions [--lesson 02]` lists them (`__main__.py`).
"""
from .questions import Choice, Number, Option, Predict, all_questions, get  # noqa: F401


def ask(question_id: str) -> None:
    """Show concept check `question_id` ("2.q1"): in a notebook, the interactive question
    (`widget.ConceptCheck`: answers judged, recorded in your progress, feedback spoken);
    elsewhere its text and options, printed."""
    if not isinstance(question_id, str):
        raise TypeError(f"ask takes a question's id as text, e.g. ask(\"2.q1\"), got {question_id!r}")
    question = get(question_id.strip())
    from .widget import ConceptCheck, plain_form

    try:
        from IPython import get_ipython
        from IPython.display import display
    except ImportError:
        get_ipython = None
    if get_ipython is None or get_ipython() is None:
        print(plain_form(question))
        return
    display(ConceptCheck(question))
