"""The tool upgraded between two trials of one `benchkit run` (the command line, the
real CLI against the scripted model, on the forge): each sample records the version it
ran with. The raw-api arm's `curl` is a wrapper first on PATH that prints a version of
its own and runs the real curl; the scripted model swaps it for another version when
the first trial's agent sends its first request (after that trial's start, before the
second's), so the swap falls between the two trials by construction."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import pytest
from conftest import BENCHKIT, CHECKOUT

from benchkit.agent.scripted import ScriptedModel, say
from benchkit.forge import Forge

pytestmark = pytest.mark.slow
DEADLINE = 300  # seconds: bounds a hang


def wrapper(version: str) -> str:
    return (f'#!/bin/sh\n[ "$1" = --version ] && exec echo "curl {version} (wrapper)"\n'
            'exec /usr/bin/curl "$@"\n')


class SwapsOnFirstTurn(ScriptedModel):
    """Answers every turn with a short answer; the first one's arrival installs the
    tool's next version (a new file in its place, as a package upgrade leaves it)."""

    def __init__(self, tool: Path):
        super().__init__([])
        self.tool = tool

    def turn_for(self, index: int, request: dict):
        if index == 0:
            fresh = self.tool.with_name("curl.next")
            fresh.write_text(wrapper("2.0"))
            fresh.chmod(0o755)
            os.replace(fresh, self.tool)
        return say("There are 3 open issues.")


def test_a_tool_upgraded_between_trials_is_recorded_as_each_trial_ran_it(tmp_path):
    bin_dir, store = tmp_path / "bin", tmp_path / "results"
    bin_dir.mkdir()
    tool = bin_dir / "curl"
    tool.write_text(wrapper("1.0"))
    tool.chmod(0o755)
    config = tmp_path / "claude"
    config.mkdir()
    with Forge() as forge, SwapsOnFirstTurn(tool) as model:
        env = {**os.environ, "ANTHROPIC_BASE_URL": model.url, "ANTHROPIC_API_KEY": "sk-test",
               "CLAUDE_CONFIG_DIR": str(config), "BENCHKIT_ROOT": str(CHECKOUT),
               "PYTHONPATH": str(CHECKOUT), "BENCHKIT_STATE_DIR": str(tmp_path / "state"),
               "PATH": f"{bin_dir}{os.pathsep}{os.environ['PATH']}"}
        done = subprocess.run(
            [*BENCHKIT, "run", "arms.d/raw-api.yaml", "--task", "read-open-issue-count",
             "--trials", "2", "--no-report", "--no-replay-failures", "--store", str(store),
             "--host", forge.url, "--token", forge.token], capture_output=True, text=True,
            cwd=CHECKOUT, env=env, timeout=DEADLINE)
    assert done.returncode == 0, done.stdout + done.stderr
    lines = (store / "raw-api" / "read-open-issue-count.jsonl").read_text().splitlines()
    samples = sorted((json.loads(line) for line in lines), key=lambda s: s["trial"])
    assert [s["tool_version"] for s in samples] == ["curl 1.0 (wrapper)", "curl 2.0 (wrapper)"]
    first, second = samples
    assert first["tool_surface"] is not None  # pre-flight's version: its probed surface
    assert second["tool_surface"] is None  # a version whose surface no probe saw
    assert first["fingerprints"]["arm"] != second["fingerprints"]["arm"]
