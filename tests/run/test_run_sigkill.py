"""SIGKILL of a real `benchkit run` (the command line as a subprocess, the claude driver:
the real CLI against the scripted model) in each phase where it has processes of its
own: a trial whose model request the stand-in holds, a trial whose Bash command runs,
an MCP arm's trial (the CLI's gitea-mcp), the failure replay's CLI, pre-flight's tool
probe (a shell arm's sandboxed command; an MCP server the harness starts itself).
Nothing of the run may run on, even with its watchdog killed first: within
KILL_WITHIN seconds of the kill no process of the run is alive (this test adopts the run's orphans, and looks for processes marked
with the run's environment; benchkit.lifetime), and the stand-in receives no model
request after it. On the forge for every phase, on a real Gitea for the trial and
the failure replay.
"""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import time
import uuid
from pathlib import Path

import pytest
from conftest import BENCHKIT, CHECKOUT, IN_CI
from test_run_stop_phases import (
    PROBE_SLEEP,
    REPLAY_SLEEP,
    TASK,
    StallsOnReplay,
    adopting_orphans,
    probe_sleeps,
    processes,
    sleeping,
    survivors,
    wait_for,
)

from benchkit.agent.scripted import ScriptedModel, bash, say, stall
from benchkit.forge import Forge

pytestmark = pytest.mark.slow
TOKEN = "benchkit-sigkill-token-0123456789"
KILL_WITHIN = 5.0  # seconds: what the run promises
# A command the agent runs that ends by itself soon after the kill: a CLI that outlived
# its run would send the next model request then.
BASH_SLEEP = "2.987650"
MCP_HANG = "987653"  # the argument of the sleep an MCP server that never starts runs
DEADLINE = 300  # seconds: bounds a hang, never paces the test
GITEA_MCP = CHECKOUT / ".venvs/gitea-mcp/bin/gitea-mcp"


def hanging_server(directory: Path) -> Path:
    """An MCP server that says its version and never answers (it sleeps instead of
    serving): pre-flight's probe starts it and waits."""
    directory.mkdir(exist_ok=True)
    server = directory / "hanging-mcp"
    server.write_text('#!/bin/sh\n[ "$1" = --version ] && exec echo gitea-mcp 0.5.1\n'
                      f"exec sleep {MCP_HANG}\n")
    server.chmod(0o755)
    return server


def kill_in(phase: str, tmp_path: Path, *, url: str, token: str,
            watchdog_first: bool = False) -> str:
    """Start the run, SIGKILL it once it is in `phase` (`watchdog_first`: its watchdog
    process before it, so only the parent-death signals are left to act), and check
    that nothing of it lives on and no model request came after; what the run printed."""
    marker = f"BENCHKIT_KILL_TEST={uuid.uuid4().hex}"
    arm, env_extra = CHECKOUT / "arms.d/raw-api.yaml", {}
    script = [say("Done.")]
    if phase == "preflight":
        arm = probe_sleeps(tmp_path / "arms")
    elif phase in ("mcp-trial", "mcp-preflight"):
        if not GITEA_MCP.exists() and not IN_CI:
            (pytest.fail if IN_CI else pytest.skip)("scripts/test-setup installs gitea-mcp")
        arm = CHECKOUT / "tests/arms/gitea-mcp-pypi.yaml"
        if phase == "mcp-preflight":
            env_extra["BENCHKIT_GITEA_MCP"] = str(hanging_server(tmp_path / "bin"))
        script = [stall()]
    elif phase == "held":
        script = [bash("echo hi"), stall()]
    elif phase == "bash":
        script = [bash(f"echo waiting; sleep {BASH_SLEEP}; echo slept"), say("Done.")]
    model = StallsOnReplay([]) if phase == "failure-replay" else ScriptedModel(script)
    config, scratch = tmp_path / "claude", tmp_path / "tmp"
    config.mkdir()
    scratch.mkdir()
    children = {pid for pid, row in processes().items() if row[0] == os.getpid()}
    with model, adopting_orphans():
        env = {**os.environ, "ANTHROPIC_BASE_URL": model.url, "ANTHROPIC_API_KEY": "sk-test",
               "CLAUDE_CONFIG_DIR": str(config), "BENCHKIT_CACHE_DIR": str(tmp_path / "cache"),
               "BENCHKIT_ROOT": str(CHECKOUT), "PYTHONPATH": str(CHECKOUT),
               "TMPDIR": str(scratch), marker.split("=")[0]: marker.split("=")[1],
               "BENCHKIT_STATE_DIR": str(tmp_path / "state"),  # its journal, no one else's
               **env_extra}
        process = subprocess.Popen(
            [*BENCHKIT, "run", str(arm), "--task", TASK, "--host", url, "--token", token,
             "--store", str(tmp_path / "results"), "--no-report"],
            env=env, cwd=tmp_path, text=True, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
            start_new_session=True)
        try:
            def ready() -> bool:
                assert process.poll() is None, (f"the run ended before its {phase}: "
                                                f"{process.communicate()}")
                if phase in ("held", "mcp-trial"):
                    return model.stalled.is_set()
                argument = {"preflight": PROBE_SLEEP, "bash": BASH_SLEEP,
                            "failure-replay": REPLAY_SLEEP, "mcp-preflight": MCP_HANG}[phase]
                return sleeping(argument, process.pid)
            wait_for(ready, f"the run in its {phase}")
            if watchdog_first:
                kill_watchdog(process.pid)
            killed_at = time.time()
            process.kill()
            said = "".join(process.communicate(timeout=DEADLINE))
        finally:
            if process.poll() is None:
                process.kill()
                process.communicate()
        assert process.returncode == -signal.SIGKILL
        leftover: list[str] = []

        def none_left() -> bool:
            leftover[:] = survivors(children, marker.encode())
            return not leftover
        deadline = killed_at + KILL_WITHIN
        while not none_left() and time.time() < deadline:
            time.sleep(0.05)
        late = [r.body.get("model") for r in model.messages() if r.at > killed_at]
        with contextlib.suppress(AssertionError):  # the test's own tidying: none may stay
            wait_for(lambda: survivors(children, marker.encode()) == [] or _kill(children, marker),
                     "the run's processes gone")
    assert leftover == [], f"processes of the run alive {KILL_WITHIN:g} s after its SIGKILL"
    if phase == "bash":  # the command ended since: a live CLI would have asked again
        time.sleep(max(0.0, killed_at + float(BASH_SLEEP) + 1 - time.time()))
        late = [r.body.get("model") for r in model.messages() if r.at > killed_at]
    assert late == [], "a model request reached the service after the run was killed"
    return said


def kill_watchdog(run: int) -> None:
    """SIGKILL the run's watchdog (benchkit.lifetime: its child running lifetime.py) and
    wait until it is dead."""
    [watchdog] = [pid for pid, (parent, _, cmdline, _) in processes().items()
                  if parent == run and b"lifetime.py" in cmdline]
    os.kill(watchdog, signal.SIGKILL)
    wait_for(lambda: processes().get(watchdog, (0, "Z"))[1] == "Z", "the watchdog dead")


def _kill(children: set[int], marker: str) -> bool:
    """Kill what the run left (after the assertion's evidence is taken)."""
    for entry in survivors(children, marker.encode()):
        with contextlib.suppress(OSError):
            os.kill(int(entry.split(":")[0]), signal.SIGKILL)
    return False


@pytest.mark.parametrize("phase", ["held", "bash", "mcp-trial", "failure-replay", "preflight",
                                   "mcp-preflight"])
def test_sigkill_leaves_nothing_running_on_the_forge(phase, tmp_path):
    with Forge(token=TOKEN) as forge:
        kill_in(phase, tmp_path, url=forge.url, token=forge.token)


@pytest.mark.parametrize("phase", ["bash", "failure-replay"])
def test_sigkill_leaves_nothing_running_on_a_live_gitea(phase, tmp_path, gitea):
    kill_in(phase, tmp_path, url=gitea.url, token=gitea.token)


@pytest.mark.parametrize("phase", ["bash", "mcp-trial", "mcp-preflight"])
def test_sigkill_of_the_watchdog_then_the_run_leaves_nothing_running(phase, tmp_path):
    """The watchdog killed first: every process the run started dies with it all the
    same, by its parent-death signal (the CLI, the sandbox's socat bridge, the MCP
    server pre-flight's probe starts), or with the process that started it (the CLI's
    MCP server)."""
    with Forge(token=TOKEN) as forge:
        kill_in(phase, tmp_path, url=forge.url, token=forge.token, watchdog_first=True)
