"""`benchkit run`: the incremental, budget-aware, resumable run loop, on the command line.

    pre-flight (documents, tools, Claude, host)   nothing spent, nothing recorded on failure
    host: the given or discovered one, else an embedded forge for the run
    self-review probe -> tool probes (pre-flight, exit 2) -> the cells -> the plan
    (least-sampled first) -> the loop -> summary
    the report, unless --no-report

Exit status (benchkit.exits.EXIT_*): 0 done; 1 a harness error or a halt; 2 pre-flight,
usage, no chosen cell can run or the budget fits none of its trials (said before any
host is used); 128 + the signal for
Ctrl-C (130), SIGTERM (143) or SIGHUP (129). The loop itself is loop.py; one trial is
cell.py; one run on its host is invocation.py; the display is progress.py; --dry-run's plan
is dryrun.py.
"""

from __future__ import annotations

import contextlib
import copy
import functools
import os
from pathlib import Path
from typing import Protocol

import click

from benchkit.cost import token_figure
from benchkit.documents.loader import did_you_mean
from benchkit.documents.tree import find_root, yaml_files
from benchkit.errors import HarnessError
from benchkit.exits import EXIT_BAD_INPUT
from benchkit.gitea import CredentialsError
from benchkit.gitea.commands import host_options
from benchkit.run.decide import dry_round
from benchkit.run.dryrun import Plan, make_plan, self_review_unprobed
from benchkit.run.host import discover, open_host, run_access
from benchkit.run.invocation import Invocation
from benchkit.run.plan import Skip, select_cells
from benchkit.run.preflight import (
    Checked,
    Failure,
    PreflightError,
    load_documents,
    preflight,
)
from benchkit.run.progress import Progress
from benchkit.run.settings import RunSettings
from benchkit.run.tools import missing_tools
from benchkit.sample import TIERS
from benchkit.stopping import Interrupted, Stop
from benchkit.store import Store, Unwritable

EXIT_PREFLIGHT = EXIT_BAD_INPUT

class Renderer(Protocol):
    """Renders a store's report for the run's model and returns the paths written. The
    command line hands it down (`command`): the run stage does not import the report."""

    def __call__(self, store_dir: str | Path, reports_dir: str | Path, *,
                 model: str | None = None) -> list[Path]: ...


class Until(click.ParamType):
    """A number, or a depth suite.yaml sets, by its key: `floor` or `trials`."""
    name = "N|floor|trials"
    SUITE_KEYS = ("floor", "trials")

    def convert(self, value, param, ctx):
        if isinstance(value, int) or value in self.SUITE_KEYS:
            return value
        try:
            number = int(value)
        except ValueError:
            number = 0
        if number < 1:
            self.fail(f"{value!r}: expected a positive number, `floor` or `trials`", param, ctx)
        return number


class ArmFile(click.Path):
    """An arm's YAML file; an arm id or a mistyped name gets the file it likely meant."""

    def __init__(self) -> None:
        super().__init__(exists=True, dir_okay=False)

    def convert(self, value, param, ctx):
        if not isinstance(value, str) or Path(value).exists():
            return super().convert(value, param, ctx)
        root = find_root(required=False)
        arms = {path.stem: path for path in (yaml_files(root / "arms.d") if root else [])}
        hint = did_you_mean(Path(value).stem, arms,  # an arm's file is named by its id
                            shown=lambda arm: os.path.relpath(arms[arm]))
        self.fail(f"{value}: no such arm file{hint}", param, ctx)


@click.command()
@click.argument("arm_yamls", metavar="ARM_YAML...", nargs=-1, required=True, type=ArmFile())
@click.option("--task", "task_patterns", metavar="ID|GLOB", multiple=True,
              help="Task id or glob (e.g. 'fta-*'); repeat for more. Default: every task.")
@click.option("--tier", "tiers", type=click.Choice(TIERS), multiple=True,
              help="Only the chosen tasks of this tier; repeat for more.")
@click.option("--trials", type=click.IntRange(min=1), metavar="N",
              help="Add N samples to each chosen cell (default: 1).")
@click.option("--until", type=Until(), metavar="N|floor|trials",
              help="Top each cell up to N valid samples (`floor`: the suite's floor; "
                   "`trials`: the suite's trials, a full sweep); "
                   "trials that end in a harness error are run again.")
@click.option("--until-decided", is_flag=True,
              help="Run rounds of trials only where they can still change a verdict of the "
                   "headline comparison (cheaper / equivalent within the suite's margin), "
                   "until every pair is decided or out of reach; needs --budget.")
@click.option("--baseline", metavar="ARM",
              help="With --until-decided: compare each arm against this one, not every pair.")
@click.option("--budget", type=click.FloatRange(min=0), metavar="TOKENS",
              help="Cost-equivalent tokens to spend at most: a trial whose expected cost "
                   "exceeds what is left is not started.")
@click.option("--driver", "driver_name", type=click.Choice(["claude", "replay"]),
              default="claude", show_default=True,
              help="claude spends real tokens; replay plays refs.d/<arm>.yaml through a "
                   "scripted model (estimated usage, no tokens).")
@click.option("--model", help="Model for every arm (default: suite.yaml's).")
@click.option("--store", "store_dir", type=click.Path(file_okay=False), default="results",
              show_default=True, help="Store directory (results/<arm>/<task>.jsonl).")
@click.option("--jobs", type=click.IntRange(min=1, max=64), default=1, show_default=True,
              metavar="N",
              help="Trials run at once, each on its own repository.")
@click.option("--json", "json_mode", is_flag=True,
              help="Progress as JSON events on stdout (one per line), nothing else there.")
@click.option("--dry-run", is_flag=True,
              help="Print the plan (cells in order, expected tokens each and in total, what "
                   "would be skipped and why) and stop: nothing spent, started or written.")
@click.option("--no-report", is_flag=True, help="Do not render the report at the end.")
@click.option("--no-replay-failures", is_flag=True,
              help="Do not replay failed trials' own tool calls on a fresh repository at the "
                   "end (a passing replay marks the trial `not reproducible`).")
@click.option("--unconfined", is_flag=True,
              help="Run the agent's shell without the OS sandbox (bubblewrap): every sample "
                   "is marked unconfined, and the report says so.")
@click.option("--gateway-only-containment", "gateway_only", is_flag=True,
              help="Run with your own token behind the gateway, without a user of the run's "
                   "own (which needs a site administrator's token): the gateway alone then "
                   "bounds what an agent's requests reach, and every sample and the report "
                   "say so.")
@click.option("--only-installed", is_flag=True,
              help="Run the arms whose tools are installed here and list the others as not "
                   "run, with their install lines (without it, a missing tool stops the run "
                   "at pre-flight).")
@click.option("--reports", "reports_dir", type=click.Path(file_okay=False), default="reports",
              show_default=True, help="Where the report is rendered at the end.")
@host_options
@click.pass_context
def run(ctx: click.Context, arm_yamls, task_patterns, tiers, trials, until, until_decided,
        baseline, budget, driver_name, model, store_dir, jobs, json_mode, dry_run, no_report,
        no_replay_failures, only_installed, reports_dir, unconfined, gateway_only, host, token,
        login, render: Renderer | None = None):
    """Run trials of the cells ARM_YAML x chosen tasks and append their samples.

    Cells with the fewest valid samples go first. With no host given (--host/--token,
    GITEA_URL/GITEA_TOKEN, a tea login) the run starts an embedded forge. Ctrl-C (SIGTERM,
    SIGHUP) stops cleanly in any phase: what runs leaves no sample, no process, no
    repository; the report is left as it was, and the last line says how to render it.

    Exit status: 0 done; 1 harness errors (recorded apart, never scored) or a halt; 2 a
    pre-flight check failed, no chosen cell can run or --budget fits none of its trials
    (nothing started, nothing recorded); 130 Ctrl-C (143 SIGTERM, 129 SIGHUP: the same clean stop).

    \b
    Examples:
      benchkit run arms.d/raw-api.yaml --driver replay            # the main job, no tokens
      benchkit run arms.d/*.yaml --tier read --tier multi-step --until floor --dry-run
      benchkit run arms.d/tea.yaml --task 'fta-*' --task read-open-issue-count --budget 200000
    """
    if trials is not None and until is not None:
        raise click.UsageError("give --trials or --until, not both")
    if until_decided and (trials is not None or until is not None or budget is None):
        raise click.UsageError("--until-decided takes --budget, and neither --trials nor --until")
    if baseline is not None and not until_decided:
        raise click.UsageError("--baseline goes with --until-decided")
    progress = Progress(json_mode=json_mode, estimated=driver_name == "replay")
    report = None if no_report else (render, reports_dir)
    # One stop for every phase, from pre-flight to the report (benchkit.stopping).
    with Stop(note=progress.interrupted, say=progress.note) as stop:
        try:
            try:
                checked = (load_documents(arm_yamls, task_patterns=task_patterns, tiers=tiers,
                                          driver=driver_name, only_installed=only_installed)
                           if dry_run else
                           preflight(arm_yamls, task_patterns=task_patterns, tiers=tiers,
                                     driver=driver_name, host=host, token=token, login=login,
                                     confine=not unconfined, gateway_only=gateway_only,
                                     only_installed=only_installed))
            except PreflightError as error:
                ctx.exit(_preflight_failed(progress, error.failures, error.problems))
            for warning in checked.warnings:  # before anything starts
                progress.note(warning)
            for arm_id, why in checked.not_installed.items():
                progress.emit({"event": "not-installed", "arm": arm_id, "reason": why},
                              f"not run (--only-installed): {why}")
            if until in Until.SUITE_KEYS:  # the suite's floor or trials
                until = getattr(checked.tree.suite, until)
            if baseline is not None and baseline not in [arm.id for arm in checked.arms]:
                raise click.BadParameter(f"{baseline}: not one of the arms given "
                                         f"({', '.join(arm.id for arm in checked.arms)})",
                                         param_hint="--baseline")
            settings = RunSettings(
                driver=driver_name, store_dir=store_dir, trials=trials, until=until,
                budget=budget, model=model, jobs=jobs, confine=not unconfined,
                until_decided=until_decided, baseline=baseline,
                replay_failures=not no_replay_failures)
            if dry_run:
                ctx.exit(_dry_run(checked, progress, settings, host=host, token=token,
                                  login=login))
            status = _run(checked, progress, settings, report, stop)
        except Interrupted:  # pre-flight or its probes: cleaned up on the way here
            status = stop.status
        finally:
            progress.close()
        if stop.is_set():
            _after_interrupt(progress, store_dir, report)
            status = stop.status
    ctx.exit(status)


def command(render: Renderer | None) -> click.Command:
    """`benchkit run`, rendering the report at the end with `render` (None: the run
    says how to render it later)."""
    bound = copy.copy(run)
    assert run.callback is not None
    bound.callback = functools.partial(run.callback, render=render)
    return bound


def _run(checked: Checked, progress: Progress, settings: RunSettings,
         report: tuple[Renderer | None, str] | None, stop: Stop) -> int:
    """The run after pre-flight: the exit status. `report`: the renderer and the
    directory the report goes to at the end (None: --no-report). A stop raises
    Interrupted."""
    status = (_nothing_can_run(checked, progress) or _nothing_fits(checked, progress, settings)
              or _store_unwritable(progress, settings))
    if status:
        return status
    status, ran = _run_on_host(checked, progress, settings, stop)
    if ran and not stop.is_set() and report is not None:
        _report(progress, settings, *report)
    return status


def _after_interrupt(progress: Progress, store_dir: str,
                     report: tuple[Renderer | None, str] | None) -> None:
    """What a stopped run says last: how to render the report of what it kept. It
    renders none itself: a stop means now, and a report of a large store takes a while.
    A report it was rendering is left out whole (benchkit.report.publish)."""
    if report is None or not Path(store_dir).is_dir():
        return
    reports_dir = Path(report[1])
    kept = (f"{reports_dir} keeps the previous report, whole; "
            if (reports_dir / "report.md").exists() else "")
    progress.note(f"report: not rendered; {kept}`benchkit report --store {store_dir} "
                  f"--reports {reports_dir}` renders this run's")


def _nothing_can_run(checked: Checked, progress: Progress) -> int:
    """When no chosen cell can run on any host (no scoring spec, not applicable, no
    reference to replay), say why: exit 2 before a forge starts or a report renders."""
    cells, not_run = select_cells(checked.arms, checked.tasks, self_review=None,
                                  references=checked.references)
    if cells:
        return 0
    for skip in not_run:
        progress.skipped(skip)
    progress.note("nothing to run: no chosen cell can run (see `not run`); nothing was started")
    return EXIT_BAD_INPUT


def _nothing_fits(checked: Checked, progress: Progress, settings: RunSettings) -> int:
    """When the budget fits none of the trials the run would plan (the dry run's plan,
    from the store), say so: exit 2 before a forge starts, nothing is runnable."""
    if settings.budget is None or settings.until_decided:
        return 0
    plan = make_plan(checked, settings, self_review=self_review_unprobed(checked.credentials),
                     host="")
    return _budget_fits_nothing(plan, progress, listed=False)


def _budget_fits_nothing(plan: Plan, progress: Progress, *, listed: bool) -> int:
    """The one place that decides, for the run and its dry run alike, that the budget
    fits none of the plan's trials: say so and exit 2 (else 0). `listed`: the plan's
    lines (the dry run's) already name the cells and trials left out."""
    if plan.budget is None or plan.trials or not plan.over_budget:
        return 0
    if not listed:
        for skip in plan.skipped:
            progress.skipped(skip)
        for trial in plan.over_budget:
            progress.budget_skip(trial.trial, Skip(trial.arm, trial.task, "budget"),
                                 trial.expected, plan.budget)
    cheapest = min(trial.expected for trial in plan.over_budget)
    progress.note(f"nothing to run: the budget of {progress.tokens(plan.budget)} tokens fits no "
                  f"trial (the cheapest expects {token_figure(cheapest, True)}); nothing was started")
    return EXIT_BAD_INPUT


def _store_unwritable(progress: Progress, settings: RunSettings) -> int:
    """A store that cannot take a sample (read-only, not ours): one plain line, exit 2,
    before a forge starts or a token is spent."""
    try:
        Store(settings.store_dir).check_writable()
    except Unwritable as error:
        progress.note(f"error: {error}")
        return EXIT_BAD_INPUT
    return 0


def _dry_run(checked: Checked, progress: Progress, settings: RunSettings, *,
             host, token, login) -> int:
    """Print the plan; contact no host, start no forge, write nothing."""
    try:
        credentials = discover(host, token, login)
    except CredentialsError as error:
        progress.note(f"error: {error}")
        return EXIT_BAD_INPUT
    where = ("an embedded forge (not started)" if credentials is None
             else f"{credentials.url} (from {credentials.source}, not contacted)")
    self_review = self_review_unprobed(credentials)
    plan = make_plan(checked, settings, self_review=self_review, host=where)
    if settings.until_decided:  # what --until-decided would spend first, and why
        progress.note(f"dry run (--until-decided): nothing is spent, started or written; "
                      f"host {where}; the first round, from the store's samples:")
        dry_round(checked, progress, settings, self_review=self_review)
        return 0
    plan.tools_missing = missing_tools(checked.arms, checked.tree.suite)
    progress.emit(plan.to_dict(), "\n".join(plan.lines()))
    return _budget_fits_nothing(plan, progress, listed=True)


def _preflight_failed(progress: Progress, failures: list[Failure], problems: list) -> int:
    """Say what failed pre-flight (or the probes): exit 2, nothing spent."""
    for problem in problems:
        progress.note(str(problem))
    for failure in failures:
        if failure.check != "documents" or not problems:
            progress.note(str(failure))
    progress.emit({"event": "preflight", "ok": False,
                   "failures": [{"check": f.check, "message": f.message} for f in failures],
                   "problems": [str(p) for p in problems]}, None)
    return EXIT_PREFLIGHT


def _run_on_host(checked: Checked, progress: Progress, settings: RunSettings, stop: Stop
                 ) -> tuple[int, bool]:
    """Start the host, probe it, plan, run the loop: (the exit status, whether the
    loop ran: not when the probes failed)."""
    with contextlib.ExitStack() as stack:
        where = stack.enter_context(open_host(checked.credentials, progress.note))
        try:
            access = stack.enter_context(run_access(where, checked.tree.suite.repo_prefix,
                                                    own_user=checked.own_user,
                                                    note=progress.note))
        except HarnessError as error:
            failure = Failure("host", f"cannot make the run's own user: {error}")
            return _preflight_failed(progress, [failure], []), False
        invocation = Invocation(checked, progress, settings, access, stop=stop)
        try:
            invocation.probe()
        except HarnessError as error:
            failure = Failure("host", f"the self-review probe failed: {error}")
            return _preflight_failed(progress, [failure], []), False
        probed = invocation.probe_tools()
        if probed:
            failures = [Failure("probe", message) for message in probed]
            return _preflight_failed(progress, failures, []), False
        host = ({"url": where.url, "embedded": True} if checked.credentials is None
                else {"url": where.url, "embedded": False, "source": where.source})
        host.update(containment=access.containment, run_user=access.run_user)
        with invocation.store.run_lock(progress.note):  # the plan must see every earlier sample
            return invocation.execute(host), True


def _report(progress: Progress, settings: RunSettings, write_reports: Renderer | None,
            reports_dir: str) -> None:
    """Render the report of the whole store; a failure is a warning, not the run's."""
    store_dir, model = settings.store_dir, settings.model
    if not Path(store_dir).is_dir():
        return
    if write_reports is None:
        progress.note(f"warning: no report renderer here; `benchkit report --store "
                      f"{store_dir}` renders it")
        return
    try:
        paths = write_reports(store_dir, reports_dir, model=model)
    except Exception as error:  # the samples are safe; say why and go on
        progress.note(f"warning: the report was not rendered ({type(error).__name__}: {error}); "
                      f"`benchkit report --store {store_dir}` renders it later")
        return
    progress.report(paths)
