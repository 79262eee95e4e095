"""A failure replay's verdict on a trial: one line of the store's failure-replays.jsonl.

benchkit.run.failures writes them (a failed trial's own calls replayed on a fresh
repository), the store appends and reads them, the report and `benchkit show` read
them. Keyed by the trial's sample id; samples are never rewritten. The fields are
written in the order declared here, as every version so far wrote them.
"""

from __future__ import annotations

import json

import msgspec
from msgspec import UNSET, UnsetType

# verdicts (benchkit.run.failures says what each means; `leaked` is benchkit.counting's)
NOT_REPRODUCIBLE, REPRODUCIBLE, NOT_REPLAYED = "not reproducible", "reproducible", "not replayed"
PENDING = "pending"  # written before the replay starts: a kill leaves it


class Replayed(msgspec.Struct, kw_only=True):
    """The replay itself: its record's id, how many calls it played, how it ended."""
    id: str
    calls: int
    outcome: str
    failure_class: str | None
    differences: list[str]
    error: str | None
    leaks: list[str] | UnsetType = UNSET  # what its audit found (older lines: none kept)
    transcript: str | None  # its transcript's path in the store, as a sample's


class FailureReplay(msgspec.Struct, kw_only=True):
    """The verdict on one trial (`trial`: its sample id), with what the trial was. A
    `pending` line carries the trial and `at` alone; a field a line lacks is unset,
    and left out when it is written back."""
    trial: str
    arm: str
    task: str
    verdict: str
    at: str | UnsetType = UNSET  # ISO 8601, UTC
    outcome: str | UnsetType = UNSET
    failure_class: str | None | UnsetType = UNSET
    differences: list[str] | UnsetType = UNSET
    replay: Replayed | UnsetType = UNSET


DECODER = msgspec.json.Decoder(FailureReplay)


def encode(entry: FailureReplay) -> str:
    """The stored line (before scrubbing): json.dumps, as the line always was."""
    return json.dumps(msgspec.to_builtins(entry, enc_hook=str), ensure_ascii=False)


def decode(line: str) -> FailureReplay | None:
    """The verdict a stored line holds; None for a line that is not one."""
    try:
        return DECODER.decode(line)
    except msgspec.DecodeError:
        return None
