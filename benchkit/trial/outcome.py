"""What a trial's evidence makes of it: the outcome and failure class, in order of
precedence (invalid > the model service's accounting > the harness's own stop > harness
error > unaudited > the tool's or the host's fault > crashed > the caps' confused/hung >
passed/failed), on a benchkit.sample.Record.

    harness-error  the model service's figures failing their check (`model-usage`,
                   or answers of another model: `model-mismatch`:
                   benchkit.agent.accounting); host, seeding, readiness, SDK start-up,
                   credentials, the model service (`model-service`: overload, rate
                   limit, 5xx, a broken or stalled stream, or a cap that ended a run its
                   requests held up; `model-credentials`; `refusal`), a confined CLI
                   killed by a signal (`cli-killed`); after the audit, from evidence
                   the agent cannot forge (benchkit.trial.attribution): the arm's tool
                   vanished mid-trial (`tool-missing`), the host shown failing on its
                   own by its control request when it failed the agent's (`host-5xx`),
                   a cap reached while the host's slow answers held the agent
                   (`host-slow`), a cap (or the model's idle limit) run out while the
                   harness itself was stopped (`harness-paused`: benchkit.trial.pauses,
                   before any other class of the service's or the host's): recorded
                   apart, never counted against the arm
    invalid        the audit found a leak: recorded, never scored as a pass; one of the
                   agent's own doing (`leak`: a request the gateway refused, a call the
                   guard denies, another client) is counted as a failure of its arm
                   (benchkit.counting), whatever else went wrong: an agent cannot escape
                   a failing trial by sending what the gateway refuses; one of the
                   harness's or a stranger's (`leak-foreign`) is not
    unaudited      the audit could not read its evidence: excluded like invalid
    crashed        the CLI died while one of the agent's own tool calls ran, or, in an
                   unconfined run, by a signal after its shell ran (`kill -9 $PPID`):
                   charged to the arm, so an agent cannot erase a failure (confined,
                   its shell cannot signal the CLI: a signal is never its doing)
    confused/hung  the turn cap / the backstop stopped it (benchkit.sample.CAPPED)
    passed/failed  the checker's verdict; a failure after a 5xx (or no answer) the
                   host was not shown at fault for is `host-error-provoked`, charged
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass, field

from benchkit.agent import service
from benchkit.agent.accounting import MODEL_MISMATCH, MODEL_USAGE, Accounting
from benchkit.agent.audit import AuditEvent
from benchkit.agent.driver import AgentRun
from benchkit.agent.events import tool_calls
from benchkit.errors import HostError, ReadinessError, SeedError
from benchkit.evidence import TOOL_RESULT, ModelService
from benchkit.gitea import CredentialsError
from benchkit.sample import (
    CAPPED,
    FOREIGN_LEAK,
    HOST_5XX,
    HOST_SLOW,
    LEAK,
    PAUSED,
    PROVOKED,
    TOOL_MISSING,
    Record,
)
from benchkit.scoring import Verdict
from benchkit.trial.attribution import (
    describe_host_time,
    host_failing,
    host_slow,
    host_time,
    tool_missing,
)


@dataclass
class Audit:
    """What the post-run audit found (benchkit.agent.audit's checks on this trial)."""

    leaks: list[str]
    event: AuditEvent              # the transcript's account of it
    unread: str | None = None      # why the evidence could not be read (fails closed)
    host_errors: list[str] = field(default_factory=list)  # 5xx answers to the agent
    # The bin directory's links whose files were gone when the trial ended (name -> file).
    vanished: dict[str, str] = field(default_factory=dict)
    accounting: Accounting | None = None  # the model service's figures, checked
    # Of `leaks`, those not of the agent's doing (a foreign tool the harness offered, a
    # stray of the gateway's shared door): alone they never count against the arm.
    foreign: list[str] = field(default_factory=list)
    # The harness's own stops during the trial (benchkit.trial.pauses): (at, seconds).
    paused: list[tuple[float, float]] = field(default_factory=list)


def judge(record: Record, run: AgentRun, audit: Audit, check: Callable[[], Verdict]) -> None:
    """Set the record's outcome. `check` snapshots the repository and runs the checker
    (HarnessError when the snapshot fails); it is called only when the verdict counts."""
    stop, found = run.stop, run.model_service
    record.model_service = found
    if audit.leaks:  # first: nothing else may turn the agent's own leak into no failure
        own = [leak for leak in audit.leaks if leak not in audit.foreign]
        record.excluded("invalid", LEAK if own else FOREIGN_LEAK)
        record.leaks = audit.leaks
        return None
    accounting = audit.accounting
    if accounting is not None and accounting.problems:
        return record.harness_error(
            MODEL_MISMATCH if accounting.mismatch else MODEL_USAGE,
            "the model service's accounting failed its check: " + "; ".join(accounting.problems[:4])
            + (f" (+{len(accounting.problems) - 4} more)" if len(accounting.problems) > 4 else ""))
    if audit.paused and stop in (*CAPPED, "model-stall"):  # ran out while the harness stood
        seconds = sum(length for _, length in audit.paused)
        return record.harness_error(PAUSED, f"the harness itself was stopped for {seconds:.0f} s "
                                    f"during the trial (SIGSTOP, Ctrl-Z or a suspended "
                                    f"machine): the {stop} is no one's doing")
    crashed = stop == "crash" and agent_crashed(run)
    if stop in ("startup-error", "api-error", "model-stall", "crash") and not crashed \
            and not _own_max_tokens(run):
        return record.harness_error(stop_class(run), _with_evidence(run.error, found))
    if stop in CAPPED and service.at_fault(found, run.duration_s):  # the service's time
        return record.harness_error(service.MODEL_SERVICE, _with_evidence(run.error, found))
    if audit.unread:
        return record.excluded("unaudited", "audit", audit.unread)
    missing = tool_missing(run.transcript, audit.vanished) if run.confined else None
    if missing:
        return record.harness_error(TOOL_MISSING, missing)
    failing = host_failing(record.requests)
    if failing:
        return record.harness_error(HOST_5XX, "the host failed on its own: " + failing[0])
    if stop in CAPPED:
        record.host_time = host_time(record.requests, run.started.timestamp(), run.duration_s)
        if host_slow(record.requests, record.host_time):
            return record.harness_error(HOST_SLOW, f"{describe_host_time(record.host_time)}: "
                                        f"the {stop} ended a trial the host held up")
    if crashed:
        record.outcome, record.failure_class = "crashed", "agent-crash"
        return None
    verdict = check()
    record.differences = list(verdict.differences)
    if stop in CAPPED:
        record.outcome, record.failure_class = CAPPED[stop]
    elif verdict.passed:
        record.outcome, record.failure_class = "passed", None
    else:
        record.outcome = "failed"
        record.failure_class = "max-tokens" if _own_max_tokens(run) else \
            PROVOKED if audit.host_errors else "checker"
    if audit.host_errors and record.outcome != "passed":
        record.note(f"the host answered the agent's own request with a server error "
                    f"({audit.host_errors[0]}), and the harness's own control request "
                    f"right after did not fail: the arm's, charged")
    return None


def _own_max_tokens(run: AgentRun) -> bool:
    """The CLI gave up on output past its maximum: the model's own verbosity, which
    the checker judges like any end (the CLI's words: "exceeded the ... output token
    maximum")."""
    return run.stop == "api-error" and bool((run.model_service or {}).get("max_tokens")) \
        and "output token maximum" in (run.error or "")


def _with_evidence(error: str | None, found: ModelService | None) -> str | None:
    """The service's account first, so a listing's one line says what happened."""
    said = service.describe(found)
    return f"{said}; {error}" if said and error else (said or error)


_KILLED = re.compile(r"exit code:? -[0-9]+")  # the SDK's words for a CLI a signal ended


def agent_crashed(run: AgentRun) -> bool:
    """Whether the agent may have ended its own CLI: it died during a tool call the
    runtime let run, or by a signal after a shell command ran (a background job
    outlives its call: `(sleep 1; kill -9 $PPID) &`). The harness's own kills (the
    backstop, Ctrl-C) never reach here as a crash."""
    ran = [call for call in tool_calls(run.transcript) if call.get("allowed") is not False]
    answered = {e.get("id") for e in run.transcript if e["event"] == TOOL_RESULT}
    in_flight = any(call.get("id") not in answered for call in ran)
    killed = bool(_KILLED.search(run.error or ""))
    if killed and run.confined:  # the agent's shell has its own PID namespace: not its kill
        return False
    return in_flight or (killed and any(call.get("name") == "Bash" for call in ran))


def harness_class(exc: BaseException) -> str:
    """The failure class of a harness error, most specific first."""
    for kind, name in ((CredentialsError, "credentials"), (ReadinessError, "readiness"),
                       (SeedError, "seeding"), (HostError, "host")):
        if isinstance(exc, kind):
            return name
    return "harness"


def stop_class(run: AgentRun) -> str:
    """The failure class of a run the harness's side stopped."""
    if run.stop == "startup-error":
        return "sdk-startup"
    if run.stop == "crash":
        return "cli-killed" if run.confined and _KILLED.search(run.error or "") else "sdk-crash"
    status, text = run.api_error_status, (run.error or "").lower()
    if status in (401, 403) or "authentication" in text or "api key" in text:
        return service.MODEL_CREDENTIALS
    if run.stop == "api-error" and (run.model_service or {}).get("refusal"):
        return service.REFUSAL
    return service.MODEL_SERVICE
