"""A store that survives its own damage: a line of valid JSON that is not a sample is
named (FILE:LINE: not a sample: ...) and skipped by every reader (the report and its
trial pages, `benchkit show`, the run's ledger), and a full disk is one plain line,
exit 2, with nothing half written."""

import contextlib
import json
import os
import re
import shutil
import subprocess

import pytest
from conftest import BENCHKIT, CHECKOUT
from synthetic import sample, write_store

# Valid JSON, a JSON object even, with an arm and a task: but not a sample.
NOT_A_SAMPLE = {"arm": "raw-api", "task": "read-open-issue-count", "id": "deadbeef",
                "outcome": "passed"}


def benchkit(*args, cwd=CHECKOUT, env=None, timeout=300):
    return subprocess.run([*BENCHKIT, *map(str, args)], capture_output=True, text=True,
                          cwd=cwd, env=env, timeout=timeout)


def damaged_store(tmp_path):
    store = write_store(tmp_path / "results", [
        sample("raw-api", "read-open-issue-count", id="a1" * 16, driver="replay",
               usage_estimated=True)])
    cell = store / "raw-api" / "read-open-issue-count.jsonl"
    with open(cell, "a") as f:
        f.write(json.dumps(NOT_A_SAMPLE) + "\n")
    return store, cell


def test_report_and_its_trial_pages_skip_a_line_that_is_not_a_sample(tmp_path):
    store, cell = damaged_store(tmp_path)
    reports = tmp_path / "reports"
    done = benchkit("report", "--store", store, "--reports", reports)
    assert done.returncode == 0, done.stderr
    assert "Traceback" not in done.stderr
    assert f"{cell}:2: not a sample:" in done.stderr
    pages = sorted(p.name for p in (reports / "trials" / "raw-api").rglob("*.html"))
    assert pages == ["a1" * 16 + ".html", "read-open-issue-count.html"]
    assert "deadbeef" not in (reports / "report.html").read_text()


def test_show_skips_a_line_that_is_not_a_sample(tmp_path):
    store, cell = damaged_store(tmp_path)
    done = benchkit("show", "--store", store, "--json")
    assert done.returncode == 0, done.stderr
    assert [trial["id"] for trial in json.loads(done.stdout)] == ["a1" * 16]
    assert f"{cell}:2: not a sample:" in done.stderr
    done = benchkit("show", "--store", store, "deadbeef")
    assert done.returncode == 2 and "no trial" in done.stderr


def test_the_run_names_a_line_that_is_not_a_sample_and_counts_only_samples(tmp_path):
    store, cell = damaged_store(tmp_path)
    done = benchkit("run", CHECKOUT / "arms.d" / "raw-api.yaml", "--task", "read-open-issue-count",
                    "--driver", "replay", "--store", store, "--until", "2", "--dry-run")
    assert done.returncode == 0, done.stderr
    assert f"{cell}:2: not a sample:" in done.stdout + done.stderr
    # the synthetic sample is of other documents (it does not count) and the damaged
    # line counts for nothing: two trials, numbered after the one sample (trial 0)
    assert "would run 2 trial(s)" in done.stdout
    assert "read-open-issue-count trial 1:" in done.stdout
    assert "read-open-issue-count trial 2:" in done.stdout


def test_the_store_reader_never_takes_a_foreign_object_for_a_sample(tmp_path):
    from benchkit.store import Store
    store, cell = damaged_store(tmp_path)
    reader = Store(store)
    assert [s["id"] for s in reader.samples()] == ["a1" * 16]
    assert reader.problems and reader.problems[0].startswith(f"{cell}:2: not a sample:")


# --- a store the file system refuses ---------------------------------------------------

@pytest.fixture
def small_disk(tmp_path):
    """A real 1 MiB file system of its own (a tmpfs: mounting needs root)."""
    mount = tmp_path / "disk"
    mount.mkdir()
    if os.geteuid() != 0 or shutil.which("mount") is None:
        unavailable("mounting a small tmpfs needs root")
    mounted = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=1m", "tmpfs", str(mount)],
                             capture_output=True, text=True)
    if mounted.returncode != 0:
        unavailable(f"cannot mount a tmpfs here: {mounted.stderr.strip()}")
    try:
        yield mount
    finally:
        subprocess.run(["umount", "-l", str(mount)], check=False)


def unavailable(why: str):
    if os.environ.get("CI") == "true":
        pytest.fail(f"{why}: CI runs this test for real")
    pytest.skip(why)


def replay_run(store, *extra):
    return benchkit("run", CHECKOUT / "arms.d" / "raw-api.yaml", "--task", "read-open-issue-count",
                    "--driver", "replay", "--store", store, "--no-report",
                    "--no-replay-failures", *extra)


def test_a_full_disk_is_one_plain_line_exit_2_and_nothing_half_written(small_disk):
    store = small_disk / "results"
    store.mkdir()
    (store / ".run.lock").touch()
    filler = os.open(small_disk / "filler", os.O_WRONLY | os.O_CREAT)
    with contextlib.suppress(OSError):  # fill the disk to the last byte
        while os.write(filler, b"\0" * 4096):
            pass
    os.close(filler)
    done = replay_run(store)
    said = done.stdout + done.stderr
    assert done.returncode == 2, said
    assert "Traceback" not in said and "internal error" not in said
    # The run's journal is its first write: on a full disk the run makes nothing it could
    # not list (test_store_faults.py fills the disk under a sample's own write).
    assert re.search(rf"no space left on tmpfs \({re.escape(str(small_disk))}\) writing "
                     rf"{re.escape(str(store))}/\.journal/", said), said
    assert not list(store.glob(".journal/*.journal"))
    left = [p for p in store.rglob("*") if p.is_file()]
    assert not [p for p in left if p.suffix == ".tmp"]
    for path in left:
        if path.suffix in (".jsonl", ".json"):  # whole or absent: every line reads
            assert all(json.loads(line) for line in path.read_text().splitlines())


def test_a_read_only_store_is_one_plain_line_exit_2_before_the_forge_starts(small_disk):
    subprocess.run(["mount", "-o", "remount,ro", str(small_disk)], check=True)
    store = small_disk / "results"
    done = replay_run(store)
    said = done.stdout + done.stderr
    assert done.returncode == 2, said
    assert "Traceback" not in said
    assert f"read-only file system: cannot write {store}" in said
    assert "embedded forge" not in said  # refused before any host started


def test_a_read_only_reports_directory_is_one_plain_line_exit_2(small_disk, tmp_path):
    store = write_store(tmp_path / "results", [sample("raw-api", "read-open-issue-count")])
    subprocess.run(["mount", "-o", "remount,ro", str(small_disk)], check=True)
    done = benchkit("report", "--store", store, "--reports", small_disk / "reports")
    assert done.returncode == 2, done.stderr
    assert "Traceback" not in done.stderr
    assert f"read-only file system: cannot write {small_disk / 'reports'}" in done.stderr


def test_a_read_only_reports_directory_stops_a_run_before_any_trial(small_disk, tmp_path):
    subprocess.run(["mount", "-o", "remount,ro", str(small_disk)], check=True)
    store = tmp_path / "results"
    done = benchkit("run", CHECKOUT / "arms.d" / "raw-api.yaml", "--task",
                    "read-open-issue-count", "--driver", "replay", "--store", store,
                    "--reports", small_disk / "reports")
    said = done.stdout + done.stderr
    assert done.returncode == 2, said
    assert f"--reports: read-only file system: cannot write {small_disk / 'reports'}" in said
    assert "embedded forge" not in said and not store.exists()  # nothing started, nothing spent


@pytest.mark.parametrize("where", ["store", "reports"])
def test_a_store_or_reports_where_nothing_can_be_made_is_one_plain_line(where, tmp_path):
    """/proc/x, or a path under a file: no refusal the file system names, still no place."""
    (tmp_path / "a-file").touch()
    places = {"store": ["--store", "/proc/x"],
              "reports": ["--store", tmp_path / "results", "--reports", tmp_path / "a-file" / "r"]}
    done = benchkit("run", CHECKOUT / "arms.d" / "raw-api.yaml", "--task",
                    "read-open-issue-count", "--driver", "replay", *places[where])
    said = done.stdout + done.stderr
    assert done.returncode == 2, said
    assert "Traceback" not in said and "embedded forge" not in said
    expected = ("cannot write /proc/x: no such file or directory" if where == "store" else
                f"--reports: cannot write {tmp_path / 'a-file' / 'r'}: not a directory")
    assert expected in said
