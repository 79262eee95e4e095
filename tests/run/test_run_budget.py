"""--budget: the dry run and the run agree on which trials the budget skips and on the
exit code (one rule decides both), and the run's --json summary names each skipped
trial by its number. Through the real command: replay on the embedded forge."""

import json
import re
import subprocess

from conftest import BENCHKIT
from test_cli_contract import no_host_env

TASK = "read-open-issue-count"


def run(tree, env, store, *extra):
    return subprocess.run([*BENCHKIT, "run", "arms.d/raw-api.yaml", "--driver", "replay",
                           "--task", TASK, "--store", str(store), "--no-report",
                           "--no-replay-failures", *map(str, extra)],
                          capture_output=True, text=True, cwd=tree, env=env, timeout=300)


def budget_skips(text: str) -> list[str]:
    return re.findall(r"skipped \(budget\): (\S+ \S+ trial \d+)", text)


def test_a_budget_that_fits_nothing_exits_2_in_the_dry_run_as_in_the_run(tree_copy, tmp_path):
    env, store = no_host_env(tmp_path), tmp_path / "results"
    planned = run(tree_copy, env, store, "--until", "3", "--budget", "5000", "--dry-run")
    done = run(tree_copy, env, store, "--until", "3", "--budget", "5000")
    assert (planned.returncode, done.returncode) == (2, 2), planned.stdout + done.stderr
    skipped = [f"raw-api {TASK} trial {n}" for n in range(3)]
    assert budget_skips(planned.stdout) == skipped
    assert budget_skips(done.stdout + done.stderr) == skipped
    line = "nothing to run: the budget of 5,000~ tokens fits no trial"
    assert line in planned.stderr and line in done.stderr
    assert not store.exists()


def test_the_json_summary_names_each_trial_the_budget_skipped(tree_copy, tmp_path):
    env, store = no_host_env(tmp_path), tmp_path / "results"
    first = run(tree_copy, env, store, "--until", "1", "--json")
    assert first.returncode == 0, first.stderr
    (cost,) = [e["tokens"] for e in map(json.loads, first.stdout.splitlines())
               if e["event"] == "end"]
    budget = round(cost * 1.5)  # trial 1 fits; then trial 2 no longer does
    planned = run(tree_copy, env, store, "--until", "3", "--budget", budget, "--dry-run")
    assert planned.returncode == 0, planned.stderr
    assert budget_skips(planned.stdout) == [f"raw-api {TASK} trial 2"]
    done = run(tree_copy, env, store, "--until", "3", "--budget", budget, "--json")
    assert done.returncode == 0, done.stderr
    events = [json.loads(line) for line in done.stdout.splitlines()]
    summary = events[-1]
    assert summary["event"] == "summary" and summary["ran"] == 1
    assert [(s["arm"], s["task"], s["trial"]) for s in summary["skipped_budget"]] == [
        ("raw-api", TASK, 2)]
    assert [e["trial"] for e in events if e["event"] == "budget-skip"] == [2]
