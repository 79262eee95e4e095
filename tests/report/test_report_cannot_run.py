"""What the report says of cells it has no measured sample of: a cell that cannot run
says why (not "missing"), a bonus operation shows its outcome where it ran (replay
included, as an estimate), applicability agrees with what a run says, a re-weighted
report says it was re-weighted, and the trial pages tell trials apart and show what
the agent was asked. Read from the rendered md, HTML and JSON."""

import json
import re

import pytest
from click.testing import CliRunner
from synthetic import write_store
from test_report_command import current_sample

from benchkit.cli import main
from benchkit.report import current_matrix

SELF_APPROVE = "bonus-self-approve-csv-pull"
NO_SPEC = "bonus-create-archive-repo"


@pytest.fixture
def reported(tree_copy, monkeypatch, tmp_path):
    """The shipped tree; one replayed trial of bonus-pull-diff and one measured trial
    of a scored task on raw-api, rendered in every format."""
    monkeypatch.setenv("BENCHKIT_ROOT", str(tree_copy))
    matrix = current_matrix(tree_copy)
    arms = {a.id: a for a in matrix.arms}
    tasks = {t.id: t for t in matrix.tasks}
    samples = [current_sample(matrix, arms["raw-api"], tasks["bonus-pull-diff"], driver="replay"),
               current_sample(matrix, arms["raw-api"], tasks["read-open-issue-count"])]
    store = write_store(tmp_path / "results", samples)
    done = CliRunner().invoke(main, ["report", "--store", str(store), "--reports",
                                     str(tmp_path / "reports")], catch_exceptions=False)
    assert done.exit_code == 0, done.output
    reports = tmp_path / "reports"
    return {"md": (reports / "report.md").read_text(), "html": (reports / "report.html").read_text(),
            "json": json.loads((reports / "report.json").read_text()), "dir": reports,
            "store": store}


def row(md: str, first_cell: str) -> str:
    return next(line for line in md.splitlines() if line.startswith(f"| {first_cell} "))


def test_a_cell_that_cannot_run_says_why_instead_of_missing(reported):
    md, html, report = reported["md"], reported["html"], reported["json"]
    coverage = {r["task"]: {c["arm"]: c for c in r["cells"]} for r in report["coverage"]["rows"]}
    assert coverage[NO_SPEC]["raw-api"]["status"] == "cannot"
    assert coverage[NO_SPEC]["raw-api"]["why"] == "no scoring spec: the checker cannot judge it"
    assert coverage[SELF_APPROVE]["tea"]["why"].startswith("unsupported by the arm's tool (The host refuses")
    coverage_row = row(md, f"{NO_SPEC} | bonus")  # the coverage matrix, not the bonus table
    assert "✗" not in coverage_row and "–" in coverage_row
    assert f"- {NO_SPEC} on gitea-mcp-search, gitea-mcp, raw-api, tea: no scoring spec: the checker cannot judge it" in md
    bonus, cells = re.findall(rf"<tr><th>{NO_SPEC}</th>.*?</tr>", html, re.S)
    assert "missing" not in bonus and bonus.count("not run: no scoring spec") == 4
    assert "missing" not in cells and cells.count("cannot run <sup>") == 4


def test_the_bonus_table_shows_the_outcome_where_the_cell_ran(reported):
    md, html, report = reported["md"], reported["html"], reported["json"]
    [diff] = [op for op in report["bonus"] if op["task"] == "bonus-pull-diff"]
    raw = next(a for a in diff["arms"] if a["arm"] == "raw-api")
    assert (raw["status"], raw["samples"], raw["passes"], raw["estimated"]) == ("replayed", 1, 1, True)
    assert "applicable · 1/1 passed · 100% · " in row(md, "bonus-pull-diff")
    assert "~ (replay)" in row(md, "bonus-pull-diff")
    assert re.search(r"<tr><th>bonus-pull-diff</th>.*?1/1 passed.*?</tr>", html, re.S)


def test_self_review_the_host_forbids_is_unsupported_on_every_arm_as_the_run_says(reported):
    md, report = reported["md"], reported["json"]
    [approve] = [op for op in report["bonus"] if op["task"] == SELF_APPROVE]
    assert {a["arm"]: a["status"] for a in approve["arms"]} == dict.fromkeys(
        ("gitea-axi", "gitea-mcp", "gitea-mcp-search", "raw-api", "tea"), "unsupported")
    assert "applicable" not in row(md, f"{SELF_APPROVE} (self-review forbidden)")


def test_the_method_says_a_re_weighted_report_was_re_weighted(reported):
    plain = reported["md"]
    assert "Weights come from suite.yaml" in plain
    assert "These intervals are not corrected for looking often; the verdicts are" in plain
    done = CliRunner().invoke(main, ["report", "--store", str(reported["store"]), "--weight",
                                     "output=4", "--format", "md"], catch_exceptions=False)
    assert "Weights come from suite.yaml" not in done.output
    assert ("Weights are suite.yaml's, re-weighted for this report with `--weight output=4`"
            in done.output)
    reweighted = CliRunner().invoke(main, ["report", "--store", str(reported["store"]),
                                           "--weight", "output=4", "--format", "json"])
    assert json.loads(reweighted.output)["reweighted"] == {"output": 4.0}


def test_trial_pages_tell_trials_apart_and_show_the_intent(reported, tree_copy):
    index = (reported["dir"] / "trials" / "index.html").read_text()
    every = index[index.index("<h2>Every trial</h2>"):]
    assert "<th>arm</th><th>task</th>" in every
    assert "<td>raw-api</td><td>bonus-pull-diff</td>" in every
    [page] = (reported["dir"] / "trials" / "raw-api" / "bonus-pull-diff").glob("*.html")
    assert ("Intent</strong> (what the agent was asked): Show the diff of the pull request "
            "titled &#34;Implement CSV export&#34;") in page.read_text()
