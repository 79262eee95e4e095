"""Planning a run: which cells can run, and which trials to run, least-sampled first.

    not_runnable  why a cell (arm, task) cannot produce a sample worth having
    select_cells  arms x chosen tasks -> the cells to run, and the others with why not
    choose        those cells (of the run's --shard) and their ledger from the store,
                  and the command's intent: the run's, its dry run's and
                  --until-decided's, made in this one place
    plan          trials per cell (--trials N adds N, --until N tops up to N valid),
                  least-sampled first, so a short session spreads coverage

(planning/decide.py's planner has its own `Trial` of a round, (arm id, task id, why): the
trials it asks for become these once the run queues them.)
"""

from __future__ import annotations

from dataclasses import dataclass

from benchkit.documents import Arm
from benchkit.documents.reference import Reference, no_reference
from benchkit.documents.task import Task
from benchkit.planning.intent import Intent, intent_key
from benchkit.planning.ledger import Ledger
from benchkit.planning.settings import RunSettings
from benchkit.planning.shard import owned
from benchkit.preflight.checks import Checked
from benchkit.sample import Runtime
from benchkit.store import Store


@dataclass(frozen=True)
class Trial:
    """One trial of the cell (arm, task); `index` is its number within the cell, across
    runs (Ledger.number)."""

    arm: Arm
    task: Task
    index: int = 0


@dataclass(frozen=True)
class Skip:
    """A cell (or one trial of it) that was not run, and why."""

    arm: str
    task: str
    reason: str


@dataclass(frozen=True)
class BudgetSkip(Skip):
    """One trial the budget did not start: its number within the cell, as the sample
    would have recorded it."""

    trial: int = 0


def over_budget(expected: float, left: float | None) -> bool:
    """The budget's one rule, for the run (schedule.py) and its dry run (dryrun.py): a
    trial expected to cost more than is left is never started."""
    return left is not None and expected > left


def not_runnable(arm: Arm, task: Task, self_review: bool | None,
                 reference: Reference | None = None) -> str | None:
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


def select_cells(arms: list[Arm], tasks: list[Task], *, self_review: bool | None,
                 references: dict[str, Reference] | None = None
                 ) -> tuple[list[tuple[Arm, Task]], list[Skip]]:
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


@dataclass(frozen=True)
class Chosen:
    """A run's cells (the chosen arms x tasks that can run here, of its --shard), those
    left out and why, the ledger of every runnable cell's samples in the store (a
    shard's --until-decided judges the whole comparison), and the command's intent
    (what a stopped run of it already did: benchkit.planning.intent)."""
    cells: list[tuple[Arm, Task]]
    not_run: list[Skip]
    ledger: Ledger
    every: list[tuple[Arm, Task]]
    intent: Intent

    def budget_left(self, budget: float | None) -> float | None:
        """--budget, less what a stopped run of this command already spent."""
        return None if budget is None else max(0.0, budget - self.intent.spent)


def choose(checked: Checked, settings: RunSettings, *, self_review: bool | None,
           runtime: Runtime | None, store: Store) -> Chosen:
    """The one place a run's cells and ledger are made: for the run, its dry run and
    --until-decided's rounds alike. `runtime`: the one the run's samples will name."""
    every, not_run = select_cells(checked.arms, checked.tasks, self_review=self_review,
                                  references=checked.references)
    arm_ids, task_ids = [arm.id for arm in checked.arms], [task.id for task in checked.tasks]
    mine = owned(settings.shard, arm_ids, task_ids)
    suite = checked.tree.suite
    model = settings.run_model(suite.model)
    played = {(arm.id, task.id): found.fingerprint for arm, task in every  # replay's
              if (reference := checked.references.get(arm.id)) is not None
              and (found := reference.for_task(task.id)) is not None}
    ledger = Ledger(every, checked.tree.seeds, suite, driver=settings.driver,
                    model=model, runtime=runtime, references=played).load(store)
    host = checked.credentials.url if checked.credentials is not None else checked.throwaway
    intent = Intent.load(store.root, intent_key(settings, arm_ids, task_ids, model, host))
    ledger.resumed = intent.done
    return Chosen([cell for cell in every if (cell[0].id, cell[1].id) in mine],
                  [skip for skip in not_run if (skip.arm, skip.task) in mine], ledger, every,
                  intent)


Slot = tuple[tuple[int, int], Trial]  # (order key: samples had + index, cell order), trial


def plan(cells: list[tuple[Arm, Task]], ledger: Ledger, *, trials: int | None = None,
         until: int | None = None) -> list[Slot]:
    """The trials to run, least-sampled first: [(order key, Trial)]. --trials adds that
    many to each cell, less those a stopped run of the same command already ran there
    (`ledger.resumed`); --until tops each cell up to that many valid samples."""
    slots: list[Slot] = []
    for order, (arm, task) in enumerate(cells):
        have = ledger.valid[(arm.id, task.id)]
        want = (max(0, (trials or 1) - ledger.resumed[(arm.id, task.id)]) if until is None
                else max(0, until - have))
        slots += [((have + index, order), Trial(arm, task, ledger.number(arm.id, task.id)))
                  for index in range(want)]
    return sorted(slots, key=lambda slot: slot[0])
