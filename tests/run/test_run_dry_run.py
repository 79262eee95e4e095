"""`benchkit run --dry-run`: the plan in order with expected tokens each and in total,
what would be skipped and why; nothing spent, no forge or host contacted, nothing
written."""

import json
import os
import subprocess

import pytest
from conftest import BENCHKIT
from synthetic import sample, write_store


def benchkit(*args, cwd, env=None):
    return subprocess.run([*BENCHKIT, *map(str, args)],
                          capture_output=True, text=True, cwd=cwd, env=env, timeout=120)


def listing(root):
    return sorted(str(p.relative_to(root)) for p in root.rglob("*"))


def test_the_plan_is_printed_from_past_samples_and_nothing_is_written(tree_copy, dead_url):
    past = sample("raw-api", "close-csv-export-issue", "single-mutation", driver="claude",
                  tokens={"input": 0, "cache_write": 8000, "cache_read": 20000, "output": 200})
    store = write_store(tree_copy / "results", [past])
    before = listing(tree_copy)
    env = {**os.environ, "GITEA_URL": dead_url, "GITEA_TOKEN": "t"}  # a host that would refuse
    done = benchkit("run", "arms.d/raw-api.yaml", "--dry-run", "--task", "close-*",
                    "--task", "read-open-issue-count", "--budget", "20000", "--store", store,
                    cwd=tree_copy, env=env)
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    assert lines[0].startswith("dry run: nothing is spent, started or written")
    assert f"{dead_url.rstrip('/')}" in lines[0] and "not contacted" in lines[0]
    # 8,000 x 1.25 + 20,000 x 0.1 + 200 x 5: the cell's past mean, and the arm's for the
    # other; in dollars 8,000 x $3.75 + 20,000 x $0.30 + 200 x $15 a million; its 20 s.
    assert lines[2] == ("  [1] raw-api read-open-issue-count trial 0: 13,000~ tokens, $0.04~, "
                        "20 s~ (this arm's mean: 1 sample of claude-sonnet-4-5, tool version "
                        "unknown)")
    assert "expected in total: 13,000~ cost-equivalent tokens of a budget of 20,000" in done.stdout
    assert ("in dollars: $0.04~ at claude-sonnet-4-5's list price (prices of 2026-12-07; "
            "a default's tokens at its fresh-input price)") in lines
    assert "in time: 20 s~ of wall time at --jobs 1, from the samples' durations" in lines
    # The cell has trial 0 already: its next is trial 1, as the run would number it.
    assert "skipped (budget): raw-api close-csv-export-issue trial 1" in done.stdout
    assert listing(tree_copy) == before  # nothing written: no report, no store file


def test_json_gives_the_plan_as_one_event(tree_copy):
    done = benchkit("run", "arms.d/raw-api.yaml", "arms.d/tea.yaml", "--dry-run", "--json",
                    "--tier", "read", "--trials", "2", "--store", tree_copy / "nowhere", cwd=tree_copy)
    assert done.returncode == 0, done.stderr
    plan = json.loads(done.stdout)
    assert plan["event"] == "plan" and plan["host"] == "an embedded forge (not started)"
    assert len(plan["trials"]) == 2 * 2 * 4  # two arms, two trials, the four read tasks
    assert plan["expected_tokens"] == sum(t["expected"] for t in plan["trials"])
    assert all(t["estimate"] for t in plan["trials"])
    assert not (tree_copy / "nowhere").exists() and not (tree_copy / "reports").exists()


def test_the_plan_marks_the_cells_of_an_arm_whose_tool_is_not_installed(tree_copy, tmp_path):
    text = (tree_copy / "arms.d" / "raw-api.yaml").read_text()
    (tree_copy / "arms.d" / "absent.yaml").write_text(
        text.replace("id: raw-api", "id: absent").replace("binary: curl", "binary: no-such-tool-here"))
    args = ["run", "arms.d/raw-api.yaml", "arms.d/absent.yaml", "--task", "read-open-issue-count",
            "--dry-run", "--store", tmp_path / "results"]
    done = benchkit(*args, cwd=tree_copy)
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    [curl] = [line for line in lines if "] raw-api read-open-issue-count" in line]
    [absent] = [line for line in lines if "] absent read-open-issue-count" in line]
    assert "not installed" not in curl
    assert absent.endswith("[cannot run: absent's tool is not installed]")
    assert ("tool not installed: arm absent: its binary `no-such-tool-here` is not installed "
            "(not on PATH); install it: `apt-get install curl` (or `bash scripts/setup`); its 1 "
            "trial(s) cannot run: the run would stop at pre-flight (exit 2; "
            "`--only-installed` runs the arms whose tools are installed)") in lines
    plan = json.loads(benchkit(*args, "--json", cwd=tree_copy).stdout)
    assert {t["arm"]: t["tool_missing"] for t in plan["trials"]} == {"raw-api": False, "absent": True}
    assert list(plan["tools_missing"]) == ["absent"]

    only = benchkit(*args, "--only-installed", cwd=tree_copy)
    assert only.returncode == 0, only.stderr
    lines = only.stdout.splitlines()
    assert [line for line in lines if "] " in line and "read-open-issue-count" in line] == [
        line for line in lines if "] raw-api read-open-issue-count trial 0" in line]
    assert ("not run (--only-installed): arm absent: its binary `no-such-tool-here` is not "
            "installed (not on PATH); install it: `apt-get install curl` (or `bash scripts/setup`)") in lines

def test_a_measured_plan_after_a_replay_run_names_the_replay_estimate(tree_copy):
    """After the main job (replay), a measured dry run has no measured sample to expect
    by, but it has past samples: it says what they estimate, not 'no past sample'."""
    replayed = sample("raw-api", "read-open-issue-count", "read", driver="replay",
                      tokens={"input": 0, "cache_write": 8000, "cache_read": 20000, "output": 200})
    store = write_store(tree_copy / "results", [replayed])
    done = benchkit("run", "arms.d/raw-api.yaml", "--dry-run", "--task", "read-open-issue-count",
                    "--store", store, cwd=tree_copy)
    assert done.returncode == 0, done.stderr
    line = next(text for text in done.stdout.splitlines() if text.startswith("  [1] "))
    # measured trials are numbered apart from replay ones: the first measured is trial 0
    assert line == ("  [1] raw-api read-open-issue-count trial 0: 25,000~ tokens, $0.07~, "
                    "time unknown (suite default (default_cell_tokens): no measured sample yet; "
                    "the cell's replay estimates 13,000~ from its reference's bytes, which is "
                    "not what a model spends)"), line
    assert "no past sample" not in done.stdout


def test_each_estimate_rests_on_the_cells_own_samples_of_the_model_and_tool(tree_copy):
    """The cell's samples of the run's model and the arm's tool version, else the arm's,
    else the default: another model's or another version's samples never set it; its
    dollars at the model's dated list price, its wall time at --jobs."""
    def past(task, model="claude-sonnet-4-5", tool_version=None, output=200, duration=40.0):
        return sample("raw-api", task, "read", tokens={"input": 0, "cache_write": 8000,
                                                      "cache_read": 20000, "output": output},
                      model=model, tool_version=tool_version, duration_s=duration)
    store = write_store(tree_copy / "results", [
        past("read-open-issue-count"), past("read-open-issue-count", output=400, duration=80.0),
        past("read-bug-issue-titles", model="claude-opus-4-5", output=9000),   # another model
        past("read-review-body", tool_version="0.0.1", output=9000)])          # another version
    done = benchkit("run", "arms.d/raw-api.yaml", "--dry-run", "--json", "--tier", "read",
                    "--jobs", "2", "--store", store, cwd=tree_copy)
    assert done.returncode == 0, done.stderr
    plan = json.loads(done.stdout)
    found = {t["task"]: t for t in plan["trials"]}
    cell = found["read-open-issue-count"]
    assert (cell["basis"], cell["expected"], cell["seconds"]) == ("this cell's mean", 13500, 60.0)
    assert cell["source"] == ("this cell's mean: 2 samples of claude-sonnet-4-5, tool version "
                              "unknown")
    # 8,000 x $3.75 + 20,000 x $0.30 + 300 x $15, a million tokens
    assert cell["usd"] == pytest.approx(0.0405)
    for task in ("read-bug-issue-titles", "read-review-body", "read-issue-labels-and-state"):
        assert found[task]["basis"] == "this arm's mean", task  # not the other model's or version's
        assert found[task]["expected"] == 13500 and found[task]["source"].startswith(
            "this arm's mean: 2 samples of claude-sonnet-4-5"), found[task]
    assert plan["prices_as_of"] == "2026-12-07" and plan["jobs"] == 2
    assert plan["expected_usd"] == pytest.approx(4 * 0.0405)
    assert plan["expected_wall_s"] == 120.0 and plan["untimed"] == 0  # 4 x 60 s on 2 workers
    assert plan["model_probe"]["given"] == "claude-sonnet-4-5"
    text = benchkit("run", "arms.d/raw-api.yaml", "--dry-run", "--tier", "read", "--jobs", "2",
                    "--store", store, cwd=tree_copy).stdout
    assert "in time: 2 min~ of wall time at --jobs 2, from the samples' durations" in text
