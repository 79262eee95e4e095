"""Every task in tasks.d/, through the real `benchkit expect` and `benchkit check`:
a perfect run passes, an untouched repository (mutations) or an answer missing a fact
(reads) fails. A task added later is picked up here without touching this file."""

import json

import pytest
from click.testing import CliRunner
from conftest import CHECKOUT
from shipped import REFERENCE_SUITE as REFERENCE

from benchkit.cli import main
from benchkit.documents.answer_key import required_fact
from benchkit.documents.task import load_task

TASK_FILES = sorted((CHECKOUT / "tasks.d").glob("*.yaml"))
TASKS = {path.stem: load_task(path) for path in TASK_FILES}
SCORABLE = [task_id for task_id, task in TASKS.items() if task.has_spec]
VARIANTS = [pytest.param(False, id="plain"), pytest.param(True, id="self-review")]


def run(*args):
    result = CliRunner().invoke(main, [str(a) for a in args], catch_exceptions=False)
    return result.exit_code, result.stdout


@pytest.fixture(scope="module")
def untouched(tmp_path_factory):
    """`benchkit expect` with no task: the seed's ground truth, as a state file."""
    code, output = run("expect")
    assert code == 0
    path = tmp_path_factory.mktemp("state") / "ground-truth.json"
    path.write_text(output)
    return path


def expect(task_id, self_review, tmp_path):
    code, output = run("expect", TASKS[task_id].path, *(["--self-review"] if self_review else []))
    assert code == 0, output
    path = tmp_path / "expected.json"
    path.write_text(output)
    return json.loads(output), path


def check(task_id, self_review, *args):
    code, output = run("check", TASKS[task_id].path, *args,
                       *(["--self-review"] if self_review else []))
    return code, json.loads(output)


@pytest.mark.parametrize("self_review", VARIANTS)
@pytest.mark.parametrize("task_id", SCORABLE)
def test_a_perfect_run_passes_and_doing_nothing_fails(task_id, self_review, tmp_path, untouched):
    task = TASKS[task_id]
    expected, expected_file = expect(task_id, self_review, tmp_path)
    if task.edits:
        assert check(task_id, self_review, "--state", expected_file) == (
            0, {"passed": True, "differences": []})
        code, verdict = check(task_id, self_review, "--state", untouched)
        assert code == 1 and not verdict["passed"]
        assert all("(intended change missing)" in d for d in verdict["differences"])
    else:
        answer = tmp_path / "answer.txt"
        answer.write_text(expected["example_answer"])
        assert check(task_id, self_review, "--answer", answer, "--state", untouched)[0] == 0


@pytest.mark.parametrize("task_id", [t for t in SCORABLE if TASKS[t].facts])
def test_an_answer_missing_any_one_fact_fails(task_id, tmp_path):
    facts = TASKS[task_id].facts
    expected, _ = expect(task_id, False, tmp_path)
    lines = expected["example_answer"].split("\n")
    assert len(lines) == len(facts)
    for missing in range(len(facts)):
        answer = tmp_path / "answer.txt"
        kept = [line for i, line in enumerate(lines) if i != missing]
        answer.write_text("\n".join(["Here is what I found:", *kept]))
        code, verdict = check(task_id, False, "--answer", answer)
        assert code == 1
        assert verdict["differences"] == [
            f"answer lacks required fact: {_describe(facts[missing])}"]


def _describe(fact):
    return required_fact(fact).shown


def test_the_reference_suite_is_present_and_scored():
    """The shipped 20 are there with their tiers; tasks added since may join them."""
    scored = {task.id: task.tier for task in TASKS.values() if task.scored}
    assert {task_id: scored.get(task_id) for tier, ids in REFERENCE.items() for task_id in ids} == \
        {task_id: tier for tier, ids in REFERENCE.items() for task_id in ids}
    assert all(TASKS[t].kind == "read" for t in REFERENCE["read"])


def test_bonus_operations_are_unscored_with_applicability_for_every_arm():
    arms = {path.stem for path in (CHECKOUT / "arms.d").glob("*.yaml")}
    bonus = [task for task in TASKS.values() if not task.scored]
    assert len(bonus) >= 9
    for task in bonus:
        assert task.tier == "bonus" and task.kind == "bonus" and task.path.name.startswith("bonus-")
        assert set(task.applicability) == arms, task.id
    not_axi = {t.id for t in bonus if t.applicability["gitea-axi"] == "not-applicable"}
    assert not_axi == {"bonus-create-archive-repo", "bonus-publish-release",
                       "bonus-milestone-enhancements"}


@pytest.mark.parametrize("task_id,otherwise,permitted", [
    ("fta-review-csv-pull", "comment", "approved"),
    ("fta-review-docs-pull", "comment", "request-changes"),
])
def test_review_tasks_follow_the_hosts_self_review_permission(task_id, otherwise, permitted, tmp_path):
    task = TASKS[task_id]
    assert "leave a review" in task.intent_for(False) and task.intent == task.intent_for(False)
    assert "leave a review" not in task.intent_for(True)
    for self_review, kind in ((False, otherwise), (True, permitted)):
        expected, path = expect(task_id, self_review, tmp_path)
        reviews = [r for pull in expected["pull_requests"] for r in pull["reviews"]
                   if r["body"] != "Looks good overall, though the error handling could be tightened."]
        assert [r["kind"] for r in reviews] == [kind]
        # the other variant's state fails: the review has the wrong kind
        code, verdict = check(task_id, not self_review, "--state", path)
        assert code == 1 and len(verdict["differences"]) == 2


def test_self_review_bonus_operations_only_apply_where_the_host_forbids_it():
    task = TASKS["bonus-self-approve-csv-pull"]
    assert task.applies_to(self_review=False) and not task.applies_to(self_review=True)
    assert TASKS["fta-review-csv-pull"].applies_to(self_review=True)


def test_created_issue_is_numbered_after_the_pull_requests(tmp_path):
    expected, _ = expect("create-memory-leak-issue", False, tmp_path)
    created = expected["issues"][-1]
    assert created == {"number": 12, "title": "Investigate memory leak",
                       "body": "Memory usage grows unbounded during long export runs.",
                       "state": "open", "labels": [], "assignees": [], "comments": [],
                       "milestone": None, "due_date": None, "pin_order": 0, "locked": False,
                       "ref": "", "tracked_times": [], "reactions": [],
                       "subscribed": True, "attachments": []}


def test_a_label_created_with_a_hash_colour_matches_the_snapshot_form(tmp_path):
    expected, path = expect("ms-create-and-apply-stale", False, tmp_path)
    assert {"name": "stale", "color": "cccccc", "description": "", "exclusive": False,
            "archived": False} in expected["labels"]
    state = json.loads(path.read_text())
    for label in state["labels"]:
        label["color"] = "#" + label["color"].upper()  # as some hosts spell it
    path.write_text(json.dumps(state))
    assert check("ms-create-and-apply-stale", False, "--state", path)[0] == 0


@pytest.mark.parametrize("answer,passed", [
    ("There are 5 open issues.", True),
    ("There are **5** open issues in the repository.", True),
    ("5 issues are currently open.", True),
    ("Open issues: 5", True),
    ("Five open issues remain.", True),
    ("5 issues, 3 open", False),
    ("There are 15 open issues.", False),
    ("Issue #5 is open; there are 4 open issues.", False),
    ("Open: 50", False),
])
def test_the_open_issue_count_fact(answer, passed, tmp_path):
    path = tmp_path / "answer.txt"
    path.write_text(answer)
    code, verdict = check("read-open-issue-count", False, "--answer", path)
    assert verdict["passed"] is passed, verdict
