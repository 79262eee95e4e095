"""Each store file's summary is kept between reports (benchkit.report.kept): a report of
an unchanged store reads no file, one after an append reads that file alone, and
whatever was kept, the summary is what one process makes of the whole store from
scratch. A file written too recently to tell, a leaked replay, a corrupt entry: read
again."""

import os
import time

import pytest
from synthetic import sample, write_store
from test_report_summary import mixed_store, rows

from benchkit.replays import FailureReplay
from benchkit.report import kept, load_store
from benchkit.report import load as load_module
from benchkit.report.summary import Summariser, summarise
from benchkit.store import Store


@pytest.fixture
def read(monkeypatch):
    """The store files each summary read (in this process: no child is forked)."""
    files: list[str] = []
    original = load_module.read_samples

    def counted(path):
        files.append(f"{path.parent.name}/{path.name}")
        return original(path)
    monkeypatch.setattr(load_module, "read_samples", counted)
    return files


def settled(store, *paths):
    """The store's files (or these) as if written a minute ago: past kept.RACY_NS."""
    before = time.time() - 60
    for path in paths or store.glob("*/*.jsonl"):
        os.utime(path, (before, before))
    return store


def summary(store):
    with Summariser(store, fork=False) as summariser:
        return summariser.result()


def test_an_unchanged_store_is_read_once(tmp_path, read):
    store = settled(mixed_store(tmp_path))
    first = summary(store)
    assert len(read) == len(list(store.glob("*/*.jsonl")))
    read.clear()
    again = summary(store)
    assert read == []
    assert rows(again) == rows(first) == rows(summarise(load_store(store)))
    assert again.problems == first.problems and again.problems  # the torn line, still named
    assert (again.samples, again.unconfined, again.files) == (first.samples, first.unconfined,
                                                              first.files)


def test_an_appended_file_alone_is_read_again(tmp_path, read):
    store = settled(mixed_store(tmp_path))
    summary(store)
    write_store(store, [sample("b", "t2", outcome="failed", turns=11)])
    settled(store, store / "b" / "t2.jsonl")
    read.clear()
    after = summary(store)
    assert read == ["b/t2.jsonl"]
    assert rows(after) == rows(summarise(load_store(store)))


def test_a_file_written_just_now_is_not_kept(tmp_path, read):
    store = mixed_store(tmp_path)  # its files' modification times: now
    summary(store)
    read.clear()
    summary(store)
    assert len(read) == len(list(store.glob("*/*.jsonl")))  # racily clean: read again


def test_a_leaked_replay_reads_the_store_again(tmp_path, read):
    store = settled(mixed_store(tmp_path))
    summary(store)
    leaked = next(s for s in Store(store).samples() if s["outcome"] == "passed")
    Store(store).append_failure_replay(FailureReplay(trial=leaked["id"], arm=leaked["arm"],
                                                     task=leaked["task"], verdict="leaked"))
    read.clear()
    after = summary(store)
    assert read  # every summary's key holds the leaked trials
    assert rows(after) == rows(summarise(load_store(store)))
    assert any(key[4] == "invalid" and key[6] == "replay-leak" for key in after.groups)


def test_a_corrupt_or_foreign_entry_is_a_miss(tmp_path, read):
    store = settled(mixed_store(tmp_path))
    first = summary(store)
    (entry,) = (tmp_path / "cache" / kept.DIRECTORY).iterdir()  # conftest's cache directory
    for bad in (b"\x80\x04not msgpack", entry.read_bytes()[:-7], b"\x81\xa1x\x93\x01\x02\x03"):
        entry.write_bytes(bad)
        read.clear()
        assert rows(summary(store)) == rows(first)
        assert read  # read again from the store, never trusted


def test_the_child_keeps_what_it_reads(tmp_path):
    store = settled(mixed_store(tmp_path))
    with Summariser(store) as forked:
        assert forked._child is not None
        first = forked.result()
    with Summariser(store) as again:
        assert again._child is None  # nothing left to read
        assert rows(again.result()) == rows(first) == rows(summarise(load_store(store)))


@pytest.fixture(autouse=True)
def _own_cache(tmp_path, monkeypatch):
    monkeypatch.setenv("BENCHKIT_CACHE_DIR", str(tmp_path / "cache"))
