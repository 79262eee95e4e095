"""What the person watching `benchkit run` sees.

    a terminal     a live status line (rich): trials done of planned, elapsed and ETA,
                   tokens spent against the budget, passes and failures per arm; the
                   per-trial lines scroll above it
    not a terminal the same per-trial lines, plain, each with n/N, elapsed and ETA
    --json         one JSON event per line on stdout and nothing else there (the
                   events' shape is a contract: it does not follow the display)

Notes and warnings go to stderr (through the live display's console on a terminal, so
they do not tear it). Trials are numbered as their samples are (`"trial": 0` is trial 0).
"""

from __future__ import annotations

import json
import sys
import threading
import time
from collections import Counter, defaultdict

from rich.console import Console
from rich.live import Live
from rich.text import Text

from benchkit.cost import token_figure
from benchkit.planning.plan import Skip
from benchkit.run import events
from benchkit.sample import Record
from benchkit.trial.prepare import Prepared

PASSED = "passed"
NOT_PASSED = ("failed", "confused", "hung")  # scored outcomes that count against an arm


class Progress:
    """Human lines on stdout, or (json_mode) one JSON event per line on stdout and
    nothing else there. Notes and warnings go to stderr either way."""

    def __init__(self, *, json_mode: bool = False, estimated: bool = False, out=None, err=None,
                 live: bool | None = None):
        self.json_mode, self.estimated = json_mode, estimated
        self.out, self.err = out or sys.stdout, err or sys.stderr
        self.started_at = time.monotonic()
        self._lock = threading.RLock()
        if live is None:
            live = not json_mode and hasattr(self.out, "isatty") and self.out.isatty()
        self.live = live
        self._display: Live | None = None
        self.planned, self.done, self.spent = 0, 0, 0.0
        self.budget: float | None = None
        self.arms: dict = defaultdict(Counter)  # arm -> outcome counts

    def emit(self, event: events.Event, line: str | None) -> None:
        with self._lock:
            if self.json_mode:
                self.out.write(json.dumps(events.builtins(event), ensure_ascii=False) + "\n")
            elif line is not None and self._display is not None:
                self._display.console.print(Text(line))
                return
            elif line is not None:
                self.out.write(line + "\n")
            self.out.flush()

    def note(self, text: str) -> None:
        with self._lock:
            if self._display is not None:
                self._display.console.print(Text(text, style="yellow"))
                return
            self.err.write(text + "\n")
            self.err.flush()

    # -- the live status --------------------------------------------------------------

    def elapsed(self) -> float:
        return time.monotonic() - self.started_at

    def eta(self) -> float | None:
        """Seconds left at the pace so far; None before the first trial ends."""
        if not self.done:
            return None
        return self.elapsed() / self.done * max(0, self.planned - self.done)

    def status(self) -> str:
        """One line: n of N, elapsed, ETA, tokens against the budget, per arm."""
        eta = self.eta()
        budget = f" of {self.budget:,.0f} budget" if self.budget is not None else ""
        arms = "; ".join(f"{arm} {c[PASSED]} passed, {sum(c[o] for o in NOT_PASSED)} failed"
                         + (f", {c['harness-error']} harness errors" if c["harness-error"] else "")
                         for arm, c in self.arms.items())
        return (f"trials {self.done}/{self.planned} | {clock(self.elapsed())} elapsed, ETA "
                f"{clock(eta) if eta is not None else '?'} | {self.tokens(self.spent)} tokens"
                f"{budget}" + (f" | {arms}" if arms else ""))

    def _start_display(self) -> None:
        if self.live and self._display is None:
            console = Console(file=self.out, highlight=False, soft_wrap=True)
            self._display = Live(get_renderable=lambda: Text(self.status(), style="bold"),
                                 console=console, refresh_per_second=4, transient=True,
                                 redirect_stdout=False, redirect_stderr=False)
            self._display.start()

    def close(self) -> None:
        """Stop the live status (before the summary and on the way out)."""
        with self._lock:
            if self._display is not None:
                self._display.stop()
                self._display = None

    def tokens(self, value: float | None) -> str:
        if value is None:
            return "no"
        return token_figure(value, self.estimated)

    # -- events ---------------------------------------------------------------------

    def header(self, *, arms, cells: int, trials: int, driver: str, model: str, host: dict,
               self_review: bool, budget: float | None, jobs: int, store: str,
               probe: events.ModelProbe | None = None, rounds: bool = False) -> None:
        """The run's first lines; `rounds`: --until-decided plans its trials round by
        round, so none is counted ahead."""
        event = events.RunEvent(arms=arms, cells=cells, trials=trials, driver=driver, model=model,
                                host=host, self_review=self_review, budget=budget,
                                usage_estimated=self.estimated, jobs=jobs, store=store,
                                model_probe=probe)
        where = f"{host['kind']} {host['url']}" + (" (embedded)" if host.get("embedded") else "")
        planned = (f"trials planned round by round (--until-decided), {cells} cell(s)"
                   if rounds else f"{trials} trial(s) of {cells} cell(s)")
        lines = [f"benchkit run: {planned} ({', '.join(arms)}), "
                 f"driver {driver}, model {model}"
                 f"{f' (as {probe.given} resolves)' if probe is not None and probe.alias else ''}, "
                 f"{jobs} at a time",
                 f"host: {where}, self-review {'permitted' if self_review else 'forbidden'}; "
                 f"store: {store}"]
        if host.get("run_user"):
            lines.append(f"each trial runs as a user of its own (the probes as {host['run_user']}, "
                         "the run's own), deleted with its repository when it ends")
        elif host.get("containment") == "gateway":
            lines.append("containment rests on the gateway alone: the host token is yours "
                         "(--gateway-only-containment)")
        self.planned, self.budget = trials, budget
        if budget is not None:
            lines.append(f"budget: {budget:,.0f} cost-equivalent tokens")
        if self.estimated:
            lines.append("replay: no real tokens are spent; figures marked ~ are estimates "
                         "from bytes" + (", and they count against the budget" if budget is not None
                                         else ""))
        self.emit(event, "\n".join(lines))
        self._start_display()

    def skipped(self, skip: Skip) -> None:
        self.emit(events.SkippedEvent(arm=skip.arm, task=skip.task, reason=skip.reason),
                  f"not run: {skip.arm} {skip.task}: {skip.reason}")

    def budget_skip(self, number: int, skip: Skip, expected: float, left: float) -> None:
        self.emit(events.BudgetSkippedEvent(arm=skip.arm, task=skip.task, trial=number,
                                    expected_tokens=round(expected), left_tokens=round(left)),
                  f"skipped (budget): {skip.arm} {skip.task} trial {number}: "
                  f"expects {token_figure(expected, True)} tokens, {self.tokens(left)} left")

    def started(self, ticket, prepared: Prepared) -> None:
        trial = ticket.trial
        repo = prepared.repo.full_name if prepared.repo is not None else None
        event = events.StartEvent(n=ticket.number, arm=trial.arm.id, task=trial.task.id,
                                  trial=trial.index, repo=repo,
                                  expected_tokens=round(ticket.expected), expected_from=ticket.basis)
        where = f"on {repo}" if repo else f"(provisioning failed: {prepared.failure_class})"
        self.emit(event, f"[{ticket.number}/{self.planned}] {trial.arm.id} {trial.task.id} trial "
                         f"{trial.index}: started {where}, expects "
                         f"{token_figure(ticket.expected, True)} tokens "
                         f"({ticket.basis})")

    def ended(self, ticket, sample: Record, cost: float, scheduler) -> None:
        trial, totals = ticket.trial, scheduler.totals
        with self._lock:  # totals read and line written together
            why = detail(sample)
            event = events.EndEvent(n=ticket.number, arm=trial.arm.id, task=trial.task.id,
                                    trial=trial.index, sample=sample.id, outcome=sample.outcome,
                                    failure_class=sample.failure_class, valid=sample.valid,
                                    tokens=round(cost), usage_estimated=sample.usage_estimated,
                                    turns=sample.turns, seconds=sample.duration_s, detail=why,
                                    totals=totals.snapshot(_round(scheduler.left())))
            left = scheduler.left()
            self.planned, self.done, self.spent = totals.planned, totals.ran, totals.spent
            self.arms[trial.arm.id][sample.outcome] += 1
            budget = f", {self.tokens(left)} left" if left is not None else ""
            eta = self.eta()
            self.emit(event, f"[{ticket.number}/{self.planned}] {trial.arm.id} {trial.task.id} trial "
                             f"{trial.index}: {sample.outcome}{' - ' + why if why else ''}"
                             f" | {self.tokens(cost)} tokens, {sample.turns} turns, "
                             f"{sample.duration_s:.1f}s | so far {totals.ran}/{totals.planned} "
                             f"trial(s), {self.tokens(totals.spent)} tokens{budget}, "
                             f"{outcome_counts(totals.outcomes)} | {clock(self.elapsed())} elapsed, "
                             f"ETA {clock(eta) if eta is not None else '?'}")

    def interrupted(self) -> None:
        self.emit(events.InterruptEvent(),
                  "interrupted: stopping; what is running leaves no sample, and its "
                  "repositories are being deleted (Ctrl-C again, a second later, to leave "
                  "at once)")

    def summary(self, totals, *, not_run: list, budget: float | None,
                interrupted: bool, error: str | None, store: str) -> None:
        self.close()
        elapsed = time.monotonic() - self.started_at
        left = None if budget is None else budget - totals.spent
        event = events.SummaryEvent(ran=totals.ran, planned=totals.planned,
                                    outcomes=dict(totals.outcomes), spent_tokens=round(totals.spent),
                                    usage_estimated=self.estimated, budget=budget,
                                    left_tokens=_round(left),
                                    skipped_budget=list(totals.budget_skips), not_run=list(not_run),
                                    interrupted=interrupted,
                                    halted=None if interrupted else totals.halted, error=error,
                                    seconds=round(elapsed, 1), store=store)
        kind = "estimated (replay spends no real tokens)" if self.estimated else "cost-equivalent"
        spent = f"spent: {self.tokens(totals.spent)} tokens, {kind}"
        if budget is not None:
            spent += f"; budget {budget:,.0f}, {self.tokens(left)} left"
        lines = [f"done: {totals.ran} of {totals.planned} trial(s) in {elapsed:.1f}s: "
                 f"{outcome_counts(totals.outcomes)}", spent]
        if totals.budget_skips:
            cells = len({(s.arm, s.task) for s in totals.budget_skips})
            lines.append(f"skipped for the budget: {len(totals.budget_skips)} trial(s) of "
                         f"{cells} cell(s)")
        if not_run:
            lines.append(f"not run: {len(not_run)} cell(s), listed above")
        if interrupted:
            lines.append("interrupted: the running trial(s) left no sample; their "
                         "repositories were deleted")
        elif totals.halted:
            lines.append(f"halted: {totals.halted}")
        lines.append(f"samples: {store}")
        self.emit(event, "\n".join(lines))

    def report(self, paths) -> None:
        self.emit(events.ReportEvent(paths=[str(p) for p in paths]),
                  "report: " + ", ".join(str(p) for p in paths))


def detail(sample: Record) -> str:
    """Why a trial did not pass, in one line ("" when it passed)."""
    why = sample.failure_class or ""
    if sample.outcome == "failed" and sample.differences:
        why = sample.differences[0]
    elif sample.error:
        why = f"{why}: {sample.error.strip().splitlines()[0]}"
    return why


def outcome_counts(outcomes: Counter) -> str:
    return ", ".join(f"{count} {name}" for name, count in sorted(outcomes.items())) or "none run"


def _round(value):
    return None if value is None else round(value)


def clock(seconds: float) -> str:
    """4:05, or 1:02:03 past an hour."""
    minutes, secs = divmod(int(round(seconds)), 60)
    hours, minutes = divmod(minutes, 60)
    return f"{hours}:{minutes:02d}:{secs:02d}" if hours else f"{minutes}:{secs:02d}"
