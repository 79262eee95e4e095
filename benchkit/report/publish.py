"""The report's files, put in place as one set: report.md, .html, .json, .csv and the
trial pages (trials/) are written into a staging directory beside them, and only once
every one is written are they renamed into place, together: the renames run shielded
from a stop signal (benchkit.stopping), so a report is never half one run's and half
another's. An interrupted or failed render removes the staging directory and leaves
the previous set as it was. Unchanged trial pages are hard links to the published ones
(benchkit.report.pages), and a set whose pages are all unchanged stages no trials/: the
published one stays, as true of the new report as of the old.

    with Staging(reports_dir) as staging:
        staging.path("report.md").write_text(...)     # and the others, trials/ included
        paths = staging.publish(["report.md", ...])   # all in place, or none
"""

from __future__ import annotations

import os
import shutil
import tempfile
from collections.abc import Iterable
from pathlib import Path

from benchkit.report.links import TRIALS
from benchkit.stopping import shielded

STAGING_PREFIX = ".report-"


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

    def publish(self, names: Iterable[str]) -> list[Path]:
        """Rename the named files, and trials/ when it was written, into place; their
        paths there."""
        names = list(names)
        pages = self.path(TRIALS)
        with shielded():
            for name in names:
                os.replace(self.path(name), self.target / name)
            if pages.is_dir():
                old = self.target / TRIALS
                if old.exists():
                    old.rename(self.path(f"{TRIALS}.previous"))  # removed with the staging
                pages.rename(old)
        return [self.target / name for name in names]
