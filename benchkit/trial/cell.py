"""One trial, end to end: the tracer through every stage.

    prepare_trial  provision + seed + readiness gate, the trial's throwaway token at
                   the gateway (and on a forge a host token for this trial alone
                   behind it): benchkit.trial.prepare  (may run ahead of the agent)
    run_trial      drive (arm set-up -> driver) -> audit -> snapshot + check -> record;
                   whatever happens (Ctrl-C included) the repository is deleted, the
                   agent's tokens revoked and the arm's set-up undone

The agent's tools reach the host only through the gateway (benchkit.gateway.server):
they get its URL and a token it alone accepts, for this trial's repository alone.

What the evidence makes of the trial (its outcome) is outcome.py's.
"""

from __future__ import annotations

import os
import shutil
import time
import uuid
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import cast

import msgspec

from benchkit import journal
from benchkit.agent import accounting
from benchkit.agent.audit import (
    AuditEvent,
    audit_gateway,
    audit_host_errors,
    audit_offered,
    audit_requests,
    audit_transcript,
    gateway_host_errors,
)
from benchkit.agent.calls import trial_calls
from benchkit.agent.driver import (
    AgentRequest,
    AgentRun,
    Assignment,
    Coordinates,
    ToolGuard,
)
from benchkit.agent.events import counts
from benchkit.anatomy import anatomy
from benchkit.documents import Arm
from benchkit.errors import HarnessError
from benchkit.fingerprint import arm_fingerprint, fingerprint
from benchkit.gateway.grant import KEPT
from benchkit.gitea import snapshot
from benchkit.gitea.admin import fetch_request_log
from benchkit.isolation import Assembly, IsolationError, assemble
from benchkit.planning.plan import Trial
from benchkit.sample import ZERO_USAGE, Containment, DriverName, Fingerprints, Record, Usage
from benchkit.scoring import Verdict, check
from benchkit.stopping import shielded
from benchkit.surface import Surface
from benchkit.trial.outcome import Audit, harness_class, judge
from benchkit.trial.pauses import PAUSES
from benchkit.trial.prepare import Prepared, RunContext, prepare_trial
from benchkit.trial.version import trial_version


@dataclass
class TrialResult:
    """What a trial gives its caller: the sample as stored, and the agent's run (None
    when no agent ran: a harness error before it)."""

    sample: Record
    run: AgentRun | None
    # Where the agent ran (host, repository, its token): a failure's replay moves the
    # trial's calls from there to a fresh repository. Never stored.
    coordinates: Coordinates | None = field(default=None, repr=False)


def run_trial(trial: Trial, ctx: RunContext, prepared: Prepared | None = None) -> TrialResult:
    """Run one trial and append its sample; the sample as stored, and the agent's run."""
    prepared = prepared or prepare_trial(trial, ctx)
    record = new_record(trial, ctx)
    run, coordinates = None, None
    try:
        if prepared.error:
            record.harness_error(prepared.failure_class, prepared.error)
        else:
            run, coordinates = _play(trial, ctx, prepared, record)
    finally:
        note = prepared.discard(ctx)  # every path: Ctrl-C too, then it propagates
    if note:
        record.note(note)
    stored = ctx.store.append(record, secrets=[*ctx.secrets(), *prepared.secrets()])
    return TrialResult(stored, run, coordinates)


def rerun(trial: Trial, ctx: RunContext) -> Record:
    """Run a trial on a fresh repository like run_trial, but keep its record out of
    the store's samples (a failure's replay is evidence about a trial, not a trial of
    the cell); its transcript is written."""
    prepared: Prepared | None = None
    record = new_record(trial, ctx)
    try:
        with shielded():  # a stop waits for the repository, so that it is deleted
            prepared = prepare_trial(trial, ctx)
        if prepared.error:
            record.harness_error(prepared.failure_class, prepared.error)
        else:
            _play(trial, ctx, prepared, record)
    finally:
        note = prepared.discard(ctx) if prepared is not None else None
    if note:
        record.note(note)
    return record


def _play(trial: Trial, ctx: RunContext, prepared: Prepared,
          record: Record) -> tuple[AgentRun | None, Coordinates | None]:
    """Drive the agent, audit its run, judge it, keep its transcript; the run and
    where it ran."""
    PAUSES.start()  # the harness's own stops, seen from now on
    try:
        user = prepared.host(ctx).user  # the trial's own user, with per-trial identity
    except HarnessError as exc:
        record.harness_error(harness_class(exc), str(exc))
        return None, None
    coordinates = _coordinates(ctx, prepared, user)
    try:
        drive = _drive(trial, ctx, coordinates)
    except IsolationError as exc:  # the arm's binary or skill missing, a set-up failing
        record.harness_error("isolation", str(exc))
        return None, coordinates
    run = drive.run
    prepared.end_grant(ctx)  # the trial's token dies with its agent
    _ran_with(record, trial.arm, drive.version)
    checked = _record_run(record, run, trial.arm.surface, ctx.run_model,
                          ctx.resolution.max_tokens if ctx.resolution is not None else None)
    record.calls = trial_calls(run.transcript, record.anatomy, trial.arm.tool,
                               trial.arm.surface.schema_bytes() if trial.arm.surface else None)
    record.fingerprints = msgspec.structs.replace(
        record.fingerprints, prompt=_prompt_fingerprint(drive, coordinates, ctx.containment))
    audit = _audit(trial, ctx, drive, prepared)
    audit.accounting, audit.vanished = checked, drive.vanished
    ended = time.monotonic()  # the trial's window in the harness's own clock
    audit.paused = PAUSES.within(ended - (time.time() - run.started.timestamp()), ended)
    run.transcript.append(audit.event.builtins())
    record.requests = list(prepared.grant.requests) if prepared.grant is not None else []
    assert ctx.gateway is not None
    if not ctx.gateway.alive:  # the agent's way to the host broke: not the arm's doing
        record.harness_error("gateway", "the gateway stopped during the trial")
        return _keep_transcript(trial, ctx, prepared, record, run), coordinates
    try:
        judge(record, run, audit, lambda: _check(trial, ctx, prepared, run, user))
    except HarnessError as exc:  # the snapshot: the end state could not be read
        record.harness_error("snapshot", str(exc))
    if prepared.grant is not None and prepared.grant.unrecorded:
        record.note(f"{prepared.grant.unrecorded} more requests of the trial's, neither "
                    f"refused nor failed, were left off its record (it keeps {KEPT} whole)")
    return _keep_transcript(trial, ctx, prepared, record, run), coordinates


def _keep_transcript(trial: Trial, ctx: RunContext, prepared: Prepared, record: Record,
                     run: AgentRun) -> AgentRun:
    record.transcript = ctx.store.write_transcript(
        trial.arm.id, trial.task.id, record.id, run.transcript,
        secrets=[*ctx.secrets(), *prepared.secrets()])
    return run


@dataclass
class Drive:
    """One agent run and what it ran with."""

    run: AgentRun
    prompt: str
    guard: ToolGuard
    assembly: Assembly
    workdir: Path
    vanished: dict[str, str] = field(default_factory=dict)  # _vanished's, at the run's end
    version: str | None = None  # the tool's, asked just before the agent started


def _drive(trial: Trial, ctx: RunContext, coordinates: Coordinates) -> Drive:
    """Assemble the arm for this repository, run the agent, undo the set-up."""
    suite, self_review = ctx.suite, ctx.host.self_review
    workdir = Path(journal.mkdtemp("benchkit-cell-"))  # journalled: a kill leaves none
    try:
        assembly = assemble(trial.arm, suite, workdir=workdir, root=ctx.root, **coordinates.names())
        guard = assembly.guard.decide_tool  # in-band now, re-applied by the audit
        prompt = trial.task.intent_for(self_review)
        request = AgentRequest(
            system_prompt=assembly.system_prompt, prompt=prompt, model=ctx.run_model,
            tools=list(assembly.tools), mcp_servers=dict(assembly.mcp_servers),
            env=dict(assembly.env), cwd=workdir, guard=guard,
            max_turns=suite.turn_cap, backstop_seconds=suite.backstop_seconds,
            model_idle_seconds=suite.model_idle_seconds,
            network=coordinates.host_url, writable=(assembly.config_dir,),
            readonly=assembly.credential_files,
            secrets=(*ctx.secrets(), coordinates.token),
            assignment=Assignment(trial.task.id, self_review, coordinates))
        with assembly:  # credential files, bin directory; removed again on every path
            version = (None if trial.arm.tool_version is None  # no pre-flight to hold it to
                       else trial_version(trial.arm, assembly, workdir,
                                          confine=ctx.driver.confine))
            run = ctx.driver.run(request)
            vanished = _vanished(assembly.path_dir)
    finally:
        shutil.rmtree(workdir, ignore_errors=True)
        journal.remove("tempdir", path=str(workdir))
    return Drive(run, prompt, guard, assembly, workdir, vanished, version)


def _ran_with(record: Record, arm: Arm, version: str | None) -> None:
    """The tool's version as the trial ran it. Another than pre-flight's (the tool was
    upgraded since) is recorded, with the arm's fingerprint of it and no surface (what
    the agent saw of that version was never probed): counted apart from pre-flight's."""
    if version is None or version == arm.tool_version:
        return
    record.tool_version, record.tool_surface, record.ambient_size = version, None, None
    record.fingerprints = msgspec.structs.replace(
        record.fingerprints, arm=arm_fingerprint(arm.fingerprint, version, None))


def _vanished(bin_dir: Path | None) -> dict[str, str]:
    """The curated bin directory's links whose files are gone (name -> the file): the
    arm's tool (or what it needs) vanished while the trial ran. Read by the harness,
    outside the sandbox (benchkit.trial.attribution)."""
    if bin_dir is None or not bin_dir.is_dir():
        return {}
    return {link.name: os.readlink(link) for link in sorted(bin_dir.iterdir())
            if link.is_symlink() and not link.exists()}


def _coordinates(ctx: RunContext, prepared: Prepared, user: str) -> Coordinates:
    repo, grant = prepared.repo, prepared.grant
    assert repo is not None and grant is not None  # only a prepared trial is played
    # The trial's own door: what comes through it is the trial's, token or not.
    return Coordinates(host_url=grant.url, api_url=grant.api_url,
                       token=prepared.agent_token, owner=repo.owner, repo=repo.name,
                       user=user)


def _audit(trial: Trial, ctx: RunContext, drive: Drive, prepared: Prepared) -> Audit:
    """Leaks, from evidence independent of the run's own bookkeeping: the tools offered,
    the calls that ran, the gateway's record of the trial's requests (on every host),
    and on a forge the host's own request log besides. A record that cannot be read
    makes the trial unaudited."""
    run = drive.run
    offered = audit_offered(run.tools_offered, trial.arm.tool, drive.assembly.mcp_servers)
    leaks = offered + audit_transcript(run.transcript, drive.guard,
                                       secrets=(*ctx.secrets(), *prepared.secrets()))
    event = AuditEvent()
    audit = Audit(leaks, event, foreign=list(offered))  # offered by the harness: not its own
    agents = trial.arm.user_agents
    if prepared.grant is None:
        audit.unread = "the trial has no record at the gateway"
        event.gateway = f"unread: {audit.unread}"
    else:
        requests = list(prepared.grant.requests)
        leaks += audit_gateway(requests, agents)
        audit.foreign += audit_gateway([e for e in requests if e.get("stray")], ())
        audit.host_errors = gateway_host_errors(requests)
        event.gateway = (f"checked: {len(requests)} request(s) against the trial's "
                            f"repository" + (f" and User-Agents {list(agents)}" if agents
                                             else " (the arm declares no User-Agent)"))
    event.request_log = _forge_log(ctx, prepared, agents, audit)
    event.leaks, event.host_errors = leaks, audit.host_errors
    return audit


def _forge_log(ctx: RunContext, prepared: Prepared, agents, audit: Audit) -> str:
    """The forge's own log of the trial's host token (defence in depth behind the
    gateway); what was checked, for the transcript."""
    if prepared.token_id is None:
        return "not checked: the host keeps no request log (not a forge)"
    seen = fetch_request_log(ctx.client.url, ctx.admin, token_id=prepared.token_id)
    if seen is None:
        audit.unread = audit.unread or (f"the host's request log could not be read for "
                                        f"{prepared.token_id}")
        return f"unread: {audit.unread}"
    audit.host_errors += [e for e in audit_host_errors(seen, prepared.token_id)
                          if e not in audit.host_errors]
    if not agents:
        return "checked for host errors only: the arm declares no User-Agent"
    audit.leaks += audit_requests(seen, agents, prepared.token_id)
    return (f"checked: every request made with this trial's host token "
            f"({prepared.token_id}) against User-Agents {list(agents)}")


def _check(trial: Trial, ctx: RunContext, prepared: Prepared, run: AgentRun,
           user: str) -> Verdict:
    """Snapshot the repository the agent left and judge it with the answer."""
    repo = prepared.repo
    assert repo is not None
    state = snapshot(prepared.host(ctx), repo.owner, repo.name)
    return check(trial.task, state=state, answer=run.answer, seed=prepared.seed, user=user,
                 self_review=ctx.host.self_review, seeded=prepared.seeded)


def new_record(trial: Trial, ctx: RunContext) -> Record:
    """The trial's record as if nothing ran (a harness error's shape)."""
    task, arm = trial.task, trial.arm
    seed = ctx.seeds.get(task.seed)
    return Record(
        id=uuid.uuid4().hex, arm=arm.id, task=task.id, tier=task.tier, scored=task.scored,
        trial=trial.index, started_at=datetime.now(UTC).isoformat(),
        driver=cast(DriverName, ctx.driver.name),  # the store validates it
        model=ctx.run_model, usage_estimated=ctx.driver.name == "replay",
        model_alias=ctx.resolution.given if ctx.resolution is not None and ctx.resolution.alias
        else None,
        tool_version=arm.tool_version, tool_surface=arm.tool_surface,
        ambient_size=None if arm.surface is None else arm.surface.ambient_size,
        fingerprints=Fingerprints(
            task=task.fingerprint, arm=arm.run_fingerprint,
            seed=seed.fingerprint if seed is not None else fingerprint(None),
            prompt=fingerprint(None), model=fingerprint(ctx.run_model),
            reference=ctx.driver.played(task.id)),
        self_review=ctx.host.self_review, host=ctx.host.host, jobs=ctx.jobs,
        confined=ctx.driver.confine, containment=ctx.containment,
        runtime=ctx.driver.runtime, shard=ctx.shard)


def _record_run(record: Record, run: AgentRun, surface: Surface | None,
                asked: str, max_tokens: int | None = None) -> accounting.Accounting:
    """What the agent's run itself tells: time, usage, turns, answer, calls. The usage
    only once its figures pass the check (benchkit.agent.accounting; `max_tokens`: what
    each of its requests asked for at most): else the sample keeps them as reported,
    apart, and its usage stays zero."""
    record.tool_calls, record.blocked_calls = counts(run.transcript)
    record.started_at, record.duration_s = run.started.isoformat(), run.duration_s
    record.usage_estimated, record.turns = run.usage_estimated, run.turns
    record.answer, record.error = run.answer, run.error
    record.confined = run.confined
    checked = accounting.check(run.requests, run.usage, run.usage_by_model, asked, max_tokens)
    record.models = checked.models
    if not checked.problems:
        try:
            record.usage = msgspec.convert(run.usage, Usage)
            record.usage_by_model = msgspec.convert(run.usage_by_model, dict[str, Usage])
        except msgspec.ValidationError as error:  # a figure no check foresaw: never a halt
            checked.problems.append(f"the figures are not counts: {error}")
    if checked.problems:
        record.usage, record.usage_by_model = ZERO_USAGE, {}
        record.usage_reported = accounting.reported(run.usage, run.usage_by_model, run.cost_usd)
        return checked
    record.cost_usd = run.cost_usd
    record.anatomy = anatomy(run.requests, run.usage, estimated=run.usage_estimated,
                             schema_bytes=surface.schema_bytes() if surface else None)
    return checked


def _prompt_fingerprint(drive: Drive, coordinates: Coordinates, containment: Containment) -> str:
    """The prompt with this trial's coordinates taken out, so every trial of a cell
    shares it while a change of wording, skill or bootstrap does not. A run's (or a
    trial's) own user, the owner too, has a name of its own: taken out as well."""
    text = drive.assembly.system_prompt
    own_user = coordinates.user if containment in ("run-user", "trial-user") else ""
    volatile = [(coordinates.token, "token"), (coordinates.api_url, "api_url"),
                (coordinates.host_url, "host_url"), (str(drive.workdir), "workdir"),
                (str(drive.assembly.harness_dir or ""), "config_dir"),
                (coordinates.repo, "repo"),  # the repo's unique name, before any owner
                (own_user, "user")]
    for value, name in volatile:
        if value:
            text = text.replace(value, f"{{{{ {name} }}}}")
    return fingerprint({"system": text, "intent": drive.prompt})
