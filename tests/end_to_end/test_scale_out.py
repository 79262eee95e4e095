"""A sweep over machines (docs/scale-out.md): three `benchkit run --shard I/3` processes
at once, each on its own store and embedded forge (replay driver), merged with
`benchkit merge`, give the report one run of the same command gives; merging again
changes nothing; stores that ran other documents side by side are refused in one line;
the workflows the page gives parse, and the benchkit commands they run exist with the
options they pass."""

from __future__ import annotations

import glob
import hashlib
import json
import os
import re
import shlex
import subprocess
from pathlib import Path

import click
import pytest
import yaml
from conftest import BENCHKIT, CHECKOUT
from synthetic import sample, write_store

from benchkit.cli import main

pytestmark = pytest.mark.slow
ARMS = ["arms.d/raw-api.yaml", "arms.d/tea.yaml"]
TASKS = ["read-open-issue-count", "label-startup-crash"]
SIZES = [2, 1, 1]  # cells per shard: four, every third from the first, second, third
DEADLINE = 600  # seconds: bounds a hang
# Replay's token figures are estimates from the bytes the agent read, and those hold
# the host's own ids (a label's id on a forge depends on how many trials ran on it
# before), so two runs of one cell differ by a few tokens in a thousand.
ESTIMATE_NOISE = 0.005


def command(*args: str, store: Path, env: dict) -> list[str]:
    return [*BENCHKIT, "run", *ARMS, *[a for t in TASKS for a in ("--task", t)], "--driver",
            "replay", "--no-report", "--no-replay-failures", "--store", str(store), *args]


def report(store: Path, tmp_path: Path, env: dict) -> dict:
    out = tmp_path / f"report-{store.name}"
    done = subprocess.run([*BENCHKIT, "report", "--store", str(store), "--reports", str(out)],
                          capture_output=True, text=True, env=env, cwd=CHECKOUT, timeout=DEADLINE)
    assert done.returncode == 0, done.stdout + done.stderr
    return json.loads((out / "report.json").read_text())


def tree_digest(store: Path) -> str:
    """Every file of the store but its run lock, path and bytes."""
    digest = hashlib.sha256()
    for path in sorted(p for p in store.rglob("*") if p.is_file() and p.name != ".run.lock"):
        digest.update(str(path.relative_to(store)).encode() + b"\0" + path.read_bytes())
    return digest.hexdigest()


def cells_of(store: Path) -> set[tuple[str, str]]:
    return {(p.parent.name, p.stem) for p in store.glob("*/*.jsonl")}


def test_three_shards_merged_give_the_report_of_one_run(tmp_path):
    env = {**os.environ, "BENCHKIT_ROOT": str(CHECKOUT), "PYTHONPATH": str(CHECKOUT),
           "BENCHKIT_STATE_DIR": str(tmp_path / "state")}
    shards = [tmp_path / f"shard-{i}" for i in range(3)]
    running = [subprocess.Popen(command("--shard", f"{i}/3", store=store, env=env), env=env,
                                cwd=CHECKOUT, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                                text=True) for i, store in enumerate(shards)]
    single = subprocess.run(command(store=tmp_path / "single", env=env), env=env, cwd=CHECKOUT,
                            capture_output=True, text=True, timeout=DEADLINE)
    said = [process.communicate(timeout=DEADLINE)[0] for process in running]
    assert [p.returncode for p in running] == [0, 0, 0], said
    assert single.returncode == 0, single.stdout + single.stderr
    parts = [cells_of(store) for store in shards]
    assert [len(part) for part in parts] == SIZES  # every cell once, none twice
    assert set().union(*parts) == cells_of(tmp_path / "single")
    assert all(f"shard {i}/3: {SIZES[i]} of the 4 runnable cells" in said[i]
               for i in range(3)), said

    merged = tmp_path / "results"
    done = subprocess.run([*BENCHKIT, "merge", *map(str, shards), "--into", str(merged)],
                          capture_output=True, text=True, env=env, timeout=DEADLINE)
    assert done.returncode == 0, done.stdout + done.stderr
    assert [line.split(": ")[1] for line in done.stdout.splitlines()] == [
        f"{n} new sample(s), 0 already in {merged}" for n in SIZES], done.stdout
    before = tree_digest(merged)
    again = subprocess.run([*BENCHKIT, "merge", *map(str, shards), "--into", str(merged)],
                           capture_output=True, text=True, env=env, timeout=DEADLINE)
    assert again.returncode == 0 and [line.split(": ")[1] for line in again.stdout.splitlines()] \
        == [f"0 new sample(s), {n} already in {merged}" for n in SIZES], again.stdout
    assert tree_digest(merged) == before  # merging again changes nothing

    ours, theirs = report(merged, tmp_path, env), report(tmp_path / "single", tmp_path, env)
    # The verdicts' inputs: each cell's samples, outcomes and cost, each arm's figures.
    exact = ("arm", "task", "tier", "kind", "samples", "passes", "success", "turns", "tasks",
             "covered", "estimated")
    for table in (("cells",), ("estimates", "headline")):
        mine, one = ours, theirs
        for key in table:
            mine, one = mine[key], one[key]
        assert [{k: row[k] for k in exact if k in row} for row in mine] == \
            [{k: row[k] for k in exact if k in row} for row in one], table
        for row, other in zip(mine, one):
            cost, expected = (row["cost"], other["cost"]) if table == ("cells",) else \
                (row["cost"]["value"], other["cost"]["value"])
            assert cost == (expected if expected is None  # an arm of the tree not run
                            else pytest.approx(expected, rel=ESTIMATE_NOISE)), (table, row, other)
    assert ours["verdicts"] == theirs["verdicts"]
    for sample_line in (merged / "raw-api").glob("*.jsonl"):
        for line in sample_line.read_text().splitlines():
            stored = json.loads(line)
            assert stored["shard"] in {"0/3", "1/3", "2/3"} and stored["trial"] == 0
            transcript = merged / stored["transcript"]
            assert transcript.is_file()  # the transcript came along


def test_stores_that_ran_another_task_side_by_side_are_refused_with_nothing_written(tmp_path):
    """Two machines, one with an edited task: its samples carry another fingerprint of
    it. One line names the task and both stores; the target is not made."""
    one, other = tmp_path / "shard-0", tmp_path / "shard-1"
    write_store(one, [sample("raw-api", TASKS[0], fingerprints={"task": "a" * 16})])
    write_store(other, [sample("tea", TASKS[0], fingerprints={"task": "b" * 16})])
    done = subprocess.run([*BENCHKIT, "merge", str(one), str(other), "--into",
                           str(tmp_path / "results")], capture_output=True, text=True,
                          timeout=DEADLINE)
    assert done.returncode == 2, done.stdout + done.stderr
    assert done.stdout == ""
    [line] = done.stderr.splitlines()
    assert line.startswith(f"error: cannot merge: the task {TASKS[0]} ran as ") and \
        str(one) in line and str(other) in line and "nothing was merged" in line, line
    assert not (tmp_path / "results").exists()


def test_two_stores_that_ran_one_cell_keep_both_trials_told_apart_by_id(tmp_path):
    """Two machines without --shard ran the same cell: both trial 0. Both are kept (a
    trial is its id), one line says so, and the next run numbers past them."""
    one, other, into = tmp_path / "a", tmp_path / "b", tmp_path / "results"
    first, second = (sample("raw-api", TASKS[0], trial=0, shard=None) for _ in range(2))
    write_store(one, [first])
    write_store(other, [second])
    done = subprocess.run([*BENCHKIT, "merge", str(one), str(other), "--into", str(into)],
                          capture_output=True, text=True, timeout=DEADLINE)
    assert done.returncode == 0, done.stdout + done.stderr
    assert (f"note: raw-api {TASKS[0]} trial 0 is two samples, {first['id'][:12]} (shard none) "
            f"and {second['id'][:12]} (shard none): told apart by their ids") in done.stderr
    stored = [json.loads(line)["id"] for line in
              (into / "raw-api" / f"{TASKS[0]}.jsonl").read_text().splitlines()]
    assert stored == [first["id"], second["id"]]


DOC = (CHECKOUT / "docs" / "scale-out.md").read_text(encoding="utf-8")
VALUES = {"$INDEX": "0", "$COUNT": "3", "${{ matrix.index }}": "0"}


def benchkit_lines(text: str) -> list[str]:
    """The benchkit commands a shell script runs (each `&&` part of a line)."""
    found = []
    for line in text.splitlines():
        for part in line.split("&&"):
            part = part.strip()
            if part.startswith("benchkit "):
                for name, value in VALUES.items():
                    part = part.replace(name, value)
                found.append(part)
    return found


def parses(line: str, cwd: Path) -> None:
    """The command exists and takes these arguments and options (click parses them
    as it would run them, globs expanded, in a directory with the stores they name)."""
    words = [w for word in shlex.split(line)[1:]
             for w in (sorted(glob.glob(word, root_dir=cwd)) or [word]
                       if "*" in word else [word])]
    name, args = words[0], words[1:]
    # The group's own context, as the command line makes it (its -h among them: click
    # keeps a command's help option once it has made it).
    group = click.Context(main, info_name="benchkit", **main.context_settings)
    command = main.get_command(group, name)
    assert command is not None, line
    for path in (w for w in args if re.fullmatch(r"(/stores/)?shard-\d", w)):
        (cwd / path.lstrip("/")).mkdir(parents=True, exist_ok=True)
    args = [a.replace("/stores/", "stores/") for a in args]
    old = Path.cwd()
    os.chdir(cwd)
    try:
        command.make_context(name, args, parent=group)
    finally:
        os.chdir(old)


def test_the_workflows_parse_and_run_benchkit_commands_that_exist(tmp_path):
    blocks = re.findall(r"```yaml\n(.*?)```", DOC, re.DOTALL)
    assert len(blocks) == 2
    workflow = yaml.safe_load(blocks[0])
    jobs = workflow["jobs"]
    assert jobs["shard"]["strategy"]["matrix"]["index"] == [0, 1, 2]
    assert jobs["report"]["needs"] == "shard"
    scripts = [step["run"] for job in jobs.values() for step in job["steps"] if "run" in step]
    shard_job, report_job = list(yaml.safe_load_all(blocks[1]))
    assert shard_job["spec"]["completionMode"] == "Indexed"
    assert shard_job["spec"]["completions"] == 3
    for job in (shard_job, report_job):
        scripts += job["spec"]["template"]["spec"]["containers"][0]["args"]
    (tmp_path / "arms.d").symlink_to(CHECKOUT / "arms.d")
    lines = [line for script in scripts for line in benchkit_lines(script)]
    assert sum(line.startswith("benchkit run ") and "--shard 0/3" in line for line in lines) == 2
    assert sum(line.startswith("benchkit merge ") for line in lines) == 2
    for line in lines:
        parses(line, tmp_path)
    for script in scripts:  # the set-up the README gives
        if "scripts/setup" in script:
            assert (CHECKOUT / "scripts" / "setup").is_file()
    prose = [line for block in re.findall(r"```sh\n(.*?)```", DOC, re.DOTALL)
             for line in benchkit_lines(block)]
    for line in prose:
        parses(line.split("  #")[0], tmp_path)
