"""The measured report against known truth: a store of measured samples (driver
`claude`, usage as the API reports it, written as the runner writes them) whose every
figure is known, rendered by the real `benchkit report` in md, HTML, JSON and CSV, and
each headline figure, each difference to the cheapest arm, each verdict's direction and
each cost ratio as printed checked against the test's own arithmetic.

The truth: every trial of an arm costs the same multiple of its task's size (task i of
TASKS has size i + 1), so any two arms' costs stand in the ratio of their PER_UNIT on
any tasks they share; tea fails one trial and gitea-mcp hangs one; raw-api ran only the
first four tasks; gitea-axi has a harness error of enormous usage that must count
nowhere.
"""

import csv
import io
import json
import math
import uuid
from itertools import combinations

import pytest
from click.testing import CliRunner
from report_tables import html_table, html_table_captioned, md_row

from benchkit.cli import main
from benchkit.report import current_matrix
from benchkit.sample import COMPONENTS, Fingerprints, Host, Record, Usage
from benchkit.store import Store

PER_UNIT = {"gitea-axi": 71, "tea": 100, "gitea-mcp": 102, "raw-api": 192}
TASKS = 6
RAN = {"raw-api": 4}  # tasks of TASKS each arm ran, when not all
TRIALS = 3
FAILS = {("tea", 0, 2): ("failed", "checker"), ("gitea-mcp", 1, 1): ("hung", "backstop")}


def usage_of(arm: str, size: int) -> Usage:
    unit = PER_UNIT[arm] * size
    return Usage(input=10 * unit, cache_write=0, cache_read=100 * unit, output=2 * unit,
                 cache_write_5m=0, cache_write_1h=0)


def cost_of(usage: Usage, weights: dict) -> float:
    tokens = {"input": usage.input, "cache_write_5m": usage.cache_write - (usage.cache_write_1h or 0),
              "cache_write_1h": usage.cache_write_1h or 0, "cache_read": usage.cache_read,
              "output": usage.output}
    return math.fsum(tokens[c] * weights[c] for c in COMPONENTS)


def record(matrix, arm, task, trial, *, outcome="passed", failure_class=None,
           usage: Usage) -> Record:
    arms = {a.id: a for a in matrix.arms}
    return Record(
        id=uuid.uuid4().hex, arm=arm, task=task.id, tier=task.tier, scored=True, trial=trial,
        started_at=f"2026-07-17T12:{trial:02d}:00+00:00", duration_s=20.0, driver="claude",
        model=matrix.model, outcome=outcome, failure_class=failure_class, valid=True,
        differences=[] if outcome == "passed" else ["issue #2: state open != closed"],
        usage=usage, usage_by_model={matrix.model: usage}, usage_estimated=False, turns=4,
        cost_usd=0.1, tool_calls=4,
        fingerprints=Fingerprints(task=task.fingerprint, arm=arms[arm].fingerprint,
                                  seed=task.seed_fingerprint, prompt="a" * 16,
                                  model=matrix.model_fingerprint),
        host=Host("forge", "1.27.3"), answer="Done.")


@pytest.fixture(scope="module")
def rendered(tmp_path_factory):
    """The store written, `benchkit report` run on it: its four files, and the truth."""
    from conftest import CHECKOUT
    tmp = tmp_path_factory.mktemp("truth")
    matrix = current_matrix(CHECKOUT)
    tasks = matrix.scored_tasks[:TASKS]
    store = Store(tmp / "results")
    failed = {}
    for arm in PER_UNIT:
        for index, task in enumerate(tasks[:RAN.get(arm, TASKS)]):
            for trial in range(TRIALS):
                outcome, why = FAILS.get((arm, index, trial), ("passed", None))
                written = store.append(record(matrix, arm, task, trial, outcome=outcome,
                                              failure_class=why, usage=usage_of(arm, index + 1)))
                if outcome != "passed":
                    failed[written.id] = (arm, task.id, outcome, why)
    harness = record(matrix, "gitea-axi", tasks[2], TRIALS, usage=usage_of("raw-api", 1000))
    harness.harness_error("model-service", "overloaded")
    store.append(harness)
    reports = tmp / "reports"
    done = CliRunner().invoke(main, ["report", "--store", str(tmp / "results"), "--reports",
                                     str(reports)], env={"BENCHKIT_ROOT": str(CHECKOUT)},
                              catch_exceptions=False)
    assert done.exit_code == 0, done.output
    files = {kind: (reports / f"report.{kind}").read_text() for kind in ("md", "html", "json", "csv")}
    return {"files": files, "matrix": matrix, "tasks": tasks, "failed": failed,
            "harness": harness.id, "reports": reports, "truth": truth(matrix, tasks)}


def truth(matrix, tasks) -> dict:
    """What every figure must be, computed here from PER_UNIT, RAN and FAILS alone."""
    weights, k = dict(matrix.weights), matrix.k
    cells = {}  # (arm, task index) -> (cost per trial, passes)
    for arm in PER_UNIT:
        for index in range(RAN.get(arm, TASKS)):
            passes = sum((arm, index, t) not in FAILS for t in range(TRIALS))
            cells[(arm, index)] = (cost_of(usage_of(arm, index + 1), weights), passes)

    def over(arm, indices):
        found = [cells[(arm, i)] for i in indices]
        with_k = [math.comb(p, k) / math.comb(TRIALS, k) for _, p in found] if TRIALS >= k else []
        return {"cost": sum(c for c, _ in found) / len(found),
                "success": sum(p / TRIALS for _, p in found) / len(found),
                "pass_k": sum(with_k) / len(with_k) if with_k else None, "tasks": len(found)}
    headline = {arm: over(arm, range(RAN.get(arm, TASKS))) for arm in PER_UNIT}
    common = range(min(RAN.get(arm, TASKS) for arm in PER_UNIT))
    on_common = {arm: over(arm, common) for arm in PER_UNIT}
    ranked = sorted(PER_UNIT, key=lambda arm: headline[arm]["cost"])
    reference = min(PER_UNIT, key=lambda arm: on_common[arm]["cost"])
    margin = matrix.margin
    pairs = []
    for a, b in combinations(ranked, 2):
        shared = range(min(RAN.get(a, TASKS), RAN.get(b, TASKS)))
        ratio = over(a, shared)["cost"] / over(b, shared)["cost"]
        says = (f"equivalent within ±{margin:.0%}" if abs(math.log(ratio)) < math.log1p(margin)
                else f"{a} cheaper" if ratio < 1 else f"{b} cheaper")
        pairs.append({"a": a, "b": b, "tasks": len(shared), "ratio": ratio, "says": says})
    differences = {}
    for arm in (a for a in PER_UNIT if a != reference):
        shared = range(min(RAN.get(arm, TASKS), RAN.get(reference, TASKS)))
        mine, theirs = over(arm, shared)["cost"], over(reference, shared)["cost"]
        differences[arm] = {"tasks": len(shared), "difference": mine - theirs,
                            "relative": mine / theirs - 1}
    return {"cells": cells, "headline": headline, "common": on_common,
            "common_tasks": len(common), "ranked": ranked, "reference": reference,
            "pairs": pairs, "differences": differences}


def test_the_truth_is_not_trivial(rendered):
    """The store is built so that ranking on different task sets would mislead:
    raw-api's headline leaves out the two largest tasks, and one pair is equivalent."""
    truth = rendered["truth"]
    assert truth["headline"]["raw-api"]["cost"] < 2 * truth["headline"]["tea"]["cost"]
    assert truth["common"]["raw-api"]["cost"] / truth["common"]["tea"]["cost"] == pytest.approx(1.92)
    says = {p["says"] for p in truth["pairs"]}
    assert any(s.startswith("equivalent") for s in says) and "gitea-axi cheaper" in says
    assert any(p["ratio"] == pytest.approx(0.71) for p in truth["pairs"])


def test_json_holds_every_figure(rendered):
    report, truth = json.loads(rendered["files"]["json"]), rendered["truth"]
    rows = {r["arm"]: r for r in report["headline"]}
    assert [r["arm"] for r in report["headline"] if r["arm"] in PER_UNIT] == truth["ranked"]
    for arm, want in truth["headline"].items():
        row = rows[arm]
        assert row["tasks"] == want["tasks"] and row["samples"] == want["tasks"] * TRIALS
        assert row["cost"]["value"] == pytest.approx(want["cost"])
        assert row["success"]["value"] == pytest.approx(want["success"])
        assert row["pass_k"]["value"] == pytest.approx(want["pass_k"])
        assert row["turns"]["value"] == pytest.approx(4) and row["duration"]["value"] == 20
    common = {r["arm"]: r for r in report["common"]["rows"]}
    assert len(report["common"]["tasks"]) == truth["common_tasks"]
    for arm, want in truth["common"].items():
        assert common[arm]["cost"]["value"] == pytest.approx(want["cost"])
    comparison = report["comparison"]
    assert comparison["reference"] == truth["reference"]
    for row in comparison["rows"]:
        want = truth["differences"][row["arm"]]
        assert row["tasks"] == want["tasks"]
        assert row["difference"]["value"] == pytest.approx(want["difference"])
        assert row["relative"] == pytest.approx(want["relative"])
    pairs = report["verdicts"]["pairs"]
    assert [(p["a"], p["b"]) for p in pairs] == [(p["a"], p["b"]) for p in truth["pairs"]]
    for got, want in zip(pairs, truth["pairs"], strict=True):
        assert got["tasks"] == want["tasks"] and got["says"] == want["says"]
        assert got["ratio"] == pytest.approx(want["ratio"])
        assert got["a_mean"] / got["b_mean"] == pytest.approx(got["ratio"])
    assert report["totals"]["harness_error"] == 1
    assert {f["trial"] for f in report["failures"]} == set(rendered["failed"])


def test_markdown_prints_every_figure_and_each_ratio_as_a_ratio(rendered):
    md, truth = rendered["files"]["md"], rendered["truth"]
    for arm, want in truth["headline"].items():
        row = md_row(md, arm, "### All-task means: not comparable between arms")
        assert row[1].startswith(f"**{want['cost']:,.0f}"), row
        assert row[5].startswith(f"{want['success']:.0%}"), row
        assert row[6].startswith(f"{want['pass_k']:.0%}"), row
    for arm, want in truth["common"].items():
        row = md_row(md, arm, "## Measured: headline")  # the first table: the ranking
        assert row[1].startswith(f"**{want['cost']:,.0f}"), row
    assert f"## Difference to the cheapest arm ({truth['reference']})" in md
    for arm, want in truth["differences"].items():
        row = md_row(md, arm, "## Difference to the cheapest arm")
        assert row[1] == str(want["tasks"])
        assert row[2] == f"{want['difference']:+,.0f}"
        assert row[4] == f"{want['relative']:+.0%}"
    for want in truth["pairs"]:
        row = md_row(md, f"{want['a']} vs {want['b']}", "## Verdicts")
        assert row[1] == str(want["tasks"])
        assert row[2] == f"{want['ratio']:.2f}×", row  # a ratio, never "+71%"
        assert row[4] == want["says"]
    assert "| gitea-axi vs tea | 6 | 0.71× |" in md


def test_html_prints_every_figure_and_each_ratio_as_a_ratio(rendered):
    page, truth = rendered["files"]["html"], rendered["truth"]
    headline = html_table_captioned(page, "All-task means, not comparable")
    for arm, want in truth["headline"].items():
        cells = headline[arm]
        assert cells[1][0] == f"{want['cost']:,.0f}", cells
        assert cells[5][0] == f"{want['success']:.0%}", cells
    common = html_table_captioned(page, "One row per ranked arm")  # the first table
    for arm, want in truth["common"].items():
        assert common[arm][1][0] == f"{want['cost']:,.0f}"
    differences = html_table(page, "tasks compared")
    for arm, want in truth["differences"].items():
        cells = differences[arm]
        assert cells[2][0] == f"{want['difference']:+,.0f}" and cells[4][0] == f"{want['relative']:+.0%}"
    verdicts = html_table(page, "cost ratio")
    for want in truth["pairs"]:
        cells = verdicts[f"{want['a']} vs {want['b']}"]
        assert cells[1][0] == str(want["tasks"])
        assert cells[2][0] == f"{want['ratio']:.2f}×"
        assert cells[4][0] == want["says"]


def test_csv_holds_every_cell(rendered):
    rows = list(csv.DictReader(io.StringIO(rendered["files"]["csv"])))
    truth, tasks = rendered["truth"], rendered["tasks"]
    index = {t.id: i for i, t in enumerate(tasks)}
    got = {(r["arm"], index[r["task"]]): r for r in rows if r["kind"] == "measured"}
    assert set(got) == set(truth["cells"])
    for key, (cost, passes) in truth["cells"].items():
        row = got[key]
        assert float(row["cost"]) == pytest.approx(cost)
        assert (int(row["samples"]), int(row["passes"])) == (TRIALS, passes)
        assert float(row["success"]) == pytest.approx(passes / TRIALS, abs=1e-5)
