"""The store's half of the report: the samples grouped by where they land
(benchkit.counting.group_samples), each group reduced to the numeric columns the
report's tallies need.

`benchkit report` runs this half in a child process (Summariser) while the parent
imports the rest and loads the tree: on a 100,000-sample store the two halves take
about as long each, and the machine has cores to spare. The child sends back a Summary
(a few MB of float columns, not 100,000 objects); without fork, or when the child
fails, the parent summarises the store itself, to the same result. Nothing here
imports numpy: the child would pay for it too.

Each file's summary is kept between reports and used again while the file is as it
was (benchkit.report.kept): a report of a store unchanged since the last one reads none.
"""

from __future__ import annotations

import contextlib
import os
import pickle
import signal
import time
from dataclasses import dataclass, field
from operator import attrgetter
from pathlib import Path

from benchkit import counting
from benchkit.replays import FailureReplay
from benchkit.report import kept
from benchkit.report.columns import Block
from benchkit.report.load import StoreContents, load_files, open_store, store_files
from benchkit.store import Store

# The file numbers go into one pipe before any reader takes one: two bytes each, and a
# pipe holds 64 KiB, so a larger store is read by the parent alone.
MAX_QUEUED = 30_000
_CONFINED, _CONTAINMENT = attrgetter("confined"), attrgetter("containment")


@dataclass
class Summary:
    """What the report reads of the store: counts, unreadable lines, the groups
    (benchkit.counting.Group) whose members are each one Block, and the store's
    failure replays (trial id -> its verdict), read once."""
    directory: Path
    files: int
    problems: list[str]  # "FILE:LINE: message"
    samples: int
    unconfined: int      # samples run with --unconfined
    gateway_only: int    # samples run with --gateway-only-containment
    groups: dict[tuple, counting.Group[Block]]
    replays: dict[str, FailureReplay] = field(default_factory=dict)


def summarise(contents: StoreContents) -> Summary:
    groups = counting.group_samples(contents.samples)
    return Summary(
        contents.directory, contents.files, contents.problems, len(contents.samples),
        list(map(_CONFINED, contents.samples)).count(False),
        list(map(_CONTAINMENT, contents.samples)).count("gateway"),
        {key: counting.Group(group.last, group.newest, group.count,
                             [Block.of(group.members, key[7])])
         for key, group in groups.items()},
        contents.replays)


def merged(directory: Path, parts: list[Summary],
           replays: dict[str, FailureReplay]) -> Summary:
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
                   sum(p.unconfined for p in parts), sum(p.gateway_only for p in parts), groups,
                   replays)


class Summariser:
    """The store summarised file by file: each file's summary as kept
    since an earlier report while the file is as it was (see the module's docstring),
    the others by a child process from construction on and by the parent too once it
    asks for the result(): both take the next file from a shared queue (a pipe of file
    numbers), so neither idles while the other has files left. Use as a context
    manager, so a child whose result is never asked for (the tree was broken) is
    stopped. The child writes into an anonymous in-memory file (Linux's memfd;
    elsewhere there is no child), not a pipe, which would hold its 9 MB until the
    parent reads, then ping-pong them across. `store`: the one Store the report reads
    (benchkit.report.load.open_store), or its directory. fork=False: no child (a caller
    with threads of its own, such as a run, never forks)."""

    def __init__(self, store: Store | str | os.PathLike, *, fork: bool = True):
        self.store = store if isinstance(store, Store) else open_store(store)
        self.directory = self.store.root
        self.replays: dict[str, FailureReplay] = {}
        self._paths: list[Path] = []
        self._kept: dict[str, kept.KeptFile] = {}  # the store's file -> its summary, kept
        self._queue: int | None = None
        self._child: tuple[int, int] | None = None  # (pid, its file)
        if not self.directory.is_dir():
            return  # result() raises, as load_store does
        self._paths = store_files(self.store)
        self.replays = self.store.failure_replays()
        leaked = counting.replay_leaks(self.replays)
        found = kept.read(self.directory)
        self._kept = {str(path): entry for path in self._paths
                      if (entry := found.get(str(path))) and kept.current(path, entry, leaked)}
        todo = [n for n, path in enumerate(self._paths) if str(path) not in self._kept]
        if not fork or len(todo) < 2 or len(todo) > MAX_QUEUED \
                or not hasattr(os, "memfd_create"):
            return  # one process reads them all
        self._queue = _queue(todo)
        try:
            self._child = _fork(self.store, self._paths, self.replays, self._queue)
        except OSError:  # no memfd or no fork here (a sandbox, a process limit)
            self._child = None

    def result(self) -> Summary:
        """The store's summary: the files kept, the files the child did and the
        parent's own share (all the others when there is no child or it failed). What
        was read is kept for the next report."""
        if not self.directory.is_dir():
            store_files(self.store)  # raises FileNotFoundError, as load_store does
        parts = _drain(self.store, self._paths, self.replays, self._queue)
        parts.update(self._childs())
        keeping = dict(self._kept)
        for number, path in enumerate(self._paths):
            if str(path) in keeping:
                parts[number] = (_unkept(self.directory, keeping[str(path)]), None)
                continue
            if number not in parts:
                parts[number] = _summarise_file(self.store, path, self.replays)
            summary, key = parts[number]
            if key is not None:
                keeping[str(path)] = _to_keep(summary, key)
        if keeping != self._kept:
            kept.keep(self.directory, keeping)
        return merged(self.directory, [parts[n][0] for n in range(len(self._paths))],
                      self.replays)

    def _childs(self) -> dict[int, tuple[Summary, bytes | None]]:
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


def _summarise_file(store: Store, path: Path,
                    replays: dict[str, FailureReplay]) -> tuple[Summary, bytes | None]:
    """The file's summary, and the key to keep it under (None: not to be kept,
    benchkit.report.kept.settled)."""
    started, before = time.time_ns(), kept.identity(path)
    summary = summarise(load_files(store, [path], replays))
    return summary, kept.settled(path, before, started, counting.replay_leaks(replays))


def _to_keep(summary: Summary, key: bytes) -> kept.KeptFile:
    return kept.KeptFile(key, summary.samples, summary.unconfined, summary.gateway_only,
                         summary.problems, [(k, g.last, g.newest, g.count, g.members)
                                            for k, g in summary.groups.items()])


def _unkept(directory: Path, entry: kept.KeptFile) -> Summary:
    return Summary(directory, 1, entry.problems, entry.samples, entry.unconfined,
                   entry.gateway_only,
                   {group[0]: counting.Group(*group[1:]) for group in entry.groups})


# --- the child and the queue they share -------------------------------------------------

def _queue(numbers: list[int]) -> int:
    """The read end of a pipe holding the file numbers and closed behind them: two-byte
    reads of it are atomic, so each number goes to one reader."""
    read, write = os.pipe()
    os.write(write, b"".join(n.to_bytes(2, "big") for n in numbers))
    os.close(write)
    return read


def _drain(store: Store, paths: list[Path], replays: dict[str, FailureReplay],
           queue: int | None) -> dict[int, tuple[Summary, bytes | None]]:
    """file number -> its summary and key (_summarise_file), for each number taken
    from the queue."""
    done: dict[int, tuple[Summary, bytes | None]] = {}
    while queue is not None and (taken := os.read(queue, 2)):
        number = int.from_bytes(taken, "big")
        done[number] = _summarise_file(store, paths[number], replays)
    return done


def _fork(store: Store, paths: list[Path], replays: dict[str, FailureReplay],
          queue: int) -> tuple[int, int]:
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
        done = _drain(store, paths, replays, queue)
        with open(file, "wb") as out:
            pickle.dump(done, out, protocol=5)
        code = 0
    finally:
        os._exit(code)
