"""What a stop (benchkit.stopping) does to the trials of a run: it ends their agents and
keeps them out of the store.

    Cancellable   a driver whose runs carry the run's tag (every process of an agent run
                  is found and killed by it) and raise Interrupted once the run stopped
    CredentialsRefused  a model service that refused the driver's credentials (401, 403):
                  the run stops, nothing recorded for the trial

The run loop's trials and the failure replay's use both, with the store closed once the
run stopped (benchkit.store.GatedStore).
"""

from __future__ import annotations

from benchkit.agent.driver import AgentRequest, AgentRun, Driver
from benchkit.agent.service import credential_source
from benchkit.sample import AGENT_STOPS, Runtime
from benchkit.stopping import RUN_TAG, Interrupted, Stop

# How long a run that died (rather than ended) waits to learn it was Ctrl-C that killed
# it: a terminal's Ctrl-C reaches the agent's processes and this one together.
INTERRUPT_GRACE = 0.5


class CredentialsRefused(Interrupted):
    """The model service refused the driver's credentials: every trial would fail the
    same way, so the run stops (exit 2) with nothing recorded for this one. Its text is
    the one line the run says."""


class Cancellable:
    """A driver whose runs a stop can end: each run's processes carry the stop's tag
    (found and killed by Stop.kill), and a run ended that way raises Interrupted; a
    refusal of the driver's credentials raises CredentialsRefused with the line to say.
    Everything else the run reads of a driver is the wrapped one's (the Driver protocol)."""

    def __init__(self, driver: Driver, stop: Stop):
        self.driver, self.stop = driver, stop
        self.name, self.confine = driver.name, driver.confine
        self.base_url, self.config_dir = driver.base_url, driver.config_dir

    @property
    def runtime(self) -> Runtime | None:
        return self.driver.runtime

    @property
    def secrets(self) -> tuple[str, ...]:
        return self.driver.secrets

    def played(self, task: str) -> str | None:
        return self.driver.played(task)

    def run(self, request: AgentRequest) -> AgentRun:
        if self.stop.is_set():
            raise Interrupted()
        request.env = {**request.env, RUN_TAG: self.stop.tag}
        run = self.driver.run(request)
        if run.stop == "api-error" and run.api_error_status in (401, 403):
            raise CredentialsRefused(
                f"error: the model service refused the credentials (HTTP "
                f"{run.api_error_status}): {credential_source(self.driver)}; nothing "
                f"was recorded for the trial")
        if self.stop.is_set() or (run.stop not in AGENT_STOPS
                                  and self.stop.event.wait(INTERRUPT_GRACE)):
            raise Interrupted()
        return run
