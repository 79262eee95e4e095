"""Ctrl-C in the middle of `benchkit run --trials 2` (the command line, the real CLI
against the scripted model, on the forge), then the same command: it runs only the
trials that had not finished, so every cell ends with two samples and no duplicate;
the stopped run's last line is the command that resumes it (the command on another
host is another: it resumes nothing); once the command has done all it planned, the
same command adds two more again (its dry run says so)."""

from __future__ import annotations

import json
import os
import shlex
import signal
import subprocess
import time
from pathlib import Path

import pytest
from conftest import BENCHKIT, CHECKOUT

from benchkit.agent.scripted import ScriptedModel, say, stall
from benchkit.forge import Forge

pytestmark = pytest.mark.slow
TASKS = ["read-open-issue-count", "read-bug-issue-titles"]
DEADLINE = 300  # seconds: bounds a hang


def run(model: ScriptedModel, forge: Forge, store: Path, tmp_path: Path, *extra: str):
    env = {**os.environ, "ANTHROPIC_BASE_URL": model.url, "ANTHROPIC_API_KEY": "sk-test",
           "CLAUDE_CONFIG_DIR": str(tmp_path / "claude"), "BENCHKIT_ROOT": str(CHECKOUT),
           "PYTHONPATH": str(CHECKOUT), "BENCHKIT_STATE_DIR": str(tmp_path / "state")}
    args = ["run", "arms.d/raw-api.yaml", *[a for t in TASKS for a in ("--task", t)],
            "--trials", "2", "--no-report", "--no-replay-failures", "--store", str(store),
            "--host", forge.url, "--token", forge.token, *extra]
    return subprocess.Popen([*BENCHKIT, *args], env=env, cwd=CHECKOUT, text=True,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            start_new_session=True), args


def trials(store: Path) -> dict[str, list[int]]:
    return {path.stem: sorted(json.loads(line)["trial"] for line in path.read_text().splitlines())
            for path in sorted((store / "raw-api").glob("*.jsonl"))}


def test_ctrl_c_then_the_same_command_runs_only_what_is_missing(tmp_path):
    store = tmp_path / "results"
    (tmp_path / "claude").mkdir()
    # Two trials end (one of each cell, least-sampled first); the third stalls.
    stopping = ScriptedModel([say("3"), say("none"), stall()])
    with Forge() as forge:
        with stopping:
            process, args = run(stopping, forge, store, tmp_path)
            try:
                deadline = time.monotonic() + DEADLINE
                while not stopping.stalled.wait(0.1):
                    assert process.poll() is None, process.communicate()
                    assert time.monotonic() < deadline, "the third trial never started"
                process.send_signal(signal.SIGINT)
                stdout, stderr = process.communicate(timeout=DEADLINE)
            finally:
                if process.poll() is None:
                    process.kill()
                    process.communicate()
        assert process.returncode == 130, stdout + stderr
        assert trials(store) == {TASKS[1]: [0], TASKS[0]: [0]}
        last = (stdout + stderr).strip().splitlines()[-1]
        typed = shlex.join(["benchkit", *args]).replace(forge.token, '"$GITEA_TOKEN"')
        assert last == (f"resume: `{typed}` runs only what this command has not run yet (its "
                        "finished trials are kept)"), last  # the token never shown
        assert forge.token not in stdout + stderr

        with Forge() as elsewhere, ScriptedModel([]) as model:  # another command: its host
            process, _ = run(model, elsewhere, store, tmp_path, "--dry-run")
            stdout, stderr = process.communicate(timeout=DEADLINE)
        assert process.returncode == 0, stdout + stderr
        assert "stopped after" not in stdout + stderr and "would run 4 trial(s)" in stdout, \
            stdout + stderr

        with ScriptedModel([say("3"), say("none")]) as model:
            process, _ = run(model, forge, store, tmp_path)
            stdout, stderr = process.communicate(timeout=DEADLINE)
        assert process.returncode in (0, 1), stdout + stderr  # a wrong answer fails, no more
        assert "resuming this command, stopped after 2 trial(s)" in stdout + stderr
        assert len(model.messages(auxiliary=False)) == 2  # the two missing trials, no more
        assert trials(store) == {TASKS[1]: [0, 1], TASKS[0]: [0, 1]}  # none twice
        assert not (store / ".intents").exists()  # done what it planned

        with ScriptedModel([]) as model:
            process, _ = run(model, forge, store, tmp_path, "--dry-run")
            stdout, stderr = process.communicate(timeout=DEADLINE)
        assert process.returncode == 0, stdout + stderr
        assert "would run 4 trial(s)" in stdout, stdout
