"""The model service's faults through the real SDK and CLI (the claude driver against
the scripted model, one raw-api cell on the forge with real curl): for each, the
outcome, whether the arm is charged, whether `--until` runs the trial again, whether
the failure replay would take it, and what `benchkit show` says. Usage is measured:
the figures the stand-in reports are the sample's."""

import gc
import json
import os
import signal
import threading

import jsonschema
import pytest
from click.testing import CliRunner
from conftest import CHECKOUT
from test_trial_cell import (
    CLOSE_TASK,
    GITEA_MCP,
    Scripted,
    context,
    curl,
    raw_api_cell,
    repos_left,
)

from benchkit.agent import faults
from benchkit.agent.claude import ClaudeDriver
from benchkit.agent.scripted import ScriptedModel, Turn, bash, fail, say
from benchkit.agent.wire import usage
from benchkit.cli import main
from benchkit.documents import load_arm
from benchkit.planning.ledger import Ledger
from benchkit.planning.plan import Trial, plan
from benchkit.run.failures import worth_replaying
from benchkit.store import Store
from benchkit.trial.cell import run_trial
from benchkit.trial.prepare import prepare_trial

pytestmark = [pytest.mark.slow, pytest.mark.usefixtures("private_dirs")]
NONE = usage()
# The CLI's own retries, bounded so a fault that outlasts them ends the run in seconds.
FEW_RETRIES = {"CLAUDE_CODE_MAX_RETRIES": "2"}
SAMPLE_SCHEMA = json.loads((CHECKOUT / "benchkit/schemas/sample.schema.json").read_text())


class Measured(Scripted):
    """The real Claude driver against the stand-in, each request reporting `figures`
    (the runtime's own chores nothing), so the sample's usage is known exactly."""

    def __init__(self, figures=NONE, **kwargs):
        super().__init__(**kwargs)
        self.figures = figures
        self.cli_started = threading.Event()

    def run(self, request):
        request.env = {**request.env, **self.env}
        with ScriptedModel(self.script, model=request.model, usage=self.figures,
                           auxiliary_usage=NONE) as self.model:
            self.model.stalled = self.stalled
            return ClaudeDriver(base_url=self.model.url, confine=self.confine).run(request)


def trial(forge, shipped_tree, tmp_path, script, *, env=None, figures=NONE, confine=True,
          during=None, arm=None, **suite):
    """One trial of the close task; `script(ctx, prepared)` gives the model's turns,
    `during(driver)` runs beside it. (result, ctx, cell)."""
    driver = Measured(figures, env=env, confine=confine)
    ctx = context(forge, shipped_tree, tmp_path, driver, **suite)
    cell = raw_api_cell(shipped_tree) if arm is None else \
        Trial(load_arm(CHECKOUT / arm), shipped_tree.tasks[CLOSE_TASK])
    prepared = prepare_trial(cell, ctx)
    driver.script = script(ctx, prepared)
    helper = threading.Thread(target=during, args=(driver,)) if during else None
    if helper:
        helper.start()
    try:
        result = run_trial(cell, ctx, prepared)
    finally:
        if helper:
            helper.join(30)
    assert repos_left(forge) == []
    for stored in ctx.store.samples():  # the sample's evidence in its documented shape
        jsonschema.validate(stored, SAMPLE_SCHEMA)
    return result, ctx, cell


def close(ctx, prepared, **turn):
    """The turn that closes issue #2 (the task), with any fault or delay of the turn."""
    return Turn(calls=bash(curl(ctx, prepared, "PATCH", "/issues/2", {"state": "closed"})).calls,
                **turn)


def until_runs_again(ctx, cell) -> bool:
    """Whether `--until 1` would plan the cell again: its one sample does not count."""
    cells = [(cell.arm, cell.task)]
    ledger = Ledger(cells, ctx.seeds, ctx.suite, driver="claude",
                    model=ctx.run_model).load(ctx.store)
    return len(plan(cells, ledger, until=1)) == 1


def shown(ctx, sample_id=None) -> str:
    """What `benchkit show` prints: the listing, or one trial."""
    args = ["show", "--store", str(ctx.store.root), *([sample_id] if sample_id else [])]
    result = CliRunner().invoke(main, args, catch_exceptions=False)
    assert result.exit_code == 0, result.output
    return result.output


def uncharged(result, ctx, cell, failure_class):
    """A harness error of `failure_class`: never scored, run again, never replayed."""
    sample = result.sample
    assert (sample.outcome, sample.failure_class, sample.valid) == \
        ("harness-error", failure_class, False), sample.error
    assert until_runs_again(ctx, cell)
    assert not worth_replaying(result)


def test_usage_is_measured_as_the_service_reports_it(forge, shipped_tree, tmp_path):
    figures = usage(input=7, cache_write_5m=300, cache_write_1h=40, cache_read=1000, output=70)
    result, ctx, cell = trial(forge, shipped_tree, tmp_path,
                              lambda ctx, p: [close(ctx, p), say("Closed #2.")], figures=figures)
    sample = result.sample
    assert sample.outcome == "passed" and not sample.usage_estimated
    assert (sample.usage.input, sample.usage.cache_write, sample.usage.cache_write_5m,
            sample.usage.cache_write_1h, sample.usage.cache_read, sample.usage.output) == \
        (14, 680, 600, 80, 2000, 140)
    assert sample.anatomy is not None and not sample.anatomy.estimated
    assert sample.model_service is None
    assert "~" not in shown(ctx, sample.id).split("tokens")[1].splitlines()[0]


@pytest.mark.parametrize("fault,says", [
    (fail(529).fault, "overload: 2 retries over"),
    (fail(500).fault, "server error: 2 retries over"),
    (faults.Fault("status", 429, retry_after=0.2, times=0), "rate limit: 2 retries over"),
    (faults.Fault("stream-error", 529, times=0), "API Error: 529 scripted overloaded_error"),
    (faults.malformed(times=0), "stream(s) broken before message_stop"),
    (faults.reset(times=0), "stream(s) broken before message_stop"),
], ids=["529", "500", "429", "sse-error", "malformed", "reset"])
def test_a_fault_that_outlasts_the_clis_retries_is_the_services(
        forge, shipped_tree, tmp_path, fault, says):
    result, ctx, cell = trial(forge, shipped_tree, tmp_path,
                              lambda ctx, p: [Turn(text="x", fault=fault)], env=FEW_RETRIES)
    uncharged(result, ctx, cell, "model-service")
    assert says in shown(ctx, result.sample.id)  # the listing's why column may cut it short


@pytest.mark.parametrize("fault,evidence", [
    (faults.overloaded(times=2), {"count": 2, "statuses": {"529": 2}}),
    (faults.rate_limited(retry_after=0.2, times=1), {"count": 1, "statuses": {"429": 1}}),
    (faults.Fault("stream-error", 529, times=1), None),
], ids=["529", "429", "sse-error"])
def test_a_fault_the_cli_retries_past_leaves_the_verdict_to_the_checker(
        forge, shipped_tree, tmp_path, fault, evidence):
    result, ctx, cell = trial(forge, shipped_tree, tmp_path,
                              lambda ctx, p: [close(ctx, p, fault=fault), say("Closed #2.")])
    sample = result.sample
    assert (sample.outcome, sample.valid) == ("passed", True), sample.error
    if evidence is None:
        assert sample.model_service == {"broken_streams": 1}
    else:
        retries = sample.model_service["retries"]
        assert {key: retries[key] for key in evidence} == evidence
        assert "model service:" in shown(ctx, sample.id)


def test_overload_until_the_backstop_is_the_services_not_hung(forge, shipped_tree, tmp_path):
    result, ctx, cell = trial(forge, shipped_tree, tmp_path,
                              lambda ctx, p: [Turn(text="x", fault=fail(529).fault)],
                              backstop_seconds=8)
    uncharged(result, ctx, cell, "model-service")
    assert "overload:" in shown(ctx)  # the listing's reason
    said = shown(ctx, result.sample.id)
    assert "when the backstop ended the run" in said and "hung" not in said


def test_a_turn_cap_reached_after_retries_is_the_services_not_confused(
        forge, shipped_tree, tmp_path):
    """The retry's wait (the service's retry-after: 10 s) is most of the run's time."""
    def script(ctx, prepared):
        return [Turn(calls=bash("echo 1").calls, fault=faults.rate_limited(retry_after=10)),
                bash("echo 2"), bash("echo 3"), bash("echo 4")]
    result, ctx, cell = trial(forge, shipped_tree, tmp_path, script, turn_cap=2)
    uncharged(result, ctx, cell, "model-service")
    assert result.sample.model_service["retries"]["over_s"] >= 10
    assert "rate limit: 1 retry over" in shown(ctx)
    brief, ctx, cell = trial(forge, shipped_tree, tmp_path / "brief",
                             lambda ctx, p: [Turn(calls=bash("echo 1").calls,
                                                  fault=faults.rate_limited(retry_after=0.1)),
                                             bash("sleep 6"), bash("echo 3")], turn_cap=2)
    # The agent's own command took most of the run: the cap is its own.
    assert (brief.sample.outcome, brief.sample.valid) == ("confused", True), \
        (brief.sample.model_service, brief.sample.duration_s)
    control, ctx, cell = trial(forge, shipped_tree, tmp_path / "control",
                               lambda ctx, p: [bash("echo 1"), bash("echo 2"), bash("echo 3")],
                               turn_cap=2)
    assert (control.sample.outcome, control.sample.valid) == ("confused", True)


def test_a_stream_that_stalls_is_ended_by_the_idle_limit_long_before_the_backstop(
        forge, shipped_tree, tmp_path):
    def script(ctx, prepared):
        return [bash("echo hi"), Turn(text="x", fault=faults.stall_mid_stream(0))]
    result, ctx, cell = trial(forge, shipped_tree, tmp_path, script, model_idle_seconds=2)
    uncharged(result, ctx, cell, "model-service")
    assert result.sample.duration_s < 60  # the backstop is 300 s
    assert result.sample.model_service["stall"] == {"request": 2, "idle_s": pytest.approx(2, abs=1.5),
                                                    "streaming": True}
    assert "model stream stalled 2 s (request 2, mid-stream)" in shown(ctx)


@pytest.mark.parametrize("fault", [faults.pings(0), faults.trickle(0)], ids=["pings", "trickle"])
def test_a_stream_kept_alive_without_progress_is_a_stall(forge, shipped_tree, tmp_path, fault):
    """Keep-alive pings, or empty text deltas twice a second, are signs the connection
    lives, not that the model answers: the idle limit ends the request all the same."""
    def script(ctx, prepared):
        return [bash("echo hi"), Turn(text="x", fault=fault)]
    result, ctx, cell = trial(forge, shipped_tree, tmp_path, script, model_idle_seconds=2,
                              backstop_seconds=40)
    uncharged(result, ctx, cell, "model-service")
    assert result.sample.duration_s < 30, result.sample.error  # the backstop is 40 s
    assert result.sample.model_service["stall"] == {"request": 2, "idle_s": pytest.approx(2, abs=1.5),
                                                    "streaming": True}
    assert "model stream stalled 2 s (request 2, mid-stream)" in shown(ctx)


def test_a_command_that_outlasts_the_idle_limit_is_no_stall(forge, shipped_tree, tmp_path):
    """The agent's own time is never the service's: a tool that runs past the idle
    limit (an agent that would hide its hang behind it) is not a stall."""
    def script(ctx, prepared):
        return [bash("sleep 4; echo slept"), close(ctx, prepared), say("Closed #2.")]
    result, ctx, cell = trial(forge, shipped_tree, tmp_path, script, model_idle_seconds=1)
    assert (result.sample.outcome, result.sample.model_service) == ("passed", None)
    hung, ctx, cell = trial(forge, shipped_tree, tmp_path / "hung",
                            lambda ctx, p: [bash("tail -f /dev/null"), say("never")],
                            model_idle_seconds=1, backstop_seconds=12)
    assert (hung.sample.outcome, hung.sample.failure_class, hung.sample.valid) == \
        ("hung", "backstop", True)


@pytest.mark.parametrize("delay,outcome", [(0.5, "passed"), (60, "harness-error")],
                         ids=["within-the-limit", "past-it"])
def test_a_slow_first_byte_is_a_stall_only_past_the_idle_limit(
        forge, shipped_tree, tmp_path, delay, outcome):
    def script(ctx, prepared):
        return [close(ctx, prepared, first_byte_delay=delay), say("Closed #2.")]
    result, ctx, cell = trial(forge, shipped_tree, tmp_path, script, model_idle_seconds=3)
    assert result.sample.outcome == outcome, result.sample.error
    if outcome == "harness-error":
        uncharged(result, ctx, cell, "model-service")
        assert "model stream stalled 3 s (request 1, before its first byte)" in shown(ctx)


@pytest.mark.parametrize("status", [401, 403])
def test_refused_credentials_end_the_trial_at_once(forge, shipped_tree, tmp_path, status):
    """The CLI would retry them for about three minutes: the driver stops at the first
    retry notice."""
    result, ctx, cell = trial(forge, shipped_tree, tmp_path,
                              lambda ctx, p: [fail(status)])
    uncharged(result, ctx, cell, "model-credentials")
    assert result.sample.duration_s < 60
    said = shown(ctx, result.sample.id)
    assert "outcome: harness-error (model-credentials)" in said and f" {status}" in said


def test_a_refusal_that_ends_the_run_is_recorded_as_one(forge, shipped_tree, tmp_path):
    refuse = Turn(text="I can't help with that.", stop_reason="refusal")
    result, ctx, cell = trial(forge, shipped_tree, tmp_path,
                              lambda ctx, p: [refuse, refuse, say("unreached")])
    uncharged(result, ctx, cell, "refusal")
    assert result.sample.model_service == {"refusal": 2}
    assert "2 refusals" in shown(ctx)


def test_a_refusal_the_cli_continues_past_is_only_noted(forge, shipped_tree, tmp_path):
    refuse = Turn(text="I can't help with that.", stop_reason="refusal")
    result, ctx, cell = trial(forge, shipped_tree, tmp_path,
                              lambda ctx, p: [refuse, close(ctx, p), say("Closed #2.")])
    assert result.sample.outcome == "passed" and result.sample.model_service == {"refusal": 1}


def test_output_past_the_maximum_is_the_models_own_and_charged(forge, shipped_tree, tmp_path):
    cut = Turn(text="and so on", stop_reason="max_tokens")
    result, ctx, cell = trial(forge, shipped_tree, tmp_path,
                              lambda ctx, p: [cut] * 6 + [say("unreached")])
    sample = result.sample
    assert (sample.outcome, sample.failure_class, sample.valid) == ("failed", "max-tokens", True)
    assert not until_runs_again(ctx, cell)


def kill_cli(driver):
    """An OOM killer's or an operator's SIGKILL to the CLI (this process's child), once
    the model holds its request: no tool call runs."""
    assert driver.stalled.wait(60)
    for pid in os.listdir("/proc"):
        try:
            with open(f"/proc/{pid}/stat") as f:
                parent = int(f.read().rsplit(")", 1)[1].split()[1])
            with open(f"/proc/{pid}/cmdline", "rb") as f:
                command = f.read()
        except (OSError, ValueError, IndexError):
            continue
        if parent == os.getpid() and b"claude" in command.split(b"\0")[0]:
            os.kill(int(pid), signal.SIGKILL)


@pytest.mark.parametrize("confine,expected", [
    (True, ("harness-error", "cli-killed", False)),
    (False, ("crashed", "agent-crash", True)),  # the agent's shell could have sent it
], ids=["confined", "unconfined"])
def test_a_cli_killed_from_outside_is_charged_only_where_the_agent_could_kill_it(
        forge, shipped_tree, tmp_path, confine, expected):
    result, ctx, cell = trial(forge, shipped_tree, tmp_path,
                              lambda ctx, p: [bash("echo hi"), Turn(stall=True)],
                              confine=confine, during=kill_cli)
    sample = result.sample
    assert (sample.outcome, sample.failure_class, sample.valid) == expected, sample.error
    assert until_runs_again(ctx, cell) == confine


@pytest.mark.skipif(not GITEA_MCP.exists() and not os.environ.get("CI"),
                    reason="scripts/test-setup installs gitea-mcp")
def test_a_cli_killed_from_outside_is_no_fault_of_the_mcp_arm(forge, shipped_tree, tmp_path):
    result, ctx, cell = trial(forge, shipped_tree, tmp_path, lambda ctx, p: [Turn(stall=True)],
                              during=kill_cli, arm="tests/arms/gitea-mcp-pypi.yaml")
    uncharged(result, ctx, cell, "cli-killed")


@pytest.mark.skipif(not GITEA_MCP.exists() and not os.environ.get("CI"),
                    reason="scripts/test-setup installs gitea-mcp")
def test_an_mcp_server_that_hangs_at_start_is_a_startup_error_said_in_one_line(
        forge, shipped_tree, tmp_path, monkeypatch, capfd, caplog):
    """The CLI waits for the server up to its MCP_TIMEOUT (never starts the agent
    without its tools), the trial is the harness's, and nothing prints a traceback of
    a session closed after its event loop."""
    server = tmp_path / "hanging-mcp"
    server.write_text("#!/bin/sh\nexec sleep 987658\n")
    server.chmod(0o755)
    monkeypatch.setenv("BENCHKIT_GITEA_MCP", str(server))
    result, ctx, cell = trial(forge, shipped_tree, tmp_path, lambda ctx, p: [say("unreached")],
                              arm="tests/arms/gitea-mcp-pypi.yaml", env={"MCP_TIMEOUT": "3000"})
    uncharged(result, ctx, cell, "sdk-startup")
    assert result.sample.error.startswith("MCP server(s) did not start: gitea (failed)")
    assert [r for r in ctx.driver.model.messages() if r.body.get("tools")] == []
    gc.collect()  # a session left to the collector speaks now
    said = "".join(capfd.readouterr()) + caplog.text
    for noise in ("Traceback", "Event loop is closed", "that handles pid"):
        assert noise not in said


def test_refused_credentials_stop_the_whole_run_with_one_line(tmp_path, monkeypatch, quiet):
    """`benchkit run` of two cells: the first trial meets a 401, the run stops at once
    (the second never starts), exit 2, one line naming the credentials, no sample."""
    with ScriptedModel([fail(401)], usage=NONE, auxiliary_usage=NONE) as model:
        monkeypatch.setenv("ANTHROPIC_BASE_URL", model.url)
        monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-ant-benchkit-test")
        monkeypatch.setenv("CLAUDE_CONFIG_DIR", str(tmp_path / "claude"))
        result = CliRunner().invoke(main, [
            "run", str(CHECKOUT / "arms.d/raw-api.yaml"), "--task", "close-csv-export-issue",
            "--task", "read-open-issue-count", "--store", "results", "--no-report", "--json"],
            catch_exceptions=False)
    assert result.exit_code == 2, result.output
    refused = [line for line in result.stderr.splitlines() if "refused the credentials" in line]
    assert refused == [f"error: the model service refused the credentials (HTTP 401): the key in "
                       f"$ANTHROPIC_API_KEY for ANTHROPIC_BASE_URL={model.url}; nothing was "
                       f"recorded for the trial"]
    started = [json.loads(line) for line in result.stdout.splitlines()]
    assert [e["event"] for e in started].count("start") == 1
    assert not (tmp_path / "results").exists() or list(Store(tmp_path / "results").samples()) == []
    assert "sk-ant-benchkit-test" not in result.output


class Unreachable(Measured):
    """The real Claude driver against a model service nothing listens for."""

    def __init__(self, url, **kwargs):
        super().__init__(**kwargs)
        self.url = url

    def run(self, request):
        request.env = {**request.env, **self.env}
        return ClaudeDriver(base_url=self.url, confine=self.confine).run(request)


def test_a_service_that_cannot_be_reached_is_named_and_a_gone_transcript_said_so(
        forge, shipped_tree, tmp_path, dead_url):
    """The CLI retries a request that got no answer at all (no status): show names it a
    connection error, where it said "unknown". Then the trial's transcript file is
    deleted: show says it is gone, where it said "none recorded"."""
    driver = Unreachable(dead_url, env=FEW_RETRIES)
    ctx = context(forge, shipped_tree, tmp_path, driver)
    cell = raw_api_cell(shipped_tree)
    result = run_trial(cell, ctx)
    uncharged(result, ctx, cell, "model-service")
    retries = result.sample.model_service["retries"]
    assert retries["status"] is None and retries["count"] >= 1, retries
    listing = shown(ctx)
    assert "connection error: " in listing and "unknown" not in listing, listing
    said = shown(ctx, result.sample.id)
    assert "model service: connection error: " in said
    transcript = ctx.store.root / result.sample.transcript
    transcript.unlink()
    said = shown(ctx, result.sample.id)
    assert f"transcript: {transcript} is gone" in said and "none recorded" not in said, said
