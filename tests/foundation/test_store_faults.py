"""The store under faults: a full disk leaves no partial line, and concurrent runs on
one store take turns so `--until N` is never exceeded."""

import errno
import json
import os
import shutil
import subprocess
import threading

import filelock
import msgspec
import pytest
from conftest import BENCHKIT, CHECKOUT
from test_store import sample

import benchkit.store as store_module
from benchkit.store import Store, Unwritable


def test_an_append_that_fails_midway_leaves_no_partial_line(tmp_path, monkeypatch):
    store = Store(tmp_path)
    kept = store.append(sample())
    path = store.cell_path("raw-api", "close-issue")
    before = path.read_bytes()
    real_write = os.write

    def half_then_full(fd, data):  # the disk fills up after part of the line went out
        if b"the disk fills up" in bytes(data):
            real_write(fd, bytes(data[:len(data) // 2]))
            raise OSError(errno.ENOSPC, "No space left on device")
        return real_write(fd, data)

    monkeypatch.setattr(store_module.os, "write", half_then_full)
    with pytest.raises(Unwritable, match=f"no space left on .* writing {path}$"):
        store.append(sample(answer="the disk fills up"))
    assert path.read_bytes() == before
    monkeypatch.undo()
    assert list(store.samples()) == [msgspec.to_builtins(kept)] and store.problems == []


@pytest.mark.skipif(os.geteuid() != 0 or shutil.which("mount") is None,
                    reason="mounting a small tmpfs needs root")
def test_a_full_disk_leaves_no_partial_line(tmp_path):
    """The same on a real full file system: a 64 KiB tmpfs."""
    mount = tmp_path / "small"
    mount.mkdir()
    mounted = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=64k", "tmpfs", str(mount)],
                             capture_output=True, text=True)
    if mounted.returncode != 0:
        pytest.skip(f"cannot mount a tmpfs here: {mounted.stderr.strip()}")
    try:
        store = Store(mount)
        stored = []
        with pytest.raises(Unwritable, match=f"no space left on tmpfs \\({mount}\\) writing"):
            for _ in range(1000):
                stored.append(store.append(sample(answer="x" * 3000)))
        text = store.cell_path("raw-api", "close-issue").read_text()
        assert text.endswith("\n")
        assert [json.loads(line) for line in text.splitlines()] == msgspec.to_builtins(stored)
    finally:
        subprocess.run(["umount", str(mount)], check=False)


def test_the_run_lock_makes_a_second_run_wait_for_the_first(tmp_path):
    store, events = Store(tmp_path), []
    first_in, release = threading.Event(), threading.Event()

    def first():
        with store.run_lock():
            events.append("first in")
            first_in.set()
            release.wait(120)
            events.append("first out")

    thread = threading.Thread(target=first)
    thread.start()
    first_in.wait(120)
    told = []

    def waiting(message):  # the second run is told it waits: now the first may finish
        told.append(message)
        release.set()
    with Store(tmp_path).run_lock(waiting):
        events.append("second in")
    thread.join()
    assert events == ["first in", "first out", "second in"]
    assert told and "another run is using the store" in told[0]


def test_the_run_lock_lives_inside_the_store_wherever_it_is(tmp_path):
    store = Store(tmp_path / "elsewhere" / "mine")
    with store.run_lock():
        assert (tmp_path / "elsewhere" / "mine" / ".run.lock").is_file()
    assert [p.name for p in (tmp_path / "elsewhere").iterdir()] == ["mine"]


def test_a_lock_where_earlier_versions_kept_it_is_honoured_then_removed(tmp_path):
    old = tmp_path / ".results.run.lock"  # beside the store, as runs before kept it
    held, told = filelock.FileLock(old), []
    held.acquire()

    def waiting(message):  # told it waits on the old lock: let the old run end
        told.append(message)
        held.release()
    with Store(tmp_path / "results").run_lock(waiting):
        assert told and not old.exists()
    assert sorted(p.name for p in tmp_path.iterdir()) == ["results"]


@pytest.mark.slow
def test_two_concurrent_runs_until_1_record_one_sample(tmp_path):
    """Two `benchkit run --until 1` at once on one store: before the lock, both ran the
    cell (two samples); now the second plans after the first and runs nothing."""
    store = tmp_path / "results"
    env = {**os.environ, "BENCHKIT_CACHE_DIR": str(tmp_path / "cache"),
           "BENCHKIT_ROOT": str(CHECKOUT), "PYTHONPATH": str(CHECKOUT)}
    command = [*BENCHKIT, "run",
               str(CHECKOUT / "arms.d/raw-api.yaml"), "--task", "close-csv-export-issue",
               "--driver", "replay", "--until", "1", "--store", str(store), "--no-report"]
    runs = [subprocess.Popen(command, env=env, cwd=tmp_path, stdout=subprocess.PIPE,
                             stderr=subprocess.PIPE, text=True) for _ in range(2)]
    outputs = [run.communicate(timeout=300) for run in runs]
    assert [run.returncode for run in runs] == [0, 0], outputs
    lines = (store / "raw-api" / "close-csv-export-issue.jsonl").read_text().splitlines()
    assert [json.loads(line)["outcome"] for line in lines] == ["passed"]
    assert any("nothing to do" in err for _, err in outputs)
