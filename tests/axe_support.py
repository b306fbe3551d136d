"""axe-core in Chromium: the WCAG 2.1 A/AA audit the accessibility tests run (issue 28).

axe-core comes bundled in `axe-playwright-python` (offline). `audit(page, include)`
runs it on the page (or on the elements matching the CSS selectors in `include`) with
the rules tagged wcag2a, wcag2aa, wcag21a, wcag21aa, and returns the violations as
`(rule id, impact, [target selectors])` tuples; `summary(violations)` is one line per
rule for an assertion message.
"""
from __future__ import annotations

from axe_playwright_python.sync_playwright import Axe

WCAG_TAGS = ["wcag2a", "wcag2aa", "wcag21a", "wcag21aa"]
_AXE = Axe()


def axe_version(page) -> str:
    page.evaluate(_AXE.axe_script)
    return page.evaluate("axe.version")


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
    results = _AXE.run(page, context=context, options=options)
    return [(v["id"], v.get("impact"), [" ".join(map(str, n["target"])) for n in v["nodes"]], v["help"])
            for v in results.response["violations"]]


def summary(violations, limit=4) -> str:
    """One line per violated rule: its id, how many elements, the first few."""
    return "; ".join(f"{rule} ({impact}) on {len(targets)}: {targets[:limit]} — {help_}"
                     for rule, impact, targets, help_ in violations)
