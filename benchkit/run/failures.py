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
    leaked             the replay, run under the same gateway, audit and scope as the
                       trial, leaked (a refused request, a reference outside its
                       repository): the trial's own calls leak, so its sample counts as
                       invalid, and as a failure of its arm like any leak of the agent's
                       own (benchkit.counting), though the trial's audit missed it
    pending            written before the replay starts: a verdict still `pending` is a
                       replay a kill cut off, which `show` and the report name as never
                       replayed

A replay is evidence about the environment, never an acquittal: a 5xx the agent met is
charged unless the host was shown failing on its own at that moment
(benchkit.trial.attribution), since calls that provoke one only under a condition of the
trial's own repository (its name, its state) run clean on the replay's.

A stop (benchkit.stopping) ends a replay as it ends a trial: its agent's processes
carry the run's tag, its repository is deleted, its verdict stays `pending`.

Each verdict is appended to the store's failure-replays.jsonl, keyed by the trial's id
(benchkit.store; the last line of a trial is its verdict); samples are never
rewritten. The replay's own record is no sample.
"""

from __future__ import annotations

import dataclasses
from datetime import UTC, datetime

from benchkit.agent.driver import AgentRun, Coordinates, Driver
from benchkit.agent.rerun import RecordedDriver, recorded_calls
from benchkit.counting import REPLAY_LEAKED
from benchkit.planning.plan import Trial
from benchkit.replays import (
    NOT_REPLAYED,
    NOT_REPRODUCIBLE,
    PENDING,
    REPRODUCIBLE,
    FailureReplay,
    Replayed,
)
from benchkit.run import events
from benchkit.run.cancel import Cancellable
from benchkit.sample import EXCLUDED, LEAK, Record
from benchkit.stopping import Stop
from benchkit.trial.cell import TrialResult, rerun
from benchkit.trial.prepare import RunContext

FAILED = ("failed", "confused", "hung")
LEAKED = REPLAY_LEAKED


def worth_replaying(result: TrialResult) -> bool:
    """A failure the agent ran to: there are calls to replay and a place they ran."""
    return (result.sample.outcome in FAILED and result.run is not None
            and result.coordinates is not None)


def replay_failure(trial: Trial, ctx: RunContext, result: TrialResult,
                   stop: Stop | None = None) -> FailureReplay:
    """Replay one failed trial's calls on a fresh repository; its verdict, appended to
    the store (a `pending` line first, which a kill leaves). `stop`: the run's, which
    ends the replay as it ends a trial."""
    sample, run = result.sample, result.run
    assert run is not None and result.coordinates is not None
    ctx.store.append_failure_replay(FailureReplay(trial=sample.id, arm=sample.arm,
                                                  task=sample.task, verdict=PENDING,
                                                  at=datetime.now(UTC).isoformat()))
    record, calls = _replay(trial, ctx, run, result.coordinates, stop)
    if record.outcome == "invalid" and record.failure_class == LEAK:
        verdict = LEAKED
    elif record.outcome in EXCLUDED:
        verdict = NOT_REPLAYED
    else:
        verdict = NOT_REPRODUCIBLE if record.outcome == "passed" else REPRODUCIBLE
    return _keep(ctx, sample, verdict, record, calls, result.coordinates)


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
    return rerun(trial, dataclasses.replace(ctx, driver=driver)), calls


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
                        leaks=list(record.leaks), transcript=record.transcript))
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
        assert entry.replay  # a kept verdict carries its replay
        progress.emit(events.FailureReplayEvent(trial=entry.trial, arm=entry.arm, task=entry.task,
                                                verdict=entry.verdict,
                                                replay_outcome=entry.replay.outcome),
                      f"failure replay: {trial.arm.id} {trial.task.id} trial {trial.index} "
                      f"({result.sample.outcome}): {entry.verdict} - its {entry.replay.calls} "
                      f"call(s) on a fresh repository {entry.replay.outcome}")
    return verdicts
