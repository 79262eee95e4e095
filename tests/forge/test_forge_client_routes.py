"""The routes real clients (gitea-axi first) call that the forge once lacked, and the
inputs it once answered with a 500, over HTTP against a live forge. The same requests
run against a real Gitea in tests/forge/test_forge_differential.py; the statuses and
messages asserted here are the ones Gitea 1.26 gave there."""

import json
import subprocess

import pytest
from test_forge_api import Api, R, branch_with_file


@pytest.fixture
def api(forge):
    call = Api(forge, forge.token)
    call("POST", "/user/repos", 201, json={"name": "demo", "auto_init": True})
    call("POST", f"{R}/labels", 201, json={"name": "bug", "color": "d73a4a"})
    for title in ("one", "two", "three", "four"):
        call("POST", f"{R}/issues", 201, json={"title": title})
    branch_with_file(call, "feature/a", "a.txt", "first\nsecond\n")
    call("POST", f"{R}/pulls", 201, json={"head": "feature/a", "base": "main", "title": "five"})
    return call


def meta(index):
    return {"owner": "bench", "repo": "demo", "index": index}


def test_pull_by_base_and_head(api):
    assert api("GET", f"{R}/pulls/main/feature/a", 200)["number"] == 5
    assert api("GET", f"{R}/pulls/main/bench:feature/a", 200)["number"] == 5
    assert api("GET", f"{R}/pulls/main/nope", 404)["message"] == "not found"
    assert api("GET", f"{R}/pulls/5/files", 200)[0]["filename"] == "a.txt"  # not shadowed


def test_update_pull_from_base(api):
    assert api("POST", f"{R}/pulls/5/update", 500)["message"] == "HeadBranch of PR 5 is up to date"
    branch_with_file(api, "other", "b.txt")
    api("POST", f"{R}/pulls", 201, json={"head": "other", "base": "main", "title": "six"})
    api("POST", f"{R}/pulls/6/merge", 200, json={"Do": "merge"})
    api("POST", f"{R}/pulls/5/update", 200)
    assert sorted(f["filename"] for f in api("GET", f"{R}/pulls/5/files", 200)) == ["a.txt"]
    assert api("GET", f"{R}/pulls/5/commits", 200)[0]["commit"]["message"] == "Merge branch 'main' into feature/a\n"
    api("POST", f"{R}/pulls/6/update", 422)  # merged
    api("POST", f"{R}/pulls/99/update", 404)


def test_pins(api):
    api("POST", f"{R}/issues/1/pin", 204)
    assert api("POST", f"{R}/issues/1/pin", 500)["message"].startswith("UNIQUE constraint failed")
    for number in (2, 3):
        api("POST", f"{R}/issues/{number}/pin", 204)
    assert [api("GET", f"{R}/issues/{n}", 200)["pin_order"] for n in (1, 2, 3, 4)] == [1, 2, 3, 0]
    assert api("POST", f"{R}/issues/4/pin", 500)["message"] == "the max number of pinned issues has been readched"
    api("POST", f"{R}/issues/5/pin", 204)  # pull requests have pins of their own
    api("DELETE", f"{R}/issues/1/pin", 204)
    api("DELETE", f"{R}/issues/1/pin", 204)
    assert api("GET", f"{R}/issues/1", 200)["pin_order"] == 0
    api("POST", f"{R}/issues/99/pin", 404)


def test_blocks_and_dependencies(api):
    assert api("POST", f"{R}/issues/1/blocks", 201, json=meta(2))["number"] == 1
    assert [i["number"] for i in api("GET", f"{R}/issues/2/dependencies", 200)] == [1]
    assert [i["number"] for i in api("GET", f"{R}/issues/1/blocks", 200)] == [2]
    assert "already exist" in api("POST", f"{R}/issues/1/blocks", 500, json=meta(2))["message"]
    assert "circular" in api("POST", f"{R}/issues/2/blocks", 500, json=meta(1))["message"]
    missing = api("POST", f"{R}/issues/1/blocks", 404, json={"index": 3})
    assert missing["message"] == "IsErrRepoNotExist" and missing["errors"][0].startswith("repository does not exist")
    assert api("GET", f"{R}/issues/99/blocks", 404)["message"] == "IsErrIssueNotExist"
    assert api("DELETE", f"{R}/issues/2/dependencies", 201, json=meta(1))["number"] == 2
    assert "does not exist" in api("DELETE", f"{R}/issues/2/dependencies", 500, json=meta(1))["message"]
    api("POST", f"{R}/issues/3/blocks", 201, json=meta(3))  # Gitea lets an issue block itself
    api("DELETE", f"{R}/issues/3/blocks", 201, json=meta(3))
    assert api("GET", f"{R}/issues/3/blocks", 200) == []


def test_delete_issue(api, forge):
    other = Api(forge, forge.create_user("reviewer"))
    other("DELETE", f"{R}/issues/1", 403)  # a public repository, but not theirs to administer
    api("DELETE", f"{R}/issues/1", 204)
    api("GET", f"{R}/issues/1", 404)
    assert api("DELETE", f"{R}/issues/1", 404)["errors"][0].startswith("issue does not exist")
    assert api("POST", f"{R}/issues", 201, json={"title": "after"})["number"] == 6  # numbers are not reused


def test_requested_reviewers(api, forge):
    forge.create_user("reviewer")
    assert api("POST", f"{R}/pulls/5/requested_reviewers", 422,
               json={"reviewers": ["bench"]})["message"].startswith("poster of pr can't be reviewer")
    assert api("POST", f"{R}/pulls/5/requested_reviewers", 404, json={"reviewers": ["ghost"]})["message"] == \
        "User 'ghost' not exist"
    assert api("POST", f"{R}/pulls/5/requested_reviewers", 201, json={"reviewers": []}) == []
    requested = api("POST", f"{R}/pulls/5/requested_reviewers", 201, json={"reviewers": ["reviewer"]})
    assert [(r["state"], r["user"]["login"]) for r in requested] == [("REQUEST_REVIEW", "reviewer")]
    assert [u["login"] for u in api("GET", f"{R}/pulls/5", 200)["requested_reviewers"]] == ["reviewer"]
    api("DELETE", f"{R}/pulls/5/requested_reviewers", 204, json={"reviewers": ["reviewer"]})
    api("DELETE", f"{R}/pulls/5/requested_reviewers", 204, json={"reviewers": ["reviewer"]})
    assert api("GET", f"{R}/pulls/5", 200)["requested_reviewers"] == []


def test_review_comment_has_diff_hunk(api, forge):
    reviewer = Api(forge, forge.create_user("reviewer"))
    review = reviewer("POST", f"{R}/pulls/5/reviews", 200, json={
        "event": "COMMENT", "body": "", "comments": [{"path": "a.txt", "body": "why", "new_position": 2}]})
    [comment] = reviewer("GET", f"{R}/pulls/5/reviews/{review['id']}/comments", 200)
    assert comment["diff_hunk"] == "@@ -0,0 +1,2 @@\n+first\n+second"


def test_unknown_milestones_are_discarded(api):
    everything = api("GET", f"{R}/issues?state=all", 200)
    assert api("GET", f"{R}/issues?state=all&milestones=nope", 200) == everything


@pytest.mark.parametrize("path", ["/issues/99999999999999999999", "/pulls/99999999999999999999",
                                  "/issues/comments/99999999999999999999", "/labels/99999999999999999999",
                                  "/pulls/5/reviews/99999999999999999999", "/milestones/99999999999999999999"])
def test_huge_path_ids_are_not_found(api, path):
    api("GET", R + path, 404)


def test_bad_bodies_are_422_never_500(api):
    message = api("PATCH", f"{R}/issues/1", 422, json={"milestone": 99999999999999999999})["message"]
    assert message == ("[]: json: cannot unmarshal number 99999999999999999999 into Go struct field "
                       "EditIssueOption.milestone of type int64")
    deep = '{"title":' + "[" * 20000 + "]" * 20000 + "}"
    assert api("POST", f"{R}/issues", 422, data=deep, headers={"Content-Type": "application/json"})["message"] == \
        "[]: invalid character '[' exceeded max depth"
    assert api("POST", f"{R}/issues", 422, data='{"title":',
               headers={"Content-Type": "application/json"})["message"] == "[]: unexpected EOF"
    api("POST", f"{R}/issues", 422, data={"title": "x", "milestone": "99999999999999999999"})
    api("POST", f"{R}/pulls/5/reviews", 422, json={"event": "COMMENT", "body": "b", "comments": [
        {"path": "a.txt", "body": "c", "new_position": 99999999999999999999}]})


def test_git_clone_and_fetch(api, forge, tmp_path):
    url = forge.url.replace("http://", f"http://bench:{forge.token}@") + "bench/demo.git"
    subprocess.run(["git", "clone", "-q", url, str(tmp_path / "c")], check=True, capture_output=True, timeout=60)
    git = ["git", "-C", str(tmp_path / "c")]
    subprocess.run([*git, "fetch", "-q", "origin", "feature/a"], check=True, capture_output=True, timeout=60)
    shown = subprocess.run([*git, "show", "FETCH_HEAD:a.txt"], check=True, capture_output=True, text=True).stdout
    assert shown == "first\nsecond\n"
    branches = subprocess.run([*git, "branch", "-r"], check=True, capture_output=True, text=True).stdout
    assert "origin/feature/a" in branches and "origin/main" in branches
    anonymous = subprocess.run(["git", "ls-remote", forge.url + "bench/demo.git"], capture_output=True, timeout=60,
                               env={"GIT_TERMINAL_PROMPT": "0", "PATH": "/usr/bin:/bin"})
    assert anonymous.returncode == 0  # a public repository clones without credentials
    api("PATCH", R, 200, json={"private": True})
    anonymous = subprocess.run(["git", "ls-remote", forge.url + "bench/demo.git"], capture_output=True, timeout=60,
                               env={"GIT_TERMINAL_PROMPT": "0", "PATH": "/usr/bin:/bin"})
    assert anonymous.returncode != 0  # a private one asks for them (401)
    logged = [e for e in forge.requests() if e["path"].endswith("/info/refs")]
    assert {e["status"] for e in logged} >= {200, 401} and json.dumps(logged).count(forge.token) == 0
