"""What benchkit keeps between runs (benchkit.cache): `benchkit list tasks` keeps its
rows while the tree, benchkit and the document loaders' libraries are as they were, so a second
listing reads no document and imports neither YAML nor JSON Schema, and prints what a
listing from scratch prints; any edit to the tree lists it anew, and a broken document
is named every time."""

import json
import os
import subprocess
import sys

import pytest

from benchkit import cache

SCRIPT = ("import json, sys; from benchkit.cli import main\n"
          "try: main(sys.argv[1:])\n"
          "except SystemExit: pass\n"
          "json.dump(sorted(m for m in ('yaml', 'jsonschema') if m in sys.modules), sys.stderr)")


def listed(tree, cache_dir, *args) -> tuple[str, str, list[str]]:
    """What `benchkit list tasks ARGS` prints in the tree, on standard output and as
    warnings, and the loaders it imported."""
    done = subprocess.run([sys.executable, "-c", SCRIPT, "list", "tasks", *args],
                          capture_output=True, text=True, timeout=60, cwd=tree,
                          env={**os.environ, "BENCHKIT_ROOT": str(tree),
                               "BENCHKIT_CACHE_DIR": str(cache_dir)})
    assert done.returncode == 0, done.stderr
    *warned, imported = done.stderr.split("\n")
    return done.stdout, "\n".join(warned), json.loads(imported)


@pytest.mark.parametrize("args", [(), ("--json",)])
def test_a_second_listing_reads_no_document(tree_copy, tmp_path, args):
    first, _, imported = listed(tree_copy, tmp_path / "cache", *args)
    assert "yaml" in imported and "read-open-issue-count" in first
    again, _, imported = listed(tree_copy, tmp_path / "cache", *args)
    assert imported == [] and again == first


def test_an_edited_task_is_listed_anew(tree_copy, tmp_path):
    listed(tree_copy, tmp_path / "cache")
    task = tree_copy / "tasks.d" / "read-open-issue-count.yaml"
    task.write_text(task.read_text().replace("are currently open.", "are open now.", 1))
    again, _, imported = listed(tree_copy, tmp_path / "cache", "--json")
    assert "yaml" in imported
    row = next(r for r in json.loads(again) if r["id"] == "read-open-issue-count")
    assert row["intent"] == "Report how many issues in this repository are open now."


def test_a_broken_document_is_named_every_time(tree_copy, tmp_path):
    (tree_copy / "tasks.d" / "zz-broken.yaml").write_text("id: [\n")
    for _ in range(2):
        _, warned, imported = listed(tree_copy, tmp_path / "cache")
        assert "zz-broken.yaml" in warned and "yaml" in imported


def test_an_entry_is_written_whole_or_not_at_all(tmp_path, monkeypatch):
    place = tmp_path / "kept" / "entry"
    cache.keep(place, b"first")

    def full(*_):
        raise OSError(28, "No space left on device")
    monkeypatch.setattr(cache.os, "replace", full)
    cache.keep(place, b"second")  # no room: no cache, and the old entry whole
    assert cache.read(place) == b"first"
    assert sorted(p.name for p in place.parent.iterdir()) == ["entry"]
    assert cache.read(tmp_path / "none") is None


def test_the_tree_stamp_changes_with_any_document(tree_copy):
    stamp = cache.tree_stamp(tree_copy)
    assert cache.tree_stamp(tree_copy) == stamp
    (tree_copy / "refs.d" / "extra.yaml").write_text("{}\n")
    assert cache.tree_stamp(tree_copy) != stamp
