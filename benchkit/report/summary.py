"""The store's half of the report: the samples grouped by where they land
(benchkit.counting.group_samples), each group reduced to the numeric columns the
report's tallies need.

`benchkit report` runs this half in a child process (Summariser) while the parent
imports the rest and loads the tree: on a 100,000-sample store the two halves take
about as long each, and the machine has cores to spare. The child sends back a Summary
(a few MB of float columns, not 100,000 objects); without fork, or when the child
fails, the parent summarises the store itself, to the same result. Nothing here
imports numpy: the child would pay for it too.
"""

from __future__ import annotations

import os
import pickle
import signal
from array import array
from dataclasses import dataclass
from pathlib import Path

from benchkit import counting
from benchkit.report.load import StoreContents, load_store
from benchkit.sample import Sample


class Block:
    """One group's columns, as float64 bytes, column after column: usage as recorded
    (input, cache_write, cache_write_1h or 0, cache_read, output) and the rest (turns,
    duration, passed, blocked calls, cost_usd or 0, whether it has a cost)."""
    __slots__ = ("count", "jobs", "usage", "other")
    USAGE, OTHER = 5, 6  # columns of each

    def __init__(self, members: list[Sample], jobs: int | None):
        usages = [s.usage for s in members]
        self.count, self.jobs = len(members), jobs
        self.usage = _columns(
            [u.input for u in usages], [u.cache_write for u in usages],
            [u.cache_write_1h or 0 for u in usages], [u.cache_read for u in usages],
            [u.output for u in usages])
        self.other = _columns(
            [s.turns for s in members], [s.duration_s for s in members],
            [s.outcome == "passed" for s in members], [s.blocked_calls for s in members],
            [s.cost_usd or 0.0 for s in members], [s.cost_usd is not None for s in members])

    def __getstate__(self):
        return (self.count, self.jobs, self.usage, self.other)

    def __setstate__(self, state):
        self.count, self.jobs, self.usage, self.other = state


def _columns(*columns: list) -> bytes:
    values = array("d")
    for column in columns:
        values.extend(array("d", column))
    return values.tobytes()


@dataclass
class Summary:
    """What the report reads of the store: counts, unreadable lines, and the groups
    (benchkit.counting.Group) whose members are each one Block."""
    directory: Path
    files: int
    problems: list[str]  # "FILE:LINE: message"
    samples: int
    unconfined: int      # samples run with --unconfined
    groups: dict[tuple, counting.Group[Block]]


def summarise(contents: StoreContents) -> Summary:
    groups = counting.group_samples(contents.samples)
    return Summary(
        contents.directory, contents.files, contents.problems, len(contents.samples),
        sum(1 for s in contents.samples if not s.confined),
        {key: counting.Group(group.last, group.newest, group.count,
                             [Block(group.members, key[7])])
         for key, group in groups.items()})


class Summariser:
    """The store at directory summarised in a child process from construction on;
    result() waits for it. Use as a context manager, so a child whose result is never
    asked for (the tree was broken) is stopped. The child writes into an anonymous
    in-memory file (Linux's memfd; elsewhere there is no child), not a pipe: a pipe's
    64 KB would hold it until the parent reads, then ping-pong the 9 MB across."""

    def __init__(self, directory):
        self.directory = Path(directory)
        self._child: tuple[int, int] | None = None  # (pid, its file)
        if hasattr(os, "fork") and hasattr(os, "memfd_create") and self.directory.is_dir():
            self._child = _fork(self.directory)

    def result(self) -> Summary:
        """The child's summary; the parent's own when there is no child or it failed
        (a missing store raises FileNotFoundError here, as load_store does)."""
        if self._child is not None:
            pid, file = self._child
            self._child = None
            failed = os.waitpid(pid, 0)[1]
            with open(file, "rb") as written:
                if not failed:
                    written.seek(0)  # the child's writes moved the offset both share
                    return pickle.load(written)
        return summarise(load_store(self.directory))

    def __enter__(self) -> Summariser:
        return self

    def __exit__(self, *_) -> None:
        if self._child is not None:
            pid, file = self._child
            self._child = None
            os.kill(pid, signal.SIGKILL)
            os.waitpid(pid, 0)
            os.close(file)


def _fork(directory: Path) -> tuple[int, int]:
    file = os.memfd_create("benchkit-report-summary")
    pid = os.fork()
    if pid:
        return pid, file
    code = 1
    try:  # the child: no output, no exit handlers of the parent's, whatever happens
        with open(file, "wb") as out:
            pickle.dump(summarise(load_store(directory)), out, protocol=5)
        code = 0
    finally:
        os._exit(code)
