"""The sample: one trial's immutable record, and the closed sets it is made of.

Defined once here for every stage that writes or reads samples: the cell runner fills
one in, the store appends it, the run loop's ledger and the report read it back
(benchkit.counting decides which count). Its published shape is
benchkit/schemas/sample.schema.json; the records below decode the part readers use
(msgspec skips the rest without building it). Fingerprints are plain strings, not
pattern-checked: a regex per fingerprint tripled the report's load time, and a
malformed one simply matches no current document.
"""

from __future__ import annotations

from typing import Annotated, Literal

import msgspec

SCHEMA_VERSION = 1

# Tiers in report order; bonus operations are unscored.
SCORED_TIERS = ("read", "single-mutation", "find-then-act", "multi-step")
TIERS = (*SCORED_TIERS, "bonus")

OUTCOMES = ("passed", "failed", "confused", "hung", "crashed", "invalid", "unaudited",
            "harness-error")
Outcome = Literal["passed", "failed", "confused", "hung", "crashed", "invalid", "unaudited",
                  "harness-error"]
# Outcomes that say nothing of the arm: never scored, never a cell's trial.
EXCLUDED = ("invalid", "unaudited", "harness-error")

# How an agent run can stop, and what each stop makes of the trial: an ended run is
# checked (passed or failed); a run the caps stopped is the arm's failure; any other
# stop is the harness's fault (its failure class says which).
STOPS = ("end", "turn-cap", "backstop", "api-error", "startup-error", "crash")
AGENT_STOPS = ("end", "turn-cap", "backstop")
CAPPED = {"turn-cap": ("confused", "turn-cap"), "backstop": ("hung", "backstop")}

# Usage as recorded (the cache write split by lifetime where the API reports it) ...
USAGE_FIELDS = ("input", "cache_write", "cache_write_5m", "cache_write_1h", "cache_read",
                "output")
# ... and the weighed components, in the order every view lists them (benchkit.cost).
COMPONENTS = ("input", "cache_write_5m", "cache_write_1h", "cache_read", "output")

Count = Annotated[int, msgspec.Meta(ge=0)]


class Usage(msgspec.Struct, frozen=True, gc=False):
    input: Count
    cache_write: Count
    cache_read: Count
    output: Count
    cache_write_5m: Count | None = None
    cache_write_1h: Count | None = None


class Fingerprints(msgspec.Struct, frozen=True, gc=False):
    """The documents a sample ran with; benchkit.counting compares them to the tree's."""
    task: str
    arm: str
    seed: str
    prompt: str
    model: str


class Sample(msgspec.Struct, frozen=True, gc=False):
    """The part of a stored sample that the ledger and the report read."""
    arm: str
    task: str
    duration_s: Annotated[float, msgspec.Meta(ge=0)]
    driver: Literal["claude", "replay"]
    outcome: Outcome
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


DECODER = msgspec.json.Decoder(Sample)
