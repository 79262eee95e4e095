"""Where the HTML report's drill-down pages sit, relative to report.html: the report
links to them (render) and writes them (pages), without either importing the store's
reader (benchkit.report.trials) to know it."""

from __future__ import annotations

TRIALS = "trials"  # the drill-down pages' directory beside report.html (pages.py)


def cell_href(arm: str, task: str) -> str:
    """A cell's page, relative to report.html."""
    return f"{TRIALS}/{arm}/{task}.html"


def trial_href(arm: str, task: str, sample_id: str) -> str:
    """A trial's page, relative to report.html (and to the other reports beside it)."""
    return f"{TRIALS}/{arm}/{task}/{sample_id}.html"
