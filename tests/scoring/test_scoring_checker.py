"""The checker: normalisation rules, every kind of collateral damage, missing intended
changes, and required facts in read answers."""

import copy
import json
import subprocess

import pytest
from conftest import BENCHKIT, CHECKOUT
from hypothesis import given, settings
from hypothesis import strategies as st

from benchkit.documents import load_seed
from benchkit.documents.answer_key import AnswerKey, required_fact
from benchkit.documents.answer_text import normalise_answer
from benchkit.documents.expectation import expected_state, ground_truth
from benchkit.documents.task import load_task
from benchkit.scoring import check, diff
from benchkit.scoring.answers import NO_ANSWER, answer_differences
from benchkit.scoring.checker import NotScorable
from benchkit.state import StateError, normalise

SEED = load_seed(CHECKOUT / "seeds" / "default.yaml")
USER = "bench"


def fact_matches(fact, answer) -> bool:
    """Whether the answer holds the fact (a key of that fact alone)."""
    return not answer_differences(AnswerKey((required_fact(fact),), (), (), False), answer)


def task(task_id):
    return load_task(CHECKOUT / "tasks.d" / f"{task_id}.yaml", {"default": SEED})


def perfect(task_id):
    """What a perfect run of the task leaves, as a mutable copy."""
    return copy.deepcopy(expected_state(task(task_id), SEED, USER))


def verdict(task_id, state):
    return check(task(task_id), state=state, seed=SEED, user=USER)


def issue(state, number):
    return next(i for i in state["issues"] + state["pull_requests"] if i["number"] == number)


# ---- normalisation ----------------------------------------------------------------

def snapshot_like(state):
    """The state as a live snapshot might carry it: ids, urls, timestamps, other order,
    colours with '#' in upper case, bodies with CRLF and trailing newlines."""
    noisy = copy.deepcopy(state)
    noisy["milestones"][0].update(id=77, url="http://host/milestones/77")
    for number, label in enumerate(reversed(noisy["labels"]), start=1):
        label.update(id=number, url=f"http://host/labels/{number}", color="#" + label["color"].upper())
    noisy["labels"].reverse()
    for item in noisy["issues"] + noisy["pull_requests"]:
        item.update(id=1000 + item["number"], created_at="2026-07-17T10:00:00Z",
                    updated_at="2026-07-17T11:00:00Z", html_url="http://host/x")
        item["body"] = item["body"].replace("\n", "\r\n") + "\r\n"
        item["labels"] = list(reversed(item["labels"]))
        for comment in item["comments"]:
            comment.update(id=5, created_at="2026-07-17T10:05:00Z")
        item["comments"].reverse()
        for review in item.get("reviews", []):
            review.update(id=9, submitted_at="2026-07-17T10:06:00Z", commit_id="abc123",
                          kind=review["kind"].upper().replace("-", "_"))
    noisy["issues"].reverse()
    return noisy


def test_volatile_fields_order_colour_case_and_line_ends_do_not_matter():
    state = perfect("ms-create-and-apply-stale")
    noisy = snapshot_like(state)
    assert normalise(noisy) == normalise(state)
    assert verdict("ms-create-and-apply-stale", noisy).passed


ISSUE_FIELDS = {"number", "title", "body", "state", "labels", "assignees", "comments", "milestone",
                "due_date", "pin_order", "locked", "ref", "tracked_times",
                "reactions", "subscribed", "attachments"}


def test_normalise_keeps_only_the_contract():
    noisy = normalise(snapshot_like(perfect("fta-review-csv-pull")))
    assert set(noisy) == {"labels", "issues", "pull_requests", "milestones", "dependencies",
                          "branches", "tags", "releases", "statuses", "protections", "webhooks",
                          "collaborators", "deploy_keys", "wiki"}
    assert set(noisy["labels"][0]) == {"name", "color", "description", "exclusive", "archived"}
    assert set(noisy["milestones"][0]) == {"title", "description", "state", "due_on"}
    assert set(noisy["issues"][0]) == ISSUE_FIELDS
    pull = noisy["pull_requests"][0]
    assert set(pull) == ISSUE_FIELDS | {"reviews", "base", "head", "allow_maintainer_edit",
                                        "requested_reviewers"}
    assert pull["reviews"] == [{"author": USER, "kind": "comment", "comments": [], "dismissed": False,
                                "body": "The CSV export path looks correct to me."}]
    assert all(label["color"] == label["color"].lower().lstrip("#") for label in noisy["labels"])


def test_a_state_of_the_first_three_sections_alone_still_loads_and_compares_on_them():
    """A capture older than the other sections: what it lacks is not compared."""
    old = {key: perfect("close-csv-export-issue")[key] for key in ("labels", "issues", "pull_requests")}
    for item in old["issues"] + old["pull_requests"]:
        for key in set(item) - {"number", "title", "body", "state", "labels", "assignees", "comments",
                                "reviews"}:
            del item[key]
        item["comments"] = [{"author": c["author"], "body": c["body"]} for c in item["comments"]]
    assert set(normalise(old)) == {"labels", "issues", "pull_requests"}
    assert verdict("close-csv-export-issue", old).passed
    issue(old, 2)["state"] = "open"
    assert verdict("close-csv-export-issue", old).differences == [
        'issue #2 "Add CSV export option": state is open, expected closed (intended change missing)']


def test_a_section_the_contract_does_not_name_is_refused():
    with pytest.raises(StateError, match="no section 'milestone'"):
        normalise({"labels": [], "issues": [], "pull_requests": [], "milestone": []})


def test_labels_and_assignees_compare_as_sets():
    state = perfect("ms-triage-export-perf")
    target = issue(state, 7)
    target["labels"] = ["priority", "enhancement", "priority"]
    target["assignees"] = [USER, USER]
    assert verdict("ms-triage-export-perf", state).passed


def test_comments_match_by_author_and_body_in_any_order():
    state = perfect("ms-close-open-crashes")
    issue(state, 1)["comments"].reverse()
    assert verdict("ms-close-open-crashes", state).passed
    issue(state, 1)["comments"][0]["author"] = "someone-else"
    assert not verdict("ms-close-open-crashes", state).passed


def test_reviews_match_as_a_multiset_of_author_kind_and_body():
    state = perfect("fta-review-csv-pull")
    pull = issue(state, 10)
    pull["reviews"].append(dict(pull["reviews"][0]))
    result = verdict("fta-review-csv-pull", state)
    assert result.differences == [
        'pull request #10 "Fix startup crash": unexpected comment review by bench: '
        '"Looks good overall, though the error handling could be tightened." (collateral)']


def test_malformed_states_are_rejected_with_their_place():
    with pytest.raises(StateError, match=r"issues\[0\] lacks number"):
        normalise({"issues": [{"title": "x", "state": "open"}]})
    with pytest.raises(StateError, match=r"issues\[0\]\.state: state 'merged' is not one of open, closed"):
        normalise({"issues": [{"number": 1, "title": "x", "state": "merged"}]})
    with pytest.raises(StateError, match="review kind 'lgtm'"):
        normalise({"pull_requests": [{"number": 1, "title": "x", "state": "open",
                                      "reviews": [{"author": "a", "kind": "lgtm"}]}]})
    with pytest.raises(StateError, match="issue #1 appears twice"):
        normalise({"issues": [{"number": 1, "title": "x", "state": "open"}] * 2})
    with pytest.raises(StateError, match="must list names"):
        normalise({"issues": [{"number": 1, "title": "x", "state": "open", "labels": [{"name": "bug"}]}]})


# ---- the intended change ----------------------------------------------------------

def test_a_missing_intended_change_names_the_entity():
    result = verdict("close-csv-export-issue", ground_truth(SEED, USER))
    assert result.differences == [
        'issue #2 "Add CSV export option": state is open, expected closed (intended change missing)']


def test_a_wrong_intended_change_is_told_apart():
    state = perfect("fta-edit-install-docs-typo")
    issue(state, 4)["body"] = "Something else entirely."
    [difference] = verdict("fta-edit-install-docs-typo", state).differences
    assert difference.startswith('issue #4 "Typo in installation docs": body is "Something else entirely.", expected "The install guide')
    assert difference.endswith("(intended change wrong)")


def test_a_merge_is_not_a_close():
    state = perfect("fta-merge-startup-pull")
    issue(state, 10)["state"] = "closed"
    assert verdict("fta-merge-startup-pull", state).differences == [
        'pull request #10 "Fix startup crash": state is closed, expected merged (intended change wrong)']


def test_a_missing_created_issue_and_label():
    state = ground_truth(SEED, USER)
    assert verdict("create-memory-leak-issue", state).differences == [
        'issue #12 "Investigate memory leak": missing (intended change missing)']
    assert 'label "stale": missing (intended change missing)' in verdict(
        "ms-create-and-apply-stale", state).differences


# ---- collateral damage --------------------------------------------------------------

def damage(state, kind):
    """Apply one kind of collateral damage to a perfect state of close-csv-export-issue."""
    if kind == "extra comment elsewhere":
        issue(state, 3)["comments"].append({"author": USER, "body": "Closing #2 now."})
    elif kind == "duplicated comment":
        issue(state, 4)["comments"].append(dict(issue(state, 4)["comments"][0]))
    elif kind == "label colour changed":
        state["labels"][0]["color"] = "000000"
    elif kind == "label deleted":
        state["labels"] = [label for label in state["labels"] if label["name"] != "documentation"]
    elif kind == "extra label":
        issue(state, 2)["labels"].append("priority")
    elif kind == "extra assignee":
        issue(state, 2)["assignees"].append(USER)
    elif kind == "extra review":
        issue(state, 11)["reviews"].append({"author": USER, "kind": "comment", "body": "LGTM", "comments": []})
    elif kind == "changed title":
        issue(state, 2)["title"] = "Add CSV export"
    elif kind == "changed body":
        issue(state, 5)["body"] = "Badges."
    elif kind == "extra issue":
        state["issues"].append({"number": 12, "title": "x", "body": "", "state": "open",
                                "labels": [], "assignees": [], "comments": []})
    elif kind == "pull request closed":
        issue(state, 9)["state"] = "closed"
    elif kind == "comment deleted":
        issue(state, 1)["comments"] = []
    elif kind == "label removed":
        issue(state, 3)["labels"].remove("priority")
    elif kind == "label added":
        state["labels"].append({"name": "x", "color": "ffffff", "description": ""})
    return state


COLLATERAL = {
    "extra comment elsewhere":
        'issue #3 "Crash when saving large files": unexpected comment by bench: "Closing #2 now." (collateral)',
    "duplicated comment":
        'issue #4 "Typo in installation docs": unexpected comment by bench: "Found another typo nearby." (collateral)',
    "label colour changed": 'label "bug": color is 000000, expected d73a4a (collateral)',
    "label deleted": 'label "documentation": deleted (collateral)',
    "extra label": 'issue #2 "Add CSV export option": unexpected label "priority" (collateral)',
    "extra assignee": 'issue #2 "Add CSV export option": unexpected assignee "bench" (collateral)',
    "extra review": 'pull request #11 "Refresh documentation": unexpected comment review by bench: "LGTM" (collateral)',
    "changed title":
        'issue #2 "Add CSV export option": title is "Add CSV export", expected "Add CSV export option" (collateral)',
    "changed body": 'issue #5 "Update README badges": body is "Badges.", expected '
                    '"The build badges in the README point at the old CI." (collateral)',
    "extra issue": 'issue #12 "x": unexpected issue (collateral)',
    "pull request closed": 'pull request #9 "Implement CSV export": state is closed, expected open (collateral)',
    "comment deleted":
        'issue #1 "Fix crash on startup": comment by bench: "I can reproduce this on Linux." removed (collateral)',
    "label removed": 'issue #3 "Crash when saving large files": label "priority" removed (collateral)',
    "label added": 'label "x": unexpected label (collateral)',
}


@pytest.mark.parametrize("kind", COLLATERAL)
def test_collateral_damage_fails_and_is_named(kind):
    state = damage(perfect("close-csv-export-issue"), kind)
    result = verdict("close-csv-export-issue", state)
    assert not result.passed
    assert result.differences == [COLLATERAL[kind]]


def test_a_deleted_label_taken_off_its_issues_is_reported_everywhere():
    state = perfect("close-csv-export-issue")
    state["labels"] = [label for label in state["labels"] if label["name"] != "priority"]
    issue(state, 3)["labels"].remove("priority")
    assert verdict("close-csv-export-issue", state).differences == [
        'label "priority": deleted (collateral)',
        'issue #3 "Crash when saving large files": label "priority" removed (collateral)']


def test_a_comment_posted_twice_on_the_target_is_collateral():
    state = perfect("comment-save-large-files")
    issue(state, 3)["comments"].append({"author": USER, "body": "I can reproduce this too."})
    assert verdict("comment-save-large-files", state).differences == [
        'issue #3 "Crash when saving large files": unexpected comment by bench: '
        '"I can reproduce this too." (collateral)']


def test_repeats_are_counted():
    state = perfect("comment-save-large-files")
    issue(state, 3)["comments"] += [{"author": USER, "body": "I can reproduce this too."}] * 2
    assert verdict("comment-save-large-files", state).differences == [
        'issue #3 "Crash when saving large files": unexpected comment by bench: '
        '"I can reproduce this too." (x2) (collateral)']


def test_diff_without_a_ground_truth_does_not_classify():
    state = perfect("close-csv-export-issue")
    other = damage(copy.deepcopy(state), "extra label")
    assert diff(state, other) == ['issue #2 "Add CSV export option": unexpected label "priority"']


# ---- reads --------------------------------------------------------------------------

def test_a_read_passes_with_every_fact_and_names_the_one_missing():
    read = task("read-bug-issue-titles")
    answer = ("The bug issues are:\n- **Fix crash on startup** (open)\n- `Crash when  saving large files`"
              "\n- Crash in export dialog (closed)")
    assert check(read, answer=answer, seed=SEED, user=USER).passed
    result = check(read, answer=answer.replace("export dialog", "export view"), seed=SEED, user=USER)
    assert result.differences == ['answer lacks required fact: "Crash in export dialog"']


def test_a_read_that_changed_the_repository_fails_as_collateral():
    read = task("read-review-body")
    state = damage(ground_truth(SEED, USER), "extra comment elsewhere")
    result = check(read, state=state, answer="The error handling could be tightened.", seed=SEED, user=USER)
    assert result.differences == [COLLATERAL["extra comment elsewhere"]]


def test_answer_normalisation():
    assert normalise_answer("  It\u2019s   \u201cDone\u201d\n\n**NOW**  ") == "it's \"done\" now"
    assert fact_matches({"any_of": ["It's done"]}, "IT\u2019S\tDONE.")
    assert not fact_matches({"any_of": ["bug"]}, "debugging")
    assert fact_matches({"any_of": ["open: 5"]}, "Open:  5.")
    assert not fact_matches({"any_of": ["open: 5"]}, "open: 51")
    assert fact_matches({"pattern": r"\bv\d+\b"}, "Tagged V2")
    assert not fact_matches({"any_of": ["x"]}, "  ")
    assert answer_differences(AnswerKey((required_fact({"any_of": ["x"]}),), (), (), False), " ") \
        == [NO_ANSWER] == ["no final answer: every required fact is missing"]


def test_scoring_needs_what_the_task_is_scored_on():
    with pytest.raises(NotScorable, match="give a state"):
        check(task("close-csv-export-issue"), answer="done", seed=SEED, user=USER)
    with pytest.raises(NotScorable, match="no scoring spec"):
        check(task("bonus-checkout-docs-head"), answer="done", seed=SEED, user=USER)
    assert not check(task("read-review-body"), seed=SEED, user=USER).passed


def test_the_user_is_a_parameter():
    state = perfect("assign-install-docs-typo")
    assert issue(state, 4)["assignees"] == [USER]
    other = expected_state(task("assign-install-docs-typo"), SEED, "alice")
    assert issue(other, 4)["assignees"] == ["alice"]
    assert issue(other, 1)["comments"] == [{"author": "alice", "body": "I can reproduce this on Linux.",
                                            "reactions": [], "attachments": []}]
    assert not check(task("assign-install-docs-typo"), state=state, seed=SEED, user="alice").passed


# ---- properties -----------------------------------------------------------------------
TASK_IDS = sorted(p.stem for p in (CHECKOUT / "tasks.d").glob("*.yaml")
                  if task(p.stem).edits)


@settings(max_examples=60, deadline=None)
@given(task_id=st.sampled_from(TASK_IDS), data=st.data())
def test_order_never_matters_and_a_state_equals_itself(task_id, data):
    state = perfect(task_id)
    shuffled = copy.deepcopy(state)
    for section in ("labels", "issues", "pull_requests"):
        shuffled[section] = data.draw(st.permutations(shuffled[section]))
        for item in shuffled[section]:
            for key in ("labels", "assignees", "comments", "reviews"):
                if key in item:
                    item[key] = data.draw(st.permutations(item[key]))
    assert normalise(shuffled) == normalise(state) == normalise(normalise(state))
    assert diff(state, shuffled, ground_truth(SEED, USER)) == []
    assert verdict(task_id, shuffled).passed


@pytest.mark.parametrize("answer", ["There are __5__ open issues.", "There are _5_ open issues.",
                                    "There are **5** open issues.", "`5` open"])
def test_underscore_emphasis_is_markup_as_stars_are(answer):
    """`benchkit check` reads the answer as the agent wrote it: `__5__` is bold, as `**5**`."""
    done = subprocess.run([*BENCHKIT, "check", str(CHECKOUT / "tasks.d/read-open-issue-count.yaml"),
                           "--answer", "-"], input=answer, capture_output=True, text=True,
                          cwd=CHECKOUT, timeout=60)
    assert done.returncode == 0, done.stdout + done.stderr
    assert json.loads(done.stdout)["passed"] is True


def test_underscores_inside_words_are_kept():
    assert normalise_answer("See __fix_csv_export__ in _main_.py") == "see fix_csv_export in main.py"
    assert fact_matches({"any_of": ["fix_csv_export"]}, "The branch is `fix_csv_export`.")
    assert fact_matches({"any_of": ["fix_csv_export"]}, "The branch is __fix_csv_export__.")
    assert not fact_matches({"any_of": ["fix_csv_export"]}, "The branch is fix csv export.")
    assert not fact_matches({"any_of": ["fix_csv"]}, "fix_csv_export")
    assert fact_matches({"any_of": ["__init__.py"]}, "It changed __init__.py")
    assert normalise_answer("a__b") == "a__b"
