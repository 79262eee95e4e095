"""The run loop: running the scheduler's trials, and stopping cleanly.

    RunLoop       N workers; each seeds its next repository while its agent runs
    cancellation  on Ctrl-C, SIGTERM or SIGHUP (the run's Stop, benchkit.stopping) the
                  running agents are killed (every process carries the run's tag),
                  leave no sample (benchkit.store.GatedStore), every repository is
                  deleted, and then the stop's Interrupted is raised here
    refusal       a model service that refuses the driver's credentials (401, 403)
                  stops the run the same way: no sample, and one line naming them

Which trials (planning/plan.py), in what order and within what budget (schedule.py);
one trial's work (trial/cell.py); what the watching person sees (progress.py).
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass, field

from benchkit.documents import Arm
from benchkit.planning.plan import Skip, Trial
from benchkit.run.cancel import CredentialsRefused
from benchkit.run.failures import worth_replaying
from benchkit.run.progress import Progress
from benchkit.run.schedule import Scheduler, Ticket
from benchkit.stopping import Interrupted, Stop
from benchkit.store import Unwritable
from benchkit.trial.cell import TrialResult, run_trial
from benchkit.trial.prepare import CellError, Prepared, RunContext, prepare_trial


@dataclass
class Looped:
    """What the loop came back with (of one run of it, or of every round's)."""
    # Each failure the agent ran to, for the failure replay.
    failures: list[tuple[Trial, TrialResult]] = field(default_factory=list)
    error: str | None = None    # an unexpected failure that halted the run
    refused: str | None = None  # the model service refused the credentials: the line to say

    def then(self, later: Looped) -> Looped:
        """This and a later run of the loop, together."""
        return Looped(self.failures + later.failures, self.error or later.error,
                      self.refused or later.refused)


class RunLoop:
    """Runs the scheduler's trials on `jobs` workers. Each worker has its own host
    clients (from `context(arm)`, a fresh RunContext per call) and
    provisions its next trial's repository while the current agent runs."""

    def __init__(self, scheduler: Scheduler, context: Callable[[Arm], RunContext],
                 progress: Progress, *, jobs: int = 1, stop: Stop):
        self.scheduler, self.context, self.progress = scheduler, context, progress
        self.jobs, self.stop = max(1, jobs), stop
        self.looped = Looped()  # filled in by the workers, under the lock
        self._pool = ThreadPoolExecutor(max_workers=self.jobs, thread_name_prefix="benchkit-seed")
        self._live = 0
        self._lock = threading.Lock()
        self._finished = threading.Event()

    # -- the main thread ------------------------------------------------------------

    def run_trials(self) -> Looped:
        """Run trials until the scheduler has none left, the run halts or a signal
        stops it; the workers' clients are closed and the seeding pool drained. This
        thread only waits for the workers, which watch the stop and clean up after
        themselves: a signal does not interrupt it, and Interrupted is raised once
        they are done."""
        workers = [threading.Thread(target=self._worker, name=f"benchkit-trial-{i}", daemon=True)
                   for i in range(self.jobs)]
        self._live = len(workers)
        with self.stop.shielded():
            try:
                for worker in workers:
                    worker.start()
                while not self._finished.wait(0.1):
                    if self.stop.is_set():
                        self.scheduler.halt("interrupted")
                        self.stop.kill()  # again and again: a run may have just started
            finally:
                self._pool.shutdown(wait=True)
        return self.looped

    # -- a worker -------------------------------------------------------------------

    def _worker(self) -> None:
        contexts: dict[tuple[str, str], RunContext] = {}

        def context(arm: Arm, role: str) -> RunContext:
            key = (arm.id, role)  # one for the trial, one for seeding ahead
            if key not in contexts:
                contexts[key] = self.context(arm)
            return contexts[key]

        ahead: tuple[Ticket, Future[Prepared]] | None = None
        try:
            while True:
                if ahead is not None:
                    (ticket, future), ahead = ahead, None
                    prepared = self._result(ticket, future)
                else:
                    taken = self.scheduler.take(wait=True)
                    if taken is None:
                        break
                    ticket = taken
                    prepared = self._result(ticket, None, context(ticket.trial.arm, "seed"))
                if prepared is None:
                    continue
                if self.stop.is_set() or self.scheduler.totals.halted:
                    self._abandon(ticket, prepared, context)
                    break
                following = self.scheduler.take(wait=False)
                if following is not None:
                    ahead = (following, self._pool.submit(
                        prepare_trial, following.trial, context(following.trial.arm, "seed")))
                if not self._trial(ticket, prepared, context(ticket.trial.arm, "trial")):
                    break
        finally:
            if ahead is not None:
                ticket, future = ahead
                prepared = self._result(ticket, future)
                if prepared is not None:
                    self._abandon(ticket, prepared, context)
            for ctx in contexts.values():
                ctx.client.close()
            with self._lock:
                self._live -= 1
                if self._live == 0:
                    self._finished.set()

    def _result(self, ticket: Ticket, future: Future[Prepared] | None,
                ctx: RunContext | None = None) -> Prepared | None:
        """The trial's prepared repository; None (booked) when it cannot run."""
        try:
            if future is not None:
                return future.result()
            assert ctx is not None
            return prepare_trial(ticket.trial, ctx)
        except CellError as error:
            self.scheduler.release(ticket)
            self.progress.skipped(Skip(ticket.trial.arm.id, ticket.trial.task.id, str(error)))
        except Exception as error:  # a bug: halt rather than waste trials
            self.scheduler.release(ticket)
            self._fail(ticket, error)
        return None

    def _trial(self, ticket: Ticket, prepared: Prepared, ctx: RunContext) -> bool:
        """Run one trial; False when the worker should stop."""
        self.progress.started(ticket, prepared)
        try:
            result = run_trial(ticket.trial, ctx, prepared)
            sample = result.sample
        except Interrupted as stopped:
            self.scheduler.release(ticket)
            if isinstance(stopped, CredentialsRefused):
                with self._lock:
                    self.looped.refused = self.looped.refused or str(stopped)
                self.scheduler.halt("the model service refused the credentials")
            return False
        except Exception as error:  # see _result
            self.scheduler.release(ticket)
            self._fail(ticket, error)
            return False
        if worth_replaying(result):
            with self._lock:
                self.looped.failures.append((ticket.trial, result))
        cost = self.scheduler.done(ticket, sample)
        self.progress.ended(ticket, sample, cost, self.scheduler)
        return True

    def _abandon(self, ticket: Ticket, prepared: Prepared,
                 context: Callable[[Arm, str], RunContext]) -> None:
        prepared.discard(context(ticket.trial.arm, "seed"))
        self.scheduler.release(ticket)

    def _fail(self, ticket: Ticket, error: Exception) -> None:
        trial = ticket.trial
        with self._lock:
            if isinstance(error, Unwritable):  # a full disk, not a bug: its own plain line
                self.looped.error = self.looped.error or str(error)
                self.scheduler.halt(str(error))
            else:
                self.looped.error = self.looped.error or (
                    f"{trial.arm.id} {trial.task.id}: {type(error).__name__}: {error}")
                self.scheduler.halt(f"internal error: {self.looped.error}")
        self.progress.note(f"error: {self.looped.error}")
