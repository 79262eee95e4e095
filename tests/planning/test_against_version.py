"""`benchkit run ARM --until-decided --against-version VERSION`: the current build of a
tool against its stored samples of an earlier version, trials of the current build only,
and only where the verdict between them can still change. The dry run plans from a real
store on disk; the run plays raw-api's references through the replay driver on the
embedded forge until the pair is decided."""

import json
import os
import subprocess

import pytest
from conftest import BENCHKIT
from synthetic import sample, write_store

from benchkit.fingerprint import arm_fingerprint
from benchkit.planning.compared import cost_cells
from benchkit.planning.decide import plan_round
from benchkit.report import current_matrix
from benchkit.statistics.verdicts import Family

OLD, NEW = "curl 7.0.0 (old build)", "curl 9.0.0 (development build)"
READS = ["read-bug-issue-titles", "read-issue-labels-and-state", "read-open-issue-count",
         "read-review-body"]


def benchkit(*args, cwd, env=None):
    return subprocess.run([*BENCHKIT, *map(str, args)], capture_output=True, text=True,
                          cwd=cwd, env=env, timeout=600)


def versioned(matrix, version: str, task_id: str, output: int, driver="claude",
              day: int = 1) -> dict:
    """A passing sample of raw-api's tool at `version`, current in everything else."""
    arm = next(a for a in matrix.arms if a.id == "raw-api")
    task = next(t for t in matrix.tasks if t.id == task_id)
    return sample("raw-api", task.id, task.tier, driver=driver, tool_version=version,
                  started_at=f"2026-07-{day:02d}T12:00:00+00:00",
                  tokens={"input": 0, "cache_write": 0, "cache_read": 0, "output": output},
                  fingerprints={"task": task.fingerprint, "arm": arm_fingerprint(arm.fingerprint, version),
                                "seed": task.seed_fingerprint, "model": matrix.model_fingerprint})


def curl_printing(version: str, where) -> dict:
    """An environment whose `curl --version` prints `version`: the build "installed
    here" as the dry run finds it (it runs no trial, so curl does nothing else)."""
    bin_dir = where / "bin"
    bin_dir.mkdir(exist_ok=True)
    (bin_dir / "curl").write_text(f"#!/bin/sh\necho '{version}'\n")
    (bin_dir / "curl").chmod(0o755)
    env = {k: v for k, v in os.environ.items() if not k.startswith("GITEA_")}
    return {**env, "PATH": f"{bin_dir}{os.pathsep}{env['PATH']}"}


def dry_run(tree, store, version, *extra, installed=NEW):
    return benchkit("run", "arms.d/raw-api.yaml", "--until-decided", "--against-version",
                    version, "--budget", "1000000", "--dry-run", "--task", "read-*",
                    "--store", store, *extra, cwd=tree, env=curl_printing(installed, tree))


def test_the_first_round_asks_only_for_the_current_build(tree_copy):
    """The old build ran the four read tasks; the current one two of them: the round asks
    for the current build's first trials on the other two, never for the old build's."""
    matrix = current_matrix(tree_copy)
    samples = [versioned(matrix, OLD, task, 1000) for task in READS for _ in range(3)]
    samples += [versioned(matrix, NEW, task, 500, day=2) for task in READS[:2]]
    store = write_store(tree_copy / "results", samples)
    done = dry_run(tree_copy, store, OLD, "--json")
    assert done.returncode == 0, done.stderr + done.stdout
    (event,) = [json.loads(line) for line in done.stdout.splitlines()
                if json.loads(line).get("event") == "decide"]
    assert {(t["arm"], t["task"]) for t in event["next"]} == {("raw-api", t) for t in READS[2:]}
    assert [(p["a"], p["b"]) for p in event["pairs"]] == []  # cells without a first trial yet


def test_a_decided_pair_asks_for_nothing(tree_copy):
    """Every read task run thrice by both builds, the current at half the cost: the
    verdict is reached (the current build cheaper), so no trial is asked for."""
    matrix = current_matrix(tree_copy)
    samples = [versioned(matrix, OLD, task, 1000) for task in READS for _ in range(3)]
    samples += [versioned(matrix, NEW, task, 500, day=2) for task in READS for _ in range(3)]
    done = dry_run(tree_copy, write_store(tree_copy / "results", samples), OLD)
    assert done.returncode == 0, done.stderr + done.stdout
    assert f"until-decided: raw-api vs raw-api@{OLD}: decided - raw-api cheaper" in done.stdout
    assert "until-decided: next: nothing" in done.stdout


def test_the_dry_run_plans_a_build_not_yet_run_against_the_stored_one(tree_copy):
    """Only the old build in the store: the dry run cannot know the build on PATH, so it
    plans it as having no sample yet, and says so."""
    matrix = current_matrix(tree_copy)
    samples = [versioned(matrix, OLD, task, 1000) for task in READS for _ in range(3)]
    done = dry_run(tree_copy, write_store(tree_copy / "results", samples), OLD)
    assert done.returncode == 0, done.stderr + done.stdout
    assert "planned as having none yet" in done.stdout + done.stderr
    assert f"finds raw-api's tool here at {NEW}" in done.stdout + done.stderr
    for task in READS:
        assert f"raw-api {task} (no sample yet" in done.stdout
    assert f"raw-api@{OLD} read" not in done.stdout


def test_a_version_the_store_does_not_hold_is_refused(tree_copy):
    matrix = current_matrix(tree_copy)
    samples = [versioned(matrix, OLD, task, 1000) for task in READS]
    done = dry_run(tree_copy, write_store(tree_copy / "results", samples), "0.0.1")
    assert done.returncode == 2
    assert ('error: the store holds no measured sample of raw-api at tool version "0.0.1" to '
            f"compare against (the versions it holds: {OLD})") in done.stdout + done.stderr


def test_a_bare_version_names_its_line(tree_copy):
    """`7.0.0` names the version line "curl 7.0.0 (old build)": the docs' own shape."""
    matrix = current_matrix(tree_copy)
    samples = [versioned(matrix, OLD, task, 1000) for task in READS for _ in range(3)]
    samples += [versioned(matrix, NEW, task, 500, day=2) for task in READS for _ in range(3)]
    done = dry_run(tree_copy, write_store(tree_copy / "results", samples), "7.0.0")
    assert done.returncode == 0, done.stderr + done.stdout
    assert f"raw-api vs raw-api@{OLD}: decided - raw-api cheaper" in done.stdout


def test_a_bare_version_naming_two_lines_is_refused(tree_copy):
    matrix = current_matrix(tree_copy)
    samples = [versioned(matrix, v, task, 1000, day=d) for d, v in
               enumerate(("curl 7.0.0 (a)", "curl 7.0.0 (b)", NEW), start=1) for task in READS]
    done = dry_run(tree_copy, write_store(tree_copy / "results", samples), "7.0.0")
    assert done.returncode == 2
    assert ('"7.0.0" names more than one version of raw-api\'s tool in the store '
            "(curl 7.0.0 (b), curl 7.0.0 (a)): give the whole version line") in done.stderr


@pytest.mark.parametrize("dry", [True, False], ids=["dry-run", "run"])
def test_the_installed_build_against_itself_is_refused_with_its_reason(tree_copy, dry):
    """The installed curl prints NEW, the version asked for: the run and its dry run
    both refuse it with the reason in the plain output, exit 2, before any host starts
    or any sample is written."""
    matrix = current_matrix(tree_copy)
    samples = [versioned(matrix, v, task, 1000, driver="replay", day=d)
               for d, v in ((1, OLD), (2, NEW)) for task in READS]
    store = write_store(tree_copy / "results", samples)
    before = sorted(p.read_bytes() for p in store.rglob("*.jsonl"))
    done = benchkit("run", "arms.d/raw-api.yaml", "--driver", "replay", "--until-decided",
                    "--against-version", "9.0.0", "--budget", "100000", "--task", "read-*",
                    "--store", store, "--no-report", *(["--dry-run"] if dry else []),
                    cwd=tree_copy, env=curl_printing(NEW, tree_copy))
    assert done.returncode == 2, done.stdout + done.stderr
    assert (f'error: the raw-api tool installed here prints "{NEW}", the version to compare '
            "against itself") in done.stderr
    assert "embedded forge at" not in done.stdout + done.stderr and "done:" not in done.stdout
    assert sorted(p.read_bytes() for p in store.rglob("*.jsonl")) == before


def test_against_version_needs_until_decided(tree_copy):
    done = benchkit("run", "arms.d/raw-api.yaml", "--against-version", OLD, "--dry-run",
                    cwd=tree_copy)
    assert done.returncode == 2 and "--against-version goes with --until-decided" in done.stderr


def test_the_planner_never_asks_for_the_fixed_side():
    """The older version's cells are the noisier, so they would buy the most; they
    cannot be run, and the round asks for the current build's alone."""
    costs = {("new", t): [450, 550, 500] for t in ("t1", "t2")}
    costs.update({("old", t): [600, 1400, 1000] for t in ("t1", "t2")})
    fam = Family((("new", "old"),), alpha=0.05, margin=0.05, baseline=None)
    round_ = plan_round(cost_cells(costs), ["new", "old"], ["t1", "t2"], fam,
                        expected=lambda arm, task: 1000.0, budget_left=1e9, batch=4,
                        fixed=frozenset({"old"}))
    assert round_.trials and {t.arm for t in round_.trials} == {"new"}
    free = plan_round(cost_cells(costs), ["new", "old"], ["t1", "t2"], fam,
                      expected=lambda arm, task: 1000.0, budget_left=1e9, batch=4)
    assert free.trials[0].arm == "old"  # without `fixed`, the old side would go first


@pytest.mark.slow
def test_the_run_spends_on_the_current_build_until_the_verdict(tree_copy, quiet):
    """The old build's replay samples cost far more than the installed curl's replay:
    the run plays raw-api until the verdict (cheaper) and writes no sample of the old."""
    matrix = current_matrix(tree_copy)
    task = "read-open-issue-count"
    samples = [versioned(matrix, OLD, task, 40_000, driver="replay") for _ in range(3)]
    store = write_store(tree_copy / "results", samples)
    env = {k: v for k, v in os.environ.items() if not k.startswith("GITEA_")}
    done = benchkit("run", "arms.d/raw-api.yaml", "--driver", "replay", "--until-decided",
                    "--against-version", OLD, "--budget", "500000", "--task", task,
                    "--store", store, "--no-report", cwd=tree_copy, env=env)
    assert done.returncode == 0, done.stderr + done.stdout
    out = done.stdout + done.stderr
    assert f"raw-api vs raw-api@{OLD}: decided - raw-api cheaper" in out, out
    # The header counts no trial ahead: the rounds plan them (not "0 trial(s) of 1 cell(s)").
    assert "benchkit run: trials planned round by round (--until-decided), 1 cell(s)" in out
    lines = (store / "raw-api" / f"{task}.jsonl").read_text().splitlines()
    new = [json.loads(line) for line in lines[3:]]
    assert len(new) >= 3 and all(s["tool_version"] != OLD for s in new)
    assert all(s["outcome"] == "passed" for s in new)
