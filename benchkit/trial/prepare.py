"""What a trial starts from: the run's shared context, and the trial prepared (with
per-trial identity, a user of the trial's own made for it; its repository, owned by
that user, provisioned, seeded and behind the readiness gate; the agent's throwaway
token at the gateway, and on a forge a host token for this trial alone behind it; the
control object the gateway's control requests ask, benchkit.trial.control).
A trial's user can read no other trial's repository: a reference to one, in any
spelling, is inert on the host by construction. It is deleted with its repository.
A trial is prepared ahead of its agent (benchkit.run.loop) and played by
benchkit.trial.cell, which discards what was prepared on every path.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, field
from pathlib import Path

from benchkit.agent.driver import Driver
from benchkit.agent.model_probe import Resolution
from benchkit.documents import Seed, Suite
from benchkit.errors import BenchkitError, HarnessError
from benchkit.gateway.framing import Limits
from benchkit.gateway.server import Gateway, Grant, gateway_for
from benchkit.gitea import Client, Repo, delete_repo, provision, seeded_settings
from benchkit.gitea.admin import mint_agent_token, revoke_agent_token
from benchkit.gitea.lease import trial_name
from benchkit.gitea.repos import discard
from benchkit.gitea.runuser import RunUser, create_run_user, delete_run_user
from benchkit.planning.plan import Trial, not_runnable
from benchkit.preflight.host import HostFacts
from benchkit.sample import Containment
from benchkit.scrub import environment_secrets
from benchkit.stopping import shielded, stopping
from benchkit.store import Store
from benchkit.trial.control import open_control
from benchkit.trial.outcome import harness_class

log = logging.getLogger(__name__)


class CellError(ValueError, BenchkitError):
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
    host: HostFacts                  # benchkit.preflight.host.probe_host, once per host
    model: str | None = None         # --model, else the suite's
    root: Path | None = None         # the loaded tree's root: `{{ root }}` in an arm
    gate_timeout: float = 60.0
    jobs: int = 1                    # trials the run has going at once (durations depend on it)
    gateway: Gateway | None = None   # the agent's one way to the host; None: the run's own
    # The client's token is the run's own user's (benchkit.preflight.host.Access) or, with
    # gateway-only containment, the maintainer's; the maintainer's reaches the forge's
    # admin routes (None: the client's is the maintainer's).
    # With "trial-user" each trial is prepared as a user of its own (the admin token makes it).
    containment: Containment = "gateway"
    admin_token: str | None = field(default=None, repr=False)
    # The model as the runtime resolved it (pre-flight): what runs, its max_tokens.
    resolution: Resolution | None = None
    run_user: str | None = None  # the run's own user, whose lease covers its trial users
    shard: str | None = None     # --shard I/N, which its samples record

    def __post_init__(self) -> None:
        if self.gateway is None:
            self.gateway = gateway_for(self.client.url, limits(self.suite))

    def secrets(self) -> list[str]:
        """What never reaches the store: the host tokens, the driver's credentials, the
        harness's secret-looking variables."""
        return [self.client.token or "", self.admin_token or "",
                *self.driver.secrets, *environment_secrets()]

    @property
    def admin(self) -> str | None:
        """The maintainer's token, for the forge's admin routes."""
        return self.admin_token or self.client.token

    @property
    def run_model(self) -> str:
        """What every trial runs: the resolved model, else --model, else the suite's."""
        if self.resolution is not None:
            return self.resolution.model
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
    user: RunUser | None = None      # the trial's own user (per-trial identity), else None
    client: Client | None = None     # the trial's host client: its own user's, else the run's
    user_deleted: bool = False
    control: Repo | None = None      # what the gateway's controls ask (benchkit.trial.control)
    seeded: dict | None = None       # the repository's settings once seeded (what they must stay)

    def secrets(self) -> list[str]:
        """What of this trial never reaches the store: its host token, the agent's
        pass, its own user's token and password."""
        return [self.token or "", self.grant.token if self.grant is not None else "",
                *(self.user.secrets if self.user is not None else ())]

    def host(self, ctx: RunContext) -> Client:
        """Whom the trial acts as on the host: its own user, else the run's."""
        return self.client or ctx.client

    @property
    def agent_token(self) -> str:
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
        control, self.control = self.control, None
        left = discard(ctx.client, control).strip(" []") if control is not None else ""
        note = self._discard_trial(ctx)
        return "; ".join(said for said in (note, left) if said) or None

    def _discard_trial(self, ctx: RunContext) -> str | None:
        if self.token_id is not None:
            revoke_agent_token(ctx.client.url, ctx.admin, self.token_id)
            self.token_id = None
        repo, self.repo = self.repo, None
        user = self.user  # kept: its secrets stay known for the scrub
        if self.client is not None:
            self.client.close()
        if user is not None and not self.user_deleted:  # its repository goes with it
            self.user_deleted = True
            return _delete_user(ctx, user.login)
        if repo is None:
            return None
        try:
            delete_repo(ctx.client, repo.owner, repo.name)
            return None
        except Exception as exc:  # the run's own result matters more
            log.warning("could not delete %s: %s", repo.full_name, ctx.client.scrub(str(exc)))
            return f"repository {repo.full_name} was left behind (`benchkit gc` finds it)"


def _delete_user(ctx: RunContext, login: str) -> str | None:
    """Delete a trial's user with its repository; a note when the host refused."""
    try:
        with Client(ctx.client.url, ctx.admin) as admin:
            delete_run_user(admin, login)
        return None
    except Exception as exc:  # the run's own result matters more
        log.warning("could not delete %s: %s", login, ctx.client.scrub(str(exc)))
        return f"the trial's user {login} was left behind with its repository (`benchkit gc` finds it)"


def limits(suite: Suite) -> Limits:
    """The gateway's limits, as the suite sets them."""
    return Limits(suite.max_request_bytes, suite.max_trial_upload_bytes,
                  suite.max_trial_connections, suite.request_arrival_seconds,
                  suite.max_trial_download_bytes, suite.max_trial_host_cpu_seconds)


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
    prepared = Prepared(trial, seed)
    try:
        if ctx.containment == "trial-user":
            with shielded(), Client(ctx.client.url, ctx.admin, retries=1) as admin:
                prepared.user = create_run_user(admin, ctx.suite.repo_prefix, role="trial",
                                                full_name=trial_name(ctx.run_user or "?"))
            prepared.client = Client(ctx.client.url, prepared.user.token)
        repo = provision(prepared.host(ctx), seed, prefix=ctx.suite.repo_prefix,
                         gate_timeout=ctx.gate_timeout)
    except HarnessError as exc:  # run_trial records it and deletes the user
        prepared.error = ctx.client.scrub(str(exc))
        prepared.failure_class = harness_class(exc)
        return prepared
    prepared.repo = repo
    try:
        prepared.seeded = seeded_settings(prepared.host(ctx), repo.owner, repo.name)
    except HarnessError as exc:  # the repository is there: run_trial records and deletes it
        prepared.error, prepared.failure_class = ctx.client.scrub(str(exc)), harness_class(exc)
        return prepared
    try:
        if ctx.host.forge:  # a token of the repository's owner, bound to it alone
            prepared.token, prepared.token_id = mint_agent_token(
                ctx.client.url, ctx.admin, repo=repo.full_name, user=repo.owner)
        assert ctx.gateway is not None
        host = prepared.host(ctx)
        prepared.control, control = open_control(ctx.client, ctx.suite.repo_prefix)
        prepared.grant = ctx.gateway.issue(
            repo.owner, repo.name, prepared.token or host.token or "", user=host.user,
            control=control, email=prepared.user.email if prepared.user is not None else "")
    except HarnessError as exc:  # the repository is there: run_trial records and deletes it
        prepared.error, prepared.failure_class = ctx.client.scrub(str(exc)), harness_class(exc)
    return prepared
