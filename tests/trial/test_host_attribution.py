"""Who is charged when the host is slow or failing, the harness itself stopped, or the
arm's tool vanishes, through the real SDK and CLI (the scripted model), real curl, the
sandbox and the gateway, on the forge and on a real Gitea. The host is at fault only
when the control request the gateway sends (benchkit.gateway.control: one of the same
kind, on a repository of the run's own) fails or is slow too: a database lock, a proxy
answering writes 5xx, a host slow on every answer (under 5 s too) are harness errors
with the control's figures in the sample, never charged; a 500 the agent provokes while
it loads the host stays charged; a run stopped past its backstop charges no one; a tool
the sandbox cannot start is the harness's, a tool that runs and crashes stays the
arm's."""

import json
import os
import shutil
import signal
import sqlite3
import subprocess
import threading
import time

import pytest
from conftest import BENCHKIT, CHECKOUT, real_gitea
from holding_proxy import HoldingProxy
from test_model_service import Measured, close, shown, trial, uncharged
from test_trial_cell import context, curl, raw_api_cell

from benchkit.agent.replay import tool_results
from benchkit.agent.scripted import ScriptedModel, Turn, bash, say
from benchkit.gateway.server import Gateway
from benchkit.sample import HOST_5XX, HOST_SLOW, PAUSED, PROVOKED
from benchkit.trial.cell import run_trial
from benchkit.trial.prepare import limits, prepare_trial

pytestmark = [pytest.mark.slow, pytest.mark.usefixtures("private_dirs")]
WRITES = r"/(issues|labels)/[0-9]+$"  # the agent's PATCH of an issue, the control's of a label


class Behind:
    """The host as the harness sees it through a proxy: its URL, the same account."""

    def __init__(self, host, proxy):
        self.url, self.token, self.user = proxy.url, host.token, host.user


def through(proxy_url, host, shipped_tree, tmp_path, script, during=None, **suite):
    """One trial of the close task whose agent reaches the host through a proxy (its
    gateway in front of `proxy_url`) while the harness reaches it directly (seeding,
    the control repository, the snapshot); `during(driver, prepared)` runs beside it.
    (result, ctx, cell)."""
    driver = Measured()
    ctx = context(host, shipped_tree, tmp_path, driver, **suite)
    ctx.gateway = Gateway(proxy_url, limits=limits(ctx.suite))
    cell = raw_api_cell(shipped_tree)
    try:
        prepared = prepare_trial(cell, ctx)
        driver.script = script(ctx, prepared)
        helper = threading.Thread(target=during, args=(driver, prepared)) if during else None
        if helper:
            helper.start()
        result = run_trial(cell, ctx, prepared)
        if helper:
            helper.join(60)
    finally:
        ctx.gateway.close()
    return result, ctx, cell


def control_of(sample, method: str) -> dict:
    """The control figures of the sample's first request of `method` that has them."""
    return next(e["control"] for e in sample.requests if e["method"] == method and "control" in e)


def test_a_host_that_holds_every_write_past_the_backstop_is_not_charged(
        host, shipped_tree, tmp_path):
    """The agent's PATCH held 35 s by the host (a proxy in front of it holding every
    write, the control's too) in a trial with a 20 s backstop: once `hung/backstop`,
    charged; now a harness error of class host-slow whose sample names the host's time
    and the control's figures (it timed out)."""
    with HoldingProxy(host.url, "PATCH", r"/issues/2$|/labels/[0-9]+$", hold=35) as proxy:
        result, ctx, cell = trial(Behind(host, proxy), shipped_tree, tmp_path,
                                  lambda ctx, p: [close(ctx, p), say("Closed #2.")],
                                  backstop_seconds=20)
    assert proxy.held == 2  # the agent's write and its control
    uncharged(result, ctx, cell, HOST_SLOW)
    found = result.sample.host_time
    assert found["answers"] == 1 and found["host_s"] >= 0.5 * found["of_s"], found
    patch, = [e for e in result.sample.requests if e["method"] == "PATCH"]
    assert patch["host_s"] >= 34, patch
    assert patch["control"] == {**patch["control"], "kind": "write", "status": "TimeoutError"}
    said = shown(ctx, result.sample.id)
    assert f"host answers took {found['host_s']:.0f} s of {found['of_s']:.0f} s" in said
    assert "outcome: harness-error (host-slow)" in said


def test_a_host_slow_on_every_answer_under_five_seconds_is_not_charged(
        forge, shipped_tree, tmp_path):
    """Every answer held 4.5 s (just under the 5 s once counted as slow): once
    `hung/backstop` and charged. Each request's control waited as long, so the host
    owes the trial's time: host-slow."""
    def reads(ctx, prepared):
        get = curl(ctx, prepared, "GET", "/issues/2")
        return [bash(f"for n in $(seq 1 40); do {get} > /dev/null; done"), say("Done.")]
    with HoldingProxy(forge.url, "*", r"^/api/v1/repos/", hold=4.5) as proxy:
        result, ctx, cell = through(proxy.url, forge, shipped_tree, tmp_path, reads,
                                    backstop_seconds=25)
    uncharged(result, ctx, cell, HOST_SLOW)
    sample = result.sample
    gets = [e for e in sample.requests if e["method"] == "GET"]
    assert len(gets) >= 3 and all(e["host_s"] >= 4.4 for e in gets[:-1]), gets
    assert control_of(sample, "GET")["kind"] == "read"
    assert all(4.0 <= e["control"]["s"] for e in gets[:-1] if "control" in e), gets
    assert sample.host_time["host_s"] >= 0.5 * sample.host_time["of_s"], sample.host_time


def test_a_proxy_answering_writes_5xx_is_the_hosts_fault(host, shipped_tree, tmp_path):
    """A reverse proxy in front of the host answers every write 504 (the request never
    reaches the host): once charged as `host-error-provoked`, since the health request
    (a read) answered. The control is a write too: it fails the same way."""
    with HoldingProxy(host.url, "PATCH", WRITES, hold=0, status=504) as proxy:
        result, ctx, cell = through(proxy.url, host, shipped_tree, tmp_path,
                                    lambda ctx, p: [close(ctx, p), say("Closed #2.")])
    uncharged(result, ctx, cell, HOST_5XX)
    assert control_of(result.sample, "PATCH") == {**control_of(result.sample, "PATCH"),
                                                  "kind": "write", "status": 504}
    assert "control write right after: HTTP 504" in result.sample.error


@pytest.fixture
def stock_gitea():
    """A real Gitea whose writes wait for a lock as long as a stock one's (500 ms, Gitea's
    default SQLITE_TIMEOUT): the session's waits longer, so that its own writes under
    load never fail on each other's."""
    with real_gitea(sqlite_timeout_ms=500) as running:
        yield running


def test_a_database_lock_on_a_real_gitea_is_the_hosts_fault(stock_gitea, shipped_tree, tmp_path):
    """A write lock held on Gitea's SQLite database (a backup, parallel writes), at most
    10 s: Gitea answers the agent's PATCH 500 (`database is locked`) while its version,
    which writes nothing, answers 200; once charged. The control write fails too:
    host-5xx. (The lock goes once the control is on the record, so that the trial's
    repository can be deleted.)"""
    gitea = stock_gitea
    locked = threading.Event()

    def lock(driver, prepared) -> None:
        deadline = time.monotonic() + 120
        while driver.model is None or not driver.model.messages(auxiliary=False):
            assert time.monotonic() < deadline, "the agent never asked the model"
            time.sleep(0.05)
        db = sqlite3.connect(gitea.work / "data" / "gitea.db", isolation_level=None, timeout=30)
        try:
            db.execute("BEGIN EXCLUSIVE")
            locked.set()
            until = time.monotonic() + 10
            while time.monotonic() < until and not any(
                    "control" in e for e in prepared.grant.requests):
                time.sleep(0.05)
            db.execute("ROLLBACK")
        finally:
            db.close()

    def script(ctx, prepared):  # the turn's answer waits until the lock is held
        return [Turn(calls=close(ctx, prepared).calls, first_byte_delay=3), say("Closed #2.")]
    result, ctx, cell = through(gitea.url, gitea, shipped_tree, tmp_path, script, during=lock)
    assert locked.is_set()
    uncharged(result, ctx, cell, HOST_5XX)
    patch, = [e for e in result.sample.requests if e["method"] == "PATCH"]
    assert patch["status"] == 500 and patch["control"]["status"] == 500, patch
    assert "database is locked" in gitea.log_text()


def test_a_500_the_agent_provokes_while_it_loads_the_host_stays_charged(
        forge, shipped_tree, tmp_path):
    """R12: the agent's own Markdown comments keep the host busy (as costly as the
    gateway lets through) while it provokes a 500 (one dependency posted twice): the
    control write, sent at once, answers: charged, `host-error-provoked`. (On a real
    Gitea the same 500: tests/run/test_failure_replay.py's B07.)"""
    def script(ctx, prepared):
        body = json.dumps({"body": "*a_" * 680})
        comment = (curl(ctx, prepared, "POST", "/issues/1/comments")
                   + f" -H 'Content-Type: application/json' -d '{body}' > /dev/null &")
        post = curl(ctx, prepared, "POST", "/issues/1/dependencies",
                    {"owner": prepared.repo.owner, "repo": prepared.repo.name, "index": 2})
        return [bash(f"{comment * 4} {post}; {post}; wait"), say("Done.")]
    result, ctx, cell = trial(forge, shipped_tree, tmp_path, script)
    sample = result.sample
    assert (sample.outcome, sample.failure_class, sample.valid) == ("failed", PROVOKED, True), \
        sample.error
    errors = [e for e in sample.requests if e["status"] >= 500]
    assert errors and all(e["control"]["status"] == 200 for e in errors), sample.requests
    assert len([e for e in sample.requests if e["status"] == 201]) >= 4


def test_a_run_stopped_past_its_backstop_charges_no_one(tree_copy, tmp_path):
    """The whole run stopped (SIGSTOP to its process group, as Ctrl-Z stops a terminal's)
    for longer than its backstop while its agent works, then continued: once
    `harness-error/host-slow` ("host answers took 76 s of 77 s", Gitea answered in 3 s).
    The harness sees its own stop: `harness-paused`, no host blamed, no one charged."""
    suite = tree_copy / "suite.yaml"
    suite.write_text(suite.read_text().replace("backstop_seconds: 300", "backstop_seconds: 12"))
    asked = threading.Event()
    store, config, scratch = tmp_path / "results", tmp_path / "claude", tmp_path / "tmp"
    config.mkdir()
    scratch.mkdir(exist_ok=True)
    with ScriptedModel([]) as model:
        def turn_for(index: int, request: dict):
            if tool_results(request):
                return say("Done.")
            asked.set()
            return bash("sleep 2; echo done")
        model.turn_for = turn_for  # type: ignore[method-assign]
        env = {**os.environ, "ANTHROPIC_BASE_URL": model.url, "ANTHROPIC_API_KEY": "sk-test",
               "CLAUDE_CONFIG_DIR": str(config), "BENCHKIT_CACHE_DIR": str(tmp_path / "cache"),
               "BENCHKIT_ROOT": str(tree_copy), "PYTHONPATH": str(CHECKOUT), "TMPDIR": str(scratch)}
        process = subprocess.Popen(
            [*BENCHKIT, "run", "arms.d/raw-api.yaml", "--task", "close-csv-export-issue",
             "--store", str(store), "--no-report", "--no-replay-failures"],
            env=env, cwd=tree_copy, text=True, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
            start_new_session=True)
        try:
            assert asked.wait(180), "the agent never asked the model"
            os.killpg(process.pid, signal.SIGSTOP)
            time.sleep(15)  # the stop itself: longer than the backstop
            os.killpg(process.pid, signal.SIGCONT)
            stdout, stderr = process.communicate(timeout=180)
        finally:
            if process.poll() is None:
                os.killpg(process.pid, signal.SIGKILL)
                process.communicate()
    sample, = [json.loads(line) for path in store.glob("*/*.jsonl")
               for line in path.read_text().splitlines()]
    assert (sample["outcome"], sample["failure_class"]) == ("harness-error", PAUSED), \
        stdout[-2000:] + stderr[-2000:]
    assert "the harness itself was stopped for" in sample["error"]
    assert sample["host_time"] is None


def test_an_agent_that_hangs_on_its_own_with_a_fast_host_is_still_hung(
        forge, shipped_tree, tmp_path):
    result, ctx, cell = trial(forge, shipped_tree, tmp_path,
                              lambda ctx, p: [bash("tail -f /dev/null"), say("never")],
                              backstop_seconds=10)
    sample = result.sample
    assert (sample.outcome, sample.failure_class, sample.valid) == ("hung", "backstop", True)
    assert sample.host_time is None


@pytest.fixture
def own_curl(tmp_path, monkeypatch):
    """A copy of curl first on the harness's PATH, in a directory the sandbox hides
    (under the test's temporary directory): the sandbox binds it by its path."""
    bin_dir = tmp_path / "own-bin"
    bin_dir.mkdir()
    copy = bin_dir / "curl"
    shutil.copy2(shutil.which("curl"), copy)
    monkeypatch.setenv("PATH", f"{bin_dir}{os.pathsep}{os.environ['PATH']}")
    return copy


def when_asked(change):
    """`during`: run `change` as soon as the agent's first turn reaches the model (the
    arm is assembled; its first command has not run: the turn's answer is delayed)."""
    def during(driver):
        deadline = time.monotonic() + 120
        while driver.model is None or not driver.model.messages(auxiliary=False):
            assert time.monotonic() < deadline, "the agent never asked the model"
            time.sleep(0.05)
        change()
    return during


def test_a_tool_removed_mid_trial_is_a_harness_error(forge, shipped_tree, tmp_path, own_curl):
    """The arm's tool is deleted once the trial has begun: the agent's command's
    sandbox cannot start it (bwrap: Can't find source path ...). Once `failed/checker`,
    charged; now a harness error, tool-missing."""
    result, ctx, cell = trial(forge, shipped_tree, tmp_path,
                              lambda ctx, p: [close(ctx, p, first_byte_delay=3), say("Closed #2.")],
                              during=when_asked(own_curl.unlink))
    uncharged(result, ctx, cell, "tool-missing")
    assert "the arm's tool vanished mid-trial" in result.sample.error
    assert "Can't find source path" in result.sample.error, result.sample.error
    assert "outcome: harness-error (tool-missing)" in shown(ctx, result.sample.id)


def test_a_tool_that_runs_and_crashes_stays_the_arms(forge, shipped_tree, tmp_path, own_curl):
    """The same tool, there all along, crashing when it runs: the arm's failure."""
    own_curl.unlink()
    own_curl.write_text("#!/bin/sh\nkill -SEGV $$\n")
    own_curl.chmod(0o755)
    result, ctx, cell = trial(forge, shipped_tree, tmp_path,
                              lambda ctx, p: [close(ctx, p), say("Closed #2.")])
    sample = result.sample
    assert (sample.outcome, sample.failure_class, sample.valid) == ("failed", "checker", True), \
        sample.error
