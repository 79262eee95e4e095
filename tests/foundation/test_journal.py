"""A run's journal (benchkit.journal): what it lists is what was added and not removed,
a torn or zeroed line is skipped (each line checks itself) and a sweep's next line
never glues onto it, a live run's journal is never claimed (its lock, or its process by
pid and start time), a dead one's is, one of another machine is claimed as foreign (its
lease decides), and a run's temp directory is listed before it exists."""

import json
import os
import signal
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from benchkit import journal


@pytest.fixture
def store(tmp_path, monkeypatch):
    monkeypatch.setenv(journal.REGISTRY_ENV, str(tmp_path / "state"))
    return tmp_path / "results"


def test_it_lists_what_was_made_and_not_deleted_and_goes_when_empty(store, tmp_path):
    run = journal.Journal.open(store)
    try:
        assert journal.current() is run
        made = journal.mkdtemp("benchkit-test-", tmp_path)
        journal.add("user", login="bk-trial-1")
        journal.add("repo", owner="bk-trial-1", name="r1")
        journal.add("user", login="bk-run-1")
        journal.add("repo", owner="admin", name="r2")
        journal.remove("user", login="bk-trial-1")  # purged: its repository went with it
        left = run.pending()
        assert (left.tempdirs, left.users, left.repos) == ([made], ["bk-run-1"], [("admin", "r2")])
        assert [p.name for p in (tmp_path / "state" / "runs").iterdir()] == [run.path.name]
    finally:
        left = run.close()
    assert journal.current() is None
    assert not os.path.exists(made)  # the run is over: its temp directories go
    assert (left.users, left.repos, left.tempdirs) == (["bk-run-1"], [("admin", "r2")], [])
    assert run.path.exists()  # kept for gc: it still lists a user and a repository
    journal.Journal.open(store).close()  # another, empty: it goes, this one stays
    assert journal.journals(store) == [run.path]


def test_a_torn_last_line_is_skipped(store):
    run = journal.Journal.open(store)
    journal.add("user", login="bk-run-2")
    run.close()
    with open(run.path, "ab") as f:
        f.write(b'{"add": "user", "login": "bk-tr')
    assert journal.read(run.path).users == ["bk-run-2"]


def test_torn_and_zeroed_lines_are_skipped_counted_and_never_glued_onto(store, tmp_path):
    """A power cut: a half line, then a zeroed tail. What was listed before still is;
    the sweep's removals start a line of their own, so they count; a line whose
    checksum fails (a bit flipped) is damaged too."""
    run = journal.Journal.open(store)
    made = journal.mkdtemp("benchkit-test-", tmp_path)
    journal.add("user", login="bk-run-3")
    os.close(run._fd)  # the run dies here (its lock with it), mid-write
    journal._current = None
    with open(run.path, "ab") as f:
        f.write(b'{"add": "repo", "crc": "0", "name": "r"' + b"\0" * 700)
    pending = journal.read(run.path)
    assert (pending.tempdirs, pending.users, pending.damaged) == ([made], ["bk-run-3"], 1)
    with journal.claim(run.path) as held:
        assert held is not None
        held.removed("tempdir", path=made)
        held.removed("user", login="bk-run-3")
        assert held.finish()  # it listed nothing more: gone
    flipped = journal.line({"add": "user", "login": "bk-run-4"}).replace(b"run-4", b"run-5")
    path = store / journal.DIRECTORY / "flipped.journal"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(journal.line({"run": {"pid": 0, "start": "0"}}) + flipped)
    assert (journal.read(path).users, journal.read(path).damaged) == ([], 1)


def test_a_journal_from_another_machine_is_claimed_as_foreign_and_its_users_spared(store):
    """Its pid says nothing here (another kernel or process namespace): claimed, marked
    foreign for its lease to decide, and its users are spared by name meanwhile."""
    directory = store / journal.DIRECTORY
    directory.mkdir(parents=True)
    path = directory / f"elsewhere{journal.SUFFIX}"
    path.write_bytes(journal.line({"run": {"pid": os.getpid(), "start": "1",
                                           "machine": "another-one"}})
                     + journal.line({"add": "user", "login": "bk-elsewhere"}))
    with journal.claim(path) as held:
        assert held is not None and held.pending.foreign and held.writable
    assert journal.live_users([store]) == {"bk-elsewhere"}


def _holder(store, *, lock: bool = True) -> subprocess.Popen:
    code = textwrap.dedent(f"""
        import sys
        from benchkit import journal
        j = journal.Journal.open({str(store)!r})
        journal.add("user", login="bk-live")
        journal.mkdtemp("benchkit-test-")
        print(j.path, flush=True)
        sys.stdin.read()
    """)
    return subprocess.Popen([sys.executable, "-c", code], stdin=subprocess.PIPE,
                            stdout=subprocess.PIPE, text=True)


def test_a_live_runs_journal_is_never_claimed_and_a_killed_ones_is(store, tmp_path):
    holder = _holder(store)
    try:
        path = Path(holder.stdout.readline().strip())
        with journal.claim(path) as held:
            assert held is None
        assert journal.live_users([store]) == {"bk-live"}
        [scratch] = journal.read(path).tempdirs
        assert os.path.isdir(scratch)
    finally:
        holder.send_signal(signal.SIGKILL)
        holder.wait()
    assert journal.live_users([store]) == set()
    with journal.claim(path) as held:
        assert held is not None and held.pending.users == ["bk-live"]
        assert journal.remove_tempdir(scratch) and not os.path.exists(scratch)
        held.removed("tempdir", path=scratch)
        held.removed("user", login="bk-live")
        assert held.finish()
    assert journal.journals(store) == []


def test_a_free_lock_of_a_live_process_is_alive_and_a_reused_pid_is_not(store):
    """Between opening its journal and locking it a run holds no lock: its pid and start
    time say it lives. A pid some other process reuses (another start time) does not."""
    directory = store / journal.DIRECTORY
    directory.mkdir(parents=True)
    sleeper = subprocess.Popen(["sleep", "600"])
    try:
        for name, start in (("live", journal.process_start(sleeper.pid)), ("reused", "1")):
            (directory / f"{name}{journal.SUFFIX}").write_text(
                json.dumps({"run": {"pid": sleeper.pid, "start": start}}) + "\n"
                + json.dumps({"add": "user", "login": f"bk-{name}"}) + "\n")
        assert journal.live_users([store]) == {"bk-live"}
    finally:
        sleeper.kill()
        sleeper.wait()
    assert journal.live_users([store]) == set()
