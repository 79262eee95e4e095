"""`benchkit report` on a copy of the shipped tree: samples stamped as the runner stamps
them are matched to the current tree, rendered in every format, re-weighted."""

import csv
import io
import json
import os
import shutil
from dataclasses import replace

import jsonschema
import pytest
from click.testing import CliRunner
from synthetic import sample, write_store

from benchkit import SCHEMA_DIR
from benchkit.cli import main
from benchkit.report import current_matrix

SECRET = "0123456789abcdef0123456789abcdef01234567"


@pytest.fixture
def tree(tree_copy, monkeypatch):
    monkeypatch.setenv("BENCHKIT_ROOT", str(tree_copy))
    return tree_copy


def current_sample(matrix, arm, task, **figures):
    return sample(arm.id, task.id, task.tier, fingerprints={
        "task": task.fingerprint, "arm": arm.fingerprint, "seed": task.seed_fingerprint,
        "model": matrix.model_fingerprint}, **figures)


@pytest.fixture
def store(tree, tmp_path):
    """Every arm on the first 6 scored tasks, 3 trials each; one arm also on a bonus."""
    matrix = current_matrix(tree)
    samples = []
    for index, arm in enumerate(matrix.arms):
        for task in matrix.scored_tasks[:6]:
            samples += [current_sample(matrix, arm, task, tokens={"output": 400 + 100 * index},
                                       cost_usd=0.1) for _ in range(3)]
    bonus = matrix.bonus_tasks[0]
    samples.append(current_sample(matrix, matrix.arms[0], bonus))
    for item in samples:  # what a token would look like had it leaked into a sample
        item["answer"] = item["error"] = f"token {SECRET}"
    return write_store(tmp_path / "results", samples)


def invoke(*args):
    return CliRunner().invoke(main, ["report", *map(str, args)], catch_exceptions=False)


def test_synthetic_samples_match_the_sample_schema():
    schema = json.loads((SCHEMA_DIR / "sample.schema.json").read_text())
    for outcome in ("passed", "failed", "invalid", "harness-error"):
        jsonschema.validate(sample("a", "t", outcome=outcome), schema)
    jsonschema.validate(sample("a", "t", "bonus", driver="replay", cost_usd=None), schema)


def test_writes_every_format_into_the_reports_directory(tree, store, tmp_path):
    result = invoke("--store", store, "--reports", tmp_path / "reports")
    assert result.exit_code == 0, result.output
    paths = result.output.split()
    assert [p.rsplit(".", 1)[1] for p in paths] == ["md", "html", "json", "csv"]

    report = json.loads((tmp_path / "reports" / "report.json").read_text())
    matrix = current_matrix(tree)
    assert report["arms"] == [a.id for a in matrix.arms]
    assert report["totals"]["measured"] == 6 * 3 * len(matrix.arms) + 1  # and the bonus one
    assert report["totals"]["other_versions"] == 0
    assert {r["tasks"] for r in report["headline"]} == {6}
    assert {r["covered"] for r in report["headline"]} == {6}
    assert len(report["coverage"]["missing"]) == (len(matrix.scored_tasks) - 6) * len(matrix.arms)
    assert report["coverage"]["missing"] and not [  # a scored cell is never set aside
        c for r in report["coverage"]["rows"] if r["scored"] for c in r["cells"]
        if c["status"] == "cannot"]

    rows = list(csv.DictReader(io.StringIO((tmp_path / "reports" / "report.csv").read_text())))
    assert len(rows) == 6 * len(matrix.arms) + 1
    first = rows[0]
    assert (first["kind"], first["samples"], first["passes"]) == ("measured", "3", "3")
    assert float(first["cost"]) == pytest.approx(
        sum(float(first[c]) * w for c, w in report["weights"].items()))

    markdown = (tmp_path / "reports" / "report.md").read_text()
    assert markdown.startswith("# benchkit report")
    assert "| tea | **" in markdown
    for path in paths:
        assert SECRET not in open(path).read()


def test_a_weight_override_re_renders_without_re_running(tree, store):
    plain = json.loads(invoke("--store", store, "--format", "json").output)
    heavier = json.loads(invoke("--store", store, "--format", "json",
                                "--weight", "output=7", "--weight", "cache_read=0").output)
    assert heavier["weights"]["output"] == 7 and heavier["weights"]["cache_read"] == 0
    for before in plain["headline"]:
        components = next(c for c in plain["components"] if c["arm"] == before["arm"])["tokens"]
        expected = (before["cost"]["value"] + 2 * components["output"]
                    - 0.1 * components["cache_read"])
        reweighted = next(r for r in heavier["headline"] if r["arm"] == before["arm"])
        assert reweighted["cost"]["value"] == pytest.approx(expected)
    assert "output ×7" in invoke("--store", store, "--format", "md", "--weight", "output=7").output


def test_one_format_to_a_file_or_standard_output(tree, store, tmp_path):
    target = tmp_path / "out" / "published.html"
    result = invoke("--store", store, "-o", target)
    assert result.exit_code == 0 and target.read_text().startswith("<!DOCTYPE html>")
    assert invoke("--store", store, "--format", "csv").output.startswith("arm,task,tier,kind")
    bad = invoke("--store", store, "-o", tmp_path / "report.txt")
    assert bad.exit_code == 2 and "cannot tell the format of report.txt" in bad.output


def test_pass_k_and_model_options(tree, store):
    report = json.loads(invoke("--store", store, "--format", "json", "--pass-k", "2").output)
    assert report["pass_k"] == 2
    other = invoke("--store", store, "--format", "json", "--model", "claude-x")
    assert other.exit_code == 2 and other.output.count("\n") == 1, other.output
    assert ("--model claude-x: the store holds no samples of it; it holds "
            "claude-sonnet-4-5 (") in other.output


def test_bad_input_is_named(tree, tmp_path):
    missing = invoke("--store", tmp_path / "nowhere")
    assert missing.exit_code == 2 and "nowhere: no such store directory" in missing.output
    weight = invoke("--store", tmp_path, "--weight", "output")
    assert weight.exit_code == 2 and "expected COMPONENT=NUMBER" in weight.output
    unknown = invoke("--store", tmp_path, "--weight", "outputs=3")
    assert unknown.exit_code == 2 and "unknown token component outputs" in unknown.output


def test_a_broken_tree_fails_with_file_and_line(tree, tmp_path):
    suite = tree / "suite.yaml"
    suite.write_text(suite.read_text().replace("floor: 3", "floor: many"))
    result = invoke("--store", tmp_path)
    assert result.exit_code == 2
    assert "suite.yaml:" in result.output and "floor" in result.output


def test_an_empty_store_renders_every_format(tree, tmp_path):
    (tmp_path / "results").mkdir()
    result = invoke("--store", tmp_path / "results", "--reports", tmp_path / "reports")
    assert result.exit_code == 0, result.output
    markdown = (tmp_path / "reports" / "report.md").read_text()
    assert "| gitea-axi | no samples |" in markdown
    assert "No measured samples of the current tasks and arms yet" in markdown


@pytest.fixture
def loads(tmp_path, monkeypatch):
    """The roots benchkit.documents.load_tree is called on (the cache in tmp_path): each a
    report that loaded its tree instead of taking the kept matrix."""
    import benchkit.documents
    monkeypatch.setenv("BENCHKIT_CACHE_DIR", str(tmp_path / "cache"))
    called: list = []
    real = benchkit.documents.load_tree
    monkeypatch.setattr(benchkit.documents, "load_tree", lambda root: called.append(root) or real(root))
    return called


def test_the_trees_matrix_is_kept_until_anything_it_depends_on_changes(tree, loads):
    """report.matrix.tree_matrix: a second report of an unchanged tree does not load it
    again; an edited, added or broken document is loaded (and a broken one fails) every
    time, even with its old bytes' modification time."""
    import benchkit.documents
    first = current_matrix(tree)
    assert current_matrix(tree) == first and len(loads) == 1
    assert current_matrix(tree, model="claude-x").model == "claude-x" and len(loads) == 2
    suite = tree / "suite.yaml"
    kept = suite.stat()
    suite.write_text(suite.read_text().replace("floor: 3", "floor: 4"))
    os.utime(suite, ns=(kept.st_atime_ns, kept.st_mtime_ns))
    assert current_matrix(tree).floor == 4 and len(loads) == 3
    task = next(iter(sorted((tree / "tasks.d").glob("*.yaml"))))
    shutil.copy(task, tree / "tasks.d" / "zz-extra.yaml")
    with pytest.raises(benchkit.documents.DocumentError):  # its id is not its file name
        current_matrix(tree)
    with pytest.raises(benchkit.documents.DocumentError):
        current_matrix(tree)
    (tree / "tasks.d" / "zz-extra.yaml").unlink()  # as it was kept: a broken tree is not
    assert current_matrix(tree) == replace(first, floor=4) and len(loads) == 5


def test_a_kept_matrix_is_data_and_a_bad_entry_is_a_miss(tree, tmp_path, loads):
    """The cache holds JSON (a pickle would run whatever a foreign file holds); a
    corrupt or foreign entry is loaded again from the tree, and the cache covers every
    directory the document loaders read from."""
    from benchkit.cache import TREE_DIRECTORIES
    from benchkit.documents.tree import DIRECTORIES
    assert set(TREE_DIRECTORIES) == set(DIRECTORIES) | {"refs.d"}
    first = current_matrix(tree)
    (entry,) = (tmp_path / "cache" / "matrix").iterdir()
    assert json.loads(entry.read_text())["matrix"]["arms"][0]["id"] == first.arms[0].id
    for bad in (b"\x80\x04not json", b'{"key": "x", "matrix": {"arms": 1}}'):
        entry.write_bytes(bad)
        assert current_matrix(tree) == first
    assert len(loads) == 3 and current_matrix(tree) == first and len(loads) == 3
