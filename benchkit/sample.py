"""The sample: one trial's immutable record, and the closed sets it is made of.

Defined once here for every stage that writes or reads samples: the cell runner fills
in a `Record` (the whole stored shape, benchkit/schemas/sample.schema.json), the store
appends it, the run loop's ledger and the report read back a `Sample` (the part readers
use: msgspec skips the rest without building it; benchkit.counting decides which count). Fingerprints are plain strings, not
pattern-checked: a regex per fingerprint tripled the report's load time, and a
malformed one simply matches no current document.
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Literal, get_args

import msgspec

from benchkit.evidence import GatewayRequest, HostTime, ModelService, UsageReported
from benchkit.surface import AmbientSize

# Tiers in report order; bonus operations are unscored.
SCORED_TIERS = ("read", "single-mutation", "find-then-act", "multi-step")
TIERS = (*SCORED_TIERS, "bonus")

Outcome = Literal["passed", "failed", "confused", "hung", "crashed", "invalid", "unaudited",
                  "harness-error"]
OUTCOMES: tuple[str, ...] = get_args(Outcome)
# What runs the agent: the Claude Agent SDK, or a reference played as the model.
DriverName = Literal["claude", "replay"]
DRIVERS: tuple[str, ...] = get_args(DriverName)
# A 5xx the host answered an agent's own request with: the arm's (a failure after it is
# `host-error-provoked`, charged), unless the host is shown failing on its own (a harness
# error, `host-5xx`: benchkit.trial.attribution). A cap reached while the host's slow
# answers held the agent, and the arm's tool vanishing mid-trial: harness errors too.
HOST_5XX, PROVOKED = "host-5xx", "host-error-provoked"
HOST_SLOW, TOOL_MISSING = "host-slow", "tool-missing"
# The harness itself stopped (SIGSTOP, Ctrl-Z, a suspended machine) during a trial a cap
# ended: no one's doing (benchkit.trial.pauses). A leak of the agent's own (a request the
# gateway refused, a call the guard denies): invalid and counted as a failure of its arm
# (benchkit.counting); one not of its doing (a foreign tool the harness offered, a stray
# request at the gateway's shared door): invalid, never counted.
PAUSED = "harness-paused"
LEAK, FOREIGN_LEAK = "leak", "leak-foreign"
# What bounded an agent's requests to the host: a throwaway user of the trial's own
# (its permissions, behind the gateway; no other trial's repository is readable to it),
# of the run's own (older samples: shared by the run's trials), or the gateway alone
# (--gateway-only-containment).
Containment = Literal["trial-user", "run-user", "gateway"]
# Outcomes that say nothing of the arm: never scored, never a cell's trial.
EXCLUDED = ("invalid", "unaudited", "harness-error")

# How an agent run can stop, and what each stop makes of the trial: an ended run is
# checked (passed or failed); a run the caps stopped is the arm's failure; any other
# stop is the harness's fault (its failure class says which).
STOPS = ("end", "turn-cap", "backstop", "api-error", "model-stall", "startup-error", "crash")
AGENT_STOPS = ("end", "turn-cap", "backstop")
CAPPED: dict[str, tuple[Outcome, str]] = {"turn-cap": ("confused", "turn-cap"),
                                          "backstop": ("hung", "backstop")}

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


class Part(msgspec.Struct, frozen=True, gc=False, array_like=True):
    """One part of a trial's cost anatomy, in COMPONENTS order (benchkit.anatomy)."""
    input: Count
    cache_write_5m: Count
    cache_write_1h: Count
    cache_read: Count
    output: Count


NO_PART = Part(0, 0, 0, 0, 0)


class Anatomy(msgspec.Struct, frozen=True, gc=False):
    """Where a trial's tokens went (benchkit.anatomy): six parts summing to its usage,
    the size of its first request's prompt, its requests, the tool results between
    them and the tool searches among them. `estimated`: the per-request figures are
    estimates from bytes (replay). Older samples have no searches, and their ambient
    holds the runtime's own requests."""
    requests: Count
    ambient: Part
    carried: Part
    tool_output: Part
    model_output: Part
    ambient_tokens: Count
    tool_results: Count
    tool_result_bytes: Count
    estimated: bool
    runtime_own: Part = NO_PART
    searches: Part = NO_PART
    search_calls: Count = 0


# Why a tool call failed: the guard refused it; the tool's result was an error (a
# non-zero exit status, an MCP error); its whole answer was the host's error body.
CallFailure = Literal["refused", "error", "error-answer"]


class Call(msgspec.Struct, frozen=True, gc=False):
    """One tool call of a trial, named by the tool's own command (benchkit.agent.calls):
    `tea issues list`, `curl GET /repos/{owner}/{repo}/issues`, an MCP tool's name.
    `result`: its result's share of the anatomy's tool-output part (the fresh prompt it
    took in the next request; later requests carry it on as carried context), in
    COMPONENTS order; `failed`: why it failed (None: it did not); `retry`: the call
    before it ran the same command and failed."""
    command: str
    result: Part
    bytes: Count
    failed: CallFailure | None = None
    retry: bool = False
    later: Count = 0  # requests after the one that took it in: they carry it on


class Runtime(msgspec.Struct, frozen=True, gc=False):
    """The agent runtime a sample ran in: the Claude Code CLI's version (what
    `claude --version` printed, e.g. "2.1.332 (Claude Code)") and the Claude Agent SDK's.
    Samples of two runtimes are never counted together (benchkit.counting); samples
    older than the field have none and read as an unknown runtime."""
    cli: str
    sdk: str

    @property
    def label(self) -> str:
        return f"Claude Code {self.cli.split(' (')[0]}, claude-agent-sdk {self.sdk}"


def runtime_label(runtime: Runtime | None) -> str:
    """How a report names a sample's runtime."""
    return "unknown runtime" if runtime is None else runtime.label


class Fingerprints(msgspec.Struct, frozen=True, gc=False):
    """The documents a sample ran with; benchkit.counting compares them to the tree's."""
    task: str
    arm: str
    seed: str
    prompt: str
    model: str
    # A replay sample's: the reference it played (benchkit.documents.reference
    # TaskReference.fingerprint), whose bytes its figures are. None: a model answered,
    # or a sample older than this field.
    reference: str | None = None


class Sample(msgspec.Struct, frozen=True, gc=False):
    """The part of a stored sample that the ledger and the report read."""
    id: str
    arm: str
    task: str
    duration_s: Annotated[float, msgspec.Meta(ge=0)]
    driver: DriverName
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
    tool_surface: str | None = None  # digest of what the agent saw of it (benchkit.surface)
    ambient_size: AmbientSize | None = None  # that surface's size in bytes
    started_at: str = ""             # ISO 8601, UTC: which of two samples is newer
    confined: bool = True  # older samples predate --unconfined
    containment: Containment | None = None  # older samples predate the run's own user
    jobs: Annotated[int, msgspec.Meta(ge=1)] | None = None  # trials run at once
    trial: Count = 0  # its number within the cell (the ledger hands out the next)
    anatomy: Anatomy | None = None   # older samples predate it
    runtime: Runtime | None = None   # the agent runtime; older samples predate it
    model: str = ""                  # what the runtime ran (its resolution of the name given)
    calls: list[Call] | None = None  # its tool calls by command; older samples predate it

    @property
    def estimated(self) -> bool:
        """Replay samples carry token figures estimated from bytes, not measured."""
        return self.usage_estimated or self.driver == "replay"


DECODER = msgspec.json.Decoder(Sample)


def read_samples(path: Path) -> tuple[list[Sample], list[str]]:
    """One store file's samples in line order, and "FILE:LINE: not a sample: why" for
    each line that is not one (left out, not fatal)."""
    data = path.read_bytes()
    try:
        return DECODER.decode_lines(data), []
    except msgspec.DecodeError:
        pass  # at least one bad line: decode line by line to name it
    samples, problems = [], []
    for number, line in enumerate(data.split(b"\n"), start=1):
        if not line.strip():
            continue
        sample, problem = decode_sample(line)
        if sample is None:
            problems.append(f"{path}:{number}: not a sample: {problem}")
        else:
            samples.append(sample)
    return samples, problems


def decode_sample(line: bytes) -> tuple[Sample | None, str]:
    """The one rule of what is a sample, for every reader of the store (the ledger, the
    report, its trial pages, `benchkit show`): a line that decodes as one. (the Sample,
    "") or (None, why not)."""
    try:
        return DECODER.decode(line), ""
    except msgspec.DecodeError as error:
        return None, str(error)


class Host(msgspec.Struct, frozen=True, gc=False):
    """The host a sample ran on: a forge or a live Gitea, and its version."""
    kind: Literal["forge", "gitea"]
    version: str


UNKNOWN_HOST = Host("gitea", "unknown")
ZERO_USAGE = Usage(input=0, cache_write=0, cache_read=0, output=0, cache_write_5m=0,
                   cache_write_1h=0)


class Record(msgspec.Struct, kw_only=True):
    """A stored sample, every field of sample.schema.json in the order it is written.
    The defaults are a harness error's shape (nothing ran); the cell runner fills in
    what its trial got to."""
    schema_version: Literal[1] = 1
    id: str
    arm: str
    task: str
    tier: str
    scored: bool
    trial: Count = 0
    started_at: str
    duration_s: float = 0.0
    driver: DriverName
    model: str
    temperature: None = None  # the SDK has no temperature option: the runtime default
    outcome: Outcome = "harness-error"
    failure_class: str | None = "harness"
    valid: bool = True
    differences: list[str] = msgspec.field(default_factory=list)
    usage: Usage = ZERO_USAGE
    usage_by_model: dict[str, Usage] = msgspec.field(default_factory=dict)
    usage_estimated: bool = False
    turns: Count = 0
    cost_usd: float | None = None
    blocked_calls: Count = 0
    tool_calls: Count = 0
    tool_version: str | None = None
    tool_surface: str | None = None
    ambient_size: AmbientSize | None = None
    fingerprints: Fingerprints
    self_review: bool = False
    host: Host = UNKNOWN_HOST
    answer: str | None = None
    error: str | None = None
    transcript: str | None = None  # the transcript's path, relative to the store
    leaks: list[str] = msgspec.field(default_factory=list)
    jobs: Annotated[int, msgspec.Meta(ge=1)] = 1
    confined: bool = True
    containment: Containment | None = None
    anatomy: Anatomy | None = None  # where the tokens went (benchkit.anatomy)
    runtime: Runtime | None = None  # the CLI and SDK the agent ran in (a stub driver: none)
    # What the trial's tools asked the host through the gateway, one entry a request
    # (benchkit.gateway.server): never a query, body or token; a request the host failed
    # or kept waiting carries its control request's figures (`control`: kind, status,
    # seconds; benchkit.gateway.control). Older samples have none.
    requests: list[GatewayRequest] = msgspec.field(default_factory=list)
    # The model service's faults as the CLI reported them (benchkit.agent.service).
    model_service: ModelService | None = None
    # The models the service named in its answers to the agent's requests (absent in
    # older samples); one other than `model` makes the trial a harness error.
    models: list[str] = msgspec.field(default_factory=list)
    # The figures as the service reported them, where they failed the check
    # (benchkit.agent.accounting): then `usage` is zero and the trial a harness error.
    usage_reported: UsageReported | None = None
    # What the trial's time went to where a cap ended it (benchkit.trial.attribution);
    # None where nothing was found.
    host_time: HostTime | None = None
    # The alias given for the model (`sonnet`), where `model` is what the runtime
    # resolved it to (benchkit.agent.model_probe); None when the name ran as given.
    model_alias: str | None = None
    # The part of a sweep it ran in (`run --shard I/N`): a trial is its id and its shard.
    shard: str | None = None
    # Each tool call named by the tool's own command, its result's share of the
    # tool-output part, failure and retry (benchkit.agent.calls); older samples have none.
    calls: list[Call] | None = None

    def harness_error(self, failure_class: str | None, error: str | None) -> None:
        """The trial says nothing of the arm: recorded apart, never scored."""
        self.outcome, self.failure_class = "harness-error", failure_class or "harness"
        self.valid, self.error = False, error

    def excluded(self, outcome: Outcome, failure_class: str, error: str | None = None) -> None:
        """An invalid or unaudited trial: recorded, never valid."""
        assert outcome in EXCLUDED
        self.outcome, self.failure_class, self.valid = outcome, failure_class, False
        if error is not None:
            self.error = error

    def note(self, text: str) -> None:
        """Add to the error text (what happened after the outcome was settled)."""
        self.error = f"{self.error}; {text}" if self.error else text

    def view(self) -> Sample:
        """The read view the ledger and the report take."""
        return msgspec.convert(msgspec.to_builtins(self), Sample)


ENCODER = msgspec.json.Encoder()
RECORD_DECODER = msgspec.json.Decoder(Record)


def decode_record(line: bytes | str) -> Record:
    """A stored line as the whole typed record, its evidence checked against
    benchkit.evidence's types (msgspec.DecodeError when it is not one); the fields a
    sample predates take their defaults. What a line encoded by ENCODER decodes to
    encodes back to the same bytes."""
    return RECORD_DECODER.decode(line)
