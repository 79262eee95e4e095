"""`benchkit gc` (the command line, as a subprocess) against what the world it sweeps
may hand it, on the forge and on a real Gitea: journals copied from another machine
(a live lease on the host spares their run's users, run and trial, whatever their age;
a lapsed one lets them go), a host behind a proxy that adds a second `Date` header (the
earliest is the host's now: no traceback), and, on the forge, a dead run's store on a
read-only mount (one line for it; the --store given, its journal torn, is swept all the
same)."""

from __future__ import annotations

import os
import secrets
import subprocess
from pathlib import Path

import requests
from conftest import BENCHKIT, CHECKOUT
from holding_proxy import HoldingProxy

from benchkit import journal
from benchkit.gitea import Client
from benchkit.gitea.lease import RUN, lease_name, trial_name
from benchkit.gitea.runuser import create_run_user, delete_run_user

DEADLINE = 120  # seconds: bounds a hang


def gc(url: str, token: str, store: Path, tmp_path: Path, *extra: str,
       wrap: tuple[str, ...] = ()) -> subprocess.CompletedProcess:
    env = {**os.environ, "BENCHKIT_ROOT": str(CHECKOUT), "PYTHONPATH": str(CHECKOUT),
           journal.REGISTRY_ENV: str(tmp_path / "state")}
    return subprocess.run([*wrap, *BENCHKIT, "gc", "--yes", "--store", str(store), "--host", url,
                           "--token", token, *extra], capture_output=True, text=True,
                          env=env, cwd=tmp_path, timeout=DEADLINE)


def exists(admin: Client, login: str) -> bool:
    return requests.get(f"{admin.api_url}/users/{login}", timeout=30,
                        headers={"Authorization": f"token {admin.token}"}).status_code == 200


def dead_journal(store: Path, *entries: dict, machine: str | None = None) -> Path:
    """A journal of a run that is gone (a pid that exited), as its crash left it."""
    ended = subprocess.Popen(["true"])
    start = journal.process_start(ended.pid) or "0"
    ended.wait()
    directory = store / journal.DIRECTORY
    directory.mkdir(parents=True, exist_ok=True)
    path = directory / f"{ended.pid}-{start}-{secrets.token_hex(3)}{journal.SUFFIX}"
    run = {"pid": ended.pid, "start": start, "machine": machine or journal.machine()}
    path.write_bytes(b"".join(journal.line(e) for e in ({"run": run}, *entries)))
    return path


def test_a_copied_journal_is_swept_only_once_no_live_lease_on_the_host_covers_it(host, tmp_path):
    """Two runs of another machine, each with a run user and a trial user, their
    journals copied here: the one whose lease runs is spared (by its journal and by
    name, even at --older-than 0), the lapsed one's users are deleted at once."""
    prefix = f"bkl{secrets.token_hex(2)}-"
    store = tmp_path / "copied"
    with Client(host.url, host.token) as admin:
        live = create_run_user(admin, prefix, full_name=lease_name(admin))
        lapsed = create_run_user(admin, prefix, full_name=RUN + "2000-01-01T00:00:00Z")
        trials = {run.login: create_run_user(admin, prefix, role="trial",
                                             full_name=trial_name(run.login))
                  for run in (live, lapsed)}
        for run in (live, lapsed):
            dead_journal(store, {"add": "host", "url": host.url, "embedded": False},
                         {"add": "user", "login": run.login},
                         {"add": "user", "login": trials[run.login].login}, machine="elsewhere")
        try:
            done = gc(host.url, host.token, store, tmp_path, "--older-than", "0",
                      "--prefix", prefix)
            said = done.stdout + done.stderr
            assert done.returncode == 0, said
            assert "Traceback" not in said
            assert [exists(admin, u) for u in (live.login, trials[live.login].login)] == [True, True]
            assert [exists(admin, u) for u in (lapsed.login, trials[lapsed.login].login)] == [False,
                                                                                             False]
            assert f"deleted user {lapsed.login} of run" in said, said
            assert said.count("spared run ") == 1 and "its lease on" in said, said
            assert len(journal.journals(store)) == 1  # the live run's, kept
        finally:
            for user in (trials[live.login], live):
                delete_run_user(admin, user.login)


def test_two_date_headers_are_read_as_the_host_s_now(host, tmp_path):
    """A proxy before the host adds its own `Date` to the host's: gc dates leftovers by
    the earliest that parses, says what it deleted, and ends without a traceback."""
    prefix = f"bkd{secrets.token_hex(2)}-"
    with HoldingProxy(host.url, "NONE", "^$", hold=0) as proxy, \
            Client(host.url, host.token) as admin:
        answer = requests.get(f"{proxy.url}api/v1/version", timeout=30)
        assert len(answer.raw.headers.getlist("Date")) == 2  # the fault is there
        leftover = create_run_user(admin, prefix)
        try:
            done = gc(proxy.url, host.token, tmp_path / "results", tmp_path, "--older-than", "0",
                      "--prefix", prefix)
            said = done.stdout + done.stderr
            assert done.returncode == 0 and "Traceback" not in said, said
            assert f"deleted run user {leftover.login}" in said, said
            assert not exists(admin, leftover.login)
        finally:
            delete_run_user(admin, leftover.login)


def test_a_dead_runs_store_on_a_read_only_mount_is_one_line_and_the_others_are_swept(
        forge, tmp_path):
    """The machine's registry links a dead run's journal on a read-only mount (bwrap
    binds it so for gc alone): gc says so in one line and leaves it; the journal of the
    --store given, its tail torn by a power cut, is swept all the same (its temp
    directory removed, one warning for the damaged line), exit 0."""
    frozen, swept = tmp_path / "frozen", tmp_path / "results"
    kept, gone = tmp_path / "benchkit-kept-0123456789", tmp_path / "benchkit-gone-0123456789"
    kept.mkdir()
    gone.mkdir()
    stuck = dead_journal(frozen, {"add": "tempdir", "path": str(kept)})
    torn = dead_journal(swept, {"add": "tempdir", "path": str(gone)})
    with open(torn, "ab") as f:  # a power cut: a half line, then a zeroed tail
        f.write(b'{"add": "user", "crc": "1", "login": "bk-' + b"\0" * 300)
    (tmp_path / "state" / "runs").mkdir(parents=True)
    (tmp_path / "state" / "runs" / stuck.name).symlink_to(stuck)
    done = gc(forge.url, forge.token, swept, tmp_path,
              wrap=("bwrap", "--dev-bind", "/", "/", "--ro-bind", str(frozen), str(frozen)))
    said = done.stdout + done.stderr
    assert done.returncode == 0 and "Traceback" not in said, said
    assert [line for line in said.splitlines() if str(stuck) in line] == [
        f"warning: cannot sweep {stuck}: its file system takes no write (read-only?); left as "
        f"it is: `benchkit gc --yes --store DIR` where it is writable sweeps it"], said
    assert f"removed {gone}, a temp directory of run" in said, said
    assert [line for line in said.splitlines() if "damaged" in line] == [
        f"warning: {torn}: 1 damaged line(s) skipped (torn or zeroed by a crash)"], said
    assert kept.is_dir() and stuck.exists() and not gone.exists()
    assert journal.journals(swept) == []
