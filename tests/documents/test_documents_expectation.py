"""The expectation interpreter: ground truth from a seed, selectors, every action, and
the problems it reports for unsound edits."""

from types import SimpleNamespace

import pytest

from benchkit.documents.expectation import (
    ExpectationError,
    edit_problems,
    expected_state,
    ground_truth,
)

SEED = {
    "labels": [{"name": "bug", "color": "#D73A4A", "description": "Broken"},
               {"name": "docs", "color": "0075ca", "description": ""}],
    "issues": [
        {"title": "Crash A", "body": "boom", "state": "open", "labels": ["bug"], "assigned": True,
         "comments": ["seen"]},
        {"title": "Crash B", "body": "bang", "state": "closed", "labels": ["bug", "docs"],
         "assigned": False, "comments": []},
        {"title": "Readme", "body": "words", "state": "open", "labels": [], "assigned": False,
         "comments": []},
    ],
    "pull_requests": [
        {"title": "Fix A", "body": "fixes", "state": "open", "labels": [], "assigned": False,
         "comments": [], "reviews": [{"kind": "comment", "body": "ok"}]},
    ],
}


def expect(*edits, user="me", self_review=False):
    return expected_state(SimpleNamespace(edits=list(edits)), SEED, user, self_review=self_review)


def item(state, number, *fields):
    """The issue or pull request numbered so: all of it, or the fields named."""
    found = next(i for i in state["issues"] + state["pull_requests"] if i["number"] == number)
    return {key: found[key] for key in fields} if fields else found


CORE = ("number", "title", "body", "state", "labels", "assignees", "comments")


def comment(author, body):
    return {"author": author, "body": body, "reactions": [], "attachments": []}


def test_ground_truth_numbers_issues_then_pull_requests_and_authors_everything_by_the_user():
    truth = ground_truth(SEED, "me")
    assert [i["number"] for i in truth["issues"]] == [1, 2, 3]
    assert item(truth, 4, *CORE, "reviews") == {
        "number": 4, "title": "Fix A", "body": "fixes", "state": "open", "labels": [],
        "assignees": [], "comments": [],
        "reviews": [{"author": "me", "kind": "comment", "body": "ok", "comments": [],
                     "dismissed": False}]}
    assert item(truth, 1)["assignees"] == ["me"] and item(truth, 1)["comments"] == [
        comment("me", "seen")]
    assert truth["labels"][0] == {"name": "bug", "color": "d73a4a", "description": "Broken",
                                  "exclusive": False, "archived": False}


@pytest.mark.parametrize("selector,numbers", [
    ({"number": 2}, [2]),
    ({"title": "Crash A"}, [1]),
    ({"title_matches": "^Crash"}, [1, 2]),
    ({"title_matches": "crash"}, []),  # regexes are case-sensitive unless (?i)
    ({"title_matches": "(?i)crash"}, [1, 2]),
    ({"body_matches": "b(oom|ang)"}, [1, 2]),
    ({"state": "open"}, [1, 3]),
    ({"label": "bug"}, [1, 2]),
    ({"labels": ["bug"]}, [1]),
    ({"labels": []}, [3]),
    ({"assignee": "self"}, [1]),
    ({"assigned": False}, [2, 3]),
    ({"state": "open", "label": "bug"}, [1]),
])
def test_selectors(selector, numbers):
    edit = {"issues": selector, "add_comment": "picked"}
    if not numbers:
        assert edit_problems([edit], SEED)[0][1].startswith("selector")
        return
    state = expect(edit)
    picked = [i["number"] for i in state["issues"] if comment("me", "picked") in i["comments"]]
    assert picked == numbers


def test_issue_actions():
    state = expect({"issue": {"number": 1}, "set": {"title": "Crash A!", "body": " new \r\n", "state": "closed"},
                    "add_labels": ["docs"], "remove_labels": ["bug"],
                    "add_assignees": ["other"], "remove_assignees": ["self"], "add_comment": "done"})
    assert item(state, 1, *CORE) == {"number": 1, "title": "Crash A!", "body": "new", "state": "closed",
                                     "labels": ["docs"], "assignees": ["other"],
                                     "comments": [comment("me", "done"), comment("me", "seen")]}


def test_pull_request_actions_and_review_variants():
    edit = {"pull_request": {"title": "Fix A"}, "set": {"state": "merged"},
            "add_review": {"kind": {"self_review": "approved", "otherwise": "comment"}, "body": "lgtm",
                           "comments": ["nit"]}}
    for self_review, kind in ((False, "comment"), (True, "approved")):
        pull = item(expect(edit, self_review=self_review), 4)
        assert pull["state"] == "merged"
        assert {"author": "me", "kind": kind, "body": "lgtm", "dismissed": False,
                "comments": [{"author": "me", "body": "nit"}]} in pull["reviews"]


def test_label_rename_recolour_and_delete_follow_onto_issues():
    state = expect({"label": {"name": "bug"}, "set": {"name": "defect", "color": "#ABCDEF"}})
    assert state["labels"][0] == {"name": "defect", "color": "abcdef", "description": "Broken",
                                  "exclusive": False, "archived": False}
    assert item(state, 2)["labels"] == ["defect", "docs"]
    state = expect({"labels": {"name_matches": "^d"}, "delete": True})
    assert [label["name"] for label in state["labels"]] == ["bug"]
    assert item(state, 2)["labels"] == ["bug"]


def test_created_entities():
    state = expect({"create_label": {"name": "new", "color": "#FFFFFF"}},
                   {"create_issue": {"title": "T", "body": "B", "labels": ["new"], "assignees": ["self"]}},
                   {"create_issue": {"title": "U"}})
    assert {"name": "new", "color": "ffffff", "description": "", "exclusive": False,
            "archived": False} in state["labels"]
    assert item(state, 5, *CORE) == {"number": 5, "title": "T", "body": "B", "state": "open",
                                     "labels": ["new"], "assignees": ["me"], "comments": []}
    assert item(state, 6)["title"] == "U"


def test_later_edits_see_earlier_ones():
    # the second edit selects by the title the first one set
    state = expect({"issue": {"number": 3}, "set": {"title": "Crash C"}},
                   {"issues": {"title_matches": "^Crash", "state": "open"}, "set": {"state": "closed"}})
    assert [i["state"] for i in state["issues"]] == ["closed", "closed", "closed"]


def test_problems_are_reported_with_their_path():
    problems = edit_problems([
        {"issue": {"label": "bug"}, "set": {"state": "closed"}},
        {"issue": {"number": 9}, "set": {"state": "closed"}},
        {"label": {"name": "bug"}, "set": {"name": "docs"}},
        {"issue": {"number": 3}, "set": {"color": "ffffff"}},
        {"create_issue": {"title": "x"}, "add_comment": "no"},
        {"issue": {"number": 2}, "set": {"state": "closed"}},
    ], SEED)
    assert [(path, message.split(" ")[0]) for path, message in problems] == [
        (("edits", 0, "issue"), "selector"),
        (("edits", 1, "issue"), "selector"),
        (("edits", 2, "set", "name"), "cannot"),
        (("edits", 3, "set", "color"), "issues"),
        (("edits", 4), "create_issue"),
        (("edits", 5), "this"),
    ]


def test_expected_state_refuses_unsound_edits():
    with pytest.raises(ExpectationError, match="matches no issue"):
        expect({"issue": {"title": "Nope"}, "set": {"state": "closed"}})


# ---- the repository's other kinds: milestones, dependencies, releases, merges ----------

def test_a_milestone_is_created_set_on_issues_renamed_and_deleted():
    state = expect({"create_milestone": {"title": "v2", "due_on": "2026-09-30"}},
                   {"issues": {"state": "open"}, "set": {"milestone": "v2", "due_date": "2026-10-01"}})
    assert state["milestones"] == [{"title": "v2", "description": "", "state": "open",
                                    "due_on": "2026-09-30"}]
    assert [(i["number"], i["milestone"], i["due_date"]) for i in state["issues"]] == [
        (1, "v2", "2026-10-01"), (2, None, None), (3, "v2", "2026-10-01")]
    state = expect({"create_milestone": {"title": "v2"}}, {"issue": {"number": 1}, "set": {"milestone": "v2"}},
                   {"milestone": {"title": "v2"}, "set": {"title": "v3"}})
    assert item(state, 1)["milestone"] == "v3"
    state = expect({"create_milestone": {"title": "v2"}}, {"issue": {"number": 1}, "set": {"milestone": "v2"}},
                   {"milestones": {"title_matches": "^v"}, "delete": True})
    assert state["milestones"] == [] and item(state, 1)["milestone"] is None


def test_a_dependency_names_both_issues():
    state = expect({"issue": {"title": "Crash A"}, "add_dependency": {"title": "Readme"}})
    assert state["dependencies"] == [{"blocked": "#1", "blocker": "#3"}]


def test_a_published_release_tags_its_branch_and_a_draft_does_not():
    state = expect({"create_release": {"tag": "v1", "name": "One", "body": "Notes \r\n"}})
    main = next(b for b in state["branches"] if b["name"] == "main")
    assert state["releases"] == [{"tag": "v1", "name": "One", "body": "Notes", "draft": False,
                                  "prerelease": False, "attachments": []}]
    assert state["tags"] == [{"name": "v1", "message": "", "files": main["files"]}]
    assert expect({"create_release": {"tag": "v1", "draft": True}})["tags"] == []


def test_a_merge_moves_the_base_branch_files_and_leaves_its_length_open():
    before = ground_truth(SEED, "me")
    after = expect({"pull_request": {"number": 4}, "set": {"state": "merged"}})
    main = {b["name"]: b for b in after["branches"]}["main"]
    head = {b["name"]: b for b in before["branches"]}["pull-4"]
    assert main["files"] == head["files"] and main["commits"] is None


def test_unsound_repository_edits_are_reported():
    problems = edit_problems([
        {"issue": {"number": 1}, "set": {"milestone": "nope"}},
        {"issue": {"number": 1}, "add_dependency": {"number": 1}},
        {"create_release": {"tag": "v1"}},
        {"create_release": {"tag": "v1"}},
        {"create_milestone": {"title": "m"}},
        {"create_milestone": {"title": "m"}},
        {"create_release": {"tag": "v2", "target": "nowhere"}},
    ], SEED)
    assert [(path, message) for path, message in problems] == [
        (("edits", 0, "set", "milestone"), "milestone 'nope' is not defined at this point "
                                           "(create it with create_milestone first)"),
        (("edits", 1, "add_dependency"), "an issue cannot depend on itself"),
        (("edits", 3, "create_release"), "a release of tag 'v1' already exists"),
        (("edits", 5, "create_milestone", "title"), "milestone 'm' already exists"),
        (("edits", 6, "create_release"), "release target 'nowhere' is not a branch"),
    ]
