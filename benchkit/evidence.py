"""A trial's evidence, typed: the transcript's events, the gateway's record of each
request, the model service's faults, usage as reported, the host's time.

Every kind is a TypedDict, not a Struct: the evidence is built a key at a time as a
trial runs (the gateway adds a request's status when it has one, the recorder a call's
decision when the run ends), its keys are stored in the order they were added, and the
report and `benchkit show` read stored samples and transcripts back as plain dicts; a
Struct would fix one order and one reader. msgspec decodes a TypedDict all the same
(benchkit.sample's Record), so a stored sample is checked against these as it is read.
A number is `Number` where either may be stored: msgspec would read a stored 1 as 1.0
into a float, and the line would not encode back to its bytes.

The transcript's events are one union tagged by `event`; every kind is spelled here
once (the constants), and benchkit.agent.transcript describes what each means.
"""

from __future__ import annotations

from typing import Any, Final, Literal, NotRequired, TypedDict

Number = int | float
# A figure as the service reported it: a count, null, or whatever else it sent (kept
# raw for benchkit.agent.accounting to name, never coerced).
Figure = Any

INIT: Final = "init"
TEXT: Final = "text"
TOOL_CALL: Final = "tool_call"
TOOL_RESULT: Final = "tool_result"
REQUEST: Final = "request"
API_RETRY: Final = "api_retry"
MODEL_STALL: Final = "model_stall"
MODEL_OUTSTANDING: Final = "model_outstanding"
RESULT: Final = "result"
STOP: Final = "stop"
REPLAY: Final = "replay"
RERUN: Final = "rerun"
AUDIT: Final = "audit"


class UsageFigures(TypedDict):
    """One request's or one model's usage as reported, in benchkit.sample.USAGE_FIELDS."""
    input: Figure
    cache_write: Figure
    cache_write_5m: Figure
    cache_write_1h: Figure
    cache_read: Figure
    output: Figure


class InitEvent(TypedDict):
    event: Literal["init"]
    tools: list[str]
    mcp_servers: Any
    model: str | None


class TextEvent(TypedDict):
    event: Literal["text"]
    model: str
    text: str


class ToolCallEvent(TypedDict):
    event: Literal["tool_call"]
    id: str
    name: str
    input: dict[str, Any]
    model: str
    # The guard's decision, added when the run ends (None: none was asked for).
    allowed: NotRequired[bool | None]
    reason: NotRequired[str | None]


class ToolResultEvent(TypedDict):
    event: Literal["tool_result"]
    id: str
    bytes: int
    is_error: bool
    excerpt: str


class RequestEvent(TypedDict):
    """One model request of the agent's (AgentRun.requests: the same dicts)."""
    event: Literal["request"]
    id: str | None
    model: str | None
    at: Number
    usage: UsageFigures
    tool_results: int
    tool_result_bytes: int
    stop_reason: str | None
    complete: bool
    searches: NotRequired[int]
    loaded: NotRequired[list[str]]
    usage_missing: NotRequired[list[str]]


class ApiRetryEvent(TypedDict):
    event: Literal["api_retry"]
    at: Number
    attempt: Any             # the CLI's figures, as it sent them
    max_retries: Any
    retry_delay_ms: Any
    error_status: Any
    error: Any


class ModelStallEvent(TypedDict):
    event: Literal["model_stall"]
    at: Number
    request: int
    idle_s: Number
    streaming: bool


class ModelOutstandingEvent(TypedDict):
    event: Literal["model_outstanding"]
    at: Number
    by: str
    for_s: Number
    request: int


class ResultEvent(TypedDict):
    """The runtime's own final figures (the SDK's ResultMessage)."""
    event: Literal["result"]
    subtype: str
    num_turns: int
    duration_ms: int
    total_cost_usd: float | None
    usage: dict[str, Any] | None
    model_usage: dict[str, Any] | None
    terminal_reason: Any
    api_error_status: int | None
    errors: Any


class StopEvent(TypedDict):
    event: Literal["stop"]
    stop: str                # one of benchkit.sample.STOPS
    error: str | None


class ReplayEvent(TypedDict):
    """How a replay went (benchkit.agent.replay.Play.summary)."""
    event: Literal["replay"]
    task: str
    steps: int
    served: int
    failed_steps: dict[int, str]   # step number -> its result's excerpt (JSON: keys as text)
    errors: list[str]
    targets: dict[str, Any]


class RerunEvent(TypedDict):
    event: Literal["rerun"]
    calls: int
    served: int


class AuditAccount(TypedDict):
    """The audit's account (benchkit.agent.audit.AuditEvent, as stored)."""
    event: Literal["audit"]
    gateway: NotRequired[str]
    request_log: str
    leaks: list[str]
    host_errors: NotRequired[list[str]]


Event = (InitEvent | TextEvent | ToolCallEvent | ToolResultEvent | RequestEvent | ApiRetryEvent
         | ModelStallEvent | ModelOutstandingEvent | ResultEvent | StopEvent | ReplayEvent
         | RerunEvent | AuditAccount)


class ControlFigures(TypedDict):
    """The harness's own control request beside a failed or slow one
    (benchkit.gateway.control): its kind, its status (or the error that kept it from
    one, or `pending`), its seconds."""
    kind: Literal["read", "write"]
    status: int | str
    s: Number


class GatewayRequest(TypedDict, total=False):
    """One request a trial's tools made through the gateway (benchkit.gateway.exchange),
    keys in the order the gateway adds them; method, path, status and scope always."""
    started: Number
    method: str
    path: str
    user_agent: str
    scope: str
    status: int
    bytes_in: int
    reason: str
    problem: str             # the credential refused: a stray's, put on every live trial
    host_s: Number
    unreachable: str
    unreadable: str
    bytes_out: int
    duration: Number
    control: ControlFigures
    health: int | str        # older samples: a 5xx's check, before `control`
    stray: bool


class Retries(TypedDict):
    count: int
    over_s: Number
    statuses: dict[str, int]  # HTTP status ("None": no response) -> retries
    error: Any
    status: Any


class Stalled(TypedDict):
    request: Any
    idle_s: Any
    streaming: Any


class Outstanding(TypedDict):
    request: Any
    for_s: Any
    by: Any


class ModelService(TypedDict, total=False):
    """The model service's faults as the CLI reported them (benchkit.agent.service)."""
    retries: Retries
    broken_streams: int
    refusal: int
    max_tokens: int
    stall: Stalled
    outstanding: Outstanding


class UsageReported(TypedDict):
    """The figures as the service reported them, kept where they failed the check
    (benchkit.agent.accounting): any JSON, as given."""
    usage: dict[str, Figure]
    usage_by_model: dict[str, dict[str, Figure]]
    cost_usd: Figure


class HostTime(TypedDict):
    """What a capped trial's time went to at the host (benchkit.trial.attribution)."""
    host_s: Number
    of_s: Number
    answers: int
