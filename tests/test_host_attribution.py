"""Who is charged when the host is slow or the arm's tool vanishes, through the real SDK
and CLI (the scripted model), real curl, the sandbox and the gateway, on the forge and
on a real Gitea: time the host's answers took is the host's, a tool the sandbox cannot
start is the harness's, a tool that runs and crashes stays the arm's."""

import os
import shutil
import time

import pytest
from holding_proxy import HoldingProxy
from test_model_service import close, shown, trial, uncharged

from benchkit.agent.scripted import bash, say

pytestmark = [pytest.mark.slow, pytest.mark.usefixtures("private_dirs")]


class Behind:
    """The host as the harness sees it through a proxy: its URL, the same account."""

    def __init__(self, host, proxy):
        self.url, self.token, self.user = proxy.url, host.token, host.user


def test_a_host_that_holds_the_agents_request_past_the_backstop_is_not_charged(
        host, shipped_tree, tmp_path):
    """The agent's PATCH held 25 s by the host (a proxy in front of it) in a trial with
    a 15 s backstop: once `hung/backstop`, charged, `--until` planning nothing; now a
    harness error of class host-slow whose sample names the host's time."""
    with HoldingProxy(host.url, "PATCH", r"/issues/2$", hold=25) as proxy:
        result, ctx, cell = trial(Behind(host, proxy), shipped_tree, tmp_path,
                                  lambda ctx, p: [close(ctx, p), say("Closed #2.")],
                                  backstop_seconds=15)
    assert proxy.held == 1
    uncharged(result, ctx, cell, "host-slow")
    found = result.sample.host_time
    assert found["answers"] == 1 and found["host_s"] >= 0.5 * found["of_s"], found
    patch, = [e for e in result.sample.requests if e["method"] == "PATCH"]
    assert patch["host_s"] >= 24, patch
    said = shown(ctx, result.sample.id)
    assert f"host answers took {found['host_s']:.0f} s of {found['of_s']:.0f} s" in said
    assert "outcome: harness-error (host-slow)" in said


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
