"""The checker on every kind of the RepoState, without a host: a perfect end state of a
task, changed in one kind the task did not ask for, fails with a difference naming the
entity, the field and the change; a long text is compared by its digest; a capture
without a kind is not compared on it; what an edit leaves open is not compared."""

import copy

import pytest
from conftest import CHECKOUT

from benchkit.documents import load_seed
from benchkit.documents.expectation import expected_state, ground_truth
from benchkit.documents.task import load_task
from benchkit.scoring import check
from benchkit.state import normalise
from benchkit.state.values import TEXT_LIMIT, digest_of

SEED = load_seed(CHECKOUT / "seeds" / "default.yaml")
USER = "bench"
TASK = "close-csv-export-issue"
SETTINGS = {"repository": {"settings": {"website": "", "has_wiki": True, "private": True},
                           "topics": [], "renamed_to": None}}


def task(task_id=TASK):
    return load_task(CHECKOUT / "tasks.d" / f"{task_id}.yaml", {"default": SEED})


def perfect(task_id=TASK) -> dict:
    return copy.deepcopy(expected_state(task(task_id), SEED, USER, seeded=SETTINGS))


def differences(state, task_id=TASK) -> list[str]:
    return check(task(task_id), state=state, seed=SEED, user=USER, seeded=SETTINGS).differences


def entry(state, section, key, value):
    return next(item for item in state[section] if item[key] == value)


def issue(state, number):
    return next(i for i in state["issues"] + state["pull_requests"] if i["number"] == number)


def put(section, item):
    return lambda state: state[section].append(item)


def setting(name, value):
    return lambda state: state["repository"]["settings"].__setitem__(name, value)


def field(number, name, value):
    return lambda state: issue(state, number).__setitem__(name, value)


def branch(name, change):
    return lambda state: change(entry(state, "branches", "name", name))


# kind -> (a change the task did not ask for, the difference it makes)
KINDS = {
    "setting": (setting("website", "https://example.invalid"),
                'repository: setting website is "https://example.invalid", expected "" (collateral)'),
    "topic": (lambda s: s["repository"]["topics"].append("cli"),
              'repository: unexpected topic "cli" (collateral)'),
    "rename": (lambda s: s["repository"].__setitem__("renamed_to", "bench/elsewhere"),
               'repository: renamed_to is "bench/elsewhere", expected null (collateral)'),
    "milestone deleted": (lambda s: s["milestones"].clear(), 'milestone "v1.0": deleted (collateral)'),
    "milestone closed": (lambda s: s["milestones"][0].__setitem__("state", "closed"),
                         'milestone "v1.0": state is closed, expected open (collateral)'),
    "milestone due": (lambda s: s["milestones"][0].__setitem__("due_on", "2026-06-30T23:59:59Z"),
                      'milestone "v1.0": due_on is "2026-06-30", expected null (collateral)'),
    "issue milestone": (field(2, "milestone", "v1.0"),
                        'issue #2 "Add CSV export option": milestone is "v1.0", expected null (collateral)'),
    "due date": (field(4, "due_date", "2026-12-31T23:59:59+01:00"),
                 'issue #4 "Typo in installation docs": due_date is "2026-12-31", expected null (collateral)'),
    "pin": (field(4, "pin_order", 1),
            'issue #4 "Typo in installation docs": pin_order is 1, expected 0 (collateral)'),
    "lock": (field(3, "locked", True),
             'issue #3 "Crash when saving large files": locked is true, expected false (collateral)'),
    "ref": (field(5, "ref", "main"), 'issue #5 "Update README badges": ref is "main", expected "" (collateral)'),
    "tracked time": (field(6, "tracked_times", [{"user": USER, "seconds": 60}]),
                     'issue #6 "Crash in export dialog": unexpected 60 s tracked by bench (collateral)'),
    "reaction": (field(3, "reactions", [{"user": USER, "content": "+1"}]),
                 'issue #3 "Crash when saving large files": unexpected reaction +1 by bench (collateral)'),
    "subscription": (field(6, "subscribed", False),
                     'issue #6 "Crash in export dialog": subscribed is false, expected true (collateral)'),
    "attachment": (field(6, "attachments", [{"name": "notes.txt", "size": 6}]),
                   'issue #6 "Crash in export dialog": unexpected attachment "notes.txt" (6 bytes) '
                   '(collateral)'),
    "comment reaction": (lambda s: issue(s, 1)["comments"][0]["reactions"].append(
        {"user": USER, "content": "heart"}),
        'issue #1 "Fix crash on startup": unexpected comment by bench with 1 reactions: '
        '"I can reproduce this on Linux." (collateral)'),
    "pull base": (field(9, "base", "feature/fix-crash"),
                  'pull request #9 "Implement CSV export": base is "feature/fix-crash", expected "main" '
                  '(collateral)'),
    "maintainer edit": (field(9, "allow_maintainer_edit", True),
                        'pull request #9 "Implement CSV export": allow_maintainer_edit is true, '
                        'expected false (collateral)'),
    "review request": (field(9, "requested_reviewers", ["reviewer"]),
                       'pull request #9 "Implement CSV export": unexpected requested reviewer "reviewer" '
                       '(collateral)'),
    "review dismissed": (lambda s: issue(s, 10)["reviews"][0].__setitem__("dismissed", True),
                         'pull request #10 "Fix startup crash": unexpected comment review by bench '
                         '(dismissed): "Looks good overall'),
    "dependency": (put("dependencies", {"blocked": "#7", "blocker": "#3"}),
                   "unexpected dependency: #7 depends on #3 (collateral)"),
    "file changed": (branch("main", lambda b: b["files"].__setitem__("README.md", "0" * 40)),
                     'branch "main": file "README.md" changed (collateral)'),
    "file added": (branch("feature/fix-crash", lambda b: b["files"].__setitem__("x.txt", "1" * 40)),
                   'branch "feature/fix-crash": file "x.txt" added (collateral)'),
    "file deleted": (branch("feature/docs-refresh", lambda b: b["files"].pop("docs.txt")),
                     'branch "feature/docs-refresh": file "docs.txt" deleted (collateral)'),
    "head moved": (branch("feature/docs-refresh", lambda b: b.__setitem__("commits", 3)),
                   'branch "feature/docs-refresh": commits is 3, expected 2 (collateral)'),
    "branch deleted": (lambda s: s["branches"].remove(entry(s, "branches", "name", "feature/csv-export")),
                       'branch "feature/csv-export": deleted (collateral)'),
    "branch added": (put("branches", {"name": "hotfix", "commits": 1, "files": {}}),
                     'branch "hotfix": unexpected branch (collateral)'),
    "tag": (put("tags", {"name": "v1", "message": "", "files": {}}), 'tag "v1": unexpected tag (collateral)'),
    "release": (put("releases", {"tag": "v1", "name": "One", "body": ""}),
                'release "v1": unexpected release (collateral)'),
    "status": (put("statuses", {"commit": "Seed the repository", "context": "ci", "state": "failure"}),
               'unexpected commit status "ci" (failure) on the commit "Seed the repository" (collateral)'),
    "protection": (put("protections", {"rule": "main", "settings": {"required_approvals": 1}}),
                   'branch protection "main": unexpected branch protection (collateral)'),
    "webhook": (put("webhooks", {"type": "gitea", "url": "http://203.0.113.1/", "active": True}),
                'unexpected webhook "http://203.0.113.1/" (gitea, active) (collateral)'),
    "collaborator": (put("collaborators", {"login": "eve", "permission": "admin"}),
                     'collaborator "eve": unexpected collaborator (collateral)'),
    "deploy key": (put("deploy_keys", {"title": "k", "key": "ssh-ed25519 AAAA", "read_only": False}),
                   'unexpected deploy key "k" (read-write) (collateral)'),
    "wiki page": (put("wiki", {"title": "Home", "content": "Hello."}),
                  'wiki page "Home": unexpected wiki page (collateral)'),
    "label archived": (lambda s: entry(s, "labels", "name", "bug").__setitem__("archived", True),
                       'label "bug": archived is true, expected false (collateral)'),
}


@pytest.mark.parametrize("kind", sorted(KINDS))
def test_a_change_of_each_kind_is_collateral_and_named(kind):
    state = perfect()
    change, difference = KINDS[kind]
    assert differences(state) == []
    change(state)
    found = differences(state)
    assert any(text.startswith(difference) for text in found), found


def test_each_kind_a_state_lacks_is_not_compared():
    """A capture without a section (an older one, or a forge's of what it does not
    model) or an entry without a field passes on what it has."""
    state = perfect()
    for section in ("milestones", "branches", "tags", "webhooks", "wiki", "repository"):
        del state[section]
    for item in state["issues"] + state["pull_requests"]:
        del item["reactions"], item["subscribed"]
    assert differences(state) == []
    issue(state, 2)["state"] = "open"
    assert differences(state) == [
        'issue #2 "Add CSV export option": state is open, expected closed (intended change missing)']


def test_long_texts_compare_by_digest_whichever_side_holds_them():
    long = "x" * (TEXT_LIMIT + 1)
    assert normalise({"labels": [{"name": "bug", "color": "d73a4a", "description": long}],
                      "issues": [], "pull_requests": []})["labels"][0]["description"] == digest_of(long)
    state = perfect()
    issue(state, 5)["body"] = digest_of(long)  # as the snapshot's reader hands it on
    [found] = differences(state)
    assert found.startswith('issue #5 "Update README badges": body is "[4097 characters, sha256 ')


def test_two_entries_of_one_name_are_two():
    state = perfect()
    state["labels"].append(dict(entry(state, "labels", "name", "bug"), color="000000"))
    assert differences(state) == ['label "bug" (2nd): unexpected label (collateral)']


def test_a_merge_leaves_the_base_branch_length_open_but_not_its_files():
    state = perfect("fta-merge-startup-pull")
    main = entry(state, "branches", "name", "main")
    assert main["commits"] is None and set(main["files"]) == {"README.md", "fix.txt"}
    main["commits"] = 7  # a merge commit, a squash or a rebase: each its own count
    assert differences(state, "fta-merge-startup-pull") == []
    main["files"].pop("fix.txt")
    assert differences(state, "fta-merge-startup-pull") == [
        'branch "main": file "fix.txt" deleted (intended change missing)']


def test_the_settings_are_compared_only_given_the_seeded_capture():
    state = perfect()
    state["repository"]["settings"]["website"] = "https://example.invalid"
    assert check(task(), state=state, seed=SEED, user=USER).passed
    assert "repository" not in ground_truth(SEED, USER)
