"""The report's files, put in place as one set: report.md, .html, .json, .csv and the
trial pages (trials/) are written into a staging directory beside them, and only once
every one is written are they renamed into place, together: the renames run shielded
from a stop signal (benchkit.stopping), so a report is never half one run's and half
another's. An interrupted or failed render removes the staging directory and leaves
the previous set as it was. Unchanged trial pages are hard links to the published ones
(benchkit.report.pages), and a set whose pages are all unchanged stages no trials/: the
published one stays, as true of the new report as of the old.

A whole set is published with its key (what it was made of: benchkit.report.builder's
set_key) in SET_MANIFEST, and a report whose key is the one in place, its files and
pages untouched since, writes nothing (unchanged): the published set is the one it
would write.

    with Staging(reports_dir) as staging:
        staging.path("report.md").write_text(...)     # and the others, trials/ included
        paths = staging.publish(["report.md", ...])   # all in place, or none
"""

from __future__ import annotations

import json
import os
import shutil
import tempfile
from collections.abc import Iterable
from pathlib import Path

from benchkit.report.links import TRIALS
from benchkit.stopping import shielded

FORMATS = ("md", "html", "json", "csv")  # a whole set: report.<format> for each
STAGING_PREFIX = ".report-"
SET_MANIFEST = ".report.json"  # the set's key, its files as published, unreadable lines
PAGES_MANIFEST = ".pages.json"  # in trials/: each page's key, and the whole set's


class Staging:
    """A staging directory inside `reports_dir` (one file system: a rename moves a file
    whole), removed on leaving."""

    def __init__(self, reports_dir: str | os.PathLike):
        self.target = Path(reports_dir)
        self.root: Path | None = None

    def __enter__(self) -> Staging:
        self.target.mkdir(parents=True, exist_ok=True)
        self.root = Path(tempfile.mkdtemp(prefix=STAGING_PREFIX, dir=self.target))
        return self

    def __exit__(self, *exc: object) -> None:
        if self.root is not None:
            shutil.rmtree(self.root, ignore_errors=True)
            self.root = None

    @property
    def directory(self) -> Path:
        assert self.root is not None, "inside `with` only"
        return self.root

    def path(self, name: str) -> Path:
        return self.directory / name

    def publish(self, names: Iterable[str], *, key: str | None = None,
                problems: list[str] | None = None) -> list[Path]:
        """Rename the named files, and trials/ when it was written, into place; their
        paths there. `key`: the whole set's, kept in SET_MANIFEST with the files as
        published and the store's unreadable lines (`problems`); without one, a
        manifest in place is removed, since the set it names is no longer there."""
        names = list(names)
        pages = self.path(TRIALS)
        if key is not None:
            self.path(SET_MANIFEST).write_text(json.dumps({
                "key": key, "problems": problems or [],
                "files": {name: _identity(self.path(name)) for name in names}}),
                encoding="utf-8")
        with shielded():
            for name in names:
                os.replace(self.path(name), self.target / name)
            if key is not None:
                os.replace(self.path(SET_MANIFEST), self.target / SET_MANIFEST)
            else:
                (self.target / SET_MANIFEST).unlink(missing_ok=True)
            if pages.is_dir():
                old = self.target / TRIALS
                if old.exists():
                    old.rename(self.path(f"{TRIALS}.previous"))  # removed with the staging
                pages.rename(old)
        return [self.target / name for name in names]


def unchanged(reports_dir: str | os.PathLike, key: str) -> list[str] | None:
    """The store's unreadable lines as the set in place reported them, if that set is
    the one of `key` and untouched since it was published (its files as they were, its
    trial pages exactly the ones kept); else None."""
    target = Path(reports_dir)
    try:
        kept = json.loads((target / SET_MANIFEST).read_text(encoding="utf-8"))
        if kept["key"] != key or not all(_identity(target / name) == list(identity)
                                         for name, identity in kept["files"].items()):
            return None
        problems = [str(problem) for problem in kept["problems"]]
    except (OSError, ValueError, TypeError, KeyError, AttributeError):
        return None
    trials = target / TRIALS
    pages = kept_pages(trials)
    return problems if pages and holds_exactly(trials, pages["pages"]) else None


def kept_pages(trials: Path) -> dict:
    """The published pages' keys, from trials/PAGES_MANIFEST ({} when there is none, or
    it is unreadable)."""
    try:
        kept = json.loads((trials / PAGES_MANIFEST).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    return kept if isinstance(kept, dict) and isinstance(kept.get("pages"), dict) else {}


def holds_exactly(trials: Path, pages: dict[str, str]) -> bool:
    """Whether the published trials/ holds these pages (and its manifest) and nothing
    else: a file put there since (or one gone) makes the set staged anew, so the report
    set stays whole."""
    found = {os.path.relpath(os.path.join(directory, name), trials)
             for directory, _, names in os.walk(trials) for name in names}
    return found == {*pages, PAGES_MANIFEST}


def _identity(path: Path) -> list[int] | None:
    """(inode, size, modification time) of a published file: a rename keeps them."""
    try:
        stat = os.stat(path)
    except OSError:
        return None
    return [stat.st_ino, stat.st_size, stat.st_mtime_ns]
