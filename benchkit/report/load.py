"""Read the store: every results/<arm>/<task>.jsonl, decoded into typed records.

Only the fields the report uses are decoded (msgspec skips the rest without building
it), which keeps a 100,000-sample store well inside the report's time budget. Closed
sets are Literals (msgspec matches them without building a string); fingerprints are
plain strings, not pattern-checked: a regex per fingerprint tripled the load time, and a
malformed one simply matches no current document. A line that is not a sample is not
fatal: it is left out and named as FILE:LINE.
"""

from __future__ import annotations

import gc
from dataclasses import dataclass, field
from pathlib import Path
from typing import Annotated, Literal

import msgspec

Count = Annotated[int, msgspec.Meta(ge=0)]
OUTCOMES = ("passed", "failed", "confused", "hung", "crashed", "invalid", "unaudited",
            "harness-error")


class Usage(msgspec.Struct, frozen=True, gc=False):
    input: Count
    cache_write: Count
    cache_read: Count
    output: Count
    cache_write_5m: Count | None = None
    cache_write_1h: Count | None = None


class Fingerprints(msgspec.Struct, frozen=True, gc=False):
    task: str
    arm: str
    seed: str
    prompt: str
    model: str


class Sample(msgspec.Struct, frozen=True, gc=False):
    """The part of a sample (benchkit/schemas/sample.schema.json) a report reads."""
    arm: str
    task: str
    duration_s: Annotated[float, msgspec.Meta(ge=0)]
    driver: Literal["claude", "replay"]
    outcome: Literal[OUTCOMES]
    failure_class: str | None
    valid: bool
    usage: Usage
    usage_estimated: bool
    turns: Count
    cost_usd: float | None
    blocked_calls: Count
    fingerprints: Fingerprints
    schema_version: Literal[1] = 1
    tool_version: str | None = None  # the arm's tool, as its pre-flight found it
    started_at: str = ""             # ISO 8601, UTC: which of two samples is newer
    confined: bool = True  # older samples predate --unconfined
    jobs: Annotated[int, msgspec.Meta(ge=1)] | None = None  # trials run at once

    @property
    def estimated(self) -> bool:
        """Replay samples carry token figures estimated from bytes, not measured."""
        return self.usage_estimated or self.driver == "replay"


@dataclass
class StoreContents:
    directory: Path
    samples: list[Sample] = field(default_factory=list)
    files: int = 0
    problems: list[str] = field(default_factory=list)  # "FILE:LINE: message"


_DECODER = msgspec.json.Decoder(Sample)


def load_store(directory) -> StoreContents:
    """Every sample under directory/<arm>/<task>.jsonl, in file then line order."""
    directory = Path(directory)
    if not directory.is_dir():
        raise FileNotFoundError(f"{directory}: no such store directory")
    contents = StoreContents(directory)
    collecting = gc.isenabled()
    gc.disable()  # nothing decoded here forms a cycle; skip the collector's rescans
    try:
        for path in sorted(directory.glob("*/*.jsonl")):
            contents.files += 1
            _read_file(path, contents)
    finally:
        if collecting:
            gc.enable()
    return contents


def _read_file(path: Path, contents: StoreContents):
    data = path.read_bytes()
    try:
        contents.samples.extend(_DECODER.decode_lines(data))
        return
    except msgspec.DecodeError:
        pass  # at least one bad line: decode line by line to name it
    for number, line in enumerate(data.split(b"\n"), start=1):
        if not line.strip():
            continue
        try:
            contents.samples.append(_DECODER.decode(line))
        except msgspec.DecodeError as error:
            contents.problems.append(f"{path}:{number}: not a sample: {error}")
