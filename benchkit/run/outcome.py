"""What a trial's evidence makes of it: the outcome and failure class, in order of
precedence (harness error > invalid > unaudited > host error > crashed > the caps'
confused/hung > passed/failed), on a benchkit.sample.Record.

    harness-error  host, seeding, readiness, SDK start-up, credentials, the host
                   answering the agent's own request with a 5xx (class host-5xx, until
                   the failure replay tells: benchkit.run.failures), the model service
                   (`model-service`: overload, rate limit, 5xx, a broken or stalled
                   stream, or a cap that ended a run its requests held up;
                   `model-credentials`; `refusal`), a confined CLI killed by a signal
                   (`cli-killed`): recorded apart, never counted against the arm
    invalid        the audit found a leak: recorded, never scored
    unaudited      the audit could not read its evidence: excluded like invalid
    crashed        the CLI died while one of the agent's own tool calls ran, or, in an
                   unconfined run, by a signal after its shell ran (`kill -9 $PPID`):
                   charged to the arm, so an agent cannot erase a failure (confined,
                   its shell cannot signal the CLI: a signal is never its doing)
    confused/hung  the turn cap / the backstop stopped it (benchkit.sample.CAPPED)
    passed/failed  the checker's verdict
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass, field

from benchkit.agent import service
from benchkit.agent.audit import AuditEvent
from benchkit.agent.driver import AgentRun
from benchkit.agent.events import tool_calls
from benchkit.errors import HostError, ReadinessError, SeedError
from benchkit.gitea import CredentialsError
from benchkit.sample import CAPPED, HOST_5XX, Record
from benchkit.scoring import Verdict


@dataclass
class Audit:
    """What the post-run audit found (benchkit.agent.audit's checks on this trial)."""

    leaks: list[str]
    event: AuditEvent              # the transcript's account of it
    unread: str | None = None      # why the evidence could not be read (fails closed)
    host_errors: list[str] = field(default_factory=list)  # 5xx answers to the agent


def judge(record: Record, run: AgentRun, audit: Audit, check: Callable[[], Verdict]) -> None:
    """Set the record's outcome. `check` snapshots the repository and runs the checker
    (HarnessError when the snapshot fails); it is called only when the verdict counts."""
    stop, found = run.stop, run.model_service
    record.model_service = found
    crashed = stop == "crash" and agent_crashed(run)
    if stop in ("startup-error", "api-error", "model-stall", "crash") and not crashed \
            and not _own_max_tokens(run):
        return record.harness_error(stop_class(run), _with_evidence(run.error, found))
    if stop in CAPPED and service.at_fault(found, run.duration_s):  # the service's time
        return record.harness_error(service.MODEL_SERVICE, _with_evidence(run.error, found))
    if audit.leaks:
        record.excluded("invalid", "leak")
        record.leaks = audit.leaks
        return None
    if audit.unread:
        return record.excluded("unaudited", "audit", audit.unread)
    if audit.host_errors:
        return record.harness_error(HOST_5XX, "the host answered the agent's own request "
                                    f"with a server error: {audit.host_errors[0]}")
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
        record.failure_class = "max-tokens" if _own_max_tokens(run) else "checker"
    return None


def _own_max_tokens(run: AgentRun) -> bool:
    """The CLI gave up on output past its maximum: the model's own verbosity, which
    the checker judges like any end (the CLI's words: "exceeded the ... output token
    maximum")."""
    return run.stop == "api-error" and bool((run.model_service or {}).get("max_tokens")) \
        and "output token maximum" in (run.error or "")


def _with_evidence(error: str | None, found: dict | None) -> str | None:
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
    answered = {e.get("id") for e in run.transcript if e["event"] == "tool_result"}
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
