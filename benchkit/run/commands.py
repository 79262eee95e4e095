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
cell.py; the display is progress.py; --dry-run's plan is dryrun.py.
"""

from __future__ import annotations

import signal
import sys
import threading
from dataclasses import replace
from pathlib import Path

import click

from benchkit.agent.driver import Driver
from benchkit.agent.replay import ReplayDriver
from benchkit.errors import HarnessError
from benchkit.exits import EXIT_BAD_INPUT, EXIT_FAILED, EXIT_INTERRUPTED
from benchkit.gitea import Client, CredentialsError
from benchkit.gitea.commands import host_options
from benchkit.run.cell import RunContext
from benchkit.run.decide import dry_round, run_rounds
from benchkit.run.dryrun import make_plan
from benchkit.run.failures import replay_failures
from benchkit.run.host import HostFacts, discover, open_host, probe_host
from benchkit.run.ledger import Ledger
from benchkit.run.loop import Cancellable, GatedStore, RunLoop, new_tag
from benchkit.run.plan import Skip, plan, select_cells
from benchkit.run.preflight import Failure, PreflightError, load_documents, preflight
from benchkit.run.probe import ProbeSite, probe_arms
from benchkit.run.progress import Progress
from benchkit.run.schedule import Scheduler
from benchkit.sample import TIERS
from benchkit.spec import Arm

EXIT_TROUBLE, EXIT_PREFLIGHT = EXIT_FAILED, EXIT_BAD_INPUT


class Until(click.ParamType):
    name = "N|floor"

    def convert(self, value, param, ctx):
        if isinstance(value, int) or value == "floor":
            return value
        try:
            number = int(value)
        except ValueError:
            number = 0
        if number < 1:
            self.fail(f"{value!r}: expected a positive number or `floor`", param, ctx)
        return number


@click.command()
@click.argument("arm_yamls", metavar="ARM_YAML...", nargs=-1, required=True,
                type=click.Path(exists=True, dir_okay=False))
@click.option("--task", "task_patterns", metavar="ID|GLOB", multiple=True,
              help="Task id or glob (e.g. 'fta-*'); repeat for more. Default: every task.")
@click.option("--tier", "tiers", type=click.Choice(TIERS), multiple=True,
              help="Only the chosen tasks of this tier; repeat for more.")
@click.option("--trials", type=click.IntRange(min=1), metavar="N",
              help="Add N samples to each chosen cell (default: 1).")
@click.option("--until", type=Until(), metavar="N|floor",
              help="Top each cell up to N valid samples (`floor`: the suite's floor); "
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
@click.option("--reports", "reports_dir", type=click.Path(file_okay=False), default="reports",
              show_default=True, help="Where the report is rendered at the end.")
@host_options
def run(arm_yamls, task_patterns, tiers, trials, until, until_decided, baseline, budget,
        driver_name, model, store_dir, jobs, json_mode, dry_run, no_report, no_replay_failures,
        reports_dir, unconfined, host, token, login):
    """Run trials of the cells ARM_YAML x chosen tasks and append their samples.

    Cells with the fewest valid samples go first. With no host given (--host/--token,
    GITEA_URL/GITEA_TOKEN, a tea login) the run starts an embedded forge. Ctrl-C stops
    cleanly: the running trial leaves no sample and its repository is deleted.

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
    try:
        checked = (load_documents if dry_run else preflight)(
            arm_yamls, task_patterns=task_patterns, tiers=tiers, driver=driver_name,
            **({} if dry_run else dict(host=host, token=token, login=login,
                                       confine=not unconfined)))
    except PreflightError as error:
        _preflight_failed(progress, error.failures, error.problems)
    except KeyboardInterrupt:
        sys.exit(EXIT_INTERRUPTED)
    if until == "floor":
        until = checked.tree.suite.floor
    if baseline is not None and baseline not in [arm.id for arm in checked.arms]:
        raise click.BadParameter(f"{baseline}: not one of the arms given "
                                 f"({', '.join(arm.id for arm in checked.arms)})",
                                 param_hint="--baseline")
    options = dict(trials=trials, until=until, budget=budget, driver_name=driver_name,
                   model=model, store_dir=store_dir, jobs=jobs, confine=not unconfined,
                   decide={"baseline": baseline} if until_decided else None,
                   replay_failures=not no_replay_failures)
    if dry_run:
        sys.exit(_dry_run(checked, progress, options, host=host, token=token, login=login))
    _nothing_can_run(checked, progress)
    _nothing_fits(checked, progress, options)
    try:
        status = _run_on_host(checked, progress, options)
        if status < 128 and not no_report:  # not stopped by a signal
            _report(progress, store_dir, reports_dir, model)
    except KeyboardInterrupt:  # outside the loop, which handles Ctrl-C itself: no trial ran
        progress.note("interrupted")
        sys.exit(EXIT_INTERRUPTED)
    finally:
        progress.close()
    sys.exit(status)


def _nothing_can_run(checked, progress) -> None:
    """When no chosen cell can run on any host (no scoring spec, not applicable, no
    reference to replay), say why and exit 2 before a forge starts or a report renders."""
    cells, not_run = select_cells(checked.arms, checked.tasks, self_review=None,
                                  references=checked.references)
    if cells:
        return
    for skip in not_run:
        progress.skipped(skip)
    progress.note("nothing to run: no chosen cell can run (see `not run`); nothing was started")
    sys.exit(EXIT_BAD_INPUT)


def _nothing_fits(checked, progress, options) -> None:
    """When the budget fits none of the trials the run would plan (the dry run's plan,
    from the store), say so and exit 2 before a forge starts: nothing is runnable."""
    budget = options["budget"]
    if budget is None or options["decide"] is not None:
        return
    plan = make_plan(checked, trials=options["trials"], until=options["until"], budget=budget,
                     driver=options["driver_name"],
                     model=options["model"] or checked.tree.suite.model,
                     store_dir=options["store_dir"], self_review=None, host="")
    if plan.trials or not plan.over_budget:
        return
    for skip in plan.skipped:
        progress.skipped(skip)
    for trial in plan.over_budget:
        progress.budget_skip(trial.trial, Skip(trial.arm, trial.task, "budget"),
                             trial.expected, budget)
    cheapest = min(trial.expected for trial in plan.over_budget)
    progress.note(f"nothing to run: the budget of {progress.tokens(budget)} tokens fits no "
                  f"trial (the cheapest expects ~{cheapest:,.0f}); nothing was started")
    sys.exit(EXIT_BAD_INPUT)


def _dry_run(checked, progress, options, *, host, token, login) -> int:
    """Print the plan; contact no host, start no forge, write nothing."""
    try:
        credentials = discover(host, token, login)
    except CredentialsError as error:
        progress.note(f"error: {error}")
        return EXIT_BAD_INPUT
    where = ("an embedded forge (not started)" if credentials is None
             else f"{credentials.url} (from {credentials.source}, not contacted)")
    plan = make_plan(checked, trials=options["trials"], until=options["until"],
                     budget=options["budget"], driver=options["driver_name"],
                     model=options["model"] or checked.tree.suite.model,
                     store_dir=options["store_dir"],
                     self_review=False if credentials is None else None, host=where)
    if options["decide"] is not None:  # what --until-decided would spend first, and why
        progress.note(f"dry run (--until-decided): nothing is spent, started or written; "
                      f"host {where}; the first round, from the store's samples:")
        dry_round(checked, progress, options, self_review=False if credentials is None else None)
        return 0
    progress.emit(plan.to_dict(), "\n".join(plan.lines()))
    return 0


def _preflight_failed(progress, failures, problems) -> None:
    for problem in problems:
        progress.note(str(problem))
    for failure in failures:
        if failure.check != "documents" or not problems:
            progress.note(str(failure))
    progress.emit({"event": "preflight", "ok": False,
                   "failures": [{"check": f.check, "message": f.message} for f in failures],
                   "problems": [str(p) for p in problems]}, None)
    sys.exit(EXIT_PREFLIGHT)


def _run_on_host(checked, progress, options) -> int:
    """Start the host, probe it, plan, run the loop; the exit status."""
    with open_host(checked.credentials, progress.note) as where:
        invocation = Invocation(checked, progress, url=where.url, token=where.token, **options)
        try:
            invocation.probe()
        except HarnessError as error:
            failure = Failure("host", f"the self-review probe failed: {error}")
            _preflight_failed(progress, [failure], [])
        probed = invocation.probe_tools()
        if probed:
            _preflight_failed(progress, [Failure("probe", message) for message in probed], [])
        host = ({"url": where.url, "embedded": True} if checked.credentials is None
                else {"url": where.url, "embedded": False, "source": where.source})
        with invocation.store.run_lock(progress.note):  # the plan must see every earlier sample
            return invocation.execute(host)


class Invocation:
    """One `benchkit run`'s state: the store, drivers, the host's facts, contexts, and
    the loop's parts."""

    def __init__(self, checked, progress, *, url, token, trials, until, budget, driver_name,
                 model, store_dir, jobs, confine, decide=None, replay_failures=True):
        self.checked, self.progress = checked, progress
        self.url, self.token = url, token
        self.trials, self.until, self.budget = trials, until, budget
        self.driver_name, self.model = driver_name, model
        self.store_dir, self.jobs = store_dir, jobs
        self.confine = confine
        self.decide = decide  # --until-decided: {"baseline": ARM or None}
        self.replay_failures = replay_failures  # at the end, unless --no-replay-failures
        self.failures: list = []  # (trial, TrialResult) of the run's failures
        self.signal: int | None = None  # the signal that stopped the run, if one did
        self.stop, self.tag = threading.Event(), new_tag()
        self.store = GatedStore(store_dir, secrets=[token], stop=self.stop)
        self.drivers = {arm.id: self._driver(arm) for arm in checked.arms}
        self.facts: HostFacts | None = None  # probe(), once the host is up

    def _driver(self, arm: Arm) -> Cancellable:
        driver: Driver
        if self.driver_name == "replay":
            driver = ReplayDriver(self.checked.references[arm.id], confine=self.confine)
        else:
            # Lazy: the SDK takes 1.5 s to import (measured: python -X importtime); --dry-run,
            # --help and replay runs do not pay it here.
            from benchkit.agent.claude import ClaudeDriver
            driver = ClaudeDriver(confine=self.confine)
        return Cancellable(driver, self.stop, self.tag)

    @property
    def self_review(self) -> bool | None:
        return None if self.facts is None else self.facts.self_review

    def context(self, arm: Arm) -> RunContext:
        """A RunContext with its own client (each worker thread has its own)."""
        assert self.facts is not None, "probe() first"
        tree = self.checked.tree
        return RunContext(suite=tree.suite, seeds=tree.seeds, client=Client(self.url, self.token),
                          store=self.store, driver=self.drivers[arm.id], host=self.facts,
                          model=self.model, root=tree.root, jobs=self.jobs)

    def probe(self) -> None:
        """Once per host: may a user review their own pull request (which variant of
        the review tasks runs), and what kind of host this is."""
        with Client(self.url, self.token) as client:
            self.facts = probe_host(client, self.checked.tree.suite.repo_prefix)

    def probe_tools(self) -> list[str]:
        """Each arm's tool probe on a seeded repository (the seed of the first chosen
        task): what failed, one message each. Each arm takes the surface its probe met,
        which every sample records (its fingerprint with it)."""
        tree, tasks = self.checked.tree, self.checked.tasks
        seed = tree.seeds[tasks[0].seed] if tasks else next(iter(tree.seeds.values()))
        assert self.facts is not None, "probe() first"
        with Client(self.url, self.token) as client:
            site = ProbeSite(client, tree.suite, self.facts, root=tree.root)
            problems, surfaces = probe_arms(self.checked.arms, site, seed, confine=self.confine)
        self.checked.arms = [replace(arm, surface=surfaces.get(arm.id)) for arm in self.checked.arms]
        return problems

    def execute(self, host: dict) -> int:
        assert self.facts is not None, "probe() first"
        checked, progress, suite = self.checked, self.progress, self.checked.tree.suite
        model = self.model or suite.model
        cells, not_run = select_cells(checked.arms, checked.tasks, self_review=self.self_review,
                                      references=checked.references)
        ledger = Ledger(cells, checked.tree.seeds, suite, driver=self.driver_name,
                        model=model).load(self.store)
        slots = [] if self.decide else plan(cells, ledger, trials=self.trials, until=self.until)
        scheduler = Scheduler(slots, ledger, progress, budget=self.budget,
                              retry_harness_errors=self.until is not None)
        progress.header(arms=[arm.id for arm in checked.arms], cells=len(cells), trials=len(slots),
                        driver=self.driver_name, model=model,
                        host={**host, "kind": self.facts.host.kind,
                              "version": self.facts.host.version},
                        self_review=self.self_review, budget=self.budget, jobs=self.jobs,
                        store=str(self.store_dir))
        for skip in not_run:
            progress.skipped(skip)
        if not cells:
            progress.note("nothing to run: no chosen cell can run here (see `not run`)")
        elif not slots and not self.decide:
            progress.note(f"nothing to do: every chosen cell already has {self.until} valid "
                          f"sample(s) of this driver and model")
        if self.decide:
            error = run_rounds(self, cells, ledger, scheduler)
        else:
            loop = RunLoop(scheduler, self.context, progress, jobs=self.jobs, stop=self.stop,
                           tag=self.tag, failures=self.failures)
            loop.run_trials()
            error, self.signal = loop.error, loop.signal
        interrupted = self.stop.is_set()
        if self.replay_failures and self.failures and not interrupted and not error:
            replay_failures(self.failures, self.context, progress)
        progress.summary(scheduler.totals, not_run=not_run, budget=self.budget,
                         interrupted=interrupted, error=error, store=str(self.store_dir))
        if interrupted:  # 130 Ctrl-C, 143 SIGTERM, 129 SIGHUP
            return 128 + (self.signal or signal.SIGINT)
        trouble = (error or scheduler.totals.halted or not cells
                   or scheduler.totals.outcomes.get("harness-error"))
        return EXIT_TROUBLE if trouble else 0


def _report(progress, store_dir, reports_dir, model) -> None:
    """Render the report of the whole store; a failure is a warning, not the run's."""
    if not Path(store_dir).is_dir():
        return
    # The command line hands the renderer down (the run stage does not import the report).
    context = click.get_current_context(silent=True)
    write_reports = ((context.find_root().obj if context else None) or {}).get("write_reports")
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
