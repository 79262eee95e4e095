"""The run loop's ledger and the report count by one rule (benchkit.counting): after the
base prompt changes between two runs, the samples of the older prompt no longer count
toward a cell that has a newer one, for `--until` as for the report."""

import json
import os
import subprocess

import pytest
from conftest import BENCHKIT

from benchkit.documents import load_tree
from benchkit.planning.ledger import Ledger
from benchkit.report import ReportOptions, build
from benchkit.store import Store

pytestmark = pytest.mark.slow

TASKS = ("close-csv-export-issue", "read-open-issue-count")


def benchkit(tree, *args) -> subprocess.CompletedProcess:
    env = {key: value for key, value in os.environ.items()
           if not key.startswith(("GITEA_", "ANTHROPIC_", "CLAUDE_"))}
    done = subprocess.run([*BENCHKIT, *args],
                          cwd=tree, env=env, capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    return done


def run(tree, *args) -> subprocess.CompletedProcess:
    return benchkit(tree, "run", "arms.d/raw-api.yaml", "--driver", "replay", "--no-report", *args)


def ledger_counts(tree) -> dict:
    loaded = load_tree(tree)
    arm = loaded.arms["raw-api"]
    cells = [(arm, loaded.tasks[task]) for task in TASKS]
    ledger = Ledger(cells, loaded.seeds, loaded.suite, driver="replay",
                    model=loaded.suite.model).load(Store(tree / "results"))
    return {task: ledger.valid[("raw-api", task)] for task in TASKS}


def report_counts(tree) -> dict:
    report = build(tree / "results", ReportOptions(root=tree))
    counts = {(row.arm, row.task): row.samples for row in report.cells
              if row.kind == "replay-estimate"}
    return {task: counts.get(("raw-api", task), 0) for task in TASKS}


def test_ledger_and_report_agree_after_the_base_prompt_changes(tree_copy):
    tasks = [arg for task in TASKS for arg in ("--task", task)]
    run(tree_copy, *tasks, "--trials", "1")
    assert ledger_counts(tree_copy) == report_counts(tree_copy) == dict.fromkeys(TASKS, 1)

    suite = tree_copy / "suite.yaml"
    suite.write_text(suite.read_text().replace("You are working with a Gitea server.",
                                               "You are working with a Gitea server, carefully."))
    run(tree_copy, "--task", TASKS[0], "--trials", "1")
    lines = (tree_copy / "results" / "raw-api" / f"{TASKS[0]}.jsonl").read_text().splitlines()
    prompts = [json.loads(line)["fingerprints"]["prompt"] for line in lines]
    assert len(prompts) == 2 and prompts[0] != prompts[1]  # the change reached the prompt

    # The first task's older sample is set aside by both; the second task has only the
    # older prompt's sample, which still counts for both until a newer one exists.
    expected = {TASKS[0]: 1, TASKS[1]: 1}
    assert ledger_counts(tree_copy) == expected
    assert report_counts(tree_copy) == expected
    planned = run(tree_copy, *tasks, "--until", "2", "--dry-run").stdout
    assert "would run 2 trial(s)" in planned, planned


@pytest.mark.parametrize("foreign", [
    {"arm": "raw-api", "task": TASKS[0], "trial": 4, "schema_version": 99},  # a later version
    {"arm": "raw-api", "task": TASKS[0], "trial": 4},                        # a cut line
])
def test_a_line_another_version_wrote_still_takes_its_trial_number(tmp_path, foreign):
    loaded = load_tree()
    arm = loaded.arms["raw-api"]
    cells = [(arm, loaded.tasks[task]) for task in TASKS]
    store = tmp_path / "results" / "raw-api"
    store.mkdir(parents=True)
    (store / f"{TASKS[0]}.jsonl").write_text(json.dumps(foreign) + "\n")
    ledger = Ledger(cells, loaded.seeds, loaded.suite, driver="replay",
                    model=loaded.suite.model).load(Store(tmp_path / "results"))
    assert ledger.valid[("raw-api", TASKS[0])] == 0  # it counts for nothing ...
    assert ledger.number("raw-api", TASKS[0]) == 5   # ... but its number is taken
    assert ledger.number("raw-api", TASKS[1]) == 0


def test_the_first_measured_trial_of_a_replayed_cell_is_trial_0(tmp_path):
    """Measured and replay trials are numbered apart: a cell with three replay samples
    gets its first measured one as trial 0, its next replay one as trial 3."""
    from synthetic import sample, write_store
    loaded = load_tree()
    arm = loaded.arms["raw-api"]
    cells = [(arm, loaded.tasks[task]) for task in TASKS]
    write_store(tmp_path / "results", [
        sample("raw-api", TASKS[0], "single-mutation", driver="replay", trial=n) for n in range(3)])

    def ledger(driver):
        return Ledger(cells, loaded.seeds, loaded.suite, driver=driver,
                      model=loaded.suite.model).load(Store(tmp_path / "results"))
    assert ledger("claude").number("raw-api", TASKS[0]) == 0
    assert ledger("replay").number("raw-api", TASKS[0]) == 3
