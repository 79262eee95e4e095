"""`benchkit report` compares models as it compares arms: per arm, a model-by-model table
and verdicts on the tasks every model ran (like for like: the headline model's tool and
prompt), in md, HTML and JSON; `--model` (repeatable) chooses them, and one the store
holds no sample of is refused naming those it holds. Another model's samples are
listed apart under its name."""

import json
import random

import pytest
from click.testing import CliRunner
from synthetic import sample, write_store

from benchkit.cli import main
from benchkit.fingerprint import fingerprint
from benchkit.report import current_matrix

SONNET, OPUS, HAIKU = "claude-sonnet-4-5", "claude-opus-4-5", "claude-haiku-4-5"


@pytest.fixture
def tree(tree_copy, monkeypatch):
    monkeypatch.setenv("BENCHKIT_ROOT", str(tree_copy))
    return tree_copy


def stamped(arm, task, model, output, **extra):
    """A sample as the runner stamps one of `model` (its fingerprint is its name's)."""
    return sample(arm.id, task.id, task.tier, model=model, tokens={"output": output},
                  fingerprints={"task": task.fingerprint, "arm": arm.fingerprint,
                                "seed": task.seed_fingerprint, "model": fingerprint(model)},
                  **extra)


@pytest.fixture
def store(tree, tmp_path):
    """Two arms on five tasks, three trials each of the suite's model and of opus
    (dearer by ~80% of output); haiku on one arm and one task only."""
    matrix = current_matrix(tree)
    spread = random.Random(7)
    arms, tasks = matrix.arms[:2], matrix.scored_tasks[:5]
    samples = [stamped(arm, task, model, base + spread.randint(-30, 30))
               for arm in arms for task in tasks
               for model, base in ((SONNET, 500), (OPUS, 4000)) for _ in range(3)]
    samples.append(stamped(arms[0], tasks[0], HAIKU, 300))
    # opus on another tool version: set apart, never compared with the sonnet's
    samples.append(stamped(arms[0], tasks[1], OPUS, 10 ** 6, tool_version="0.0.1"))
    return write_store(tmp_path / "results", samples), [a.id for a in arms]


def invoke(*args):
    return CliRunner().invoke(main, ["report", *map(str, args)], catch_exceptions=False)


def test_every_model_held_is_compared_per_arm_in_every_format(store, tmp_path):
    results, arms = store
    report = json.loads(invoke("--store", results, "--format", "json").output)
    assert report["models"] == {SONNET: 30, OPUS: 31, HAIKU: 1}
    compared = {c["arm"]: c for c in report["model_comparisons"]}
    assert set(compared) == set(arms)
    first = compared[arms[0]]
    assert first["estimated"] is False and len(first["tasks"]) == 1  # haiku ran one task
    assert first["ran"] == {SONNET: 5, OPUS: 5, HAIKU: 1}
    assert {(p["a"], p["b"]): p["tasks"] for p in first["verdicts"]}[(SONNET, OPUS)] == 5
    other = compared[arms[1]]
    assert [row["model"] for row in other["rows"]] == [SONNET, OPUS]  # cheapest first
    assert all(row["tasks"] == 5 and row["samples"] == 15 for row in other["rows"])
    pair, = other["verdicts"]
    assert (pair["a"], pair["b"], pair["tasks"], pair["verdict"]) == (SONNET, OPUS, 5, "a-cheaper")
    assert pair["ratio_high"] < 1
    assert max(row["cost"]["value"] for row in other["rows"]) < 10 ** 5  # 0.0.1 set apart
    md = invoke("--store", results, "--format", "md").output
    assert "## Models: each arm's models compared" in md
    assert f"| {SONNET} vs {OPUS} | 5 |" in md and f"{SONNET} cheaper" in md
    html = invoke("--store", results, "--format", "html").output
    assert '<h2 id="models">' in html and f"<th>{SONNET} vs {OPUS}</th>" in html
    # another model's samples are named where they are listed apart
    changed = {tuple(r["changed"]) for r in report["other_versions"]}
    assert (f"model {OPUS}",) in changed and (f"model {HAIKU}",) in changed


def test_model_chooses_the_models_and_one_not_held_is_refused(store):
    results, arms = store
    chosen = json.loads(invoke("--store", results, "--format", "json", "--model", OPUS,
                               "--model", SONNET).output)
    assert chosen["model"] == OPUS  # the first is the headline's
    assert {row["model"] for c in chosen["model_comparisons"] for row in c["rows"]} == {SONNET, OPUS}
    assert all(len(c["tasks"]) == 5 for c in chosen["model_comparisons"])
    alone = json.loads(invoke("--store", results, "--format", "json", "--model", SONNET).output)
    assert "model_comparisons" not in alone  # one model: nothing to compare
    refused = invoke("--store", results, "--model", SONNET, "--model", "gpt-4o")
    assert refused.exit_code == 2 and refused.output.count("\n") == 1, refused.output
    assert (f"--model gpt-4o: the store holds no samples of it; it holds {OPUS} (31 samples), "
            f"{SONNET} (30 samples), {HAIKU} (1 sample)") in refused.output
