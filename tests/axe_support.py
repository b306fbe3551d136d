"""axe-core in Chromium: the WCAG 2.1 A/AA audit the accessibility tests run (issue 28).

axe-core comes bundled in `axe-playwright-python` (offline). Its script is read here, as
UTF-8, rather than through that package's Python module, which reads it in the system's
encoding when imported (under LC_ALL=C: UnicodeDecodeError while collecting the tests).
`audit(page, include)` runs it on the page (or on the elements matching the CSS
selectors in `include`) with the rules tagged wcag2a, wcag2aa, wcag21a, wcag21aa, and
returns the violations as `(rule id, impact, [target selectors], help)` tuples;
`summary(violations)` is one line per rule for an assertion message.
"""
from __future__ import annotations

import functools
import importlib.util
from pathlib import Path

WCAG_TAGS = ["wcag2a", "wcag2aa", "wcag21a", "wcag21aa"]


@functools.lru_cache(maxsize=1)
def axe_script() -> str:
    """axe-core's source, from the installed axe-playwright-python (not imported)."""
    spec = importlib.util.find_spec("axe_playwright_python")
    if spec is None or not spec.submodule_search_locations:
        raise RuntimeError("axe-playwright-python is not installed (requirements-instructor.txt)")
    return (Path(list(spec.submodule_search_locations)[0]) / "axe.min.js").read_text(encoding="utf-8")


def _inject(page) -> None:
    if not page.evaluate("() => typeof window.axe !== 'undefined'"):
        page.evaluate(axe_script())


def axe_version(page) -> str:
    _inject(page)
    return page.evaluate("() => axe.version")


def audit(page, include=None, exclude=None):
    """[(rule, impact, [targets], help)] of the WCAG 2.1 A/AA violations on `page`."""
    context = None
    if include or exclude:
        context = {}
        if include:
            context["include"] = [[s] for s in include]
        if exclude:
            context["exclude"] = [[s] for s in exclude]
    options = {"runOnly": {"type": "tag", "values": WCAG_TAGS}, "resultTypes": ["violations"]}
    _inject(page)
    results = page.evaluate("([context, options]) => axe.run(context || document, options)",
                            [context, options])
    return [(v["id"], v.get("impact"), [" ".join(map(str, n["target"])) for n in v["nodes"]], v["help"])
            for v in results["violations"]]


def summary(violations, limit=4) -> str:
    """One line per violated rule: its id, how many elements, the first few."""
    return "; ".join(f"{rule} ({impact}) on {len(targets)}: {targets[:limit]} — {help_}"
                     for rule, impact, targets, help_ in violations)
