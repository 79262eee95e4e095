"""What a trial starts from: the run's shared context, and the trial prepared (its
repository provisioned, seeded and behind the readiness gate, the agent's throwaway
token at the gateway, and on a forge a host token for this trial alone behind it).
A trial is prepared ahead of its agent (benchkit.run.loop) and played by
benchkit.run.cell, which discards what was prepared on every path.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from benchkit.agent.driver import AgentRun, Coordinates, Driver
from benchkit.documents import Seed, Suite
from benchkit.errors import HarnessError
from benchkit.gateway.framing import Limits
from benchkit.gateway.server import Gateway, Grant, gateway_for
from benchkit.gitea import Client, Repo, delete_repo, provision
from benchkit.gitea.admin import mint_agent_token, revoke_agent_token
from benchkit.run.host import HostFacts
from benchkit.run.outcome import harness_class
from benchkit.run.plan import Trial, not_runnable
from benchkit.sample import Containment, Record
from benchkit.scrub import environment_secrets
from benchkit.stopping import shielded, stopping
from benchkit.store import Store

log = logging.getLogger(__name__)


# (trial, ctx, record, the agent's run, where it ran) -> None, the record amended
Settle = Callable[["Trial", "RunContext", Record, AgentRun, Coordinates], None]


class CellError(ValueError):
    """A trial that cannot run at all (no scoring spec, not applicable to the arm or
    the host, unknown seed): nothing is provisioned, nothing recorded."""


@dataclass
class RunContext:
    """What every trial of a run shares: the suite, the host and what it was found to
    be, the store, the driver. Configuration only: nothing here asks the host."""

    suite: Suite
    seeds: dict[str, Seed]
    client: Client                   # the harness's own, on the host
    store: Store
    driver: Driver
    host: HostFacts                  # benchkit.run.host.probe_host, once per host
    model: str | None = None         # --model, else the suite's
    root: Path | None = None         # the loaded tree's root: `{{ root }}` in an arm
    gate_timeout: float = 60.0
    jobs: int = 1                    # trials the run has going at once (durations depend on it)
    gateway: Gateway | None = None   # the agent's one way to the host; None: the run's own
    # The client's token is the run's own user's (benchkit.run.host.Access) or, with
    # gateway-only containment, the maintainer's; the maintainer's reaches the forge's
    # admin routes (None: the client's is the maintainer's).
    containment: Containment = "gateway"
    admin_token: str | None = field(default=None, repr=False)
    # Decides, before the record is stored, what a host 5xx the agent met makes of the
    # trial (benchkit.run.failures.settle_host_error); None: it stays a harness error.
    settle: Settle | None = None

    def __post_init__(self) -> None:
        if self.gateway is None:
            self.gateway = gateway_for(self.client.url, limits(self.suite))

    def secrets(self) -> list[str]:
        """What never reaches the store: the host tokens, the driver's credentials, the
        harness's secret-looking variables."""
        return [self.client.token or "", self.admin_token or "",
                *getattr(self.driver, "secrets", ()), *environment_secrets()]

    @property
    def admin(self) -> str | None:
        """The maintainer's token, for the forge's admin routes."""
        return self.admin_token or self.client.token

    @property
    def run_model(self) -> str:
        return self.model or self.suite.model


@dataclass
class Prepared:
    """A provisioned, seeded, gated repository (or why there is none), the agent's pass
    at the gateway, and on a forge a host token for this trial alone behind it."""

    trial: Trial
    seed: Seed
    repo: Repo | None = None
    error: str | None = None
    failure_class: str | None = None
    token: str | None = field(default=None, repr=False)  # the forge's for this trial
    token_id: str | None = None      # its identity in the forge's request log
    grant: Grant | None = None       # the agent's throwaway token at the gateway

    def agent_token(self, ctx: RunContext) -> str:
        """The only token the agent ever holds: valid at the gateway, for this trial."""
        return self.grant.token if self.grant is not None else ""

    def end_grant(self, ctx: RunContext) -> None:
        """The grant ends; on a stop, what it has in flight is cut off at once."""
        if self.grant is not None and ctx.gateway is not None:
            ctx.gateway.end(self.grant, abort=stopping)

    def discard(self, ctx: RunContext) -> str | None:
        """Delete the repository (a run loop that will not use it) and revoke the
        agent's tokens; a note if the repository could not be deleted. A stop waits
        until it is done."""
        with shielded():
            return self._discard(ctx)

    def _discard(self, ctx: RunContext) -> str | None:
        self.end_grant(ctx)
        if self.token_id is not None:
            revoke_agent_token(ctx.client.url, ctx.admin, self.token_id)
            self.token_id = None
        repo, self.repo = self.repo, None
        if repo is None:
            return None
        try:
            delete_repo(ctx.client, repo.owner, repo.name)
            return None
        except Exception as exc:  # the run's own result matters more
            log.warning("could not delete %s: %s", repo.full_name, ctx.client.scrub(str(exc)))
            return f"repository {repo.full_name} was left behind (`benchkit gc` finds it)"


def limits(suite: Suite) -> Limits:
    """The gateway's limits, as the suite sets them."""
    return Limits(suite.max_request_bytes, suite.max_trial_upload_bytes,
                  suite.max_trial_connections, suite.request_arrival_seconds)


def runnable(trial: Trial, ctx: RunContext) -> None:
    """Raise CellError when the trial cannot produce a sample worth having."""
    task = trial.task
    reason = not_runnable(trial.arm, task, ctx.host.self_review)
    if reason is None and task.seed not in ctx.seeds:
        reason = f"names seed {task.seed!r}, which is not loaded"
    if reason:
        raise CellError(f"task {task.id} on arm {trial.arm.id}: {reason}")


def prepare_trial(trial: Trial, ctx: RunContext) -> Prepared:
    """Provision and seed a throwaway repository behind the readiness gate. Harness
    failures come back inside Prepared (recorded by run_trial), never raised."""
    runnable(trial, ctx)
    seed = ctx.seeds[trial.task.seed]
    try:
        repo = provision(ctx.client, seed, prefix=ctx.suite.repo_prefix,
                         gate_timeout=ctx.gate_timeout)
    except HarnessError as exc:
        return Prepared(trial, seed, error=ctx.client.scrub(str(exc)),
                        failure_class=harness_class(exc))
    prepared = Prepared(trial, seed, repo=repo)
    try:
        if ctx.host.forge:  # a token of the repository's owner, bound to it alone
            prepared.token, prepared.token_id = mint_agent_token(
                ctx.client.url, ctx.admin, repo=repo.full_name, user=repo.owner)
        assert ctx.gateway is not None
        prepared.grant = ctx.gateway.issue(repo.owner, repo.name, prepared.token
                                           or ctx.client.token or "", user=ctx.client.user)
    except HarnessError as exc:  # the repository is there: run_trial records and deletes it
        prepared.error, prepared.failure_class = ctx.client.scrub(str(exc)), harness_class(exc)
    return prepared
