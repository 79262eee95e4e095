"""Read the store: every results/<arm>/<task>.jsonl, decoded into typed records.

Only the fields benchkit.sample.Sample declares are decoded (msgspec skips the rest
without building it), which keeps a 100,000-sample store well inside the report's time
budget. A line that is not a sample is not fatal: it is left out and named as
FILE:LINE. A report reads the store through one Store (open_store), its failure
replays once.
"""

from __future__ import annotations

import gc
from dataclasses import dataclass, field
from pathlib import Path

from benchkit import counting
from benchkit.replays import FailureReplay
from benchkit.sample import Sample, read_samples
from benchkit.store import Store


@dataclass
class StoreContents:
    directory: Path
    samples: list[Sample] = field(default_factory=list)
    files: int = 0
    problems: list[str] = field(default_factory=list)  # "FILE:LINE: message"
    replays: dict[str, FailureReplay] = field(default_factory=dict)  # trial id -> its verdict


def open_store(directory) -> Store:
    """The store at directory: the one Store a report, its trial pages and `benchkit
    show` read it through."""
    return Store(directory)


def load_store(directory) -> StoreContents:
    """Every sample under directory/<arm>/<task>.jsonl, in file then line order."""
    store = open_store(directory)
    paths = store_files(store)
    replays = store.failure_replays()
    return load_files(store, paths, replays)


def store_files(store: Store) -> list[Path]:
    """The store's files, in the order load_store reads them."""
    if not store.root.is_dir():
        raise FileNotFoundError(f"{store.root}: no such store directory")
    return sorted(store.root.glob("*/*.jsonl"))


def load_files(store: Store, paths: list[Path],
               replays: dict[str, FailureReplay]) -> StoreContents:
    """The samples of some of the store's files, in order; `replays`: the store's
    failure replays (a trial whose replay leaked counts as invalid)."""
    contents = StoreContents(store.root, replays=replays)
    leaked = counting.replay_leaks(replays)
    collecting = gc.isenabled()
    gc.disable()  # nothing decoded here forms a cycle; skip the collector's rescans
    try:
        for path in paths:
            contents.files += 1
            samples, problems = read_samples(path)
            contents.samples.extend(counting.overruled(samples, leaked))
            contents.problems.extend(problems)
    finally:
        if collecting:
            gc.enable()
    return contents
