"""`benchkit run --dry-run`: the plan a run would follow, as data that prints.

The same selection, ledger and ordering as a real run (plan.select_cells, Ledger,
plan), with the budget applied as the scheduler would if every trial cost what it is
expected to. Nothing is spent, started or written: the store is only read, no forge
starts and no host is contacted (so the host's self-review permission is unknown for a
live host: tasks that depend on it are planned and flagged).
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field

from benchkit.agent.runtime import installed_runtime
from benchkit.cost import token_figure
from benchkit.run.ledger import Ledger
from benchkit.run.plan import Skip, over_budget, plan, select_cells
from benchkit.run.settings import RunSettings
from benchkit.store import Store

DEFAULT_BASIS = "suite default"


@dataclass(frozen=True)
class PlannedTrial:
    arm: str
    task: str
    trial: int          # as the sample will record it
    expected: float     # cost-equivalent tokens
    basis: str          # what `expected` rests on: the cell's or arm's past mean, or the default

    @property
    def estimate(self) -> bool:
        """True when no past sample backs the figure (the suite's default)."""
        return self.basis == DEFAULT_BASIS


@dataclass
class Plan:
    """What a run would do: trials in order, cells not run and why, trials the budget
    would not start. Callers may add notes (e.g. a stopping rule) before printing."""

    driver: str
    model: str
    host: str
    budget: float | None = None
    trials: list[PlannedTrial] = field(default_factory=list)
    skipped: list[Skip] = field(default_factory=list)
    over_budget: list[PlannedTrial] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    problems: list[str] = field(default_factory=list)  # store lines that are not samples
    tools_missing: dict[str, str] = field(default_factory=dict)  # arm id -> why not here

    @property
    def total(self) -> float:
        return sum(t.expected for t in self.trials)

    def to_dict(self) -> dict:
        return {"event": "plan", "driver": self.driver, "model": self.model, "host": self.host,
                "budget": self.budget, "expected_tokens": round(self.total),
                "trials": [{**asdict(t), "expected": round(t.expected), "estimate": t.estimate,
                            "tool_missing": t.arm in self.tools_missing} for t in self.trials],
                "tools_missing": self.tools_missing,
                "over_budget": [{**asdict(t), "expected": round(t.expected)} for t in self.over_budget],
                "not_run": [asdict(s) for s in self.skipped], "notes": self.notes,
                "problems": self.problems}

    def lines(self) -> list[str]:
        out = [f"dry run: nothing is spent, started or written; driver {self.driver}, "
               f"model {self.model}, host {self.host}",
               f"would run {len(self.trials)} trial(s), in this order:"]
        if self.driver == "replay":
            out.insert(1, "replay spends no real tokens: its figures are estimates from bytes")
        for n, t in enumerate(self.trials, 1):
            basis = f"{t.basis}: an estimate, no past sample" if t.estimate else t.basis
            missing = (f" [cannot run: {t.arm}'s tool is not installed]"
                       if t.arm in self.tools_missing else "")
            out.append(f"  [{n}] {t.arm} {t.task} trial {t.trial}: {token_figure(t.expected, True)} "
                       f"tokens ({basis}){missing}")
        total = f"expected in total: {token_figure(self.total, True)} cost-equivalent tokens"
        if self.budget is not None:
            total += f" of a budget of {self.budget:,.0f}"
        out.append(total)
        for t in self.over_budget:
            out.append(f"skipped (budget): {t.arm} {t.task} trial {t.trial}: expects "
                       f"{token_figure(t.expected, True)} tokens, more than is left")
        for skip in self.skipped:
            out.append(f"not run: {skip.arm} {skip.task}: {skip.reason}")
        for arm, why in self.tools_missing.items():
            count = sum(t.arm == arm for t in self.trials)
            out.append(f"tool not installed: {why}; its {count} trial(s) cannot run: the run "
                       "would stop at pre-flight (exit 2; `--only-installed` runs the arms "
                       "whose tools are installed)")
        out += [f"note: {note}" for note in self.notes]
        out += [f"warning: {problem} (skipped)" for problem in self.problems]
        return out


def self_review_unprobed(credentials) -> bool | None:
    """Whether the host permits self-review, as far as it is known before it is probed:
    the embedded forge (no credentials) forbids it, as Gitea does; a live host's answer
    is unknown (None). The dry run and the run's budget check plan with this alike."""
    return False if credentials is None else None


def make_plan(checked, settings: RunSettings, *, self_review: bool | None, host: str) -> Plan:
    """The plan of a run of `checked` (preflight.Checked) with these settings, against
    the store they name."""
    suite = checked.tree.suite
    driver, model, budget = settings.driver, settings.run_model(suite.model), settings.budget
    cells, skipped = select_cells(checked.arms, checked.tasks, self_review=self_review,
                                  references=checked.references)
    ledger = Ledger(cells, checked.tree.seeds, suite, driver=driver, model=model,
                    runtime=installed_runtime()).load(
        Store(settings.store_dir))
    result = Plan(driver=driver, model=model, host=host, budget=budget, skipped=skipped)
    result.problems = ledger.problems
    left = budget
    for _, trial in plan(cells, ledger, trials=settings.trials, until=settings.until):
        expected, basis = ledger.expected(trial.arm.id, trial.task.id)
        entry = PlannedTrial(trial.arm.id, trial.task.id, trial.index, expected, basis)
        if over_budget(expected, left):
            result.over_budget.append(entry)
            continue
        left = None if left is None else left - expected
        result.trials.append(entry)
    if self_review is None:
        depends = sorted({t.id for t in checked.tasks if t.only_when})
        if depends:
            result.notes.append("the host was not contacted, so whether it permits "
                                f"self-review is unknown: {', '.join(depends)} may not run")
    return result
