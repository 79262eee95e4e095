"""The store's half of the report (benchkit.report.summary): shared file by file with
a forked child, it must make what one process makes of the whole store."""

import json
import os

import pytest
from synthetic import sample, write_store

from benchkit.report import build_report, load_store
from benchkit.report import summary as summary_module
from benchkit.report.matrix import ArmEntry, Matrix, TaskEntry
from benchkit.report.render import render
from benchkit.report.summary import Summariser, summarise
from benchkit.report.tally import Tally


def mixed_store(tmp_path):
    """Several cells, outcomes, tool versions, replay and unconfined samples, a sample
    filed under another cell (its group spans files) and an unreadable line."""
    samples = []
    for index in range(60):
        arm, task = ("a", "b", "c")[index % 3], ("t1", "t2")[index % 2]
        samples.append(sample(arm, task, outcome=("passed", "failed", "invalid")[index % 3],
                              tokens={"input": 100 + index, "cache_write_1h": index or None},
                              cost_usd=None if index % 7 == 0 else 0.1 * index,
                              driver="replay" if index % 5 == 0 else "claude",
                              tool_version=("1.0", "1.1")[index % 4 == 0],
                              started_at=f"2026-07-17T12:{index:02d}:00+00:00"))
        samples[-1]["confined"] = index % 6 != 0
    store = write_store(tmp_path / "results", samples)
    with (store / "c" / "t1.jsonl").open("a") as handle:
        handle.write(json.dumps(sample("a", "t1", turns=9, tool_version="1.0")) + "\n{\"torn\": \n")
    return store


def shape(summary):
    return (summary.files, summary.problems, summary.samples, summary.unconfined,
            [(key, g.last, g.newest, g.count, [(b.count, b.jobs, b.usage, b.other)
                                                for b in g.members])
             for key, g in summary.groups.items()])




def rows(summary):
    """Group by group: everything but how the columns are split into blocks."""
    def tally(blocks):
        result = Tally((1.0, 1.25, 2.0, 0.1, 5.0))
        result.extend(blocks)
        return result.rows.tobytes(), result.tokens.tobytes()
    return [(key, g.last, g.newest, g.count, tally(g.members))
            for key, g in summary.groups.items()]


def matrix():
    return Matrix(arms=(ArmEntry("a"), ArmEntry("b"), ArmEntry("c")),
                  tasks=(TaskEntry("t1", "read"), TaskEntry("t2", "read")),
                  model="claude-sonnet-4-5")


def test_shared_with_a_child_it_is_what_one_process_makes(tmp_path):
    store = mixed_store(tmp_path)
    alone = summarise(load_store(store))
    with Summariser(store) as shared:
        forked = shared.result()
    assert shape(forked)[:4] == shape(alone)[:4] and forked.problems
    assert any(len(g.members) > 1 for g in forked.groups.values())  # a group spans files
    assert rows(forked) == rows(alone)
    for format_ in ("md", "json", "csv"):
        assert (render(build_report(forked, matrix()), format_)
                == render(build_report(load_store(store), matrix()), format_))


def test_a_failed_child_leaves_its_files_to_the_parent(tmp_path, monkeypatch):
    store = mixed_store(tmp_path)

    def broken(*_, **__):
        raise OSError("no room")
    monkeypatch.setattr(summary_module.pickle, "dump", broken)  # only the child dumps
    with Summariser(store) as shared:
        assert rows(shared.result()) == rows(summarise(load_store(store)))


def test_a_missing_store_is_the_error_load_store_gives(tmp_path):
    with pytest.raises(FileNotFoundError) as expected:
        load_store(tmp_path / "nowhere")
    with Summariser(tmp_path / "nowhere") as shared, pytest.raises(FileNotFoundError) as found:
        shared.result()
    assert str(found.value) == str(expected.value)


def test_a_result_never_asked_for_stops_the_child(tmp_path):
    with Summariser(mixed_store(tmp_path)) as shared:
        child = shared._child
    assert child is not None and shared._child is None
    with pytest.raises(ChildProcessError):
        summary_module.os.waitpid(child[0], 0)  # already reaped


def test_without_a_fork_the_parent_reads_every_file(tmp_path, monkeypatch):
    store = mixed_store(tmp_path)

    def refused():
        raise OSError("Resource temporarily unavailable")  # fork under a process limit
    monkeypatch.setattr(summary_module.os, "fork", refused)
    before = len(os.listdir("/proc/self/fd"))
    with Summariser(store) as shared:
        assert shared._child is None
        assert rows(shared.result()) == rows(summarise(load_store(store)))
    assert len(os.listdir("/proc/self/fd")) == before  # the memfd and the queue closed
