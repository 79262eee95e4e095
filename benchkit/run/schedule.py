"""Handing trials out: in plan order, within the budget, one Ticket per trial.

With --until a harness error is run again (at most the suite's `harness_retries` more
per cell and run, HARNESS_RETRIES unless told); a
run of BREAKER harness errors in a row halts the run: the host is unwell. --until-decided
adds trials round by round (extend).
"""

from __future__ import annotations

import bisect
import contextlib
import itertools
import threading
from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass, field

from benchkit.cost import token_figure
from benchkit.planning.intent import Intent
from benchkit.planning.ledger import Ledger
from benchkit.planning.plan import BudgetSkip, Slot, Trial, over_budget
from benchkit.run import events
from benchkit.run.progress import Progress
from benchkit.sample import Record
from benchkit.store import Unwritable

HARNESS_RETRIES = 3      # extra attempts per cell and run after harness errors (--until)
BREAKER = 5              # harness errors in a row that halt the run: the host is unwell


@dataclass
class Ticket:
    """One trial handed to a worker, with the budget it holds while it runs."""

    trial: Trial
    number: int          # 1-based, in the order trials start
    expected: float
    basis: str


@dataclass
class RunTally:
    planned: int = 0
    ran: int = 0
    spent: float = 0.0
    outcomes: Counter[str] = field(default_factory=Counter)
    budget_skips: list[BudgetSkip] = field(default_factory=list)  # one per trial not started
    halted: str | None = None

    def snapshot(self, left_tokens: int | None) -> events.RunningTotals:
        return events.RunningTotals(ran=self.ran, spent_tokens=round(self.spent),
                                    outcomes=dict(self.outcomes), left_tokens=left_tokens)


class Scheduler:
    """Hands out trials in plan order within the budget; thread-safe."""

    def __init__(self, slots: list[Slot], ledger: Ledger, progress: Progress, *,
                 budget: float | None = None, retry_harness_errors: bool = False,
                 harness_retries: int = HARNESS_RETRIES, intent: Intent | None = None):
        self.ledger, self.progress, self.budget = ledger, progress, budget
        self.intent = intent  # the command's, told of each trial that ends
        self.retry, self.harness_retries = retry_harness_errors, harness_retries
        self.totals = RunTally(planned=len(slots))
        self._queue = [(key, n, trial) for n, (key, trial) in enumerate(slots)]
        self._seq = itertools.count(len(slots))
        self._order = {(trial.arm.id, trial.task.id): key[1] for key, trial in slots}
        self._retries: Counter[tuple[str, str]] = Counter()
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
                    trial = entry[2]
                    expected, basis = self.ledger.expected(trial.arm.id, trial.task.id)
                    fit = self._fit(expected)
                    if fit == "never":
                        self._queue.remove(entry)
                        self._budget_skip(trial, expected)
                    elif fit == "later":
                        later = True
                    else:
                        self._queue.remove(entry)
                        ticket = Ticket(trial, next(self._numbers), expected, basis)
                        self._reserved[ticket.number] = expected
                        return ticket
                if not (later and wait):
                    return None
                self._cond.wait()

    def _fit(self, expected: float) -> str:
        left = self.left()
        if left is None:
            return "now"
        if over_budget(expected, left):
            return "never"  # running trials can only spend more
        return "later" if expected > left - sum(self._reserved.values()) else "now"

    def _budget_skip(self, trial: Trial, expected: float) -> None:
        left = self.left()
        assert left is not None  # only a budget skips
        skip = BudgetSkip(trial.arm.id, trial.task.id,
                          f"expects {token_figure(expected, True)} tokens, {left:,.0f} left in the budget",
                          trial.index)
        self.totals.budget_skips.append(skip)
        self.progress.budget_skip(trial.index, skip, expected, left)

    def done(self, ticket: Ticket, sample: Record) -> float:
        """Book a finished trial; return its cost-equivalent tokens."""
        view = sample.view()
        cost = self.ledger.cost(view)
        with self._cond:
            self._reserved.pop(ticket.number, None)
            self.totals.ran += 1
            self.totals.spent += cost
            self.totals.outcomes[sample.outcome] += 1
            self.ledger.add(view)
            if self.intent is not None:
                with contextlib.suppress(Unwritable):  # a full disk: the store says so next
                    self.intent.note(sample.id, sample.arm, sample.task, cost)
            if sample.outcome == "harness-error":
                self._harness_error(ticket.trial, sample)
            else:
                self._errors_in_a_row = 0
            self._cond.notify_all()
        return cost

    def _harness_error(self, trial: Trial, sample: Record) -> None:
        self._errors_in_a_row += 1
        if self._errors_in_a_row >= BREAKER:
            last = ((sample.error or "").strip() or "?").splitlines()[0]
            self.totals.halted = (f"{BREAKER} trials in a row ended in a harness error (last: "
                                  f"{sample.failure_class}: {last}); stopped so no "
                                  f"more budget goes to a broken set-up")
            return
        key = (trial.arm.id, trial.task.id)
        if self.retry and self._retries[key] < self.harness_retries:
            self._retries[key] += 1
            retry = Trial(trial.arm, trial.task, self.ledger.number(*key))
            self.totals.planned += 1
            bisect.insort(self._queue, ((self.ledger.valid[key], self._order[key]),
                                        next(self._seq), retry),
                          key=lambda entry: entry[:2])

    def extend(self, trials: Iterable[Trial]) -> None:
        """Queue more trials, least-sampled first (--until-decided adds them by rounds)."""
        with self._cond:
            for trial in trials:
                key = (trial.arm.id, trial.task.id)
                self._order.setdefault(key, len(self._order))
                self.totals.planned += 1
                self._queue.append(((self.ledger.valid[key], self._order[key]),
                                    next(self._seq), trial))
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


