"""A tool against its own earlier releases, against known truth: a store of measured
samples in which some arms ran two or three versions of their tool, rendered by the
real `benchkit report`; each arm's newest version is compared with each older one on
the tasks both ran, with the verdicts' machinery, in md, HTML and JSON.

The truth: every trial costs its version's PER_UNIT times its task's size (task i has
size i + 1), so two versions' costs stand in the ratio of their PER_UNIT on any tasks
they share, and a cell's trials do not vary (a point interval: a verdict whenever two
or more tasks are shared).
- gitea-axi 0.2.0 (4 tasks, one failed trial) against 0.1.0 (6 tasks): 0.7x, cheaper.
- tea 1.1 against 1.0: the same cost, equivalent.
- gitea-mcp 0.3 against 0.2 (1.25x, costlier) and against 0.1 (0.5x, cheaper).
- raw-api "curl 8" against "curl 7", of which one trial, on one common task: nothing
  to judge a spread by, inconclusive.
"""

import json
import math
import uuid

import msgspec
import pytest
from click.testing import CliRunner
from report_tables import html_table, md_row

from benchkit.cli import main
from benchkit.fingerprint import arm_fingerprint
from benchkit.report import current_matrix
from benchkit.sample import COMPONENTS, Fingerprints, Host, Record, Usage
from benchkit.store import Store

TRIALS = 3
# arm -> [(version, per-unit cost, tasks run)], oldest first (the last is the newest)
VERSIONS = {
    "gitea-axi": [("0.1.0", 100, 6), ("0.2.0", 70, 4)],
    "tea": [("1.0", 100, 4), ("1.1", 100, 4)],
    "gitea-mcp": [("0.1", 240, 3), ("0.2", 96, 3), ("0.3", 120, 3)],
    "raw-api": [("curl 7", 200, 1), ("curl 8", 150, 5)],
}
FAILS = {("gitea-axi", "0.2.0", 1, 0)}  # (arm, version, task index, trial)
ONE_TRIAL = {("raw-api", "curl 7")}  # versions with a single trial per cell


def trials(arm: str, version: str) -> int:
    return 1 if (arm, version) in ONE_TRIAL else TRIALS


def usage_of(unit: int, size: int) -> Usage:
    spent = unit * size
    return Usage(input=10 * spent, cache_write=0, cache_read=100 * spent, output=2 * spent,
                 cache_write_5m=0, cache_write_1h=0)


def record(matrix, arm, version, task, trial, day, *, usage, passed=True) -> Record:
    arms = {a.id: a for a in matrix.arms}
    return Record(
        id=uuid.uuid4().hex, arm=arm, task=task.id, tier=task.tier, scored=True, trial=trial,
        started_at=f"2026-07-{day:02d}T12:{trial:02d}:00+00:00", duration_s=20.0,
        driver="claude", model=matrix.model, outcome="passed" if passed else "failed",
        failure_class=None if passed else "checker", valid=True,
        differences=[] if passed else ["issue #2: state open != closed"],
        usage=usage, usage_by_model={matrix.model: usage}, usage_estimated=False, turns=4,
        cost_usd=0.1, tool_calls=4, tool_version=version,
        fingerprints=Fingerprints(task=task.fingerprint,
                                  arm=arm_fingerprint(arms[arm].fingerprint, version),
                                  seed=task.seed_fingerprint, prompt="a" * 16,
                                  model=matrix.model_fingerprint),
        host=Host("forge", "1.27.3"), answer="Done.")


def cost(matrix, unit: int, size: int) -> float:
    spent = usage_of(unit, size)
    tokens = {"input": spent.input, "cache_write_5m": 0, "cache_write_1h": 0,
              "cache_read": spent.cache_read, "output": spent.output}
    return math.fsum(tokens[c] * matrix.weights[c] for c in COMPONENTS)


@pytest.fixture(scope="module")
def rendered(tmp_path_factory):
    from conftest import CHECKOUT
    tmp = tmp_path_factory.mktemp("versions")
    matrix = current_matrix(CHECKOUT)
    tasks = matrix.scored_tasks[:6]
    store = Store(tmp / "results")
    for arm, versions in VERSIONS.items():
        for day, (version, unit, ran) in enumerate(versions, start=1):  # newest last
            for index, task in enumerate(tasks[:ran]):
                for trial in range(trials(arm, version)):
                    store.append(record(matrix, arm, version, task, trial, day,
                                        usage=usage_of(unit, index + 1),
                                        passed=(arm, version, index, trial) not in FAILS))
    reports = tmp / "reports"
    done = CliRunner().invoke(main, ["report", "--store", str(tmp / "results"), "--reports",
                                     str(reports)], env={"BENCHKIT_ROOT": str(CHECKOUT)},
                              catch_exceptions=False)
    assert done.exit_code == 0, done.output
    files = {kind: (reports / f"report.{kind}").read_text() for kind in ("md", "html", "json")}
    return {"files": files, "matrix": matrix, "truth": truth(matrix)}


def truth(matrix) -> list[dict]:
    """Each comparison as PER_UNIT, the tasks run and FAILS make it, newest first."""
    found = []
    for arm, versions in VERSIONS.items():
        newest, unit, ran = versions[-1]
        for version, old_unit, old_ran in sorted(versions[:-1], reverse=True):
            shared = range(min(ran, old_ran))
            mine = sum(cost(matrix, unit, i + 1) for i in shared) / len(shared)
            theirs = sum(cost(matrix, old_unit, i + 1) for i in shared) / len(shared)
            failed = sum(1 for (a, v, i, _) in FAILS if (a, v) == (arm, newest) and i in shared)
            ratio = mine / theirs
            single = (arm, version) in ONE_TRIAL
            verdict = ("inconclusive" if len(shared) < 2 and single else
                       "equivalent" if abs(math.log(ratio)) < math.log1p(matrix.margin)
                       else "cheaper" if ratio < 1 else "costlier")
            found.append({"arm": arm, "versions": [newest, version], "tasks": len(shared),
                          "ratio": ratio, "cost_newest": mine, "cost_older": theirs,
                          "success_difference": -failed / (TRIALS * len(shared)),
                          "verdict": verdict, "trials": trials(arm, version)})
    return found


def test_the_truth_has_every_verdict(rendered):
    verdicts = [t["verdict"] for t in rendered["truth"]]
    assert sorted(set(verdicts)) == ["cheaper", "costlier", "equivalent", "inconclusive"]


def test_json_holds_each_version_comparison(rendered):
    report = json.loads(rendered["files"]["json"])
    got = report["version_comparisons"]
    arms = report["arms"]  # in the tree's order of arms, each arm's older versions newest first
    want = sorted(rendered["truth"], key=lambda t: arms.index(t["arm"]))
    assert [(c["arm"], c["versions"]) for c in got] == [(t["arm"], t["versions"]) for t in want]
    for comparison, expected in zip(got, want, strict=True):
        figures = comparison["figures"]
        assert len(comparison["tasks"]) == expected["tasks"]
        assert comparison["verdict"] == expected["verdict"], comparison
        assert figures["ratio"]["value"] == pytest.approx(expected["ratio"])
        assert figures["cost_newest"] == pytest.approx(expected["cost_newest"])
        assert figures["cost_older"] == pytest.approx(expected["cost_older"])
        assert figures["success_difference"] == pytest.approx(expected["success_difference"])
        assert figures["samples_newest"] == expected["tasks"] * TRIALS
        assert figures["samples_older"] == expected["tasks"] * expected["trials"]
    # The headline counts the newest version alone; the older ones stay apart.
    axi = next(r for r in report["headline"] if r["arm"] == "gitea-axi")
    assert axi["tasks"] == 4 and axi["samples"] == 4 * TRIALS
    assert report["tool_versions"]["gitea-axi"] == "0.2.0"
    assert {row["arm"] for row in report["other_versions"]} == set(VERSIONS)


def test_markdown_and_html_print_each_comparison(rendered):
    md, page = rendered["files"]["md"], rendered["files"]["html"]
    heading = "## Versions: each tool against its own earlier releases"
    assert heading in md
    table = html_table(page, "newest vs older")
    rows = {}
    for arm in VERSIONS:  # markdown rows by arm, in order: one per older version
        start = md.index(heading)
        rows[arm] = [line for line in md[start:].split("\n## ")[0].splitlines()
                     if line.startswith(f"| {arm} |")]
    for expected in rendered["truth"]:
        pair = f"{expected['versions'][0]} vs {expected['versions'][1]}"
        line = next(r for r in rows[expected["arm"]] if f"| {pair} |" in r)
        cells = [c.strip() for c in line.strip("|").split(" | ")]
        assert cells[2] == str(expected["tasks"])
        assert cells[4] == f"{expected['ratio']:.2f}×"
        says = cells[8]
        assert says.startswith(expected["verdict"] if expected["verdict"] != "cheaper"
                               and expected["verdict"] != "costlier"
                               else f"{expected['versions'][0]} {expected['verdict']}"), says
    html_rows = [row for row in table.values()]
    assert len(html_rows) == len(VERSIONS)  # first cell (the arm) keys the rows: one each
    assert table["gitea-axi"][1][0] == "0.2.0 vs 0.1.0"
    assert table["gitea-axi"][4][0] == "0.70×" and table["gitea-axi"][8][0] == "0.2.0 cheaper than 0.1.0"
    assert md_row(md, "tea", heading)[8] == "equivalent within ±5%"


def test_replay_samples_of_two_versions_are_compared_as_estimates(tmp_path):
    """Two versions of raw-api's tool replayed (their figures estimates of the
    references' bytes): report.json names both with a verdict, marked estimated; md and
    HTML show it in the replay's own versions section, its tokens marked ~."""
    from conftest import CHECKOUT
    matrix = current_matrix(CHECKOUT)
    store = Store(tmp_path / "results")
    for day, (version, unit) in enumerate((("curl 7.0.0", 100), ("curl 8.0.0", 60)), start=1):
        for index, task in enumerate(matrix.scored_tasks[:4]):
            for trial in range(TRIALS):
                done = record(matrix, "raw-api", version, task, trial, day,
                              usage=usage_of(unit, index + 1))
                store.append(msgspec.structs.replace(done, driver="replay",
                                                     usage_estimated=True))
    reports = tmp_path / "reports"
    done = CliRunner().invoke(main, ["report", "--store", str(tmp_path / "results"),
                                     "--reports", str(reports)],
                              env={"BENCHKIT_ROOT": str(CHECKOUT)}, catch_exceptions=False)
    assert done.exit_code == 0, done.output
    (got,) = json.loads((reports / "report.json").read_text())["version_comparisons"]
    assert got["arm"] == "raw-api" and got["versions"] == ["curl 8.0.0", "curl 7.0.0"]
    assert got["estimated"] is True and got["verdict"] == "cheaper"
    assert got["figures"]["ratio"]["value"] == pytest.approx(0.6)
    heading = "## Replay (estimates): versions: each tool against its own earlier releases"
    md = (reports / "report.md").read_text()
    row = md_row(md, "raw-api", heading)
    assert row[1] == "curl 8.0.0 vs curl 7.0.0" and row[8] == "curl 8.0.0 cheaper than curl 7.0.0"
    assert row[3].endswith("~") and "## Versions:" not in md
    table = html_table((reports / "report.html").read_text(), "newest vs older")
    assert table["raw-api"][1][0] == "curl 8.0.0 vs curl 7.0.0"
