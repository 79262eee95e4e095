"""Read the store: every results/<arm>/<task>.jsonl, decoded into typed records.

Only the fields benchkit.sample.Sample declares are decoded (msgspec skips the rest
without building it), which keeps a 100,000-sample store well inside the report's time
budget. A line that is not a sample is not fatal: it is left out and named as
FILE:LINE.
"""

from __future__ import annotations

import gc
from dataclasses import dataclass, field
from pathlib import Path

from benchkit import counting
from benchkit.sample import Sample, read_samples
from benchkit.store import Store


@dataclass
class StoreContents:
    directory: Path
    samples: list[Sample] = field(default_factory=list)
    files: int = 0
    problems: list[str] = field(default_factory=list)  # "FILE:LINE: message"


def load_store(directory) -> StoreContents:
    """Every sample under directory/<arm>/<task>.jsonl, in file then line order."""
    return load_files(Path(directory), store_files(directory))


def store_files(directory) -> list[Path]:
    """The store's files, in the order load_store reads them."""
    directory = Path(directory)
    if not directory.is_dir():
        raise FileNotFoundError(f"{directory}: no such store directory")
    return sorted(directory.glob("*/*.jsonl"))


def load_files(directory: Path, paths: list[Path]) -> StoreContents:
    """The samples of some of the store's files, in order."""
    contents = StoreContents(directory)
    leaked = counting.replay_leaks(Store(directory))  # counted as invalid
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
