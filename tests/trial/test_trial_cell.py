"""One cell end to end: the forge over HTTP, real curl, the real SDK and bundled CLI,
the scripted model. The repository must be gone afterwards whatever happened, and the
token must appear nowhere under the store."""

import dataclasses
import json
import os
import signal
import tempfile
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from datetime import datetime
from pathlib import Path

import msgspec
import pytest
from conftest import CHECKOUT
from reported import reported_usage

from benchkit.agent.audit import AuditEvent
from benchkit.agent.claude import ClaudeDriver
from benchkit.agent.driver import ToolDecision
from benchkit.agent.runtime import OnTheCli
from benchkit.agent.scripted import ScriptedModel, bash, fail, say, stall, tool
from benchkit.documents import load_arm
from benchkit.forge import token_id
from benchkit.gitea import Client
from benchkit.planning.plan import Trial
from benchkit.preflight.host import probe_host
from benchkit.store import Store
from benchkit.trial.cell import run_trial
from benchkit.trial.prepare import CellError, RunContext, prepare_trial

GITEA_MCP = CHECKOUT / ".venvs/gitea-mcp/bin/gitea-mcp"
CLOSE_TASK = "close-csv-export-issue"  # close issue #2, "Add CSV export option"

# What a cell leaves behind (probe cache, temporary directories) stays in tmp_path.
pytestmark = pytest.mark.usefixtures("private_dirs")


class Scripted(OnTheCli):
    """A driver at the Driver seam: the real Claude driver against a scripted model
    whose script is written once the repository is known."""

    name = "claude"

    def __init__(self, script=None, weaken_guard=False, env=None, confine=True):
        self.script = script or []
        self.stalled = threading.Event()  # the model holds a stalled turn: the agent waits
        self.confine = confine  # False: the shell runs unconfined (the sample says so)
        self.weaken_guard = weaken_guard
        self.env = env or {}
        self.model = None

    @property
    def secrets(self):
        return ClaudeDriver().secrets

    def run(self, request):
        if self.weaken_guard:  # the test's deliberate hole: the audit must still catch it
            request.guard = lambda name, tool_input: ToolDecision(True, "weakened")
        request.env = {**request.env, **self.env}
        with ScriptedModel(self.script, model=request.model) as self.model:
            self.model.stalled = self.stalled
            return ClaudeDriver(base_url=self.model.url, confine=self.confine).run(request)


def context(forge, shipped_tree, tmp_path, driver, **suite_changes):
    suite = dataclasses.replace(shipped_tree.suite, **suite_changes) if suite_changes else shipped_tree.suite
    client = Client(forge.url, forge.token)
    return RunContext(suite=suite, seeds=shipped_tree.seeds, client=client,
                      store=Store(tmp_path / "results"), driver=driver, root=CHECKOUT,
                      host=probe_host(client, suite.repo_prefix))


def curl(ctx, prepared, method, path, body=None):
    """The command a raw-api agent would write, with the URL and token its prompt gives
    it: the gateway's, and the throwaway token it accepts for this trial alone."""
    repo = prepared.repo
    data = f" -H 'Content-Type: application/json' -d '{json.dumps(body)}'" if body else ""
    return (f"curl -s -X {method} -H 'Authorization: token {prepared.agent_token}'{data} "
            f"{prepared.grant.api_url}/repos/{repo.owner}/{repo.name}{path}")


def repos_left(forge):
    client = Client(forge.url, forge.token)
    return [r["name"] for r in client.get(f"/users/{forge.user}/repos")]


def token_in_store(ctx):
    token = ctx.client.token
    return [str(p) for p in Path(ctx.store.root).rglob("*")
            if p.is_file() and token in p.read_text(errors="replace")]


def scratch_left():
    """What the cell left in the temporary directory (the agent's, the arm's)."""
    return [p.name for p in Path(tempfile.gettempdir()).iterdir() if p.name.startswith("benchkit-")]


def raw_api_cell(shipped_tree, task=CLOSE_TASK):
    return Trial(load_arm(CHECKOUT / "arms.d/raw-api.yaml"), shipped_tree.tasks[task])


MAINTAINER_KEY = "sk-ant-maintainers-own-key-0123456789"


@pytest.mark.slow
def test_a_raw_api_cell_that_closes_the_right_issue_passes(forge, shipped_tree, tmp_path, monkeypatch):
    monkeypatch.setenv("ANTHROPIC_API_KEY", MAINTAINER_KEY)
    driver = Scripted()
    ctx = context(forge, shipped_tree, tmp_path, driver)
    cell = raw_api_cell(shipped_tree)
    prepared = prepare_trial(cell, ctx)
    # An agent's shell sees the CLI's environment: whatever it prints is scrubbed.
    driver.script = [bash(f"echo {MAINTAINER_KEY}"),
                     bash(curl(ctx, prepared, "PATCH", "/issues/2", {"state": "closed"})),
                     say("Closed issue #2.")]
    result = run_trial(cell, ctx, prepared)
    sample = result.sample

    assert (sample.outcome, sample.valid, sample.differences) == ("passed", True, []), sample.error
    # The caller gets the agent's run too: the transcript the store wrote, audit last.
    assert result.run is not None and result.run.transcript[-1]["event"] == "audit"
    assert result.run.answer == sample.answer and result.run.turns == sample.turns
    assert repos_left(forge) == []
    reported = reported_usage(driver.model)
    for component, key in (("input", "input_tokens"), ("cache_write", "cache_creation_input_tokens"),
                           ("cache_read", "cache_read_input_tokens"), ("output", "output_tokens")):
        assert getattr(sample.usage, component) == sum(u[key] for u in reported.values())
    assert sample.turns == 3 == len(driver.model.messages(auxiliary=False))
    assert (sample.tool_calls, sample.blocked_calls) == (2, 0)
    assert sample.host.kind == "forge" and sample.temperature is None
    assert sample.answer == "Closed issue #2."
    assert list(ctx.store.samples(arm="raw-api", task=CLOSE_TASK)) == [msgspec.to_builtins(sample)]
    assert scratch_left() == []
    transcript = json.loads((ctx.store.root / sample.transcript).read_text())
    assert [e["event"] for e in transcript if e["event"] in ("tool_call", "audit")] == \
        ["tool_call", "tool_call", "audit"]
    audit = AuditEvent.read(transcript[-1])  # the typed record, every field written
    assert audit is not None and audit.builtins() == transcript[-1]
    assert list(transcript[-1]) == ["event", "gateway", "request_log", "leaks", "host_errors"]
    assert audit.gateway == f"checked: {len(sample.requests)} request(s) against the trial's "\
        "repository and User-Agents ['curl/']" and audit.leaks == []
    assert token_in_store(ctx) == []
    assert not any(MAINTAINER_KEY in p.read_text() for p in ctx.store.root.rglob("*.json*"))


@pytest.mark.slow
def test_a_wrong_mutation_fails_with_differences_and_a_denied_attempt_is_wasted_effort(
        forge, shipped_tree, tmp_path):
    driver = Scripted()
    ctx = context(forge, shipped_tree, tmp_path, driver)
    cell = raw_api_cell(shipped_tree)
    prepared = prepare_trial(cell, ctx)
    driver.script = [bash("python3 -c 'import urllib.request'"),
                     bash(curl(ctx, prepared, "PATCH", "/issues/3", {"state": "closed"})),
                     say("Closed it.")]
    sample = run_trial(cell, ctx, prepared).sample

    assert (sample.outcome, sample.failure_class, sample.valid) == ("failed", "checker", True)
    assert any("#2" in d for d in sample.differences)
    assert any("#3" in d for d in sample.differences)
    assert (sample.tool_calls, sample.blocked_calls, sample.turns) == (2, 1, 3)
    transcript = json.loads((ctx.store.root / sample.transcript).read_text())
    denied = [e for e in transcript if e["event"] == "tool_call" and e["allowed"] is False]
    assert len(denied) == 1 and "python3" in denied[0]["input"]["command"] and denied[0]["reason"]
    assert repos_left(forge) == [] and token_in_store(ctx) == []


@pytest.mark.slow
def test_cells_side_by_side_on_one_host_do_not_see_each_other_as_leaks(forge, shipped_tree, tmp_path):
    # Each cell's run window overlaps the other's provisioning, agent and clean-up.
    def one(index):
        driver = Scripted()
        ctx = context(forge, shipped_tree, tmp_path / f"cell{index}", driver)
        cell = raw_api_cell(shipped_tree)
        prepared = prepare_trial(cell, ctx)
        driver.script = [bash(curl(ctx, prepared, "GET", "/issues/2")),
                         bash(curl(ctx, prepared, "PATCH", "/issues/2", {"state": "closed"})),
                         say("Closed issue #2.")]
        return run_trial(cell, ctx, prepared).sample

    with ThreadPoolExecutor(max_workers=2) as pool:
        samples = list(pool.map(one, range(2)))
    assert [(s.outcome, s.leaks) for s in samples] == [("passed", [])] * 2
    assert repos_left(forge) == []


@pytest.mark.slow
@pytest.mark.skipif(not GITEA_MCP.exists(), reason="scripts/test-setup installs gitea-mcp")
def test_cells_of_different_arms_side_by_side_are_audited_by_their_own_tokens(forge, shipped_tree, tmp_path):
    # curl and the MCP server (httpx) on one host at once, with the harness seeding and
    # deleting around them: the host log holds three clients in every run window.
    started = threading.Barrier(2)

    def one(arm_path):
        driver = Scripted()
        ctx = context(forge, shipped_tree, tmp_path / arm_path.stem, driver)
        cell = Trial(load_arm(arm_path), shipped_tree.tasks[CLOSE_TASK])
        prepared = prepare_trial(cell, ctx)
        repo = prepared.repo
        if cell.arm.tool.kind == "mcp":
            driver.script = [tool("mcp__gitea__list_issues", owner=repo.owner,
                                  repo=repo.name, state="open", limit=50),
                             tool("mcp__gitea__update_issue", owner=repo.owner, repo=repo.name,
                                  issue_number=2, state="closed"),
                             say("Closed issue #2.")]
        else:
            driver.script = [bash(curl(ctx, prepared, "GET", "/issues/2")),
                             bash(curl(ctx, prepared, "PATCH", "/issues/2", {"state": "closed"})),
                             say("Closed issue #2.")]
        started.wait(60)
        sample = run_trial(cell, ctx, prepared).sample
        stored = "".join(p.read_text() for p in Path(ctx.store.root).rglob("*") if p.is_file())
        assert prepared.token and prepared.token not in stored
        return sample

    with ThreadPoolExecutor(max_workers=2) as pool:
        samples = list(pool.map(one, [CHECKOUT / "arms.d/raw-api.yaml",
                                      CHECKOUT / "tests/arms/gitea-mcp-pypi.yaml"]))
    assert [(s.arm, s.outcome, s.leaks) for s in samples] == [
        ("raw-api", "passed", []), ("gitea-mcp-pypi", "passed", [])]
    windows = [(datetime.fromisoformat(s.started_at).timestamp(), s.duration_s) for s in samples]
    assert max(w[0] for w in windows) < min(w[0] + w[1] for w in windows)  # they overlapped
    assert repos_left(forge) == []
    minted = [e for e in forge.requests() if e["token_id"] not in (None, token_id(forge.token))]
    assert {e["user_agent"].split("/")[0] for e in minted} == {"curl", "python-httpx"}


@pytest.mark.slow
def test_a_script_longer_than_the_turn_cap_is_confused(forge, shipped_tree, tmp_path):
    driver = Scripted([bash(f"echo {i}") for i in range(6)])
    ctx = context(forge, shipped_tree, tmp_path, driver, turn_cap=2)
    sample = run_trial(raw_api_cell(shipped_tree), ctx).sample
    assert (sample.outcome, sample.failure_class, sample.valid) == ("confused", "turn-cap", True)
    assert sample.turns == 2
    assert repos_left(forge) == []


@pytest.mark.slow
def test_a_stalled_model_is_the_services_within_the_backstop(forge, shipped_tree, tmp_path):
    """The backstop ends a run whose time went to a model request, not to the agent: a
    harness error, never `hung` (tests/agent/test_model_service.py has the rest)."""
    driver = Scripted([bash("echo looking"), stall()])
    ctx = context(forge, shipped_tree, tmp_path, driver, backstop_seconds=4)
    started = time.monotonic()
    sample = run_trial(raw_api_cell(shipped_tree), ctx).sample
    assert (sample.outcome, sample.failure_class, sample.valid) == \
        ("harness-error", "model-service", False)
    assert "when the backstop ended the run" in sample.error
    assert 4 <= sample.duration_s < 4 + 60  # upper bounds: hangs only
    assert time.monotonic() - started < 4 + 120  # provisioning, snapshot and delete included
    assert repos_left(forge) == []


@pytest.mark.slow
def test_a_curl_by_absolute_path_past_a_weakened_guard_is_caught_by_the_audit(
        forge, shipped_tree, tmp_path):
    driver = Scripted(weaken_guard=True)
    ctx = context(forge, shipped_tree, tmp_path, driver)
    cell = raw_api_cell(shipped_tree)
    prepared = prepare_trial(cell, ctx)
    driver.script = [bash("/usr/bin/" + curl(ctx, prepared, "PATCH", "/issues/2", {"state": "closed"})),
                     say("Closed issue #2.")]
    sample = run_trial(cell, ctx, prepared).sample
    assert (sample.outcome, sample.failure_class, sample.valid) == ("invalid", "leak", False)
    assert sample.leaks and "/usr/bin/curl" in sample.leaks[0]
    assert sample.differences == []  # never scored
    assert repos_left(forge) == [] and token_in_store(ctx) == []


@pytest.mark.slow
def test_a_foreign_client_in_the_host_log_makes_the_trial_invalid(forge, shipped_tree, tmp_path):
    # The arm declares curl; a request from another client in the run window is a leak
    # even when the transcript looks clean (here: the guard allows curl, but the forge
    # sees a request made with a forged User-Agent).
    driver = Scripted()
    ctx = context(forge, shipped_tree, tmp_path, driver)
    cell = raw_api_cell(shipped_tree)
    prepared = prepare_trial(cell, ctx)
    driver.script = [bash(curl(ctx, prepared, "GET", "/issues/2").replace(
        "curl -s", "curl -s -A python-requests/2.31")), say("Looked.")]
    sample = run_trial(cell, ctx, prepared).sample
    assert sample.outcome == "invalid"
    assert any("python-requests/2.31" in leak for leak in sample.leaks)


@pytest.mark.slow
@pytest.mark.skipif(not GITEA_MCP.exists(), reason="scripts/test-setup installs gitea-mcp")
def test_the_mcp_arm_with_the_pypi_server_mutates_the_forge_and_is_scored(forge, shipped_tree, tmp_path):
    driver = Scripted()
    ctx = context(forge, shipped_tree, tmp_path, driver)
    cell = Trial(load_arm(CHECKOUT / "tests/arms/gitea-mcp-pypi.yaml"), shipped_tree.tasks[CLOSE_TASK])
    prepared = prepare_trial(cell, ctx)
    repo = prepared.repo
    driver.script = [tool("mcp__gitea__update_issue", owner=repo.owner, repo=repo.name,
                          issue_number=2, state="closed"),
                     say("Closed issue #2.")]
    sample = run_trial(cell, ctx, prepared).sample

    assert sample.outcome == "passed", sample
    offered = [t["name"] for t in driver.model.messages(auxiliary=False)[0].body["tools"]]
    assert "Bash" not in offered and "mcp__gitea__update_issue" in offered
    assert all(name.startswith("mcp__gitea__") for name in offered)
    assert repos_left(forge) == [] and token_in_store(ctx) == []


@pytest.mark.slow
def test_an_overloaded_api_is_a_harness_error_not_counted_against_the_arm(forge, shipped_tree, tmp_path):
    driver = Scripted([fail(529)], env={"CLAUDE_CODE_MAX_RETRIES": "0"})
    ctx = context(forge, shipped_tree, tmp_path, driver)
    sample = run_trial(raw_api_cell(shipped_tree), ctx).sample
    assert (sample.outcome, sample.failure_class, sample.valid) == \
        ("harness-error", "model-service", False)
    assert repos_left(forge) == []


def test_a_host_that_will_not_seed_is_a_harness_error_and_no_agent_runs(forge, shipped_tree, tmp_path):
    driver = Scripted([say("unused")])
    ctx = context(forge, shipped_tree, tmp_path, driver)
    forge.inject_fault("POST", r"/repos/.*/labels$", status=500, times=100)
    result = run_trial(raw_api_cell(shipped_tree), ctx)
    sample = result.sample
    assert (sample.outcome, sample.failure_class, sample.valid) == \
        ("harness-error", "seeding", False)
    assert driver.model is None and result.run is None  # the driver never started
    assert repos_left(forge) == []
    assert list(ctx.store.samples()) == [msgspec.to_builtins(sample)]


def test_a_task_without_a_scoring_spec_is_not_run(forge, shipped_tree, tmp_path):
    ctx = context(forge, shipped_tree, tmp_path, Scripted())
    with pytest.raises(CellError, match="no scoring spec"):
        run_trial(raw_api_cell(shipped_tree, "bonus-create-archive-repo"), ctx)
    assert repos_left(forge) == [] and list(ctx.store.samples()) == []


@pytest.mark.slow
def test_ctrl_c_mid_run_deletes_the_repository_and_records_nothing(forge, shipped_tree, tmp_path):
    driver = Scripted([bash("echo waiting"), stall()])
    ctx = context(forge, shipped_tree, tmp_path, driver, backstop_seconds=600)
    cell = raw_api_cell(shipped_tree)
    prepared = prepare_trial(cell, ctx)  # the trial's repository, and its controls'
    assert sorted(repos_left(forge)) == sorted([prepared.repo.name, prepared.control.name])
    sent = []

    def interrupt():  # once the agent is mid-run, waiting on the model
        if driver.stalled.wait(300):
            sent.append(time.monotonic())
            os.kill(os.getpid(), signal.SIGINT)
    threading.Thread(target=interrupt, daemon=True).start()
    with pytest.raises(KeyboardInterrupt):
        run_trial(cell, ctx, prepared)
    assert sent and time.monotonic() - sent[0] < 300  # Ctrl-C, not the backstop, ended it
    assert repos_left(forge) == []
    assert list(ctx.store.samples()) == []
    assert scratch_left() == []  # the agent's directory and the arm's set-up are gone
