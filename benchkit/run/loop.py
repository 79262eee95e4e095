"""The run loop: running the scheduler's trials, and stopping cleanly.

    RunLoop       N workers; each seeds its next repository while its agent runs
    cancellation  on Ctrl-C, SIGTERM or SIGHUP the running agents are killed (every
                  process carries the loop's tag), leave no sample (the store is gated),
                  and every repository is deleted (exit 128 + the signal)
    refusal       a model service that refuses the driver's credentials (401, 403)
                  stops the run the same way: no sample, and one line naming them

Which trials (plan.py), in what order and within what budget (schedule.py); one trial's
work (cell.py); what the watching person sees (progress.py).
"""

from __future__ import annotations

import os
import signal
import threading
import uuid
from collections.abc import Callable, Iterable
from concurrent.futures import Future, ThreadPoolExecutor
from types import FrameType

from benchkit.agent.driver import AgentRequest, AgentRun, Driver, kill_marked
from benchkit.agent.service import credential_source
from benchkit.run.cell import CellError, Prepared, RunContext, prepare_trial, run_trial
from benchkit.run.failures import worth_replaying
from benchkit.run.plan import Skip
from benchkit.run.progress import Progress
from benchkit.run.schedule import Scheduler, Ticket
from benchkit.sample import AGENT_STOPS, Record
from benchkit.spec import Arm
from benchkit.store import Store

# Every process of an agent run started by this loop carries RUN_TAG=<the loop's id> in
# its environment, so Ctrl-C can find and end them all.
RUN_TAG = "BENCHKIT_LOOP"
# How long a run that died (rather than ended) waits to learn it was Ctrl-C that killed
# it: a terminal's Ctrl-C reaches the agent's processes and this one together.
INTERRUPT_GRACE = 0.5
# What stops a run as Ctrl-C does: an interactive Ctrl-C, a `kill` or a service manager,
# a closed terminal or SSH session.
STOP_SIGNALS = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)


class Interrupted(BaseException):
    """Ctrl-C ended this trial: it leaves no sample. A BaseException, like
    KeyboardInterrupt, so no `except Exception` on the way records it as an error."""


class CredentialsRefused(Interrupted):
    """The model service refused the driver's credentials: every trial would fail the
    same way, so the run stops (exit 2) with nothing recorded for this one."""


class GatedStore(Store):
    """The store, closed to a trial once Ctrl-C was pressed: an interrupted trial
    leaves neither a sample nor a transcript."""

    def __init__(self, root: str | os.PathLike, secrets: Iterable[str] = (), *,
                 stop: threading.Event):
        super().__init__(root, secrets)
        self.stop = stop

    def append(self, record: Record, secrets: Iterable[str] = ()) -> Record:
        if self.stop.is_set():
            raise Interrupted()
        return super().append(record, secrets)

    def write_transcript(self, arm: str, task: str, sample_id: str, events: list[dict],
                         secrets: Iterable[str] = ()) -> str:
        if self.stop.is_set():
            raise Interrupted()
        return super().write_transcript(arm, task, sample_id, events, secrets)


class Cancellable:
    """A driver whose runs Ctrl-C can end: each run's processes carry the loop's tag
    (found and killed by kill_marked), and a run ended that way raises Interrupted."""

    def __init__(self, driver: Driver, stop: threading.Event, tag: str,
                 refused: list[str] | None = None):
        self.driver, self.stop, self.tag = driver, stop, tag
        self.refused = refused if refused is not None else []  # shared by the run's drivers

    def __getattr__(self, attribute: str):  # name, secrets, ...: the wrapped driver's
        return getattr(self.driver, attribute)

    def run(self, request: AgentRequest) -> AgentRun:
        if self.stop.is_set():
            raise Interrupted()
        request.env = {**request.env, RUN_TAG: self.tag}
        run = self.driver.run(request)
        if run.stop == "api-error" and run.api_error_status in (401, 403):
            line = (f"error: the model service refused the credentials (HTTP "
                    f"{run.api_error_status}): {credential_source(self.driver)}; nothing "
                    f"was recorded for the trial")
            self.refused.append(line)
            raise CredentialsRefused(line)
        if self.stop.is_set() or (run.stop not in AGENT_STOPS
                                  and self.stop.wait(INTERRUPT_GRACE)):
            raise Interrupted()
        return run


class RunLoop:
    """Runs the scheduler's trials on `jobs` workers. Each worker has its own host
    clients (from `context(arm)`, a fresh RunContext per call) and
    provisions its next trial's repository while the current agent runs."""

    def __init__(self, scheduler: Scheduler, context: Callable[[Arm], RunContext],
                 progress: Progress, *,
                 jobs: int = 1, stop: threading.Event, tag: str,
                 failures: list | None = None):
        self.scheduler, self.context, self.progress = scheduler, context, progress
        # (trial, TrialResult) of each failure the agent ran to, for failure replay
        self.failures: list = failures if failures is not None else []
        self.jobs, self.stop, self.tag = max(1, jobs), stop, tag
        self.error: str | None = None  # an unexpected failure that halted the run
        self.signal: int | None = None  # the signal that stopped it (SIGINT: Ctrl-C)
        self._pool = ThreadPoolExecutor(max_workers=self.jobs, thread_name_prefix="benchkit-seed")
        self._live = 0
        self._lock = threading.Lock()
        self._finished = threading.Event()

    # -- the main thread ------------------------------------------------------------

    def run_trials(self) -> None:
        """Run trials until the scheduler has none left, the run halts or a signal
        stops it; the workers' clients are closed and the seeding pool drained."""
        workers = [threading.Thread(target=self._worker, name=f"benchkit-trial-{i}", daemon=True)
                   for i in range(self.jobs)]
        self._live = len(workers)
        restore = self._catch_signals()
        try:
            for worker in workers:
                worker.start()
            while not self._finished.wait(0.1):
                if self.stop.is_set():
                    kill_marked(RUN_TAG, self.tag)  # again and again: a run may have just started
        finally:
            restore()
            self._pool.shutdown(wait=True)

    def _catch_signals(self) -> Callable[[], None]:
        if threading.current_thread() is not threading.main_thread():
            return lambda: None
        previous = {signum: signal.signal(signum, self._on_signal) for signum in STOP_SIGNALS}

        def restore() -> None:
            for signum, handler in previous.items():
                signal.signal(signum, handler)
        return restore

    def _on_signal(self, signum: int, frame: FrameType | None) -> None:
        if self.stop.is_set():  # a second one: the maintainer will not wait
            self.progress.note("interrupted again: leaving now; `benchkit gc --yes` deletes "
                               "any repository left behind and revokes its agent token")
            os._exit(128 + signum)
        self.signal = signum
        self.stop.set()
        self.scheduler.halt("interrupted")
        self.progress.interrupted()
        kill_marked(RUN_TAG, self.tag)

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
                self.scheduler.halt("the model service refused the credentials")
            return False
        except Exception as error:  # see _result
            self.scheduler.release(ticket)
            self._fail(ticket, error)
            return False
        if worth_replaying(result):
            with self._lock:
                self.failures.append((ticket.trial, result))
        cost = self.scheduler.done(ticket, sample)
        self.progress.ended(ticket, sample, cost, self.scheduler)
        return True

    def _abandon(self, ticket: Ticket, prepared: Prepared,
                 context: Callable[[Arm, str], RunContext]) -> None:
        prepared.discard(context(ticket.trial.arm, "seed"))
        self.scheduler.release(ticket)

    def _fail(self, ticket: Ticket, error: Exception) -> None:
        trial = ticket.trial
        self.error = self.error or (f"{trial.arm.id} {trial.task.id}: "
                                    f"{type(error).__name__}: {error}")
        self.scheduler.halt(f"internal error: {self.error}")
        self.progress.note(f"error: {self.error}")


def new_tag() -> str:
    return uuid.uuid4().hex
