"""A store from elsewhere (a shard's artifact, a colleague's copy) is data, never orders
to this machine or its host. `benchkit merge` takes a sample's transcript only from
where a store writes it and only from inside the source: never a file a link leads out
of the source to, never a journal, intent or arm document named as a transcript (a
crafted journal is what `benchkit gc` and the next run act on). The report shows no
transcript a sample names outside its store. `benchkit gc` deletes of what a journal
lists only what is benchkit's: temp directories named as the runs name them, users and
repositories the host shows as benchkit's throwaways (on the forge and a real Gitea)."""

from __future__ import annotations

import json
import secrets
import subprocess
from pathlib import Path

from conftest import BENCHKIT
from synthetic import sample, write_store
from test_gc_faults import dead_journal, exists, gc

from benchkit import journal
from benchkit.gitea import Client
from benchkit.gitea.lease import RUN
from benchkit.gitea.repos import delete_repo
from benchkit.gitea.runuser import create_run_user, delete_run_user

DEADLINE = 120  # seconds: bounds a hang
TASK = "read-open-issue-count"


def merge(tmp_path: Path, *sources: Path) -> subprocess.CompletedProcess:
    into = tmp_path / "results"
    return subprocess.run([*BENCHKIT, "merge", *map(str, sources), "--into", str(into)],
                          capture_output=True, text=True, timeout=DEADLINE, cwd=tmp_path)


def every_byte(store: Path) -> bytes:
    return b"".join(p.read_bytes() for p in sorted(store.rglob("*")) if p.is_file())


def test_merge_carries_no_journal_named_as_a_transcript(tmp_path):
    """A shard's sample names `.journal/...` as its transcript, and the shard holds a
    journal there listing a directory of this machine as a dead run's temp directory:
    merged, the next `gc` or run would remove it."""
    precious = tmp_path / "precious"
    precious.mkdir()
    crafted = Path(journal.DIRECTORY) / f"1-1-abcdef{journal.SUFFIX}"
    shard = tmp_path / "shard"
    write_store(shard, [sample("raw-api", TASK, transcript=crafted.as_posix())])
    (shard / crafted).parent.mkdir()
    (shard / crafted).write_bytes(
        journal.line({"run": {"pid": 1, "start": "1", "machine": journal.machine()}})
        + journal.line({"add": "tempdir", "path": str(precious)}))
    for name in (".intents/0.intent", ".arms/raw-api.yaml"):  # the store's other own files
        write_store(shard, [sample("raw-api", TASK, transcript=name)])
        (shard / name).parent.mkdir()
        (shard / name).write_text("crafted\n")
    done = merge(tmp_path, shard)
    assert done.returncode == 0, done.stdout + done.stderr
    into = tmp_path / "results"
    assert journal.journals(into) == []
    assert not (into / ".intents").exists() and not (into / ".arms").exists()
    assert b"crafted" not in every_byte(into)


def test_merge_follows_no_link_out_of_the_source(tmp_path):
    """The transcript where the store writes it, and the cell's transcript directory,
    are links to files of this machine: their bytes never reach the merged store."""
    secret = tmp_path / "secret.json"
    secret.write_text('["merge-secret"]')
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "linked.json").write_text('["dir-secret"]')
    shard = tmp_path / "shard"
    first, second = sample("raw-api", TASK), sample("tea", TASK)
    first["transcript"] = f"raw-api/{TASK}/{first['id']}.json"
    second["transcript"] = f"tea/{TASK}/linked.json"
    second["id"] = "linked"
    write_store(shard, [first, second])
    (shard / "raw-api" / TASK).mkdir()
    (shard / first["transcript"]).symlink_to(secret)
    (shard / "tea" / TASK).symlink_to(outside)
    done = merge(tmp_path, shard)
    assert done.returncode == 0, done.stdout + done.stderr
    merged = every_byte(tmp_path / "results")
    assert b"merge-secret" not in merged and b"dir-secret" not in merged
    assert json.loads((tmp_path / "results" / "raw-api" / f"{TASK}.jsonl").read_text())["id"] \
        == first["id"]  # the sample itself is merged


def test_a_transcript_named_outside_the_store_is_not_read(tmp_path):
    """Merged lines are kept as they were written: a sample naming `../../` or an
    absolute path as its transcript shows no file of this machine."""
    secret = tmp_path / "secret.json"
    secret.write_text('[{"event": "stop", "error": "shown-secret"}]')
    store = tmp_path / "results"
    named = {"absolute": str(secret), "climbing": "../secret.json"}
    write_store(store, [sample("raw-api", TASK, id=key, transcript=path)
                        for key, path in named.items()])
    for key in named:
        done = subprocess.run([*BENCHKIT, "show", key, "--store", str(store), "--json"],
                              capture_output=True, text=True, timeout=DEADLINE, cwd=tmp_path)
        assert done.returncode == 0, done.stdout + done.stderr
        assert "shown-secret" not in done.stdout
        assert "outside the store" in done.stdout, done.stdout


def test_gc_deletes_of_a_journal_only_what_is_benchkit_s(host, tmp_path):
    """A copied store's journal lists a user of the host, the admin's own repository
    and a lapsed run's user; a journal of this machine lists a directory of the
    maintainer's and a temp directory as a run names one. gc deletes the run user and
    the temp directory, and leaves the others, one line each."""
    prefix = f"bkz{secrets.token_hex(2)}-"
    precious, made = tmp_path / "precious", tmp_path / "benchkit-cell-0123456789"
    precious.mkdir()
    made.mkdir()
    store = tmp_path / "copied"
    victim = f"{prefix}alice"
    host.create_user(victim)
    with Client(host.url, host.token) as admin:
        admin.post("/user/repos", {"name": f"{prefix}keep", "private": True})
        lapsed = create_run_user(admin, prefix, full_name=RUN + "2000-01-01T00:00:00Z")
        dead_journal(store, {"add": "host", "url": host.url, "embedded": False},
                     {"add": "user", "login": victim}, {"add": "user", "login": lapsed.login},
                     {"add": "repo", "owner": admin.user, "name": f"{prefix}keep"},
                     machine="elsewhere")
        dead_journal(store, {"add": "tempdir", "path": str(precious)},
                     {"add": "tempdir", "path": str(made)})
        try:
            done = gc(host.url, host.token, store, tmp_path, "--prefix", prefix)
            said = done.stdout + done.stderr
            assert done.returncode == 0 and "Traceback" not in said, said
            assert exists(admin, victim) and not exists(admin, lapsed.login), said
            assert admin.get(f"/repos/{admin.user}/{prefix}keep")["name"] == f"{prefix}keep"
            assert precious.is_dir() and not made.exists(), said
            assert f"left the user {victim} " in said and f"left {precious}, " in said, said
            assert f"left the repository {admin.user}/{prefix}keep " in said, said
            assert journal.journals(store) == []  # what they named is no one's to sweep
        finally:
            delete_repo(admin, admin.user, f"{prefix}keep")
            delete_run_user(admin, victim)
            delete_run_user(admin, lapsed.login)
