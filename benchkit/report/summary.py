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

import contextlib
import os
import pickle
import signal
from array import array
from dataclasses import dataclass
from pathlib import Path

from msgspec.structs import astuple

from benchkit import counting
from benchkit.anatomy import PARTS
from benchkit.report.load import StoreContents, load_files, store_files
from benchkit.sample import COMPONENTS, Sample
from benchkit.statistics.rows import AS_RECORDED

# The file numbers go into one pipe before any reader takes one: two bytes each, and a
# pipe holds 64 KiB, so a larger store is read by the parent alone.
MAX_QUEUED = 30_000


# A sample's anatomy as columns: has it, estimated, requests, the first request's
# prompt, tool results and their bytes, tool searches, then each part's tokens in
# COMPONENTS order.
ANATOMY_PARTS = PARTS
ANATOMY_COLUMNS = ("has", "estimated", "requests", "ambient_tokens", "tool_results",
                   "tool_result_bytes", "search_calls",
                   *(f"{part}.{c}" for part in ANATOMY_PARTS for c in COMPONENTS))
_NO_ANATOMY = (0.0,) * len(ANATOMY_COLUMNS)



class Block:
    """One group's columns, as float64 bytes, column after column: usage as recorded
    (input, cache_write, cache_write_1h or 0, cache_read, output), the trial row's
    columns the sample recorded (benchkit.statistics.rows.AS_RECORDED: turns, duration,
    passed, blocked calls, cost_usd or 0, whether it has a cost), and the cost anatomy
    (ANATOMY_COLUMNS: whether it has one, then its figures; zeros where none); and the
    members that did not pass, (id, trial, outcome, failure class) each, for the
    report's list of failures."""
    __slots__ = ("count", "jobs", "usage", "other", "anatomy", "failed", "commands")
    USAGE, OTHER, ANATOMY = 5, len(AS_RECORDED), len(ANATOMY_COLUMNS)  # columns of each

    def __init__(self, members: list[Sample], jobs: int | None):
        usages = [s.usage for s in members]
        self.count, self.jobs = len(members), jobs
        self.usage = _columns(
            [u.input for u in usages], [u.cache_write for u in usages],
            [u.cache_write_1h or 0 for u in usages], [u.cache_read for u in usages],
            [u.output for u in usages])
        recorded: dict[str, list] = {
            "turns": [s.turns for s in members], "duration": [s.duration_s for s in members],
            "success": [s.outcome == "passed" for s in members],
            "blocked": [s.blocked_calls for s in members],
            "cost_usd": [s.cost_usd or 0.0 for s in members],
            "has_cost_usd": [s.cost_usd is not None for s in members]}
        self.other = _columns(*(recorded[column] for column in AS_RECORDED))
        rows = [_anatomy_row(s) for s in members]
        self.anatomy = _columns(*([row[i] for row in rows] for i in range(len(ANATOMY_COLUMNS))))
        self.failed = [(s.id, s.trial, s.outcome, s.failure_class) for s in members
                       if s.outcome != "passed"]
        self.commands = command_sums(members)

    def __getstate__(self):
        return (self.count, self.jobs, self.usage, self.other, self.anatomy, self.failed,
                self.commands)

    def __setstate__(self, state):
        (self.count, self.jobs, self.usage, self.other, self.anatomy, self.failed,
         self.commands) = state


# A command's sums over a block's members that have an anatomy: calls, failed calls,
# retries, result bytes, then its results' tokens in COMPONENTS order.
COMMAND_COLUMNS = ("calls", "failed", "retries", "bytes", *COMPONENTS)
# Where a sample older than its calls has its tool output (its anatomy says how much).
UNRECORDED = "(calls not recorded)"


def command_sums(members: list[Sample]) -> dict[str, list[float]]:
    """command -> its COMMAND_COLUMNS summed over the members with an anatomy (those
    "Where the tokens go" reads), so the commands' tokens sum to their tool output."""
    sums: dict[str, list[float]] = {}
    for sample in members:
        if sample.anatomy is None:
            continue
        if sample.calls is None:
            row = sums.setdefault(UNRECORDED, [0.0] * len(COMMAND_COLUMNS))
            for c, value in enumerate(astuple(sample.anatomy.tool_output)):
                row[4 + c] += value
            continue
        for call in sample.calls:
            row = sums.setdefault(call.command, [0.0] * len(COMMAND_COLUMNS))
            row[0] += 1
            row[1] += call.failed is not None
            row[2] += call.retry
            row[3] += call.bytes
            for c, value in enumerate(astuple(call.result)):
                row[4 + c] += value
    return sums


def _anatomy_row(sample: Sample) -> tuple:
    found = sample.anatomy
    if found is None:
        return _NO_ANATOMY
    return (1.0, float(found.estimated), found.requests, found.ambient_tokens,
            found.tool_results, found.tool_result_bytes, found.search_calls,
            *(value for part in ANATOMY_PARTS for value in astuple(getattr(found, part))))


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
    gateway_only: int    # samples run with --gateway-only-containment
    groups: dict[tuple, counting.Group[Block]]


def summarise(contents: StoreContents) -> Summary:
    groups = counting.group_samples(contents.samples)
    return Summary(
        contents.directory, contents.files, contents.problems, len(contents.samples),
        sum(1 for s in contents.samples if not s.confined),
        sum(1 for s in contents.samples if s.containment == "gateway"),
        {key: counting.Group(group.last, group.newest, group.count,
                             [Block(group.members, key[7])])
         for key, group in groups.items()})


def merged(directory: Path, parts: list[Summary]) -> Summary:
    """The summary of consecutive parts of a store (in store order) as one: what
    summarise makes of the whole, group by group and block by block."""
    groups: dict[tuple, counting.Group[Block]] = {}
    samples = 0
    for part in parts:
        for key, group in part.groups.items():
            whole = groups.get(key)
            if whole is None:
                groups[key] = counting.Group(samples + group.last, group.newest, group.count,
                                             list(group.members))
            else:
                whole.last, whole.newest = samples + group.last, max(whole.newest, group.newest)
                whole.count += group.count
                whole.members.extend(group.members)
        samples += part.samples
    return Summary(directory, sum(p.files for p in parts),
                   [problem for p in parts for problem in p.problems], samples,
                   sum(p.unconfined for p in parts), sum(p.gateway_only for p in parts), groups)


class Summariser:
    """The store at directory summarised file by file, by a child process from
    construction on and by the parent too once it asks for the result(): both take
    the next file from a shared queue (a pipe of file numbers), so neither idles while
    the other has files left. Use as a context manager, so a child whose result is
    never asked for (the tree was broken) is stopped. The child writes into an
    anonymous in-memory file (Linux's memfd; elsewhere there is no child), not a pipe,
    which would hold its 9 MB until the parent reads, then ping-pong them across."""

    def __init__(self, directory):
        self.directory = Path(directory)
        self._paths: list[Path] = []
        self._queue: int | None = None
        self._child: tuple[int, int] | None = None  # (pid, its file)
        if not self.directory.is_dir():
            return  # result() raises, as load_store does
        self._paths = store_files(self.directory)
        if len(self._paths) > MAX_QUEUED or not hasattr(os, "memfd_create"):
            return  # one process reads them all
        self._queue = _queue(len(self._paths))
        try:
            self._child = _fork(self.directory, self._paths, self._queue)
        except OSError:  # no memfd or no fork here (a sandbox, a process limit)
            self._child = None

    def result(self) -> Summary:
        """The store's summary: the files the child did and the parent's own share (all
        of them when there is no child or it failed)."""
        if not self.directory.is_dir():
            store_files(self.directory)  # raises FileNotFoundError, as load_store does
        parts = _drain(self.directory, self._paths, self._queue)
        parts.update(self._childs())
        missing = [number for number in range(len(self._paths)) if number not in parts]
        parts.update((n, _summarise_file(self.directory, self._paths[n])) for n in missing)
        return merged(self.directory, [parts[n] for n in range(len(self._paths))])

    def _childs(self) -> dict[int, Summary]:
        if self._child is None:
            return {}
        pid, file = self._child
        self._child = None
        with open(file, "rb") as written:
            try:
                failed = os.waitpid(pid, 0)[1]
            except ChildProcessError:  # SIGCHLD ignored: reaped already, its fate unknown
                return {}
            written.seek(0)  # the child's writes moved the offset both share
            return {} if failed else pickle.load(written)

    def __enter__(self) -> Summariser:
        return self

    def __exit__(self, *_) -> None:
        if self._queue is not None:
            os.close(self._queue)
            self._queue = None
        if self._child is not None:
            pid, file = self._child
            self._child = None
            os.close(file)
            with contextlib.suppress(ProcessLookupError, ChildProcessError):
                os.kill(pid, signal.SIGKILL)
                os.waitpid(pid, 0)


def _summarise_file(directory: Path, path: Path) -> Summary:
    return summarise(load_files(directory, [path]))


def _queue(count: int) -> int:
    """The read end of a pipe holding the file numbers 0..count-1 and closed behind
    them: two-byte reads of it are atomic, so each number goes to one reader."""
    read, write = os.pipe()
    os.write(write, b"".join(n.to_bytes(2, "big") for n in range(count)))
    os.close(write)
    return read


def _drain(directory: Path, paths: list[Path], queue: int | None) -> dict[int, Summary]:
    """file number -> its summary, for each number taken from the queue."""
    done: dict[int, Summary] = {}
    while queue is not None and (taken := os.read(queue, 2)):
        number = int.from_bytes(taken, "big")
        done[number] = _summarise_file(directory, paths[number])
    return done


def _fork(directory: Path, paths: list[Path], queue: int) -> tuple[int, int]:
    file = os.memfd_create("benchkit-report-summary")
    try:
        pid = os.fork()
    except OSError:
        os.close(file)
        raise
    if pid:
        return pid, file
    code = 1
    try:  # the child: no output, no exit handlers of the parent's, whatever happens
        done = _drain(directory, paths, queue)
        with open(file, "wb") as out:
            pickle.dump(done, out, protocol=5)
        code = 0
    finally:
        os._exit(code)
