"""A report whose whole set is in place already writes nothing (benchkit.report.publish,
builder.set_key): a second `benchkit report` of an unchanged store and tree leaves every
file as it is, prints what the first printed and imports neither the aggregation nor
Jinja2; anything the set is made of (a sample, a failure replay, an option) or a file
of the set touched since renders it again."""

import os
import time

import pytest
from click.testing import CliRunner
from conftest import CHECKOUT
from synthetic import write_store
from test_cli_contract import started
from test_report_pages import TASKS, current, trials

from benchkit.cli import main
from benchkit.replays import FailureReplay
from benchkit.report.publish import SET_MANIFEST
from benchkit.store import Store


def settled(store):
    """The store's files as if written a minute ago: a report keys them (kept.RACY_NS)."""
    before = time.time() - 60
    for path in [*store.glob("*/*.jsonl"), *store.glob("*.jsonl")]:
        os.utime(path, (before, before))
    return store


@pytest.fixture
def store(tmp_path):
    return settled(write_store(tmp_path / "results", trials()))


def report(store, reports, *args) -> tuple[str, str]:
    done = CliRunner().invoke(main, ["report", "--store", str(store), "--reports", str(reports),
                                     *args], env={"BENCHKIT_ROOT": str(CHECKOUT)},
                              catch_exceptions=False)
    assert done.exit_code == 0, done.output
    return done.stdout, done.stderr


def published(reports) -> dict[str, tuple[int, int]]:
    return {str(p.relative_to(reports)): (p.stat().st_ino, p.stat().st_mtime_ns)
            for p in sorted(reports.rglob("*")) if p.is_file()}


def test_a_second_report_of_an_unchanged_set_writes_nothing(store, tmp_path):
    reports = tmp_path / "reports"
    printed, _ = report(store, reports)
    before = published(reports)
    assert SET_MANIFEST in before and len(before) > 10  # the set, its pages, its key
    again, imported = started("report", "--store", str(store), "--reports", str(reports))
    assert again == printed and not {"numpy", "jinja2", "benchkit.report.aggregate"} & set(imported)
    assert published(reports) == before


@pytest.mark.parametrize("change", ["sample", "failure replay", "weight", "page gone",
                                    "report edited", "one format elsewhere"])
def test_anything_the_set_is_made_of_renders_it_again(store, tmp_path, change):
    reports = tmp_path / "reports"
    report(store, reports)
    args: tuple[str, ...] = ()
    if change == "sample":
        write_store(store, [current("raw-api", TASKS[1], outcome="failed", trial=9)])
        settled(store)
    elif change == "failure replay":
        failed = next(s for s in Store(store).samples() if s["outcome"] == "failed")
        Store(store).append_failure_replay(FailureReplay(
            trial=failed["id"], arm=failed["arm"], task=failed["task"], verdict="reproducible"))
        settled(store)
    elif change == "weight":
        args = ("--weight", "output=7")
    elif change == "page gone":
        next((reports / "trials" / "tea").rglob("*.html")).unlink()
    elif change == "report edited":
        (reports / "report.md").write_text("edited\n")
    else:  # the same store, one format written over the set's own file
        done = CliRunner().invoke(main, ["report", "--store", str(store), "--weight", "input=3",
                                         "-o", str(reports / "report.md")],
                                  env={"BENCHKIT_ROOT": str(CHECKOUT)}, catch_exceptions=False)
        assert done.exit_code == 0, done.output
    before = published(reports)
    report(store, reports, *args)
    after = published(reports)
    assert after["report.md"] != before.get("report.md")  # rendered again
    assert "edited" not in (reports / "report.md").read_text()
    assert set(after) >= {p for p in before if p != SET_MANIFEST}  # a page gone is back


def test_the_store_s_unreadable_lines_are_named_when_nothing_is_written(store, tmp_path):
    with (store / "tea" / f"{TASKS[0].id}.jsonl").open("a") as handle:
        handle.write('{"torn": \n')
    settled(store)
    reports = tmp_path / "reports"
    _, warned = report(store, reports)
    before = published(reports)
    _, again = report(store, reports)
    assert published(reports) == before
    assert again == warned and "1 unreadable store line(s) left out of the report" in again


def test_a_store_written_just_now_is_rendered_every_time(store, tmp_path):
    reports = tmp_path / "reports"
    write_store(store, [current("tea", TASKS[0], outcome="passed", trial=7)])  # now
    report(store, reports)
    assert not (reports / SET_MANIFEST).exists()  # its modification time may not tell yet
    before = published(reports)
    report(store, reports)
    assert published(reports)["report.md"] != before["report.md"]
