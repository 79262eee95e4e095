"""`benchkit run ARM_YAML --task ID` reaches the cell runner: a sample per cell in the
store, on an embedded forge when no host is given. (The run loop's own behaviour,
trials, budgets, output, is tested with the loop.)"""

import json
import os
import subprocess

import pytest
from conftest import BENCHKIT, CHECKOUT


@pytest.fixture
def clean_env(tmp_path):
    """No host discoverable: no GITEA_* variables, no tea login."""
    env = {key: value for key, value in os.environ.items() if not key.startswith("GITEA_")}
    env.update(HOME=str(tmp_path / "home"), XDG_CONFIG_HOME=str(tmp_path / "config"),
               BENCHKIT_CACHE_DIR=str(tmp_path / "cache"))
    return env


def run_benchkit(args, env):
    return subprocess.run([*BENCHKIT, *args],
                          capture_output=True, text=True, cwd=CHECKOUT, timeout=300, env=env)


@pytest.mark.slow
def test_with_no_host_it_runs_the_cell_on_an_embedded_forge(tmp_path, clean_env):
    store = tmp_path / "results"
    done = run_benchkit(["run", "arms.d/raw-api.yaml", "--task", "close-csv-export-issue",
                         "--driver", "replay", "--store", str(store),
                         "--reports", str(tmp_path / "reports")], clean_env)
    assert done.returncode == 0, done.stderr
    assert (tmp_path / "reports" / "report.md").is_file()  # not in the checkout
    sample, = [json.loads(line) for line in
               (store / "raw-api" / "close-csv-export-issue.jsonl").read_text().splitlines()]
    assert (sample["outcome"], sample["driver"], sample["usage_estimated"]) == ("passed", "replay", True)
    assert sample["host"]["kind"] == "forge"


def test_an_unknown_task_is_bad_input(tmp_path, clean_env):
    done = run_benchkit(["run", "arms.d/raw-api.yaml", "--task", "no-such-task",
                         "--store", str(tmp_path)], clean_env)
    assert done.returncode == 2
    assert "no-such-task.yaml" in done.stderr
