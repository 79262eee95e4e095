"""From the report to one failure and back: the markdown report lists the counted
failures, each linked to its trial page; the trial page shows the failure replay's
verdict as `benchkit show ID` does; `benchkit show ID` names the trial page."""

import json
import re

import pytest
from click.testing import CliRunner
from conftest import CHECKOUT
from synthetic import sample, write_store

from benchkit.cli import main
from benchkit.replays import FailureReplay, Replayed
from benchkit.report import current_matrix
from benchkit.store import Store

MATRIX = current_matrix(CHECKOUT)
ARMS = {a.id: a for a in MATRIX.arms}
TASK = MATRIX.scored_tasks[0]
REPLAY_DIFFERENCE = "issue #3: state closed != open"


def current(arm: str, **figures) -> dict:
    return sample(arm, TASK.id, TASK.tier, fingerprints={
        "task": TASK.fingerprint, "arm": ARMS[arm].fingerprint, "seed": TASK.seed_fingerprint,
        "model": MATRIX.model_fingerprint}, **figures)


def invoke(*args):
    return CliRunner().invoke(main, list(map(str, args)), env={"BENCHKIT_ROOT": str(CHECKOUT)},
                              catch_exceptions=False)


@pytest.fixture(scope="module")
def drilled(tmp_path_factory):
    """tea: two passes, a failure (replayed: reproducible) and a refusal; raw-api: a
    replayed failure; gitea-axi: a harness error (counted nowhere, so listed nowhere)."""
    tmp = tmp_path_factory.mktemp("drill")
    failed = current("tea", outcome="failed", trial=2)
    refused = current("tea", outcome="failed", failure_class="refusal", trial=3)
    replayed = current("raw-api", outcome="failed", driver="replay", cost_usd=None)
    harness = current("gitea-axi", outcome="harness-error")
    store = write_store(tmp / "results", [current("tea"), current("tea"), failed, refused,
                                          replayed, harness])
    Store(store).append_failure_replay(FailureReplay(
        trial=failed["id"], arm="tea", task=TASK.id, verdict="reproducible",
        at="2026-07-17T12:30:00+00:00", outcome="failed", failure_class="checker",
        differences=failed["differences"],
        replay=Replayed(id="f" * 32, calls=3, outcome="failed", failure_class="checker",
                        differences=[REPLAY_DIFFERENCE], error=None, transcript=None)))
    done = invoke("report", "--store", store, "--reports", tmp / "reports")
    assert done.exit_code == 0, done.output
    return {"store": store, "reports": tmp / "reports", "failed": failed, "refused": refused,
            "replayed": replayed, "harness": harness}


def test_the_markdown_report_lists_each_failure_with_its_page(drilled):
    md = (drilled["reports"] / "report.md").read_text()
    section = md.split("## Failures\n", 1)[1].split("\n## ", 1)[0]
    rows = {}
    for line in section.splitlines():
        found = re.match(r"\| \[(\w+)\]\(([^)]+)\)( \(replay\))? \| (.*) \|$", line)
        if found:
            rows[found.group(1)] = (found.group(2), bool(found.group(3)),
                                    [c.strip() for c in found.group(4).split(" | ")])
    expected = {"failed": ("tea", "failed", "checker", False),
                "refused": ("tea", "failed", "refusal", False),
                "replayed": ("raw-api", "failed", "checker", True)}
    assert set(rows) == {drilled[name]["id"][:12] for name in expected}
    for name, (arm, outcome, why, estimated) in expected.items():
        item = drilled[name]
        page, replay, cells = rows[item["id"][:12]]
        assert page == f"trials/{arm}/{TASK.id}/{item['id']}.html"
        assert (drilled["reports"] / page).is_file()  # the link leads somewhere
        assert replay == estimated and cells == [arm, TASK.id, outcome, why]
    assert drilled["harness"]["id"][:12] not in section
    data = json.loads((drilled["reports"] / "report.json").read_text())
    assert {f["trial"] for f in data["failures"]} == {drilled[n]["id"] for n in expected}


def test_the_trial_page_shows_the_failure_replay_s_verdict(drilled):
    failed = drilled["failed"]
    page = (drilled["reports"] / f"trials/tea/{TASK.id}/{failed['id']}.html").read_text()
    assert "Failure replay: reproducible" in page
    assert "Its 3 call(s) replayed on a fresh repository: <strong>failed</strong> (checker)" in page
    assert REPLAY_DIFFERENCE in page
    shown = invoke("show", failed["id"][:12], "--store", drilled["store"])
    assert "failure replay: reproducible - its 3 call(s) replayed" in shown.output
    assert REPLAY_DIFFERENCE in shown.output  # the terminal and the page say the same
    as_json = json.loads(invoke("show", failed["id"][:12], "--store", drilled["store"],
                                "--json").output)
    stored, = (drilled["store"] / "failure-replays.jsonl").read_text().splitlines()
    assert as_json["failure_replay"] == json.loads(stored)  # the record, as stored


def test_show_names_the_trial_page(drilled, tmp_path):
    failed = drilled["failed"]
    page = drilled["reports"] / f"trials/tea/{TASK.id}/{failed['id']}.html"
    shown = invoke("show", failed["id"][:12], "--store", drilled["store"],
                   "--reports", drilled["reports"])
    assert shown.exit_code == 0
    assert shown.output.splitlines()[-1] == f"page: {page}"
    elsewhere = invoke("show", failed["id"][:12], "--store", drilled["store"],
                       "--reports", tmp_path / "none")
    assert elsewhere.output.splitlines()[-1] == (
        f"page: {tmp_path / 'none' / 'trials' / 'tea' / TASK.id / failed['id']}.html "
        "(not written yet: benchkit report)")


def test_show_cuts_a_long_why_between_words_and_keeps_its_kind(tmp_path):
    """The run user's long name sits mid-difference: the table's "why" column is cut
    between words, never inside the name, and keeps what kind of difference it is."""
    user = "benchkit-run-20261205-061034-0b1c2d"
    difference = (f'issue #5 "Update README badges": comment by {user}: "Prioritised for '
                  'the next sprint." missing (intended change missing)')
    failed = current("tea", outcome="failed", differences=[difference, "another"])
    store = write_store(tmp_path / "results", [failed])
    shown = invoke("show", "--outcome", "failures", "--store", store)
    assert shown.exit_code == 0, shown.output
    row = next(line for line in shown.output.splitlines() if failed["id"][:12] in line)
    why = row.split(f"{TASK.id}  ", 1)[1].split("failed", 1)[1].split(None, 1)[1]
    why = why.split("  ", 1)[1] if "  " in why else why  # past the tokens column
    assert why.endswith("(intended change missing) (+1 more)"), why
    full = f"{difference} (+1 more)".split()
    assert all(word in full for word in why.split() if word != "…"), why  # no word cut
    assert len(why) <= 80
