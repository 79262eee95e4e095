"""Outcomes an agent cannot game and faults the arm is not charged for, one cell end
to end (the forge over HTTP, real curl, the real SDK and bundled CLI, the scripted
model): the agent killing its own CLI, the audit's evidence unreadable, the host
failing the agent's own request while it answers the harness (charged)."""

import msgspec
import pytest
from test_trial_cell import (
    Scripted,
    context,
    curl,
    raw_api_cell,
    repos_left,
    token_in_store,
)

from benchkit.agent.scripted import bash, say, stall
from benchkit.trial.cell import run_trial
from benchkit.trial.prepare import prepare_trial

pytestmark = pytest.mark.usefixtures("private_dirs")


def closing_issue_2_under_fault(forge, shipped_tree, tmp_path, method, path, times):
    """The sample of a trial whose agent closes issue #2 (one PATCH) while the forge
    answers `method path` with 500, `times` times."""
    driver = Scripted()
    ctx = context(forge, shipped_tree, tmp_path, driver)
    cell = raw_api_cell(shipped_tree)
    prepared = prepare_trial(cell, ctx)
    driver.script = [bash(curl(ctx, prepared, "PATCH", "/issues/2", {"state": "closed"})),
                     say("Closed issue #2.")]
    forge.inject_fault(method, path, status=500, times=times)
    try:
        return run_trial(cell, ctx, prepared).sample
    finally:
        forge.clear_faults()


@pytest.mark.slow
@pytest.mark.parametrize("confine", [True, False], ids=["confined", "unconfined"])
def test_an_agent_that_kills_its_own_cli_is_crashed_and_charged(forge, shipped_tree, tmp_path, confine):
    """`kill -9 $PPID` from the agent's Bash: before, a harness error that `--until`
    re-ran (a failure erased). Confined, its own PID namespace hides the CLI and the
    trial goes on to a charged failure; unconfined, the CLI dies mid tool call and the
    trial is the arm's `crashed`. Either way the arm is charged."""
    driver = Scripted(confine=confine)
    ctx = context(forge, shipped_tree, tmp_path, driver)
    cell = raw_api_cell(shipped_tree)
    prepared = prepare_trial(cell, ctx)
    driver.script = [bash("kill -9 $PPID"), say("unreachable")]
    sample = run_trial(cell, ctx, prepared).sample
    expected = ("failed", "checker", True) if confine else ("crashed", "agent-crash", True)
    assert (sample.outcome, sample.failure_class, sample.valid) == expected
    assert sample.tool_calls == 1
    assert repos_left(forge) == [] and token_in_store(ctx) == []
    assert list(ctx.store.samples()) == [msgspec.to_builtins(sample)]


@pytest.mark.slow
def test_an_audit_that_cannot_read_the_request_log_marks_the_trial_unaudited(
        forge, shipped_tree, tmp_path):
    """One 500 from the request log once turned a leaking trial into `passed`: the
    audit fails closed. (A foreign client is caught by the gateway's own record before
    the forge's log is read: here the agent is clean, and the forge's log answers 500.)"""
    sample = closing_issue_2_under_fault(forge, shipped_tree, tmp_path, "GET", r"^/_forge/requests$", 100)
    assert (sample.outcome, sample.failure_class, sample.valid) == \
        ("unaudited", "audit", False)
    assert "request log could not be read" in sample.error
    assert repos_left(forge) == []


@pytest.mark.slow
def test_a_host_error_on_the_agents_own_request_is_charged_while_the_host_is_healthy(
        forge, shipped_tree, tmp_path):
    """A 500 the host answers the agent's PATCH with, while the host answers the
    harness's own control write right after: nothing shows the host failing on its
    own (an agent can provoke a 5xx cheaply), so the failure is the arm's."""
    sample = closing_issue_2_under_fault(forge, shipped_tree, tmp_path, "PATCH", r"/issues/2$", 1)
    assert (sample.outcome, sample.failure_class, sample.valid) == \
        ("failed", "host-error-provoked", True)
    assert "PATCH" in sample.error and "HTTP 500" in sample.error
    patch, = [e for e in sample.requests if e["method"] == "PATCH"]
    assert patch["control"]["kind"] == "write" and patch["control"]["status"] == 200
    assert repos_left(forge) == []


@pytest.mark.slow
def test_an_agent_whose_background_job_kills_its_cli_later_is_crashed_too(forge, shipped_tree, tmp_path):
    """The kill may come after its call answered: a background job outlives the call.
    (Unconfined: inside the sandbox the CLI is out of the job's reach, as above.)"""
    driver = Scripted(confine=False)
    ctx = context(forge, shipped_tree, tmp_path, driver)
    cell = raw_api_cell(shipped_tree)
    prepared = prepare_trial(cell, ctx)
    # The model then stalls: the kill lands while the CLI waits on it, no call running.
    driver.script = [bash("(sleep 1; kill -9 $PPID) > /dev/null 2>&1 &"), stall()]
    sample = run_trial(cell, ctx, prepared).sample
    assert (sample.outcome, sample.failure_class, sample.valid) == \
        ("crashed", "agent-crash", True), sample.error
