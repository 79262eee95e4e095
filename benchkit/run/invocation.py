"""One `benchkit run` on its host: the store, the drivers, the host's facts, each
worker's RunContext, and the loop (or --until-decided's rounds) that runs the plan.

benchkit.run.commands makes one per run once the host is up and pre-flight passed.
"""

from __future__ import annotations

from dataclasses import replace

from benchkit.agent.driver import Driver
from benchkit.agent.replay import ReplayDriver
from benchkit.documents import Arm, Tree
from benchkit.exits import EXIT_BAD_INPUT
from benchkit.exits import EXIT_FAILED as EXIT_TROUBLE
from benchkit.gitea import Client
from benchkit.run.cancel import Cancellable, GatedStore
from benchkit.run.decide import run_rounds
from benchkit.run.failures import replay_failures, settle_host_error
from benchkit.run.host import Access, HostFacts, probe_host
from benchkit.run.ledger import Ledger
from benchkit.run.loop import RunLoop
from benchkit.run.plan import plan, select_cells
from benchkit.run.preflight import Checked
from benchkit.run.prepare import RunContext
from benchkit.run.probe import ProbeSite, probe_arms
from benchkit.run.progress import Progress
from benchkit.run.schedule import Scheduler
from benchkit.run.settings import RunSettings
from benchkit.sample import Runtime
from benchkit.stopping import Interrupted, Stop, shielded


class Invocation:
    """One `benchkit run`'s state: the store, drivers, the host's facts, contexts, and
    the loop's parts."""

    def __init__(self, checked: Checked, progress: Progress, settings: RunSettings,
                 access: Access, *, stop: Stop):
        self.checked, self.progress, self.settings = checked, progress, settings
        self.access = access  # whom the run acts as: the trials' repositories are its user's
        self.url, self.token = access.url, access.token
        self.failures: list = []  # (trial, TrialResult) of the run's failures
        self.stop = stop  # the command's, installed around every phase
        self.refused: list[str] = []  # the model service's refusal of the credentials
        self.store = GatedStore(settings.store_dir, secrets=access.secrets, stop=self.stop)
        self.drivers = {arm.id: self._driver(arm) for arm in checked.arms}
        self.facts: HostFacts | None = None  # probe(), once the host is up

    def _driver(self, arm: Arm) -> Cancellable:
        driver: Driver
        if self.settings.driver == "replay":
            driver = ReplayDriver(self.checked.references[arm.id], confine=self.settings.confine)
        else:
            # Lazy: the SDK takes 1.5 s to import (measured: python -X importtime); --dry-run,
            # --help and replay runs do not pay it here.
            from benchkit.agent.claude import ClaudeDriver
            driver = ClaudeDriver(confine=self.settings.confine)
        return Cancellable(driver, self.stop, self.refused)

    @property
    def runtime(self) -> Runtime | None:
        """The agent runtime every driver of the run runs (one CLI, one SDK)."""
        return next((d.runtime for d in self.drivers.values()), None)

    @property
    def tree(self) -> Tree:
        return self.checked.tree

    @property
    def self_review(self) -> bool | None:
        return None if self.facts is None else self.facts.self_review

    def context(self, arm: Arm) -> RunContext:
        """A RunContext with its own client (each worker thread has its own)."""
        assert self.facts is not None, "probe() first"
        tree = self.checked.tree
        return RunContext(suite=tree.suite, seeds=tree.seeds, client=Client(self.url, self.token),
                          store=self.store, driver=self.drivers[arm.id], host=self.facts,
                          model=self.settings.model, root=tree.root, jobs=self.settings.jobs,
                          containment=self.access.containment,
                          admin_token=self.access.admin_token,
                          settle=settle_host_error if self.settings.replay_failures else None)

    def probe(self) -> None:
        """Once per host: may a user review their own pull request (which variant of
        the review tasks runs), and what kind of host this is."""
        with Client(self.url, self.token) as client, shielded():  # its repository is deleted
            self.facts = probe_host(client, self.checked.tree.suite.repo_prefix,
                                    self.access.admin_token)

    def probe_tools(self) -> list[str]:
        """Each arm's tool probe on a seeded repository (the seed of the first chosen
        task): what failed, one message each. Each arm takes the surface its probe met,
        which every sample records (its fingerprint with it)."""
        tree, tasks = self.checked.tree, self.checked.tasks
        seed = tree.seeds[tasks[0].seed] if tasks else next(iter(tree.seeds.values()))
        assert self.facts is not None, "probe() first"
        with Client(self.url, self.token) as client:
            site = ProbeSite(client, tree.suite, self.facts, root=tree.root,
                             admin_token=self.access.admin_token)
            versions: dict[str, str] = {}  # as the sandbox runs each tool: what samples record
            problems, surfaces = probe_arms(self.checked.arms, site, seed,
                                            confine=self.settings.confine, versions=versions)
        self.checked.arms = [replace(arm, surface=surfaces.get(arm.id),
                                     tool_version=versions.get(arm.id, arm.tool_version))
                             for arm in self.checked.arms]
        return problems

    def execute(self, host: dict) -> int:
        assert self.facts is not None, "probe() first"
        checked, progress, settings = self.checked, self.progress, self.settings
        suite, decide = checked.tree.suite, settings.until_decided
        model = settings.run_model(suite.model)
        cells, not_run = select_cells(checked.arms, checked.tasks, self_review=self.self_review,
                                      references=checked.references)
        ledger = Ledger(cells, checked.tree.seeds, suite, driver=settings.driver,
                        model=model, runtime=self.runtime).load(self.store)
        for problem in ledger.problems:
            progress.note(f"warning: {problem} (skipped)")
        slots = [] if decide else plan(cells, ledger, trials=settings.trials, until=settings.until)
        scheduler = Scheduler(slots, ledger, progress, budget=settings.budget,
                              retry_harness_errors=settings.until is not None,
                              harness_retries=suite.harness_retries)
        progress.header(arms=[arm.id for arm in checked.arms], cells=len(cells), trials=len(slots),
                        driver=settings.driver, model=model,
                        host={**host, "kind": self.facts.host.kind,
                              "version": self.facts.host.version},
                        self_review=self.facts.self_review, budget=settings.budget,
                        jobs=settings.jobs,
                        store=str(settings.store_dir))
        for skip in not_run:
            progress.skipped(skip)
        if not cells:
            progress.note("nothing to run: no chosen cell can run here (see `not run`)")
        elif not slots and not decide:
            progress.note(f"nothing to do: every chosen cell already has {settings.until} valid "
                          f"sample(s) of this driver and model")
        error = None
        try:
            if decide:
                error = run_rounds(self, cells, ledger, scheduler)
            else:
                loop = RunLoop(scheduler, self.context, progress, jobs=settings.jobs,
                               stop=self.stop, failures=self.failures)
                try:
                    loop.run_trials()
                finally:
                    error = loop.error
            if settings.replay_failures and self.failures and not error and not self.refused:
                replay_failures(self.failures, self.context, progress, stop=self.stop)
        except Interrupted:  # what ran was cleaned up on the way here
            pass
        interrupted = self.stop.is_set()
        progress.summary(scheduler.totals, not_run=not_run, budget=settings.budget,
                         interrupted=interrupted, error=error, store=str(settings.store_dir))
        if self.refused and not interrupted:  # one plain line, whatever the trials said
            progress.note(self.refused[0])
            return EXIT_BAD_INPUT
        if interrupted:  # 130 Ctrl-C, 143 SIGTERM, 129 SIGHUP
            return self.stop.status
        if self.store.refused:  # the store cannot take samples: bad input, like a read-only one
            return EXIT_BAD_INPUT
        trouble = (error or scheduler.totals.halted or not cells
                   or scheduler.totals.outcomes.get("harness-error"))
        return EXIT_TROUBLE if trouble else 0
