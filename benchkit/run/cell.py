"""One cell, one trial, end to end: the tracer through every stage.

    prepare_cell: provision + seed + readiness gate      (may run ahead of the agent)
    run_cell:     arm set-up -> driver -> audit -> snapshot -> checker -> append
                  and, whatever happens (Ctrl-C included), the repository is deleted
                  and the arm's set-up undone.

Outcomes: passed; failed (the checker's differences); confused (turn cap); hung
(backstop); crashed (the CLI died while one of the agent's own tool calls ran, or by a
signal after its shell ran, as `kill -9 $PPID` makes it: charged to the arm, so an agent
cannot erase a failure);
invalid (the audit found a leak: recorded, never scored); unaudited (the audit could not
read its evidence: excluded like invalid, never valid); harness-error (host, seeding,
readiness, SDK start-up, API overload or rate limit, credentials, or the host answering
the agent's own request with a 5xx: recorded apart, never counted against the arm).
"""

from __future__ import annotations

import logging
import re
import shutil
import tempfile
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from benchkit.agent.audit import (
    audit_host_errors,
    audit_offered,
    audit_requests,
    audit_transcript,
)
from benchkit.agent.driver import AgentRequest, AgentRun, Driver, zero_usage
from benchkit.agent.transcript import counts, tool_calls
from benchkit.errors import HarnessError, HostError, ReadinessError, SeedError
from benchkit.fingerprint import fingerprint
from benchkit.gitea.admin import fetch_request_log, mint_agent_token, revoke_agent_token
from benchkit.isolation import IsolationError, assemble
from benchkit.scrub import environment_secrets
from benchkit.spec.reference import no_reference
from benchkit.store import Store

log = logging.getLogger(__name__)

SCHEMA_VERSION = 1


class CellError(ValueError):
    """A cell that cannot run at all (no scoring spec, not applicable to the arm or
    the host, unknown seed): nothing is provisioned, nothing recorded."""


@dataclass(frozen=True)
class Cell:
    arm: Any    # benchkit.spec.Arm
    task: Any   # benchkit.spec.task.Task
    trial: int = 0


@dataclass
class RunContext:
    """What every cell of a run shares: the suite, the host, the store, the driver."""

    suite: Any                      # benchkit.spec.Suite
    seeds: dict                     # seed name -> benchkit.spec.Seed
    client: Any                     # benchkit.gitea.Client: the harness's own, on the host
    store: Store
    driver: Driver
    model: str | None = None        # --model, else the suite's
    root: Path | None = None        # the spec tree (arm templates may name it)
    gate_timeout: float = 60.0
    self_review: bool | None = None  # probed once per host when None
    host: dict | None = None         # {"kind", "version"}, found once when None
    jobs: int = 1                    # trials the run has going at once (durations depend on it)

    def secrets(self) -> list[str]:
        """What never reaches the store: the host token, the driver's credentials, the
        harness's secret-looking variables."""
        return [self.client.token, *getattr(self.driver, "secrets", ()), *environment_secrets()]

    @property
    def run_model(self) -> str:
        return self.model or self.suite.model

    def self_review_permitted(self) -> bool:
        if self.self_review is None:
            from benchkit.gitea import probe_self_review
            self.self_review = probe_self_review(self.client, prefix=self.suite.repo_prefix)
        return self.self_review

    def host_info(self) -> dict:
        if self.host is None:
            version = str(self.client.get("/version").get("version", "unknown"))
            kind = "forge" if self.read_request_log() is not None else "gitea"
            self.host = {"kind": kind, "version": version}
        return self.host

    def read_request_log(self, token_id: str | None = None) -> list | None:
        """The host's request log (at least the requests made with the token `token_id`
        names, when given); None where the host keeps none."""
        return fetch_request_log(self.client.url, self.client.token, token_id=token_id)


@dataclass
class Prepared:
    """A provisioned, seeded, gated repository (or why there is none), and on a forge
    a token for this cell's agent alone, so the audit takes exactly its requests."""

    cell: Cell
    seed: Any
    repo: Any = None                 # benchkit.gitea.Repo
    error: str | None = None
    failure_class: str | None = None
    token: str | None = field(default=None, repr=False)  # the agent's; None: the harness's
    token_id: str | None = None      # its identity in the host's request log

    def agent_token(self, ctx: RunContext) -> str:
        return self.token or ctx.client.token

    def discard(self, ctx: RunContext) -> str | None:
        """Delete the repository (a run loop that will not use it) and revoke the
        agent's token; a note if the repository could not be deleted."""
        if self.token_id is not None:
            revoke_agent_token(ctx.client.url, ctx.client.token, self.token_id)
            self.token_id = None
        repo, self.repo = self.repo, None
        if repo is None:
            return None
        from benchkit.gitea import delete_repo
        try:
            delete_repo(ctx.client, repo.owner, repo.name)
            return None
        except Exception as exc:  # noqa: BLE001 - the run's own result matters more
            log.warning("could not delete %s: %s", repo.full_name, ctx.client.scrub(str(exc)))
            return f"repository {repo.full_name} was left behind (`benchkit gc` finds it)"


def not_runnable(arm, task, self_review: bool | None, reference=None) -> str | None:
    """Why the cell (arm, task) cannot produce a sample worth having, or None. The
    self-review condition is judged once the host's answer is known (not None); with a
    reference (replay), the task must have a supported solution in it."""
    if task.applicability.get(arm.id) == "not-applicable":
        return f"not applicable to {arm.id}"
    if not task.has_spec:
        return "no scoring spec: the checker cannot judge it"
    if self_review is not None and not task.applies_to(self_review=self_review):
        other = "forbid" if self_review else "permit"
        return f"only for hosts that {other} self-review (this one does not)"
    if reference is not None:
        entry = reference.for_task(task.id)
        if entry is None:
            return no_reference(arm.id)
        if entry.unsupported:
            return f"unsupported by the arm's tool ({entry.unsupported.strip()})"
    return None


def runnable(cell: Cell, ctx: RunContext, self_review: bool | None = None) -> None:
    """Raise CellError when the cell cannot produce a sample worth having."""
    task = cell.task
    reason = not_runnable(cell.arm, task, self_review)
    if reason is None and task.seed not in ctx.seeds:
        reason = f"names seed {task.seed!r}, which is not loaded"
    if reason:
        raise CellError(f"task {task.id} on arm {cell.arm.id}: {reason}")


def prepare_cell(cell: Cell, ctx: RunContext) -> Prepared:
    """Provision and seed a throwaway repository behind the readiness gate. Harness
    failures come back inside Prepared (recorded by run_cell), never raised."""
    from benchkit.gitea import provision
    runnable(cell, ctx)
    seed = ctx.seeds[cell.task.seed]
    try:
        runnable(cell, ctx, ctx.self_review_permitted())
        repo = provision(ctx.client, seed, prefix=ctx.suite.repo_prefix,
                         gate_timeout=ctx.gate_timeout)
    except HarnessError as exc:
        return Prepared(cell, seed, error=ctx.client.scrub(str(exc)),
                        failure_class=harness_class(exc))
    prepared = Prepared(cell, seed, repo=repo)
    try:
        if ctx.host_info()["kind"] == "forge":
            prepared.token, prepared.token_id = mint_agent_token(
                ctx.client.url, ctx.client.token, repo=repo.full_name)
    except HarnessError as exc:  # the repository is there: run_cell records and deletes it
        prepared.error, prepared.failure_class = ctx.client.scrub(str(exc)), harness_class(exc)
    return prepared


def run_cell(cell: Cell, ctx: RunContext, prepared: Prepared | None = None) -> dict:
    """Run one trial and append its sample; return the sample as stored."""
    prepared = prepared or prepare_cell(cell, ctx)
    sample = _blank_sample(cell, ctx)
    try:
        if prepared.error:
            _harness_error(sample, prepared.failure_class, prepared.error)
        else:
            _run(cell, ctx, prepared, sample)
    finally:
        note = prepared.discard(ctx)  # every path: Ctrl-C too, then it propagates
    if note:
        sample["error"] = f"{sample['error']}; {note}" if sample["error"] else note
    return ctx.store.append(sample, secrets=[*ctx.secrets(), prepared.token])


def _run(cell: Cell, ctx: RunContext, prepared: Prepared, sample: dict) -> None:
    try:
        self_review = ctx.self_review_permitted()
        sample["host"] = ctx.host_info()
        user = ctx.client.user
    except HarnessError as exc:
        return _harness_error(sample, harness_class(exc), str(exc))
    sample["self_review"] = self_review
    coordinates = _coordinates(ctx, prepared, user)
    try:
        drive = _drive(cell, ctx, coordinates, self_review)
    except IsolationError as exc:  # the arm's binary or skill missing, a set-up failing
        return _harness_error(sample, "isolation", str(exc))
    run = drive.run
    _record_run(sample, run)
    sample["fingerprints"]["prompt"] = _prompt_fingerprint(drive, coordinates)
    audit = _audit(cell, ctx, drive, prepared)
    run.transcript.append(audit.event)
    _judge(sample, cell, ctx, prepared, run, audit, user, self_review)
    sample["transcript"] = ctx.store.write_transcript(
        cell.arm.id, cell.task.id, sample["id"], run.transcript,
        secrets=[*ctx.secrets(), prepared.token])


@dataclass
class Drive:
    """One agent run and what it ran with."""

    run: AgentRun
    prompt: str
    policy: Callable
    assembly: Any      # benchkit.isolation.Assembly
    workdir: Path


def _drive(cell: Cell, ctx: RunContext, coordinates: dict, self_review: bool) -> Drive:
    """Assemble the arm for this repository, run the agent, undo the set-up."""
    suite = ctx.suite
    workdir = Path(tempfile.mkdtemp(prefix="benchkit-cell-"))
    try:
        assembly = assemble(cell.arm, suite, workdir=workdir, **coordinates)
        policy = assembly.guard.decide_tool  # in-band now, re-applied by the audit
        prompt = cell.task.intent_for(self_review)
        request = AgentRequest(
            system_prompt=assembly.system_prompt, prompt=prompt, model=ctx.run_model,
            tools=list(assembly.tools), mcp_servers=dict(assembly.mcp_servers),
            env=dict(assembly.env), cwd=workdir, guard=policy,
            max_turns=suite.turn_cap, backstop_seconds=suite.backstop_seconds,
            network=ctx.client.url, writable=(assembly.config_dir,),
            secrets=(*ctx.secrets(), coordinates["token"]),
            cell={"task": cell.task.id, "self_review": self_review, **coordinates})
        with assembly:  # credential files, bin directory; removed again on every path
            run = ctx.driver.run(request)
    finally:
        shutil.rmtree(workdir, ignore_errors=True)
    return Drive(run, prompt, policy, assembly, workdir)


def _coordinates(ctx: RunContext, prepared: Prepared, user: str) -> dict:
    repo = prepared.repo
    return {"host_url": ctx.client.url, "api_url": ctx.client.api_url,
            "token": prepared.agent_token(ctx), "owner": repo.owner, "repo": repo.name,
            "user": user}


@dataclass
class Audit:
    leaks: list
    event: dict
    unread: str | None = None      # why the evidence could not be read (fails closed)
    host_errors: list = field(default_factory=list)  # 5xx answers to the agent's requests


def _audit(cell: Cell, ctx: RunContext, drive: Drive, prepared: Prepared) -> Audit:
    """Leaks, from evidence independent of the run's own bookkeeping. A host that mints
    agent tokens (the forge) keeps a request log: reading it must succeed."""
    run = drive.run
    leaks = audit_offered(run.tools_offered, cell.arm.tool, drive.assembly.mcp_servers)
    leaks += audit_transcript(run.transcript, drive.policy,
                              secrets=(*ctx.secrets(), prepared.agent_token(ctx)))
    event = {"event": "audit", "request_log": "not checked: the host keeps no request log and "
                                               "mints no token per agent (not a forge)"}
    audit = Audit(leaks, event)
    agents = cell.arm.user_agents
    if prepared.token_id is not None:
        requests_seen = ctx.read_request_log(prepared.token_id)
        if requests_seen is None:
            audit.unread = f"the host's request log could not be read for {prepared.token_id}"
            event["request_log"] = f"unread: {audit.unread}"
        else:
            audit.host_errors = audit_host_errors(requests_seen, prepared.token_id)
            if agents:
                leaks += audit_requests(requests_seen, agents, prepared.token_id)
                event["request_log"] = (f"checked: every request made with this agent's token "
                                        f"({prepared.token_id}) against User-Agents "
                                        f"{list(agents)}")
            else:
                event["request_log"] = ("checked for host errors only: the arm declares no "
                                        "User-Agent")
    event["leaks"], event["host_errors"] = leaks, audit.host_errors
    return audit


def _judge(sample, cell, ctx, prepared, run, audit: Audit, user, self_review) -> None:
    """The outcome: harness error > invalid > unaudited > host error > crashed >
    confused/hung > passed/failed."""
    stop = run.stop
    crashed = stop == "crash" and agent_crashed(run)
    if stop in ("startup-error", "api-error", "crash") and not crashed:
        return _harness_error(sample, _stop_class(run), run.error)
    if audit.leaks:
        sample.update(outcome="invalid", failure_class="leak", valid=False, leaks=audit.leaks)
        return None
    if audit.unread:
        sample.update(outcome="unaudited", failure_class="audit", valid=False,
                      error=audit.unread)
        return None
    if audit.host_errors:
        return _harness_error(sample, "host", "the host answered the agent's own request "
                              f"with a server error: {audit.host_errors[0]}")
    if crashed:
        sample.update(outcome="crashed", failure_class="agent-crash")
        return None
    from benchkit.gitea import snapshot
    from benchkit.scoring import check
    try:
        state = snapshot(ctx.client, prepared.repo.owner, prepared.repo.name)
    except HarnessError as exc:
        return _harness_error(sample, "snapshot", str(exc))
    verdict = check(cell.task, state=state, answer=run.answer, seed=prepared.seed, user=user,
                    self_review=self_review)
    sample["differences"] = list(verdict.differences)
    if stop == "turn-cap":
        sample.update(outcome="confused", failure_class="turn-cap")
    elif stop == "backstop":
        sample.update(outcome="hung", failure_class="backstop")
    elif verdict.passed:
        sample.update(outcome="passed", failure_class=None)
    else:
        sample.update(outcome="failed", failure_class="checker")
    return None


_KILLED = re.compile(r"exit code:? -[0-9]+")  # the SDK's words for a CLI a signal ended


def agent_crashed(run) -> bool:
    """Whether the agent may have ended its own CLI: it died during a tool call the
    runtime let run, or by a signal after a shell command ran (a background job
    outlives its call: `(sleep 1; kill -9 $PPID) &`). The harness's own kills (the
    backstop, Ctrl-C) never reach here as a crash."""
    ran = [call for call in tool_calls(run.transcript) if call.get("allowed") is not False]
    answered = {e.get("id") for e in run.transcript if e["event"] == "tool_result"}
    in_flight = any(call.get("id") not in answered for call in ran)
    killed = bool(_KILLED.search(run.error or ""))
    return in_flight or (killed and any(call.get("name") == "Bash" for call in ran))


def harness_class(exc: BaseException) -> str:
    """The failure class of a harness error, most specific first."""
    from benchkit.gitea import CredentialsError
    for kind, name in ((CredentialsError, "credentials"), (ReadinessError, "readiness"),
                       (SeedError, "seeding"), (HostError, "host")):
        if isinstance(exc, kind):
            return name
    return "harness"


def _stop_class(run) -> str:
    if run.stop == "startup-error":
        return "sdk-startup"
    if run.stop == "crash":
        return "sdk-crash"
    status, text = run.api_error_status, (run.error or "").lower()
    if status == 429 or "rate limit" in text:
        return "rate-limit"
    if status in (529, 503) or "overloaded" in text:
        return "api-overload"
    if status in (401, 403) or "authentication" in text or "api key" in text:
        return "credentials"
    return "api-error"


def _harness_error(sample: dict, failure_class: str | None, error: str | None) -> None:
    sample.update(outcome="harness-error", failure_class=failure_class or "harness",
                  valid=False, error=error)


def _record_run(sample: dict, run) -> None:
    tool_calls, blocked = counts(run.transcript)
    sample.update(
        started_at=run.started.isoformat(), duration_s=run.duration_s, usage=run.usage,
        usage_by_model=run.usage_by_model, usage_estimated=run.usage_estimated,
        turns=run.turns, cost_usd=run.cost_usd, answer=run.answer, error=run.error,
        tool_calls=tool_calls, blocked_calls=blocked, temperature=run.temperature,
        confined=run.confined)


def _blank_sample(cell: Cell, ctx: RunContext) -> dict:
    """A sample with every field filled as if nothing ran (a harness error's shape)."""
    task, arm = cell.task, cell.arm
    seed = ctx.seeds.get(task.seed)
    return {
        "schema_version": SCHEMA_VERSION, "id": uuid.uuid4().hex, "arm": arm.id,
        "task": task.id, "tier": task.tier, "scored": task.scored, "trial": cell.trial,
        "started_at": datetime.now(UTC).isoformat(), "duration_s": 0.0,
        "driver": ctx.driver.name, "model": ctx.run_model, "temperature": None,
        "outcome": "harness-error", "failure_class": "harness", "valid": True,
        "differences": [], "usage": zero_usage(), "usage_by_model": {},
        "usage_estimated": ctx.driver.name == "replay", "turns": 0, "cost_usd": None,
        "blocked_calls": 0, "tool_calls": 0,
        "tool_version": arm.tool_version,
        "fingerprints": {"task": task.fingerprint, "arm": arm.run_fingerprint,
                         "seed": seed.fingerprint if seed is not None else fingerprint(None),
                         "prompt": fingerprint(None), "model": fingerprint(ctx.run_model)},
        "self_review": bool(ctx.self_review), "host": ctx.host or {"kind": "gitea", "version": "unknown"},
        "answer": None, "error": None, "transcript": None, "leaks": [], "jobs": ctx.jobs,
        "confined": getattr(ctx.driver, "confine", True),
    }


def _prompt_fingerprint(drive: Drive, coordinates: dict) -> str:
    """The prompt with this trial's coordinates taken out, so every trial of a cell
    shares it while a change of wording, skill or bootstrap does not."""
    text = drive.assembly.system_prompt
    volatile = [(coordinates["token"], "token"), (coordinates["api_url"], "api_url"),
                (coordinates["host_url"], "host_url"), (str(drive.workdir), "workdir"),
                (str(drive.assembly.harness_dir or ""), "config_dir"),
                (coordinates["repo"], "repo")]  # the repo's unique name, before any owner
    for value, name in volatile:
        if value:
            text = text.replace(value, "{{ %s }}" % name)
    return fingerprint({"system": text, "intent": drive.prompt})
