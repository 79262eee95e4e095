"""The run loop: which trials run, in what order, within what budget, and how.

    select_cells  arms x chosen tasks -> the cells to run, and the others with why not
    Ledger        what the store already holds: valid samples per cell, past costs
    plan          trials per cell (--trials N adds N, --until N tops up to N valid),
                  least-sampled first, so a short session spreads coverage
    Scheduler     hands trials out within the budget; with --until a harness error is
                  run again; a run of harness errors halts the loop
    RunLoop       N workers; each seeds its next repository while its agent runs; on
                  Ctrl-C, SIGTERM or SIGHUP the running agents are killed, leave no
                  sample, and every repository is deleted (exit 128 + the signal)
The per-trial work (provision, agent, audit, snapshot, checker, append) is cell.py's;
what the watching person sees is progress.py's.
"""

from __future__ import annotations

import bisect
import itertools
import os
import signal
import threading
import uuid
from collections import Counter
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field

from benchkit.agent.driver import kill_marked
from benchkit.cost import usage_cost
from benchkit.run.cell import Cell, CellError, Prepared, not_runnable, prepare_cell, run_cell
from benchkit.run.ledger import Ledger
from benchkit.sample import AGENT_STOPS
from benchkit.store import Store

# Every process of an agent run started by this loop carries RUN_TAG=<the loop's id> in
# its environment, so Ctrl-C can find and end them all.
RUN_TAG = "BENCHKIT_LOOP"
HARNESS_RETRIES = 2      # extra attempts per cell and run after harness errors (--until)
BREAKER = 5              # harness errors in a row that halt the run: the host is unwell
# How long a run that died (rather than ended) waits to learn it was Ctrl-C that killed
# it: a terminal's Ctrl-C reaches the agent's processes and this one together.
INTERRUPT_GRACE = 0.5
# What stops a run as Ctrl-C does: an interactive Ctrl-C, a `kill` or a service manager,
# a closed terminal or SSH session.
STOP_SIGNALS = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)


class Interrupted(BaseException):
    """Ctrl-C ended this trial: it leaves no sample. A BaseException, like
    KeyboardInterrupt, so no `except Exception` on the way records it as an error."""


# --- which cells ---------------------------------------------------------------------

@dataclass(frozen=True)
class Skip:
    """A cell (or one trial of it) that was not run, and why."""

    arm: str
    task: str
    reason: str


def select_cells(arms, tasks, *, self_review: bool, references: dict | None = None):
    """(cells to run as (arm, task) pairs, [Skip]) in arm-then-task order. A task
    without a scoring spec, not applicable to the arm, meant for hosts with the other
    self-review permission, or (replay) without a playable reference is skipped."""
    cells, skipped = [], []
    for arm in arms:
        reference = (references or {}).get(arm.id)
        for task in tasks:
            reason = not_runnable(arm, task, self_review, reference)
            if reason:
                skipped.append(Skip(arm.id, task.id, reason))
            else:
                cells.append((arm, task))
    return cells, skipped


def plan(cells, ledger: Ledger, *, trials: int | None = None, until: int | None = None) -> list:
    """The trials to run, least-sampled first: [(order key, Cell)]. --trials adds that
    many to each cell; --until tops each cell up to that many valid samples."""
    slots = []
    for order, (arm, task) in enumerate(cells):
        have = ledger.valid[(arm.id, task.id)]
        want = (trials if trials is not None else 1) if until is None else max(0, until - have)
        slots += [((have + index, order), Cell(arm, task, index)) for index in range(want)]
    return sorted(slots, key=lambda slot: slot[0])


# --- handing trials out --------------------------------------------------------------

@dataclass
class Ticket:
    """One trial handed to a worker, with the budget it holds while it runs."""

    cell: Cell
    number: int          # 1-based, in the order trials start
    expected: float
    basis: str


@dataclass
class Totals:
    planned: int = 0
    ran: int = 0
    spent: float = 0.0
    outcomes: Counter = field(default_factory=Counter)
    budget_skips: list = field(default_factory=list)  # Skip, one per trial not started
    halted: str | None = None

    def snapshot(self) -> dict:
        return {"ran": self.ran, "spent_tokens": round(self.spent),
                "outcomes": dict(self.outcomes)}


class Scheduler:
    """Hands out trials in plan order within the budget; thread-safe."""

    def __init__(self, slots, ledger: Ledger, progress, *,
                 budget: float | None = None, retry_harness_errors: bool = False):
        self.ledger, self.progress, self.budget = ledger, progress, budget
        self.retry = retry_harness_errors
        self.totals = Totals(planned=len(slots))
        self._queue = [(key, n, cell) for n, (key, cell) in enumerate(slots)]
        self._seq = itertools.count(len(slots))
        self._order = {(cell.arm.id, cell.task.id): key[1] for key, cell in slots}
        self._issued = Counter((cell.arm.id, cell.task.id) for _, cell in slots)
        self._retries = Counter()
        self._errors_in_a_row = 0
        self._reserved: dict[int, float] = {}
        self._numbers = itertools.count(1)
        self._cond = threading.Condition()

    def left(self) -> float | None:
        return None if self.budget is None else self.budget - self.totals.spent

    def take(self, wait: bool = True) -> Ticket | None:
        """The first queued trial the budget allows now; trials that can never fit
        are skipped (and said so). None when the run is over, halted, or (wait=False)
        nothing fits until a running trial ends."""
        with self._cond:
            while True:
                if self.totals.halted or not self._queue:
                    return None
                later = False
                for entry in list(self._queue):
                    cell = entry[2]
                    expected, basis = self.ledger.expected(cell.arm.id, cell.task.id)
                    fit = self._fit(expected)
                    if fit == "never":
                        self._queue.remove(entry)
                        self._budget_skip(cell, expected)
                    elif fit == "later":
                        later = True
                    else:
                        self._queue.remove(entry)
                        ticket = Ticket(cell, next(self._numbers), expected, basis)
                        self._reserved[ticket.number] = expected
                        return ticket
                if not (later and wait):
                    return None
                self._cond.wait()

    def _fit(self, expected: float) -> str:
        left = self.left()
        if left is None:
            return "now"
        if expected > left:
            return "never"  # running trials can only spend more
        return "later" if expected > left - sum(self._reserved.values()) else "now"

    def _budget_skip(self, cell: Cell, expected: float) -> None:
        skip = Skip(cell.arm.id, cell.task.id,
                    f"expects ~{expected:,.0f} tokens, {self.left():,.0f} left in the budget")
        self.totals.budget_skips.append(skip)
        self.progress.budget_skip(cell, skip, expected, self.left())

    def done(self, ticket: Ticket, sample: dict) -> float:
        """Book a finished trial; return its cost-equivalent tokens."""
        cost = usage_cost(sample["usage"], self.ledger.weights)
        with self._cond:
            self._reserved.pop(ticket.number, None)
            self.totals.ran += 1
            self.totals.spent += cost
            self.totals.outcomes[sample["outcome"]] += 1
            self.ledger.add(sample)
            if sample["outcome"] == "harness-error":
                self._harness_error(ticket.cell, sample)
            else:
                self._errors_in_a_row = 0
            self._cond.notify_all()
        return cost

    def _harness_error(self, cell: Cell, sample: dict) -> None:
        self._errors_in_a_row += 1
        if self._errors_in_a_row >= BREAKER:
            last = ((sample.get("error") or "").strip() or "?").splitlines()[0]
            self.totals.halted = (f"{BREAKER} trials in a row ended in a harness error (last: "
                                  f"{sample.get('failure_class')}: {last}); stopped so no "
                                  f"more budget goes to a broken set-up")
            return
        key = (cell.arm.id, cell.task.id)
        if self.retry and self._retries[key] < HARNESS_RETRIES:
            self._retries[key] += 1
            retry = Cell(cell.arm, cell.task, self._issued[key])
            self._issued[key] += 1
            self.totals.planned += 1
            bisect.insort(self._queue, ((self.ledger.valid[key], self._order[key]),
                                        next(self._seq), retry),
                          key=lambda entry: entry[:2])

    def extend(self, cells) -> None:
        """Queue more trials, least-sampled first (--until-decided adds them by rounds)."""
        with self._cond:
            for cell in cells:
                key = (cell.arm.id, cell.task.id)
                self._order.setdefault(key, len(self._order))
                self._issued[key] += 1
                self.totals.planned += 1
                self._queue.append(((self.ledger.valid[key], self._order[key]),
                                    next(self._seq), cell))
            self._queue.sort(key=lambda entry: entry[:2])
            self._cond.notify_all()

    def release(self, ticket: Ticket) -> None:
        """A trial that will not run after all (interrupted, abandoned)."""
        with self._cond:
            self._reserved.pop(ticket.number, None)
            self._cond.notify_all()

    def halt(self, reason: str) -> None:
        with self._cond:
            self.totals.halted = self.totals.halted or reason
            self._cond.notify_all()


# --- running trials ------------------------------------------------------------------

class GatedStore(Store):
    """The store, closed to a trial once Ctrl-C was pressed: an interrupted trial
    leaves neither a sample nor a transcript."""

    def __init__(self, root, secrets=(), *, stop: threading.Event):
        super().__init__(root, secrets)
        self.stop = stop

    def append(self, sample, secrets=()):
        if self.stop.is_set():
            raise Interrupted()
        return super().append(sample, secrets)

    def write_transcript(self, arm, task, sample_id, events, secrets=()):
        if self.stop.is_set():
            raise Interrupted()
        return super().write_transcript(arm, task, sample_id, events, secrets)


class Cancellable:
    """A driver whose runs Ctrl-C can end: each run's processes carry the loop's tag
    (found and killed by kill_marked), and a run ended that way raises Interrupted."""

    def __init__(self, driver, stop: threading.Event, tag: str):
        self.driver, self.stop, self.tag = driver, stop, tag

    def __getattr__(self, attribute):  # name, secrets, ...: the wrapped driver's
        return getattr(self.driver, attribute)

    def run(self, request):
        if self.stop.is_set():
            raise Interrupted()
        request.env = {**request.env, RUN_TAG: self.tag}
        run = self.driver.run(request)
        if self.stop.is_set() or (run.stop not in AGENT_STOPS
                                  and self.stop.wait(INTERRUPT_GRACE)):
            raise Interrupted()
        return run


class RunLoop:
    """Runs the scheduler's trials on `jobs` workers. Each worker has its own host
    clients (from `context(arm)`, a fresh benchkit.run.cell.RunContext per call) and
    provisions its next trial's repository while the current agent runs."""

    def __init__(self, scheduler: Scheduler, context: Callable, progress, *,
                 jobs: int = 1, stop: threading.Event, tag: str):
        self.scheduler, self.context, self.progress = scheduler, context, progress
        self.jobs, self.stop, self.tag = max(1, jobs), stop, tag
        self.error: str | None = None  # an unexpected failure that halted the run
        self.signal: int | None = None  # the signal that stopped it (SIGINT: Ctrl-C)
        self._pool = ThreadPoolExecutor(max_workers=self.jobs, thread_name_prefix="benchkit-seed")
        self._live = 0
        self._lock = threading.Lock()
        self._finished = threading.Event()

    # -- the main thread ------------------------------------------------------------

    def run(self) -> None:
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
        return lambda: [signal.signal(signum, handler) for signum, handler in previous.items()]

    def _on_signal(self, signum, frame) -> None:
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
        contexts: dict = {}

        def context(arm, role):
            key = (arm.id, role)  # one for the trial, one for seeding ahead
            if key not in contexts:
                contexts[key] = self.context(arm)
            return contexts[key]

        ahead = None  # (ticket, future of its Prepared)
        try:
            while True:
                if ahead is not None:
                    (ticket, future), ahead = ahead, None
                    prepared = self._result(ticket, future)
                else:
                    ticket = self.scheduler.take(wait=True)
                    if ticket is None:
                        break
                    prepared = self._result(ticket, None, context(ticket.cell.arm, "seed"))
                if prepared is None:
                    continue
                if self.stop.is_set() or self.scheduler.totals.halted:
                    self._abandon(ticket, prepared, context)
                    break
                following = self.scheduler.take(wait=False)
                if following is not None:
                    ahead = (following, self._pool.submit(
                        prepare_cell, following.cell, context(following.cell.arm, "seed")))
                if not self._trial(ticket, prepared, context(ticket.cell.arm, "trial")):
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

    def _result(self, ticket: Ticket, future, ctx=None) -> Prepared | None:
        """The trial's prepared repository; None (booked) when it cannot run."""
        try:
            return future.result() if future is not None else prepare_cell(ticket.cell, ctx)
        except CellError as error:
            self.scheduler.release(ticket)
            self.progress.skipped(Skip(ticket.cell.arm.id, ticket.cell.task.id, str(error)))
        except Exception as error:  # a bug: halt rather than waste trials
            self.scheduler.release(ticket)
            self._fail(ticket, error)
        return None

    def _trial(self, ticket: Ticket, prepared: Prepared, ctx) -> bool:
        """Run one trial; False when the worker should stop."""
        self.progress.started(ticket, prepared)
        try:
            sample = run_cell(ticket.cell, ctx, prepared)
        except Interrupted:
            self.scheduler.release(ticket)
            return False
        except Exception as error:  # see _result
            self.scheduler.release(ticket)
            self._fail(ticket, error)
            return False
        cost = self.scheduler.done(ticket, sample)
        self.progress.ended(ticket, sample, cost, self.scheduler)
        return True

    def _abandon(self, ticket: Ticket, prepared: Prepared, context) -> None:
        prepared.discard(context(ticket.cell.arm, "seed"))
        self.scheduler.release(ticket)

    def _fail(self, ticket: Ticket, error: Exception) -> None:
        cell = ticket.cell
        self.error = self.error or (f"{cell.arm.id} {cell.task.id}: "
                                    f"{type(error).__name__}: {error}")
        self.scheduler.halt(f"internal error: {self.error}")
        self.progress.note(f"error: {self.error}")


def new_tag() -> str:
    return uuid.uuid4().hex
