"""The bonus table: each bonus operation with a scoring spec runs on every arm that can
do it and is reported in its own table (md, HTML, JSON), measured as the scored suite
is (the headline's figures and intervals, over the one operation) and never in the
scored suite's figures; a cell without figures says why."""

import json
import re

import pytest
from click.testing import CliRunner
from conftest import CHECKOUT, real_tool
from synthetic import sample
from test_report_aggregate import costing, matrix_of, report_of, row

from benchkit.cli import main
from benchkit.documents.reference import reference_for
from benchkit.documents.tree import load_tree
from benchkit.report.matrix import TaskEntry
from benchkit.report.render import render

SEARCH = TaskEntry("bonus-search", "bonus", scored=False,
                   applicability={"a": "first-class", "b": "applicable", "c": "not-applicable"})
CHECKOUT_OP = TaskEntry("bonus-checkout", "bonus", scored=False, applicability={"a": "applicable"},
                        cannot_run={"a": "no scoring spec: the checker cannot judge it",
                                    "b": "no scoring spec: the checker cannot judge it",
                                    "c": "no scoring spec: the checker cannot judge it"})
COSTS = (4000, 5000, 9000)


def trials(arm, task, tier):
    return [sample(arm, task, tier, tokens=costing(cost), outcome=outcome)
            for cost, outcome in zip(COSTS, ("passed", "failed", "passed"), strict=True)]


def test_a_bonus_cell_has_the_figures_the_scored_suite_would_give_it(tmp_path):
    matrix = matrix_of(["a", "b", "c"], ["t1", SEARCH, CHECKOUT_OP])
    samples = [sample(arm, "t1") for arm in "abc"]
    samples += trials("a", "bonus-search", "bonus")
    samples.append(sample("b", "bonus-search", "bonus", driver="replay", tokens=costing(7000)))
    report = report_of(tmp_path, samples, matrix)
    # The same trials as a scored task's, alone: what the headline says of them.
    alone = report_of(tmp_path, trials("a", "t1", "read"), matrix_of(["a"], ["t1"]),
                      name="alone")
    search, checkout = report.bonus
    a, b, c = search.arms
    assert (a.status, a.samples, a.passes) == ("measured", 3, 2)
    expected = row(alone, "a")
    assert (a.success, a.cost, a.turns, a.duration) == (
        expected.success, expected.cost, expected.turns, expected.duration)
    assert a.cost.low < a.cost.value == 6000 < a.cost.high and a.success.low < 2 / 3 < a.success.high
    assert (b.status, b.estimated, b.cost.value, b.cost.low) == ("replayed", True, 7000, None)
    assert (c.status, c.samples, c.success) == ("not applicable", 0, None)
    assert [e.status for e in checkout.arms] == ["not run: no scoring spec"] * 3
    # Never in the scored suite's figures: headline, tiers, per-task tables, replay.
    assert row(report, "a").tasks_total == 1 and row(report, "a").samples == 1
    assert [r.task for arm in report.tasks.measured for r in arm.rows] == ["t1"] * 3
    assert all(r.task == "t1" for arm in report.tasks.replay for r in arm.rows)
    md, html = render(report, "md"), render(report, "html")
    bonus_md = md[md.index("## Bonus operations"):md.index("## Coverage")]
    assert (f"| bonus-search | first-class · 2/3 passed · 67% ({a.success.low:.0%}–{a.success.high:.0%}) "
            f"· 6,000 ({a.cost.low:,.0f}–{a.cost.high:,.0f}) | applicable · 1/1 passed · 100% · "
            "7,000~ (replay) | not applicable |") in bonus_md
    assert "| bonus-checkout | not run: no scoring spec | not run: no scoring spec |" in bonus_md
    cell = re.search(r'<tr><th>bonus-search</th>.*?</tr>', html, re.S)[0]
    assert "2/3 passed</a> · success 67% <small>" in cell and "6,000 <small>" in cell
    per_task = md[md.index("## Measured: per task"):]
    assert "bonus" not in per_task[:per_task.index("\n## ", 5)]


@pytest.mark.slow
def test_a_replay_run_of_every_installed_arm_fills_the_bonus_table(tmp_path, quiet):
    """The acceptance's command, narrowed to the bonus tier: each operation with a
    scoring spec runs on every arm whose applicability and reference allow it, and the
    table shows its figures there; "not applicable", "unsupported" and "not run: no
    scoring spec" elsewhere."""
    for tool in ("tea", "gitea-axi", "gitea-mcp"):
        real_tool(tool)  # in CI every arm's tool is here: none left out by --only-installed
    arms = sorted(str(p) for p in (CHECKOUT / "arms.d").glob("*.yaml"))
    done = CliRunner().invoke(main, ["run", *arms, "--driver", "replay", "--only-installed",
                                     "--tier", "bonus", "--store", str(tmp_path / "results"),
                                     "--jobs", "2"], catch_exceptions=False)
    assert done.exit_code == 0, done.output
    report = json.loads((tmp_path / "reports" / "report.json").read_text())
    md = (tmp_path / "reports" / "report.md").read_text()
    tree = load_tree(CHECKOUT)
    unsupported = {arm: {task for task, entry in reference_for(tree.arms[arm], CHECKOUT).tasks.items()
                         if entry.unsupported} for arm in report["arms"]}
    seen = {}
    for op in report["bonus"]:
        task = tree.tasks[op["task"]]
        for entry in op["arms"]:
            applicable = task.applicability.get(entry["arm"]) != "not-applicable"
            expected = ("not applicable" if not applicable
                        else "not run: no scoring spec" if not task.has_spec
                        else "unsupported" if task.id in unsupported[entry["arm"]] else "replayed")
            seen[(op["task"], entry["arm"])] = entry["status"]
            assert entry["status"] == expected, (op["task"], entry)
            if expected == "replayed":
                assert entry["passes"] == entry["samples"] == 1, (op["task"], entry)
                assert entry["cost"]["value"] > 0 and entry["success"]["value"] == 1.0
                line = next(line for line in md.splitlines() if line.startswith(f"| {op['task']} "))
                assert "1/1 passed · 100% · " in line
    ran = [key for key, status in seen.items() if status == "replayed"]
    assert {task for task, _ in ran} >= {"bonus-pull-checks", "bonus-pull-diff", "bonus-search-crash"}
    scored = sum(1 for task in tree.tasks.values() if task.scored)
    assert all((r["tasks"], r["tasks_total"]) == (0, scored) for r in report["headline"])
    assert not any(r["task"].startswith("bonus-") for arm in report["tasks"]["replay"]
                   for r in arm["rows"])

