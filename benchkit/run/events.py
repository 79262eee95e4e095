"""The events `benchkit run --json` prints, one JSON object a line: a contract.

Each event is a record tagged by its `event` field, which comes first; the rest follow
in the order declared here. docs/contracts.md names them (a test keeps it so).

    run             the header: arms, cells, trials, driver, model, host, budget, store
    skip            a cell not run, and why
    not-installed   `--only-installed`: an arm left out, its tool not installed here
    budget-skip     a trial the budget would not start
    start           a trial started (its repository, the tokens it is expected to cost)
    end             a trial ended: its sample, outcome, tokens, and the run's totals
    interrupt       a stop was asked for: what runs is being ended
    failure_replay  a failed trial's calls replayed on a fresh repository: the verdict
    summary         the run's end: trials run, outcomes, tokens spent, what was not run
    report          the report's files, rendered after the run
    plan            `--dry-run`: the trials a run would start, in order
    decide          `--until-decided`: a round's pairs and the trials it runs next
    preflight       pre-flight (or the host's set-up, or a probe) failed: nothing spent

Progress.emit writes an event as `json.dumps` of its builtins, so the bytes are what the
dicts these replaced printed.
"""

from __future__ import annotations

from typing import Any

import msgspec

from benchkit.agent.model_probe import Resolution
from benchkit.planning.plan import BudgetSkip, Skip


class Event(msgspec.Struct, tag_field="event", kw_only=True):
    """An event of `benchkit run --json` (the subclasses' tags are its names)."""


class ModelProbe(msgspec.Struct):
    """The model as the runtime resolved it before any trial (benchkit.agent.model_probe):
    `model` (the run's and the plan's) is what it runs."""
    given: str              # as asked for: --model, else suite.yaml's
    alias: bool             # `given` pins no version and resolved to the model
    max_tokens: int | None  # what each agent request asks for at most
    probe_ms: int           # what asking the runtime took
    cached: bool            # asked before in this process


def model_probe(found: Resolution | None) -> ModelProbe | None:
    if found is None:
        return None
    return ModelProbe(given=found.given, alias=found.alias, max_tokens=found.max_tokens,
                      probe_ms=found.ms, cached=found.cached)


class RunEvent(Event, tag="run"):
    arms: list[str]
    cells: int
    trials: int
    driver: str
    model: str
    host: dict[str, Any]  # url, embedded, containment, run_user, kind, version
    self_review: bool | None
    budget: float | None
    usage_estimated: bool
    jobs: int
    store: str
    model_probe: ModelProbe | None = None


class SkippedEvent(Event, tag="skip"):
    arm: str
    task: str
    reason: str


class NotInstalledEvent(Event, tag="not-installed"):
    arm: str
    reason: str


class BudgetSkippedEvent(Event, tag="budget-skip"):
    arm: str
    task: str
    trial: int
    expected_tokens: int
    left_tokens: int


class StartEvent(Event, tag="start"):
    n: int
    arm: str
    task: str
    trial: int
    repo: str | None  # None: its provisioning failed
    expected_tokens: int
    expected_from: str


class RunningTotals(msgspec.Struct):
    """The run's totals after a trial ended."""
    ran: int
    spent_tokens: int
    outcomes: dict[str, int]
    left_tokens: int | None


class EndEvent(Event, tag="end"):
    n: int
    arm: str
    task: str
    trial: int
    sample: str
    outcome: str
    failure_class: str | None
    valid: bool
    tokens: int
    usage_estimated: bool
    turns: int
    seconds: float
    detail: str
    totals: RunningTotals


class InterruptEvent(Event, tag="interrupt"):
    pass


class FailureReplayEvent(Event, tag="failure_replay"):
    trial: str  # the failed trial's sample id
    arm: str
    task: str
    verdict: str  # benchkit.run.failures: not reproducible | reproducible | not replayed
    replay_outcome: str


class SummaryEvent(Event, tag="summary"):
    ran: int
    planned: int
    outcomes: dict[str, int]
    spent_tokens: int
    usage_estimated: bool
    budget: float | None
    left_tokens: int | None
    skipped_budget: list[BudgetSkip]
    not_run: list[Skip]
    interrupted: bool
    halted: str | None
    error: str | None
    seconds: float
    store: str


class ReportEvent(Event, tag="report"):
    paths: list[str]


class OverBudget(msgspec.Struct):
    arm: str
    task: str
    trial: int
    expected: int
    basis: str
    replayed: float | None


class PlanEventTrial(OverBudget):
    """A trial the plan keeps: what one the budget leaves out says, and more: its
    dollars at the model's list price, its expected duration, its basis in words."""
    estimate: bool
    tool_missing: bool
    usd: float | None = None
    seconds: float | None = None
    source: str = ""


class PlanEvent(Event, tag="plan"):
    driver: str
    model: str
    host: str
    budget: float | None
    expected_tokens: int
    trials: list[PlanEventTrial]
    tools_missing: dict[str, str]  # arm id -> why its tool is not here
    over_budget: list[OverBudget]
    not_run: list[Skip]
    notes: list[str]
    problems: list[str]
    expected_usd: float | None = None    # at the model's list price (None: no price known)
    prices_as_of: str = ""                # the price table's date (benchkit.prices)
    jobs: int = 1
    expected_wall_s: float | None = None  # the trials' wall time at `jobs`
    untimed: int = 0                      # trials with no sample's duration to go by
    model_probe: ModelProbe | None = None


class Pair(msgspec.Struct):
    a: str
    b: str
    status: str
    why: str
    verdict: str


class Next(msgspec.Struct):
    arm: str
    task: str
    why: str


class DecideEvent(Event, tag="decide"):
    estimated: bool
    pairs: list[Pair]
    next: list[Next]


class Failed(msgspec.Struct):
    check: str
    message: str


class PreflightEvent(Event, tag="preflight"):
    ok: bool
    failures: list[Failed]
    problems: list[str]


AnyEvent = (RunEvent | SkippedEvent | NotInstalledEvent | BudgetSkippedEvent | StartEvent
            | EndEvent | InterruptEvent | FailureReplayEvent | SummaryEvent | ReportEvent
            | PlanEvent | DecideEvent | PreflightEvent)
EVENTS: tuple[type[Event], ...] = (RunEvent, SkippedEvent, NotInstalledEvent, BudgetSkippedEvent,
                                   StartEvent, EndEvent, InterruptEvent, FailureReplayEvent,
                                   SummaryEvent, ReportEvent, PlanEvent, DecideEvent,
                                   PreflightEvent)
DECODER = msgspec.json.Decoder(AnyEvent)


def name(kind: type[Event]) -> str:
    """The `event` an event type is printed with."""
    return str(kind.__struct_config__.tag)


def builtins(event: Event) -> dict:
    """The event as the plain dict it is printed from, `event` first."""
    return msgspec.to_builtins(event)
