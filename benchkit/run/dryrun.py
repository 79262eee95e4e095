"""`benchkit run --dry-run`: the plan a run would follow, as data that prints.

The same cells, ledger and ordering as a real run (plan.choose, plan.plan), with the budget applied as the scheduler would if every trial cost what it is
expected to. Nothing is spent, started or written: the store is only read, no forge
starts and no host is contacted (so the host's self-review permission is unknown for a
live host: tasks that depend on it are planned and flagged).

Each trial's expectation rests on the store's own samples (planning.ledger.Estimate, its
source said beside it): cost-equivalent tokens; dollars at the model's list price
(benchkit.prices, dated: the date is printed); time, from the samples' durations, and
the plan's wall time at --jobs as the run would hand the trials out (each to the first
free worker, in plan order).
"""

from __future__ import annotations

import heapq
from dataclasses import dataclass, field

from benchkit import prices
from benchkit.agent.model_probe import Resolution
from benchkit.agent.runtime import installed_runtime
from benchkit.cost import token_figure
from benchkit.gitea import CredentialsError
from benchkit.planning.ledger import DEFAULT, Estimate, Ledger
from benchkit.planning.plan import Skip, choose, over_budget, plan
from benchkit.planning.settings import RunSettings
from benchkit.preflight.checks import Checked
from benchkit.preflight.host import GITEA, discover, throwaway
from benchkit.preflight.tools import missing_tools
from benchkit.run import events
from benchkit.run.progress import Progress
from benchkit.run.rounds import NoComparison, dry_round
from benchkit.run.status import RunEnd
from benchkit.store import Store


@dataclass(frozen=True)
class PlannedTrial:
    arm: str
    task: str
    trial: int          # as the sample will record it
    expected: float     # cost-equivalent tokens
    basis: str          # what `expected` rests on: the cell's or arm's past mean, or the default
    replayed: float | None = None  # a measured plan's default: the cell's replay estimate
    usd: float | None = None       # at the model's list price (None: the table has none)
    seconds: float | None = None   # its expected duration (None: no sample to go by)
    source: str = ""               # the basis in words: how many samples, of what

    @property
    def estimate(self) -> bool:
        """True when no past sample backs the figure (the suite's default)."""
        return self.basis == DEFAULT


@dataclass
class Plan:
    """What a run would do: trials in order, cells not run and why, trials the budget
    would not start. Callers may add notes (e.g. a stopping rule) before printing."""

    driver: str
    model: str
    host: str
    budget: float | None = None
    jobs: int = 1
    resolution: Resolution | None = None  # the model, as the runtime resolved it
    trials: list[PlannedTrial] = field(default_factory=list)
    skipped: list[Skip] = field(default_factory=list)
    over_budget: list[PlannedTrial] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    problems: list[str] = field(default_factory=list)  # store lines that are not samples
    tools_missing: dict[str, str] = field(default_factory=dict)  # arm id -> why not here

    @property
    def total(self) -> float:
        return sum(t.expected for t in self.trials)

    @property
    def usd(self) -> float | None:
        """The trials at the model's list price; None when the table has no price."""
        figures = [t.usd for t in self.trials]
        return None if None in figures else sum((f for f in figures if f is not None), 0.0)

    @property
    def wall_seconds(self) -> float | None:
        """The trials' time at `jobs`, each to the first free worker in plan order (the
        scheduler's); the trials with no duration to go by are left out (`untimed`)."""
        workers = [0.0] * max(1, self.jobs)
        timed = [t.seconds for t in self.trials if t.seconds is not None]
        for seconds in timed:
            heapq.heapreplace(workers, workers[0] + seconds)
        return max(workers) if timed else None

    @property
    def untimed(self) -> int:
        return sum(t.seconds is None for t in self.trials)

    def event(self) -> events.PlanEvent:
        return events.PlanEvent(
            driver=self.driver, model=self.model, host=self.host, budget=self.budget,
            expected_tokens=round(self.total),
            trials=[events.PlanEventTrial(t.arm, t.task, t.trial, round(t.expected), t.basis,
                                          t.replayed, t.estimate, t.arm in self.tools_missing,
                                          usd=t.usd, seconds=t.seconds, source=t.source)
                    for t in self.trials],
            tools_missing=self.tools_missing,
            over_budget=[events.OverBudget(t.arm, t.task, t.trial, round(t.expected), t.basis,
                                           t.replayed) for t in self.over_budget],
            not_run=list(self.skipped), notes=self.notes, problems=self.problems,
            expected_usd=self.usd, prices_as_of=prices.AS_OF, jobs=self.jobs,
            expected_wall_s=self.wall_seconds, untimed=self.untimed,
            model_probe=events.model_probe(self.resolution))

    def lines(self) -> list[str]:
        out = [f"dry run: nothing is spent, started or written; driver {self.driver}, "
               f"model {self.model}, host {self.host}",
               f"would run {len(self.trials)} trial(s), in this order:"]
        if self.driver == "replay":
            out.insert(1, "replay spends no real tokens: its figures are estimates from bytes "
                          "(its dollars, what they would cost at list price)")
        for n, t in enumerate(self.trials, 1):
            basis = (t.source if not t.estimate else
                     f"{t.source}: no measured sample yet; the cell's replay estimates "
                     f"{token_figure(t.replayed, True)} from its reference's bytes, which is "
                     "not what a model spends" if t.replayed is not None else
                     f"{t.source}: an estimate, no past sample")
            missing = (f" [cannot run: {t.arm}'s tool is not installed]"
                       if t.arm in self.tools_missing else "")
            out.append(f"  [{n}] {t.arm} {t.task} trial {t.trial}: {token_figure(t.expected, True)} "
                       f"tokens, {_usd(t.usd)}, {_span(t.seconds)} ({basis}){missing}")
        total = f"expected in total: {token_figure(self.total, True)} cost-equivalent tokens"
        if self.budget is not None:
            total += f" of a budget of {self.budget:,.0f}"
        out.append(total)
        out.append(self._money())
        out.append(self._hours())
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

    def _money(self) -> str:
        if prices.price(self.model) is None:
            return (f"in dollars: unknown: the price table (list prices of {prices.AS_OF}) "
                    f"has no price for {self.model}")
        return (f"in dollars: {_usd(self.usd)} at {self.model}'s list price (prices of "
                f"{prices.AS_OF}; a default's tokens at its fresh-input price)")

    def _hours(self) -> str:
        wall = self.wall_seconds
        left = (f"; {self.untimed} trial(s) with no sample's duration to go by are not in it"
                if self.untimed and wall is not None else "")
        if wall is None:
            return (f"in time: unknown: no sample of {self.model} in the store says how long "
                    "a trial takes")
        return (f"in time: {_span(wall)} of wall time at --jobs {self.jobs}, from the "
                f"samples' durations{left}")


def _usd(amount: float | None) -> str:
    return "$?" if amount is None else f"${amount:,.2f}~"


def _span(seconds: float | None) -> str:
    """A duration for people, marked an estimate: 40 s~, 12 min~, 3.5 h~."""
    if seconds is None:
        return "time unknown"
    if seconds < 90:
        return f"{seconds:.0f} s~"
    if seconds < 90 * 60:
        return f"{seconds / 60:.0f} min~"
    return f"{seconds / 3600:.1f} h~"


def planned(arm: str, task: str, trial: int, found: Estimate, model: str,
            replayed: float | None) -> PlannedTrial:
    """A trial of the plan, its money from the estimate's tokens by component (a
    default's: its cost-equivalent tokens at the fresh-input price)."""
    price = prices.price(model)
    usd = None
    if price is not None:
        usd = (prices.dollars(found.usage, price) if found.usage is not None
               else found.tokens * price.input / 1_000_000)
    return PlannedTrial(arm, task, trial, found.tokens, found.basis,
                        replayed if found.basis == DEFAULT else None, usd=usd,
                        seconds=found.seconds, source=found.source)


def self_review_unprobed(credentials) -> bool | None:
    """Whether the host permits self-review, as far as it is known before it is probed:
    the embedded forge (no credentials) forbids it, as Gitea does; a live host's answer
    is unknown (None). The dry run and the run's budget check plan with this alike."""
    return False if credentials is None else None


def replay_means(ledger: Ledger) -> dict[tuple[str, str], float]:
    """(arm, task) -> the mean estimated cost of the cell's valid replay samples (any
    version), said beside a measured plan's default: they are past samples, but of
    bytes, so a measured trial's expectation does not rest on them."""
    totals: dict[tuple[str, str], list[float]] = {}
    for key, group in ledger.groups.items():
        arm, task, _, estimated, _, valid = key[:6]
        if estimated and valid:
            totals.setdefault((arm, task), []).extend(ledger.cost(s) for s in group.members)
    return {cell: sum(costs) / len(costs) for cell, costs in totals.items()}


def make_plan(checked, settings: RunSettings, *, self_review: bool | None, host: str) -> Plan:
    """The plan of a run of `checked` (preflight.Checked) with these settings, against
    the store they name."""
    suite = checked.tree.suite
    driver, model, budget = settings.driver, settings.run_model(suite.model), settings.budget
    chosen = choose(checked, settings, self_review=self_review, runtime=installed_runtime(),
                    store=Store(settings.store_dir))
    cells, ledger = chosen.cells, chosen.ledger
    result = Plan(driver=driver, model=model, host=host, budget=budget, jobs=settings.jobs,
                  resolution=settings.resolved, skipped=chosen.not_run)
    result.problems = ledger.problems
    replayed = replay_means(ledger) if driver != "replay" else {}
    left = chosen.budget_left(budget)  # less what a stopped run of this command spent
    if chosen.intent.resumed:
        result.notes.append(f"this command was stopped after {sum(chosen.intent.done.values())} "
                            "trial(s): the plan is what is missing (benchkit.planning.intent)")
    for _, trial in plan(cells, ledger, trials=settings.trials, until=settings.until):
        entry = planned(trial.arm.id, trial.task.id, trial.index,
                        ledger.estimate(trial.arm.id, trial.task.id), model,
                        replayed.get((trial.arm.id, trial.task.id)))
        if over_budget(entry.expected, left):
            result.over_budget.append(entry)
            continue
        left = None if left is None else left - entry.expected
        result.trials.append(entry)
    if self_review is None:
        depends = sorted({t.id for t in checked.tasks if t.only_when})
        if depends:
            result.notes.append("the host was not contacted, so whether it permits "
                                f"self-review is unknown: {', '.join(depends)} may not run")
    return result


def dry_run(checked: Checked, progress: Progress, settings: RunSettings, *,
            host, token, login) -> RunEnd:
    """Print the plan; contact no host, start no forge, write nothing."""
    try:
        credentials = discover(host, token, login)
    except CredentialsError as error:
        progress.note(f"error: {error}")
        return RunEnd("plan", blocked=str(error))
    where = (("a throwaway Gitea (not started)" if throwaway(host) == GITEA
              else "an embedded forge (not started)") if credentials is None
             else f"{credentials.url} (from {credentials.source}, not contacted)")
    self_review = self_review_unprobed(credentials)
    if settings.until_decided:  # what --until-decided would spend first, and why
        progress.note(f"dry run (--until-decided): nothing is spent, started or written; "
                      f"host {where}; the first round, from the store's samples:")
        try:
            dry_round(checked, progress, settings, self_review=self_review)
        except NoComparison as error:
            progress.note(f"error: {error}")
            return RunEnd("plan", blocked=str(error))
        return RunEnd("plan")
    found = make_plan(checked, settings, self_review=self_review, host=where)
    found.tools_missing = missing_tools(checked.arms, checked.tree.suite)
    progress.emit(found.event(), "\n".join(found.lines()))
    return RunEnd("plan", blocked=budget_fits_nothing(found, progress, listed=True))


def budget_fits_nothing(found: Plan, progress: Progress, *, listed: bool) -> str | None:
    """The one place that decides, for the run and its dry run alike, that the budget
    fits none of the plan's trials: say so and return the line (else None). `listed`:
    the plan's lines (the dry run's) already name the cells and trials left out."""
    if found.budget is None or found.trials or not found.over_budget:
        return None
    if not listed:
        for skip in found.skipped:
            progress.skipped(skip)
        for trial in found.over_budget:
            progress.budget_skip(trial.trial, Skip(trial.arm, trial.task, "budget"),
                                 trial.expected, found.budget)
    cheapest = min(trial.expected for trial in found.over_budget)
    line = (f"nothing to run: the budget of {progress.tokens(found.budget)} tokens fits no "
            f"trial (the cheapest expects {token_figure(cheapest, True)}); nothing was started")
    progress.note(line)
    return line
