"""One `benchkit run`'s trials on its host, once the host is up and every probe passed:
the store, the drivers, each worker's RunContext, and the loop (or --until-decided's
rounds) that runs the plan, then the failure replay.

benchkit.run.execution makes one per run with what the probes found (the host's facts,
the arms with the surface each tool showed), so nothing here waits on a probe.
"""

from __future__ import annotations

from benchkit.agent.driver import Driver
from benchkit.agent.replay import ReplayDriver
from benchkit.documents import Arm, Tree
from benchkit.gitea import Client
from benchkit.planning.plan import choose, plan
from benchkit.planning.settings import RunSettings
from benchkit.planning.shard import label
from benchkit.preflight.checks import Checked
from benchkit.preflight.host import Access, HostFacts
from benchkit.run import events
from benchkit.run.cancel import Cancellable, CredentialsRefused
from benchkit.run.failures import replay_failures
from benchkit.run.loop import Looped, RunLoop
from benchkit.run.progress import Progress
from benchkit.run.rounds import run_rounds
from benchkit.run.schedule import Scheduler
from benchkit.run.status import RunEnd
from benchkit.sample import Runtime
from benchkit.stopping import Interrupted, Stop
from benchkit.store import GatedStore
from benchkit.trial.prepare import RunContext


class Invocation:
    """One run's trials: `checked` with its arms as the tool probes found them, whom the
    run acts as (`access`), what the host was found to be (`facts`)."""

    def __init__(self, checked: Checked, progress: Progress, settings: RunSettings,
                 access: Access, facts: HostFacts, *, stop: Stop):
        self.checked, self.progress, self.settings = checked, progress, settings
        self.access, self.facts = access, facts
        self.stop = stop  # the command's, installed around every phase
        self.store = GatedStore(settings.store_dir, secrets=access.secrets, stop=self.stop)
        self.drivers = {arm.id: self._driver(arm) for arm in checked.arms}

    def _driver(self, arm: Arm) -> Cancellable:
        driver: Driver
        if self.settings.driver == "replay":
            driver = ReplayDriver(self.checked.references[arm.id], confine=self.settings.confine)
        else:
            # Lazy: the SDK takes 1.5 s to import (measured: python -X importtime); --dry-run,
            # --help and replay runs do not pay it here.
            from benchkit.agent.claude import ClaudeDriver
            driver = ClaudeDriver(confine=self.settings.confine)
        return Cancellable(driver, self.stop)

    @property
    def runtime(self) -> Runtime | None:
        """The agent runtime every driver of the run runs (one CLI, one SDK)."""
        return next((d.runtime for d in self.drivers.values()), None)

    @property
    def tree(self) -> Tree:
        return self.checked.tree

    def context(self, arm: Arm) -> RunContext:
        """A RunContext with its own client (each worker thread has its own)."""
        tree = self.checked.tree
        return RunContext(suite=tree.suite, seeds=tree.seeds,
                          client=Client(self.access.url, self.access.token),
                          store=self.store, driver=self.drivers[arm.id], host=self.facts,
                          model=self.settings.model, root=tree.root, jobs=self.settings.jobs,
                          containment=self.access.containment,
                          admin_token=self.access.admin_token, run_user=self.access.run_user,
                          shard=label(self.settings.shard),
                          resolution=self.settings.resolved)

    def execute(self, host: dict) -> RunEnd:
        """Plan, run the trials, replay the failures; say the summary. A stop ends
        what runs and comes back as the RunEnd's `stopped`."""
        checked, progress, settings = self.checked, self.progress, self.settings
        suite, decide = checked.tree.suite, settings.until_decided
        model = settings.run_model(suite.model)
        chosen = choose(checked, settings, self_review=self.facts.self_review,
                        runtime=self.runtime, store=self.store)
        cells, ledger, intent = chosen.cells, chosen.ledger, chosen.intent
        for problem in ledger.problems:
            progress.note(f"warning: {problem} (skipped)")
        slots = [] if decide else plan(cells, ledger, trials=settings.trials, until=settings.until)
        scheduler = Scheduler(slots, ledger, progress, budget=chosen.budget_left(settings.budget),
                              retry_harness_errors=settings.until is not None,
                              harness_retries=suite.harness_retries, intent=intent)
        progress.header(arms=[arm.id for arm in checked.arms], cells=len(cells), trials=len(slots),
                        driver=settings.driver, model=model,
                        host={**host, "kind": self.facts.host.kind,
                              "version": self.facts.host.version},
                        self_review=self.facts.self_review, budget=settings.budget,
                        jobs=settings.jobs, store=str(settings.store_dir),
                        probe=events.model_probe(settings.resolved),
                        rounds=decide)
        for skip in chosen.not_run:
            progress.skipped(skip)
        if settings.shard is not None:
            progress.note(f"shard {label(settings.shard)}: {len(cells)} of the "
                          f"{len(chosen.every)} runnable cells (docs/scale-out.md)")
        if intent.resumed:
            progress.note(f"resuming this command, stopped after {sum(intent.done.values())} "
                          f"trial(s) (begun {intent.since}): only what is missing runs")
        empty_shard = not cells and settings.shard is not None and not chosen.not_run
        if empty_shard:
            progress.note(f"nothing to run: no chosen cell is shard {label(settings.shard)}'s "
                          "(fewer cells than shards)")
        elif not cells:
            progress.note("nothing to run: no chosen cell can run here (see `not run`)")
        elif not slots and not decide:
            progress.note(f"nothing to do: every chosen cell already has {settings.until} valid "
                          f"sample(s) of this driver and model")
        looped = Looped()
        try:
            if decide:
                looped = run_rounds(self, chosen, scheduler)
            else:
                looped = RunLoop(scheduler, self.context, progress, jobs=settings.jobs,
                                 stop=self.stop).run_trials()
            if settings.replay_failures and looped.failures and not looped.error \
                    and not looped.refused:
                replay_failures(looped.failures, self.context, progress, stop=self.stop)
        except CredentialsRefused as refused:  # in the failure replay
            looped = Looped(looped.failures, looped.error, str(refused))
        except Interrupted:  # what ran was cleaned up on the way here
            pass
        interrupted = self.stop.is_set()
        if not (interrupted or looped.error or looped.refused or scheduler.totals.halted
                or self.store.refused):
            intent.finish()  # done what it planned: the same command runs anew
        progress.summary(scheduler.totals, not_run=chosen.not_run, budget=settings.budget,
                         interrupted=interrupted, error=looped.error,
                         store=str(settings.store_dir))
        if looped.refused and not interrupted:  # one plain line, whatever the trials said
            progress.note(looped.refused)
        return RunEnd(
            "trials", stopped=self.stop.status if interrupted else None,
            # the model service refused the credentials, or the store refused a sample:
            # nothing more can be run, as with a read-only store before the run
            blocked=looped.refused or (str(self.store.refused) if self.store.refused else None),
            halted=looped.error or scheduler.totals.halted,
            harness_errors=scheduler.totals.outcomes.get("harness-error", 0),
            ran_nothing=not cells and not empty_shard)
