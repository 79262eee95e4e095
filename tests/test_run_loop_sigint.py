"""Ctrl-C during `benchkit run`: the command runs as a subprocess against a forge this
test started (so it can look inside), its agents talking to a scripted model that
stalls. After SIGINT: exit 130, no sample line or transcript, no repository left on
the forge (those being run and the one seeded ahead), the agents' processes gone."""

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from benchkit.agent.scripted import ScriptedModel, stall
from benchkit.forge import Forge
from benchkit.gitea import Client

CHECKOUT = Path(__file__).resolve().parents[1]
TASKS = ["close-csv-export-issue", "read-open-issue-count", "label-startup-crash"]
TOKEN = "benchkit-sigint-test-token-0123456789"


def repos(forge) -> list[str]:
    with Client(forge.url, forge.token) as client:
        return [r["name"] for r in client.get(f"/users/{forge.user}/repos")]


def wait_for(condition, seconds: float) -> bool:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if condition():
            return True
        time.sleep(0.1)
    return False


def agent_processes(marker: str) -> list[int]:
    """Claude CLIs started with this test's Claude config directory."""
    found = []
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                environ = Path(f"/proc/{entry}/environ").read_bytes()
            except OSError:
                continue
            if f"CLAUDE_CONFIG_DIR={marker}".encode() in environ:
                found.append(int(entry))
    return found


@pytest.mark.slow
@pytest.mark.parametrize("whole_group", [False, True], ids=["process", "terminal-group"])
def test_ctrl_c_leaves_no_sample_no_repository_and_exits_130(tmp_path, whole_group):
    store, config = tmp_path / "results", tmp_path / "claude"
    config.mkdir()
    with Forge(token=TOKEN) as forge, ScriptedModel([stall()] * len(TASKS)) as model:
        env = {**os.environ, "ANTHROPIC_BASE_URL": model.url, "ANTHROPIC_API_KEY": "sk-test",
               "CLAUDE_CONFIG_DIR": str(config), "BENCHKIT_CACHE_DIR": str(tmp_path / "cache"),
               "BENCHKIT_ROOT": str(CHECKOUT), "PYTHONPATH": str(CHECKOUT)}
        command = [sys.executable, "-c", "from benchkit.cli import main; main()", "run",
                   str(CHECKOUT / "arms.d/raw-api.yaml"),
                   *[arg for task in TASKS for arg in ("--task", task)],
                   "--jobs", "2", "--host", forge.url, "--token", forge.token,
                   "--store", str(store), "--no-report"]
        process = subprocess.Popen(command, env=env, cwd=tmp_path, text=True,
                                   stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                   start_new_session=True)
        try:
            # Two agents waiting on the model, and the third trial's repository seeded ahead.
            assert wait_for(lambda: len(model.messages(auxiliary=False)) == 2
                            and len(repos(forge)) == 3, 90), "the run never got going"
            if whole_group:  # as a terminal's Ctrl-C: the agents' CLIs get it too
                os.killpg(process.pid, signal.SIGINT)
            else:
                process.send_signal(signal.SIGINT)
            stdout, stderr = process.communicate(timeout=60)
        finally:
            if process.poll() is None:
                process.kill()
        assert process.returncode == 130, stderr
        assert "interrupted: the running trial(s) left no sample" in stdout
        assert repos(forge) == []
        assert not store.exists() or not any(p.is_file() for p in store.rglob("*"))
        assert wait_for(lambda: agent_processes(str(config)) == [], 10)
        assert TOKEN not in stdout + stderr
