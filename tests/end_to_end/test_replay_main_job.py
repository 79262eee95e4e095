"""The README's main job on a clean machine: `benchkit run arms.d/raw-api.yaml --driver
replay` in a tree, with no Gitea host, no tea login and no Claude account, runs every
task the raw-api reference covers (the README says how many) on the embedded forge,
every one passing, and ends with a report."""

import json
import os
import re
import shutil
import subprocess

import msgspec
import pytest
from conftest import BENCHKIT, CHECKOUT
from test_report_trials import CHROMIUM, assert_replay_leads, first_screen

from benchkit.agent.runtime import installed_runtime
from benchkit.anatomy import PARTS
from benchkit.cost import cost, usage_cost
from benchkit.documents.reference import reference_for
from benchkit.documents.tree import load_tree
from benchkit.planning.plan import select_cells
from benchkit.sample import COMPONENTS


def git(cwd, *args) -> str:
    return subprocess.run(["git", *args], cwd=cwd, check=True, capture_output=True,
                          text=True).stdout


def readme_command() -> list[str]:
    """The main-job command as the README gives it, after `bash scripts/setup &&`: the
    checkout's `.venv/bin/benchkit`, run here as this interpreter's benchkit."""
    text = (CHECKOUT / "README.md").read_text(encoding="utf-8")
    line = next(x for x in text.splitlines() if "--driver replay" in x and "benchkit run" in x)
    command = line.split("&&")[-1].split()
    assert command[:2] == [".venv/bin/benchkit", "run"], line
    return command[1:]


def main_job_cells(root) -> list:
    """The (arm, task) cells the main job runs on the tree at root: what refs.d/ covers
    (the embedded forge forbids self-review)."""
    tree = load_tree(root)
    arm = tree.arms["raw-api"]
    cells, _ = select_cells([arm], list(tree.tasks.values()), self_review=False,
                            references={arm.id: reference_for(arm, root)})
    return cells


def test_the_readme_says_how_many_trials_the_main_job_runs():
    text = (CHECKOUT / "README.md").read_text(encoding="utf-8")
    said = re.search(r"Main job: (\d+) trials", text)
    assert said and int(said[1]) == len(main_job_cells(CHECKOUT)), said


@pytest.mark.slow
def test_the_readme_main_job_runs_every_task_and_writes_a_report(tree_copy, tmp_path):
    home = tmp_path / "home"
    home.mkdir()
    env = {key: value for key, value in os.environ.items()
           if not key.startswith(("GITEA_", "ANTHROPIC_", "CLAUDE_", "BENCHKIT_", "XDG_"))}
    env["HOME"] = str(home)  # no ~/.claude, no tea config, no cache of an earlier run
    git(tree_copy, "init", "-q")  # a fresh clone: what the run writes must be ignored
    shutil.copy(CHECKOUT / ".gitignore", tree_copy)
    git(tree_copy, "add", "-A")
    git(tree_copy, "-c", "user.name=t", "-c", "user.email=t@example.org", "commit", "-qm", "tree")
    done = subprocess.run([*BENCHKIT,
                           *readme_command()], cwd=tree_copy, env=env, capture_output=True,
                          text=True, timeout=900)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    assert git(tree_copy, "status", "--porcelain", "--untracked-files=all") == ""
    samples = [json.loads(line) for path in sorted((tree_copy / "results" / "raw-api").glob("*.jsonl"))
               for line in path.read_text().splitlines()]
    scored = [s for s in samples if s["scored"]]
    cells = main_job_cells(tree_copy)
    assert sorted(s["task"] for s in samples) == sorted(task.id for _, task in cells)
    assert {s["outcome"] for s in scored} == {"passed"}
    assert all(s["driver"] == "replay" and s["usage_estimated"] for s in samples)
    runtime = msgspec.to_builtins(installed_runtime())  # every sample names its runtime
    assert runtime and all(s["runtime"] == runtime for s in samples)
    assert all(s["usage"]["cache_write"] > 0 and s["turns"] >= 2 for s in scored)
    weights = load_tree(tree_copy).suite.weights
    for sample in samples:  # the cost anatomy's four parts add up to every trial's cost
        anatomy = sample["anatomy"]
        assert anatomy["estimated"] and anatomy["requests"] == sample["turns"], sample["task"]
        parts = sum(cost(tuple(anatomy[part]), tuple(weights[c] for c in COMPONENTS))
                    for part in PARTS)
        assert parts == pytest.approx(usage_cost(sample["usage"], weights), rel=1e-12)
    report = (tree_copy / "reports" / "report.md").read_text(encoding="utf-8")
    assert re.search(r"## Where the tokens go\n(.*\n)+\| raw-api \(replay\) \| [\d,]+~ \(", report)
    anatomy_rows = json.loads((tree_copy / "reports" / "report.json").read_text())["anatomy"]
    assert [(r["arm"], r["kind"]) for r in anatomy_rows] == [("raw-api", "replay")]
    assert report.index("## Replay (estimates): headline") < report.index("## Measured"), report[:2000]
    html = tree_copy / "reports" / "report.html"
    if CHROMIUM:  # the first screen, as a newcomer sees it (the screenshot is kept in tmp_path)
        assert_replay_leads(first_screen(html, tmp_path / "shots"))
