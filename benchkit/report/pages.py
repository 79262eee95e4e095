"""The HTML report's drill-down: a page per cell and per trial, beside report.html.

    trials/index.html               every cell and every trial, failures first
    trials/<arm>/<task>.html        one cell's trials, failures first, newest first
    trials/<arm>/<task>/<id>.html   one trial: what `benchkit show ID` prints
    trials/.pages.json              each page's key, and the whole set's

Every page is self-contained like the report (inline CSS, no script, nothing fetched).
The report links each cell it shows to trials/<arm>/<task>.html (links.cell_href).

Work done once: a page's key is a digest of what it is rendered from (its sample and
failure replay, the weights, the task's intent, the templates and the code that
renders them). A page whose key the published set already holds is hard-linked from
it into the staging directory, not rendered again; and when the store's files, the
weights, the intents and the templates are all as they were, nothing is staged at all
and the published trials/ stays. On a 2,000-sample store that is 2,150 pages, about
20 MB, not rewritten on each `benchkit report` (benchmarks/report_bench.py).
"""

from __future__ import annotations

import functools
import hashlib
import json
import os
import shutil
from collections import defaultdict
from pathlib import Path

from benchkit.replays import FailureReplay
from benchkit.report.links import TRIALS, trial_href
from benchkit.report.model import Report
from benchkit.report.publish import PAGES_MANIFEST, holds_exactly, kept_pages
from benchkit.report.render import render_page
from benchkit.store import Store

TEMPLATES = Path(__file__).with_name("templates")
# What a page is made by, besides the templates: a change to one renders every page anew.
RENDERERS = ("pages.py", "trials.py", "render.py")


def write_pages(store: Store, reports_dir, report: Report,
                replays: dict[str, FailureReplay],
                intents: dict[str, tuple[str, str]] | None = None, *,
                published: str | os.PathLike | None = None) -> int:
    """Write every page for the store's trials under reports_dir/trials/; the number of
    trial pages. `replays`: the store's failure replays (Store.failure_replays).
    `intents`: task id -> what its agent is asked (on a host that forbids
    self-review, on one that permits it), shown on each trial's page. `published`: the
    directory whose trials/ is in place now, whose unchanged pages are reused; when the
    whole set is unchanged nothing is written under reports_dir (the publisher then
    leaves the published trials/ as it is)."""
    weights, intents = report.weights, intents or {}
    kept = kept_pages(Path(published) / TRIALS) if published is not None else {}
    whole = _set_key(store, weights, intents)
    if (published is not None and kept.get("set") == whole
            and holds_exactly(Path(published) / TRIALS, kept["pages"])):
        return int(kept.get("trials", 0))
    # Imported past that return (measured: ~15 ms, the store read whole and the agent's
    # service notes, which a report whose pages are all unchanged never needs).
    from benchkit.report.trials import (
        PASSED,
        failures_first,
        load_trials,
        summary,
        tokens,
        trial_view,
    )
    built = _Pages(Path(reports_dir) / TRIALS,
                   Path(published) / TRIALS if published is not None else None,
                   kept.get("pages", {}))
    samples = failures_first(load_trials(store).samples)
    cells = defaultdict(list)
    rows = []
    for sample in samples:
        arm, task = sample["arm"], sample["task"]
        row = {"sample": sample, "summary": summary(sample), "tokens": tokens(sample, weights),
               "href": f"{arm}/{task}/{sample['id']}.html"}
        rows.append(row)
        cells[(arm, task)].append(row)
        worded = intents.get(task)
        intent = worded[bool(sample.get("self_review"))] if worded else None
        replay = replays.get(sample.get("id", ""))
        row["key"] = _key(weights, intent, repr(sample), repr(replay))
        page = trial_href(arm, task, sample["id"]).removeprefix(f"{TRIALS}/")
        if not built.reused(page, row["key"]):
            built.write(page, render_page("trial.html.j2", task_file=task, intent=intent,
                                          view=trial_view(store, sample, weights, replays)))
    index = []
    for (arm, task), cell_rows in sorted(cells.items()):
        failed = sum(r["sample"]["outcome"] != PASSED for r in cell_rows)
        if not built.reused(f"{arm}/{task}.html", _key(weights, *(r["key"] for r in cell_rows))):
            built.write(f"{arm}/{task}.html", render_page(
                "cell.html.j2", arm=arm, task=task, rows=cell_rows, failed=failed))
        index.append({"arm": arm, "task": task, "trials": len(cell_rows), "failed": failed,
                      "href": f"{arm}/{task}.html"})
    index.sort(key=lambda cell: (cell["failed"] == 0, cell["arm"], cell["task"]))
    if not built.reused("index.html", _key(weights, *(r["key"] for r in rows))):
        built.write("index.html", render_page(
            "trials.html.j2", rows=rows, cells=index,
            failed=sum(r["sample"]["outcome"] != PASSED for r in rows)))
    built.root.mkdir(parents=True, exist_ok=True)
    (built.root / PAGES_MANIFEST).write_text(json.dumps(
        {"set": whole, "trials": len(rows), "pages": built.keys}), encoding="utf-8")
    return len(rows)


class _Pages:
    """The pages being staged under `root`: each reused from `published` when its key is
    the one kept there, else rendered."""

    def __init__(self, root: Path, published: Path | None, kept: dict[str, str]):
        self.root, self.published, self.kept = root, published, kept
        self.keys: dict[str, str] = {}
        self._made: set[Path] = set()

    def reused(self, relative: str, key: str) -> bool:
        """Whether the published page of this key was put in place (else: write it)."""
        self.keys[relative] = key
        if self.published is None or self.kept.get(relative) != key:
            return False
        target = self._target(relative)
        try:
            os.link(self.published / relative, target)  # one file system: the reports dir
            return True
        except FileNotFoundError:
            return False  # gone from the published set: rendered anew
        except OSError:  # a file system without hard links
            try:
                shutil.copyfile(self.published / relative, target)
                return True
            except OSError:
                return False

    def write(self, relative: str, text: str) -> None:
        self._target(relative).write_text(text, encoding="utf-8")

    def _target(self, relative: str) -> Path:
        target = self.root / relative
        if target.parent not in self._made:
            target.parent.mkdir(parents=True, exist_ok=True)
            self._made.add(target.parent)
        return target


def _set_key(store: Store, weights, intents) -> str:
    """The whole set's key: the store's sample files and failure replays as they stand
    (appended to, never rewritten: their size and modification time say when they
    changed), the weights, the intents, the renderers."""
    stated = []
    for path in [*store.files(), store.failure_replays_path]:
        try:
            status = path.stat()
        except FileNotFoundError:
            continue
        stated.append((str(path.relative_to(store.root)), status.st_size, status.st_mtime_ns))
    return _key(weights, json.dumps(sorted(intents.items())), json.dumps(stated))


def _key(weights, *parts) -> str:
    digest = hashlib.blake2b(_renderers().encode(), digest_size=16)
    digest.update(json.dumps(weights, sort_keys=True).encode())
    for part in parts:
        digest.update(b"\0" + str(part).encode())
    return digest.hexdigest()


@functools.cache
def _renderers() -> str:
    """A digest of the templates and the modules that render the pages."""
    digest = hashlib.blake2b(digest_size=16)
    here = Path(__file__).parent
    for path in [*sorted(TEMPLATES.iterdir()), *(here / name for name in RENDERERS)]:
        digest.update(path.name.encode() + b"\0" + path.read_bytes())
    return digest.hexdigest()
