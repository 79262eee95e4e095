"""The trial pages are work done once: a second `benchkit report` on an unchanged store
renders none of them again, a store with new samples or a new failure replay renders
only the pages they change, and a new weight every page; whatever was reused, the
published set is byte for byte what a report from scratch writes."""

import filecmp
import os
import shutil
from pathlib import Path

import pytest
from click.testing import CliRunner
from conftest import CHECKOUT
from synthetic import sample, write_store

from benchkit.cli import main
from benchkit.replays import FailureReplay
from benchkit.report import current_matrix
from benchkit.store import Store

MATRIX = current_matrix(CHECKOUT)
ARMS = {a.id: a for a in MATRIX.arms}
TASKS = MATRIX.scored_tasks[:2]


def current(arm: str, task, **figures) -> dict:
    return sample(arm, task.id, task.tier, fingerprints={
        "task": task.fingerprint, "arm": ARMS[arm].fingerprint, "seed": task.seed_fingerprint,
        "model": MATRIX.model_fingerprint}, **figures)


def report(store: Path, reports: Path, *args) -> None:
    done = CliRunner().invoke(main, ["report", "--store", str(store), "--reports", str(reports),
                                     *args], env={"BENCHKIT_ROOT": str(CHECKOUT)},
                              catch_exceptions=False)
    assert done.exit_code == 0, done.output


def pages(reports: Path) -> dict[str, os.stat_result]:
    trials = reports / "trials"
    return {str(p.relative_to(trials)): p.stat() for p in sorted(trials.rglob("*.html"))}


def same_as_from_scratch(store: Path, reports: Path, tmp_path: Path, *args) -> None:
    scratch = tmp_path / f"scratch-{len(list(tmp_path.iterdir()))}"
    report(store, scratch, *args)
    compared = filecmp.dircmp(reports / "trials", scratch / "trials")
    stack, differing = [compared], []
    while stack:
        each = stack.pop()
        differing += [*each.left_only, *each.right_only]
        differing += filecmp.cmpfiles(each.left, each.right, each.common_files, shallow=False)[1]
        stack += each.subdirs.values()
    assert differing == []


def trials() -> list[dict]:
    """Two arms on TASKS, one trial of each failing."""
    return [current(arm, task, outcome=outcome, trial=n)
            for n, (arm, outcome) in enumerate([("tea", "passed"), ("tea", "failed"),
                                                ("raw-api", "passed")])
            for task in TASKS]


@pytest.fixture
def store(tmp_path):
    return write_store(tmp_path / "results", trials())


def test_an_unchanged_store_renders_no_page_again(store, tmp_path):
    reports = tmp_path / "reports"
    report(store, reports)
    before, md = pages(reports), (reports / "report.md").stat()
    assert len([p for p in before if p.count("/") == 2]) == 6  # a page per trial
    report(store, reports)
    after = pages(reports)
    assert {p: (s.st_ino, s.st_mtime_ns) for p, s in after.items()} \
        == {p: (s.st_ino, s.st_mtime_ns) for p, s in before.items()}  # not one rewritten
    assert (reports / "report.md").stat().st_ino != md.st_ino  # the report itself is
    same_as_from_scratch(store, reports, tmp_path)


def test_a_new_sample_renders_its_own_pages_and_reuses_the_others(store, tmp_path):
    reports = tmp_path / "reports"
    report(store, reports)
    before = pages(reports)
    added = current("raw-api", TASKS[0], outcome="failed", trial=9)
    Store(store).append_failure_replay(FailureReplay(trial=added["id"], arm="raw-api",
                                                     task=TASKS[0].id, verdict="reproducible"))
    write_store(store, [added])
    report(store, reports)
    after = pages(reports)
    changed = {p for p in after if p not in before or after[p].st_ino != before[p].st_ino}
    cell = f"raw-api/{TASKS[0].id}"
    assert changed == {f"{cell}/{added['id']}.html", f"{cell}.html", "index.html"}
    same_as_from_scratch(store, reports, tmp_path)


def test_a_failure_replay_renders_its_trial_page_again(store, tmp_path):
    reports = tmp_path / "reports"
    report(store, reports)
    failed = next(s for s in Store(store).samples() if s["outcome"] == "failed")
    page = f"tea/{failed['task']}/{failed['id']}.html"
    assert "Failure replay" not in (reports / "trials" / page).read_text()
    Store(store).append_failure_replay(FailureReplay(trial=failed["id"], arm="tea",
                                                     task=failed["task"], verdict="reproducible"))
    report(store, reports)
    assert "Failure replay: reproducible" in (reports / "trials" / page).read_text()
    same_as_from_scratch(store, reports, tmp_path)


def test_another_weight_renders_every_page_again(store, tmp_path):
    reports = tmp_path / "reports"
    report(store, reports)
    before = pages(reports)
    report(store, reports, "--weight", "output=7")
    after = pages(reports)
    assert set(after) == set(before)
    assert all(after[p].st_ino != before[p].st_ino for p in after)
    same_as_from_scratch(store, reports, tmp_path, "--weight", "output=7")


def test_an_edited_template_changes_every_page_s_key(tmp_path, monkeypatch):
    from benchkit.report import pages as module
    copied = tmp_path / "templates"
    shutil.copytree(module.TEMPLATES, copied)
    monkeypatch.setattr(module, "TEMPLATES", copied)
    module._renderers.cache_clear()
    try:
        digests = [module._renderers()]
        for template in sorted(copied.iterdir()):  # each template, the partials included
            template.write_text(template.read_text() + "\n")
            module._renderers.cache_clear()
            digests.append(module._renderers())
    finally:
        module._renderers.cache_clear()
    assert len(set(digests)) == len(digests)
