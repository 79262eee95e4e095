"""A run's lifetime after pre-flight, owned here from end to end: the checks that need
no host (something can run, the budget fits a trial, the store takes samples), the host
(the given one, else an embedded forge), the run's own user, the host's and the tools'
probes, the store's lock, the trials (benchkit.run.invocation), the report. Each phase
ends in a RunEnd (benchkit.run.status), which alone decides the exit status.

    end = execute(checked, progress, settings, stop, report)
"""

from __future__ import annotations

import contextlib
from dataclasses import replace
from pathlib import Path

from benchkit.errors import HarnessError
from benchkit.gitea import Client
from benchkit.gitea.sweep import sweep
from benchkit.planning.compared import NoComparison
from benchkit.planning.plan import select_cells
from benchkit.planning.settings import ReportTarget, RunSettings
from benchkit.preflight.checks import Checked, Failure
from benchkit.preflight.host import (
    HostFacts,
    Journaled,
    journaled,
    open_host,
    probe_host,
    run_access,
)
from benchkit.preflight.probe import ProbeSite, probe_arms
from benchkit.run import events
from benchkit.run.dryrun import budget_fits_nothing, make_plan, self_review_unprobed
from benchkit.run.invocation import Invocation
from benchkit.run.progress import Progress
from benchkit.run.rounds import planned, unprobed
from benchkit.run.status import Phase, RunEnd
from benchkit.stopping import Stop, shielded
from benchkit.store import Store, Unwritable, check_writable


def execute(checked: Checked, progress: Progress, settings: RunSettings, stop: Stop,
            report: ReportTarget | None) -> RunEnd:
    """The run after pre-flight; a stop in the probes raises Interrupted (the command
    says so), one in the trials comes back as the RunEnd's `stopped`."""
    end = (_plan_gates(checked, progress, settings, report)
           or _on_host(checked, progress, settings, stop))
    if end.phase == "trials" and not stop.is_set() and report is not None:
        _report(progress, settings, report)
    return end


def preflight_failed(progress: Progress, failures: list[Failure], problems: list,
                     phase: Phase = "pre-flight") -> RunEnd:
    """Say what failed pre-flight (or the host's set-up, or the probes): nothing spent."""
    for problem in problems:
        progress.note(str(problem))
    for failure in failures:
        if failure.check != "documents" or not problems:
            progress.note(str(failure))
    progress.emit(events.PreflightEvent(ok=False,
                                        failures=[events.Failed(f.check, f.message) for f in failures],
                                        problems=[str(p) for p in problems]), None)
    return RunEnd(phase, blocked="; ".join(map(str, [*problems, *failures])))


def after_interrupt(progress: Progress, store_dir: str, report: ReportTarget | None) -> None:
    """What a stopped run says last: how to render the report of what it kept. It
    renders none itself: a stop means now, and a report of a large store takes a while.
    A report it was rendering is left out whole (benchkit.report.publish)."""
    if report is None or not Path(store_dir).is_dir():
        return
    reports_dir = Path(report.reports_dir)
    kept = (f"{reports_dir} keeps the previous report, whole; "
            if (reports_dir / "report.md").exists() else "")
    progress.note(f"report: not rendered; {kept}`benchkit report --store {store_dir} "
                  f"--reports {reports_dir}` renders this run's")


def _plan_gates(checked: Checked, progress: Progress, settings: RunSettings,
                report: ReportTarget | None) -> RunEnd | None:
    """What stops a run before a forge starts or a host is asked: no chosen cell can run
    on any host (no scoring spec, not applicable, no reference to replay), a budget that
    fits none of the planned trials, a store that cannot take a sample, a reports
    directory the report cannot go to (found after the trials, it could only warn)."""
    cells, not_run = select_cells(checked.arms, checked.tasks, self_review=None,
                                  references=checked.references)
    if not cells:
        for skip in not_run:
            progress.skipped(skip)
        line = "nothing to run: no chosen cell can run (see `not run`); nothing was started"
        progress.note(line)
        return RunEnd("plan", blocked=line)
    if settings.budget is not None and not settings.until_decided:
        plan = make_plan(checked, settings, host="",
                         self_review=self_review_unprobed(checked.credentials))
        blocked = budget_fits_nothing(plan, progress, listed=False)
        if blocked:
            return RunEnd("plan", blocked=blocked)
    if settings.against_version is not None:  # a refusal, before any host or probe
        try:
            before, versions = unprobed(checked)
            planned(before, settings, self_review=None, installed=versions)
        except NoComparison as error:
            progress.note(f"error: {error}")
            return RunEnd("plan", blocked=str(error))
    try:
        Store(settings.store_dir).check_writable()
    except Unwritable as error:
        progress.note(f"error: {error}")
        return RunEnd("plan", blocked=str(error))
    try:
        if report is not None:
            check_writable(report.reports_dir)
    except Unwritable as error:
        progress.note(f"error: --reports: {error} (or give --no-report)")
        return RunEnd("plan", blocked=str(error))
    return None


def _kept_arms(checked: Checked, progress: Progress, settings: RunSettings) -> RunEnd | None:
    """The documents of the arms taken from outside the tree, kept in the store for the
    report (benchkit.store.Store.keep_arm), once pre-flight and the probes passed (a run
    that stops before records nothing); an arm arms.d/ defines is the tree's."""
    try:
        for arm in checked.arms:
            if arm.id not in checked.tree.arms:
                Store(settings.store_dir).keep_arm(arm.id, arm.path)
    except Unwritable as error:
        progress.note(f"error: {error}")
        return RunEnd("plan", blocked=str(error))
    return None


def _on_host(checked: Checked, progress: Progress, settings: RunSettings, stop: Stop) -> RunEnd:
    """The run on its host under the run's journal (benchkit.journal): a run that leaves
    a user or repository behind says so and ends `left_behind`."""
    try:
        with journaled(settings.store_dir, progress.note) as held:
            end = _journaled_run(checked, progress, settings, stop, held)
    except Unwritable as error:  # no journal, so nothing may be made: a full disk
        progress.note(f"error: {error}")
        return RunEnd("host", blocked=str(error))
    return replace(end, left_behind=True) if held.leftover else end


def _journaled_run(checked: Checked, progress: Progress, settings: RunSettings, stop: Stop,
                   held: Journaled) -> RunEnd:
    """Start the host, sweep what dead runs on this store left there, make the run's
    user, probe the host and each arm's tool, take the store's lock (the plan must see
    every earlier sample) and run the trials; the user and the forge go when the block
    ends, however it ends."""
    with contextlib.ExitStack() as stack:
        where = stack.enter_context(open_host(checked.credentials, progress.note,
                                              checked.throwaway))
        held.on(where.url, embedded=checked.credentials is None)
        with where.client(retries=1) as admin:  # what dead runs on this store left
            sweep([settings.store_dir], admin, progress.note, registry=False,
                  command=f"benchkit gc --yes --store {settings.store_dir}")
        try:
            access = stack.enter_context(run_access(where, checked.tree.suite.repo_prefix,
                                                    own_user=checked.own_user,
                                                    note=progress.note))
        except HarnessError as error:
            failure = Failure("host", f"cannot make the run's own user: {error}")
            return preflight_failed(progress, [failure], [], "host")
        try:
            facts = _probe_host(checked, access.url, access.token, access.admin_token)
        except HarnessError as error:
            failure = Failure("host", f"the self-review probe failed: {error}")
            return preflight_failed(progress, [failure], [], "probe")
        probed, problems = _probe_tools(checked, access.url, access.token, access.admin_token,
                                        facts, settings)
        if problems:
            return preflight_failed(progress, [Failure("probe", m) for m in problems], [],
                                    "probe")
        host = ({"url": where.url, "embedded": True} if checked.credentials is None
                else {"url": where.url, "embedded": False, "source": where.source})
        host.update(containment=access.containment, run_user=access.run_user)
        kept = _kept_arms(checked, progress, settings)  # only once the trials will run
        if kept is not None:
            return kept
        invocation = Invocation(probed, progress, settings, access, facts, stop=stop)
        with invocation.store.run_lock(progress.note):
            return invocation.execute(host)
    raise AssertionError("unreachable")  # mypy: the ExitStack may swallow an exception


def _probe_host(checked: Checked, url: str, token: str, admin_token: str | None) -> HostFacts:
    """Once per host: may a user review their own pull request (which variant of the
    review tasks runs), and what kind of host this is."""
    with Client(url, token) as client, shielded():  # its repository is deleted
        return probe_host(client, checked.tree.suite.repo_prefix, admin_token)


def _probe_tools(checked: Checked, url: str, token: str, admin_token: str | None,
                 facts: HostFacts, settings: RunSettings) -> tuple[Checked, list[str]]:
    """Each arm's tool probe on a seeded repository (the seed of the first chosen task):
    the arms as probed (each takes the surface its probe met and the version its tool
    printed inside the sandbox, which every sample records, its fingerprint with the
    surface) and what failed, one message each."""
    tree, tasks = checked.tree, checked.tasks
    seed = tree.seeds[tasks[0].seed] if tasks else next(iter(tree.seeds.values()))
    with Client(url, token) as client:
        site = ProbeSite(client, tree.suite, facts, root=tree.root, admin_token=admin_token)
        versions: dict[str, str] = {}  # as the sandbox runs each tool: what samples record
        problems, surfaces = probe_arms(checked.arms, site, seed, confine=settings.confine,
                                        versions=versions)
    arms = [replace(arm, surface=surfaces.get(arm.id),
                    tool_version=versions.get(arm.id, arm.tool_version)) for arm in checked.arms]
    return replace(checked, arms=arms), problems


def _report(progress: Progress, settings: RunSettings, report: ReportTarget) -> None:
    """Render the report of the whole store; a failure is a warning, not the run's."""
    store_dir, model = settings.store_dir, settings.reported_model
    if not Path(store_dir).is_dir():
        return
    if report.render is None:
        progress.note(f"warning: no report renderer here; `benchkit report --store "
                      f"{store_dir}` renders it")
        return
    try:
        paths = report.render(store_dir, report.reports_dir, model=model)
    except Exception as error:  # the samples are safe; say why and go on
        progress.note(f"warning: the report was not rendered ({type(error).__name__}: {error}); "
                      f"`benchkit report --store {store_dir}` renders it later")
        return
    progress.report(paths)
