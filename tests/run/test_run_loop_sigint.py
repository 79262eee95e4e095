"""Ctrl-C, SIGTERM and SIGHUP during `benchkit run`: the command runs as a subprocess
against a forge this test started (so it can look inside), its agents talking to a
scripted model that stalls. After the signal: exit 128 + the signal (130, 143, 129), no
sample line or transcript, no repository left on the forge (those being run and the one
seeded ahead), every agent token revoked, the agents' processes gone, no temporary
files left."""

import os
import signal
import subprocess
import time
from pathlib import Path

import pytest
from conftest import BENCHKIT, CHECKOUT

from benchkit.agent.scripted import ScriptedModel, stall
from benchkit.forge import Forge
from benchkit.gitea import Client

TASKS = ["close-csv-export-issue", "read-open-issue-count", "label-startup-crash"]
TOKEN = "benchkit-sigint-test-token-0123456789"


def repos(forge) -> list[str]:
    """Every repository on the forge (the trials' are the run user's)."""
    with Client(forge.url, forge.token) as client:
        return [r["full_name"] for r in client.get("/repos/search")["data"]]


def users(forge) -> list[str]:
    with Client(forge.url, forge.token) as client:
        return [u["login"] for u in client.get("/admin/users")]


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


def agent_tokens(forge) -> int:
    """The trials' host tokens (each bound to its repository)."""
    return forge.state.store.value("SELECT COUNT(*) FROM tokens WHERE scope LIKE 'api:%'")


@pytest.mark.slow
@pytest.mark.parametrize("signum,whole_group", [(signal.SIGINT, False), (signal.SIGINT, True),
                                                (signal.SIGTERM, False), (signal.SIGHUP, False)],
                         ids=["sigint-process", "sigint-terminal-group", "sigterm", "sighup"])
def test_a_stop_signal_leaves_no_sample_no_repository_no_token(tmp_path, signum, whole_group):
    store, config, scratch = tmp_path / "results", tmp_path / "claude", tmp_path / "tmp"
    config.mkdir()
    scratch.mkdir()
    with Forge(token=TOKEN) as forge, ScriptedModel([stall()] * len(TASKS)) as model:
        env = {**os.environ, "ANTHROPIC_BASE_URL": model.url, "ANTHROPIC_API_KEY": "sk-test",
               "CLAUDE_CONFIG_DIR": str(config), "BENCHKIT_CACHE_DIR": str(tmp_path / "cache"),
               "BENCHKIT_ROOT": str(CHECKOUT), "PYTHONPATH": str(CHECKOUT),
               "TMPDIR": str(scratch)}
        command = [*BENCHKIT, "run",
                   str(CHECKOUT / "arms.d/raw-api.yaml"),
                   *[arg for task in TASKS for arg in ("--task", task)],
                   "--jobs", "2", "--host", forge.url, "--token", forge.token,
                   "--store", str(store), "--no-report"]
        process = subprocess.Popen(command, env=env, cwd=tmp_path, text=True,
                                   stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                   start_new_session=True)
        try:
            # Two agents waiting on the model, and the third trial's repository seeded ahead
            # (each beside its control repository).
            assert wait_for(lambda: len(model.messages(auxiliary=False)) == 2
                            and len(repos(forge)) == 6, 300), "the run never got going"
            assert agent_tokens(forge) == 3
            if whole_group:  # as a terminal's Ctrl-C: the agents' CLIs get it too
                os.killpg(process.pid, signum)
            else:
                process.send_signal(signum)
            stdout, stderr = process.communicate(timeout=300)
        finally:
            if process.poll() is None:
                process.kill()
        assert process.returncode == 128 + signum, stderr
        assert "interrupted: the running trial(s) left no sample" in stdout
        assert repos(forge) == []
        assert users(forge) == [forge.user]  # the run's own user went with its repositories
        assert [p.name for p in store.rglob("*") if p.is_file()] == [".run.lock"]
        assert wait_for(lambda: agent_processes(str(config)) == [], 120)
        assert agent_tokens(forge) == 0
        assert [p.name for p in scratch.iterdir() if p.name.startswith("benchkit-")] == []
        assert TOKEN not in stdout + stderr
