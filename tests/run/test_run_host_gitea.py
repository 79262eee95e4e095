"""`benchkit run ... --host gitea` (the word, not a URL): the pinned Gitea started as a
throwaway host for the run, with an admin of its own, and removed after: the README's
main job passes every task on it, and nothing of it (its process, its work directory)
is left behind, whether the run ends or is killed with SIGKILL.

The runs get a private TMPDIR, where the Gitea's work directory goes: what is left is
read there, and no other test's Gitea is mistaken for the run's."""

import json
import os
import signal
import subprocess
import time

import pytest
from conftest import BENCHKIT, CHECKOUT, IN_CI
from test_replay_main_job import main_job_cells
from test_run_stop_phases import adopting_orphans, processes, wait_for

from benchkit.gitea.tools import ToolUnavailable, built, pin

DEADLINE = 1800  # seconds: bounds a hang, never paces the test


@pytest.fixture
def private_tmp(tmp_path):
    """An environment with a TMPDIR of the test's own; (env, that directory)."""
    try:
        built("gitea")
    except ToolUnavailable as error:
        (pytest.fail if IN_CI else pytest.skip)(str(error))
    tmp = tmp_path / "tmp"
    tmp.mkdir()
    env = {k: v for k, v in os.environ.items() if not k.startswith(("GITEA_", "BENCHKIT_"))}
    env.update(TMPDIR=str(tmp), BENCHKIT_ROOT=str(CHECKOUT),
               BENCHKIT_CACHE_DIR=str(tmp_path / "cache"), HOME=str(tmp_path / "home"))
    return env, tmp


def left_of(tmp) -> tuple[list[str], list[int]]:
    """(the Gitea work directories in tmp, the live processes whose command line names
    tmp): what a throwaway Gitea left."""
    directories = sorted(p.name for p in tmp.glob("benchkit-gitea-*"))
    needle = os.fsencode(str(tmp))
    alive = [pid for pid, (_, state, cmdline, _) in processes().items()
             if state != "Z" and needle in cmdline and pid != os.getpid()]
    return directories, alive


@pytest.mark.slow
def test_the_main_job_passes_every_task_on_a_throwaway_gitea_and_leaves_nothing(
        private_tmp, tmp_path):
    env, tmp = private_tmp
    done = subprocess.run(
        [*BENCHKIT, "run", CHECKOUT / "arms.d/raw-api.yaml", "--driver", "replay", "--host",
         "gitea", "--jobs", "2", "--store", tmp_path / "results", "--no-report"],
        cwd=tmp_path, env=env, capture_output=True, text=True, timeout=DEADLINE)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    assert f"running against a throwaway Gitea {pin('gitea').version} at http://127.0.0.1:" \
        in done.stderr
    samples = [json.loads(line) for path in (tmp_path / "results" / "raw-api").glob("*.jsonl")
               for line in path.read_text().splitlines()]
    assert sorted(s["task"] for s in samples) == sorted(t.id for _, t in main_job_cells(CHECKOUT))
    assert [s["task"] for s in samples if s["outcome"] != "passed"] == []
    assert {(s["host"]["kind"], s["host"]["version"]) for s in samples} == {
        ("gitea", pin("gitea").version)}
    assert left_of(tmp) == ([], [])


@pytest.mark.slow
def test_a_sigkilled_run_leaves_no_gitea_process_nor_directory(private_tmp, tmp_path):
    """SIGKILL while the throwaway Gitea serves the run's trials: its process dies with
    the run (a parent-death signal) and the run's watchdog removes its directory."""
    env, tmp = private_tmp
    with adopting_orphans():
        run = subprocess.Popen(
            [*BENCHKIT, "run", CHECKOUT / "arms.d/raw-api.yaml", "--driver", "replay",
             "--host", "gitea", "--trials", "20", "--task", "read-open-issue-count",
             "--store", tmp_path / "results", "--no-report"],
            cwd=tmp_path, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
        try:
            assert run.stdout is not None
            for line in run.stdout:  # the first trial has started: the Gitea serves
                if "trial 0: started" in line:
                    break
            else:
                raise AssertionError(f"the run ended first: {run.wait()}")
            assert left_of(tmp)[0] and left_of(tmp)[1]  # what the kill must clear
            run.send_signal(signal.SIGKILL)
            run.wait(timeout=60)
            killed = time.monotonic()
            wait_for(lambda: left_of(tmp) == ([], []), "the Gitea and its directory gone")
            assert time.monotonic() - killed < 60, left_of(tmp)
        finally:
            if run.poll() is None:
                run.kill()
                run.wait()


@pytest.mark.slow
def test_validate_live_proves_references_on_a_throwaway_gitea(private_tmp, tmp_path):
    env, tmp = private_tmp
    done = subprocess.run(
        [*BENCHKIT, "validate", "--live", CHECKOUT / "arms.d/raw-api.yaml", "--host", "gitea",
         "--task", "close-csv-export-issue"],
        cwd=tmp_path, env=env, capture_output=True, text=True, timeout=DEADLINE)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    assert "throwaway Gitea" in done.stdout + done.stderr
    row = next(line for line in done.stdout.splitlines() if "close-csv-export-issue" in line)
    assert " ok" in row, done.stdout
    assert left_of(tmp) == ([], [])


def test_host_gitea_takes_no_token(tmp_path):
    done = subprocess.run([*BENCHKIT, "run", CHECKOUT / "arms.d/raw-api.yaml", "--driver",
                           "replay", "--host", "gitea", "--token", "t", "--dry-run"],
                          cwd=tmp_path, capture_output=True, text=True, timeout=120,
                          env={**os.environ, "BENCHKIT_ROOT": str(CHECKOUT)})
    assert done.returncode == 2
    assert "--host gitea starts a throwaway Gitea with an admin of its own: it takes no " \
           "--token or --login" in done.stderr
