"""The HTML report's drill-down: a page per cell and per trial, beside report.html.

    trials/index.html               every cell and every trial, failures first
    trials/<arm>/<task>.html        one cell's trials, failures first, newest first
    trials/<arm>/<task>/<id>.html   one trial: what `benchkit show ID` prints

Every page is self-contained like the report (inline CSS, no script, nothing fetched).
The report links each cell it shows to trials/<arm>/<task>.html (links.cell_href).
"""

from __future__ import annotations

from collections import defaultdict
from pathlib import Path

from benchkit.report.links import TRIALS, trial_href
from benchkit.report.model import Report
from benchkit.report.render import render_page
from benchkit.report.trials import (
    PASSED,
    failures_first,
    load_trials,
    summary,
    tokens,
    trial_view,
)


def write_pages(store_dir, reports_dir, report: Report,
                intents: dict[str, tuple[str, str]] | None = None) -> int:
    """Write every page for the store's trials under reports_dir/trials/; the number of
    trial pages. `intents`: task id -> what its agent is asked (on a host that forbids
    self-review, on one that permits it), shown on each trial's page."""
    weights = report.weights
    samples = failures_first(load_trials(store_dir).samples)
    root = Path(reports_dir) / TRIALS
    cells = defaultdict(list)
    rows = []
    for sample in samples:
        arm, task = sample["arm"], sample["task"]
        row = {"sample": sample, "summary": summary(sample), "tokens": tokens(sample, weights),
               "href": f"{arm}/{task}/{sample['id']}.html"}
        rows.append(row)
        cells[(arm, task)].append(row)
        page = Path(reports_dir) / trial_href(arm, task, sample["id"])
        page.parent.mkdir(parents=True, exist_ok=True)
        worded = (intents or {}).get(task)
        intent = worded[bool(sample.get("self_review"))] if worded else None
        page.write_text(render_page("trial.html.j2", task_file=task, intent=intent,
                                    view=trial_view(store_dir, sample, weights)), encoding="utf-8")
    index = []
    for (arm, task), cell_rows in sorted(cells.items()):
        failed = sum(r["sample"]["outcome"] != PASSED for r in cell_rows)
        (root / f"{arm}/{task}.html").write_text(render_page(
            "cell.html.j2", arm=arm, task=task, rows=cell_rows, failed=failed), encoding="utf-8")
        index.append({"arm": arm, "task": task, "trials": len(cell_rows), "failed": failed,
                      "href": f"{arm}/{task}.html"})
    index.sort(key=lambda cell: (cell["failed"] == 0, cell["arm"], cell["task"]))
    root.mkdir(parents=True, exist_ok=True)
    (root / "index.html").write_text(render_page(
        "trials.html.j2", rows=rows, cells=index,
        failed=sum(r["sample"]["outcome"] != PASSED for r in rows)), encoding="utf-8")
    return len(rows)
