"""Failure replay: was a failed trial the agent's own failure, or the environment's?

After a run, each trial that failed (failed, confused or hung) has its own tool calls
replayed, in order and with the same inputs, by the replay driver on a freshly seeded
repository, with its own final answer, and is scored again. No token is spent.

    not reproducible   the replay passed: the same calls succeed on a fresh
                       repository, so something of the environment (a host race, a
                       lagging index, a fault) made the trial fail. The sample stays a
                       failure (the agent did fail); the mark draws attention to it.
    reproducible       the replay failed too: the failure is the agent's own.
    not replayed       the replay could not run or be judged (a harness error).

A trial whose agent met a 5xx from the host is replayed the same way as soon as it
ends, before its sample is stored (settle_host_error):

    provoked           the replay met a 5xx on the same request: the agent's own calls
                       make the host fail (posting one issue dependency twice does), so
                       the trial is charged: failed, class host-error-provoked
    not reproducible   the same calls ran clean: the host's fault, a harness error
                       (class host-5xx), never charged; `--until` runs the cell again

A stop (benchkit.stopping) ends a replay as it ends a trial: its agent's processes
carry the run's tag, its repository is deleted, nothing is appended.

Each verdict is appended to the store's failure-replays.jsonl, keyed by the trial's id
(benchkit.store); samples are never rewritten. The replay's own record is no sample.
"""

from __future__ import annotations

import dataclasses
import re
from datetime import UTC, datetime

from benchkit.agent.driver import AgentRun, Coordinates, Driver
from benchkit.agent.rerun import RecordedDriver, recorded_calls
from benchkit.replays import (
    NOT_REPLAYED,
    NOT_REPRODUCIBLE,
    PROVOKED_VERDICT,
    REPRODUCIBLE,
    FailureReplay,
    Replayed,
)
from benchkit.run import events
from benchkit.run.cancel import Cancellable
from benchkit.run.cell import TrialResult, rerun
from benchkit.run.plan import Trial
from benchkit.run.prepare import RunContext
from benchkit.sample import EXCLUDED, HOST_5XX, PROVOKED, Record
from benchkit.stopping import Stop

FAILED = ("failed", "confused", "hung")
# A request's route with its repository's owner and name left out: a replay's repository
# has other names. (The API's /repos/OWNER/NAME/..., git's /OWNER/NAME.git/...)
_REPOSITORY = re.compile(r"^(/api/v1/repos)?/[^/]+/[^/]+")


def worth_replaying(result: TrialResult) -> bool:
    """A failure the agent ran to: there are calls to replay and a place they ran (one
    charged for a 5xx it provoked was replayed already)."""
    return (result.sample.outcome in FAILED and result.sample.failure_class != PROVOKED
            and result.run is not None and result.coordinates is not None)


def replay_failure(trial: Trial, ctx: RunContext, result: TrialResult,
                   stop: Stop | None = None) -> FailureReplay:
    """Replay one failed trial's calls on a fresh repository; its verdict, appended to
    the store. `stop`: the run's, which ends the replay as it ends a trial."""
    sample, run = result.sample, result.run
    assert run is not None and result.coordinates is not None
    record, calls = _replay(trial, ctx, run, result.coordinates, stop)
    if record.outcome in EXCLUDED:
        verdict = NOT_REPLAYED
    else:
        verdict = NOT_REPRODUCIBLE if record.outcome == "passed" else REPRODUCIBLE
    return _keep(ctx, sample, verdict, record, calls, result.coordinates)


def settle_host_error(trial: Trial, ctx: RunContext, record: Record, run: AgentRun,
                      where: Coordinates) -> None:
    """A trial whose agent's request the host answered with a 5xx (class host-5xx):
    replay its calls on a fresh repository; when a request that met a 5xx meets one
    again, charge the trial (failed, host-error-provoked), else leave it a harness
    error. The verdict goes to the store. Any other record is left as it is."""
    if record.failure_class != HOST_5XX:
        return
    replay, calls = _replay(trial, ctx, run, where)
    again = _server_errors(replay) & _server_errors(record)
    if again:
        record.outcome, record.failure_class, record.valid = "failed", PROVOKED, True
        record.error = (f"{record.error}; the failure replay met it again on a fresh "
                        f"repository ({', '.join(sorted(' '.join(e) for e in again))}): the "
                        f"agent's own calls provoke it, so it is charged to the trial")
    verdict = (PROVOKED_VERDICT if again else
               NOT_REPLAYED if replay.outcome == "harness-error"
               and replay.failure_class != HOST_5XX else NOT_REPRODUCIBLE)
    _keep(ctx, record, verdict, replay, calls, where)


def _replay(trial: Trial, ctx: RunContext, run: AgentRun, where: Coordinates,
            stop: Stop | None = None) -> tuple[Record, list]:
    """The trial's own calls and answer played on a fresh repository: its record. A
    stop ends it as it ends a trial (the run's, or the one its driver carries)."""
    calls = recorded_calls(run.transcript)
    driver: Driver = RecordedDriver(calls, run.answer, where,
                                    confine=ctx.driver.confine)
    if stop is None and isinstance(ctx.driver, Cancellable):
        stop = ctx.driver.stop
    if stop is not None:
        driver = Cancellable(driver, stop)
    return rerun(trial, dataclasses.replace(ctx, driver=driver, settle=None)), calls


def _server_errors(record: Record) -> set[tuple[str, str]]:
    """(method, route without the repository's names) of each request a 5xx answered."""
    return {(entry.get("method", ""), _REPOSITORY.sub(r"\1/OWNER/REPO", entry.get("path", "")))
            for entry in record.requests if (entry.get("status") or 0) >= 500}


def _keep(ctx: RunContext, sample, verdict: str, record: Record, calls: list,
          where: Coordinates) -> FailureReplay:
    """The replay's verdict on a trial, appended to the store."""
    entry = FailureReplay(
        trial=sample.id, arm=sample.arm, task=sample.task, verdict=verdict,
        at=datetime.now(UTC).isoformat(), outcome=sample.outcome,
        failure_class=sample.failure_class, differences=list(sample.differences),
        replay=Replayed(id=record.id, calls=len(calls), outcome=record.outcome,
                        failure_class=record.failure_class,
                        differences=list(record.differences), error=record.error,
                        transcript=record.transcript))
    ctx.store.append_failure_replay(entry, secrets=[*ctx.secrets(), where.token])
    return entry


def replay_failures(failed: list[tuple[Trial, TrialResult]], context, progress,
                    stop: Stop | None = None) -> list[FailureReplay]:
    """Replay every failure of a run (context(arm) -> RunContext); their verdicts."""
    verdicts = []
    for trial, result in failed:
        ctx = context(trial.arm)
        try:
            entry = replay_failure(trial, ctx, result, stop)
        finally:
            ctx.client.close()
        verdicts.append(entry)
        progress.emit(events.FailureReplay(trial=entry.trial, arm=entry.arm, task=entry.task,
                                           verdict=entry.verdict,
                                           replay_outcome=entry.replay.outcome),
                      f"failure replay: {trial.arm.id} {trial.task.id} trial {trial.index} "
                      f"({result.sample.outcome}): {entry.verdict} - its {entry.replay.calls} "
                      f"call(s) on a fresh repository {entry.replay.outcome}")
    return verdicts
