"""Gitea's behaviour where clients depend on it, over HTTP against a live forge:
numbering, filters, pagination, labels, reviews, merging, conflicts and visibility.
"""

import base64

import pytest
import requests


class Api:
    """A tiny client for the tests: call(method, path, expected_status, json=...) -> body."""

    def __init__(self, forge, token):
        self.base = forge.api_url
        self.session = requests.Session()
        self.session.headers["Authorization"] = f"token {token}"
        self.last = None

    def __call__(self, method, path, status, **kwargs):
        self.last = response = self.session.request(method, self.base + path, **kwargs)
        assert response.status_code == status, (method, path, response.status_code, response.text)
        return response.json() if response.content and "json" in response.headers.get("content-type", "") else None


R = "/repos/bench/demo"


@pytest.fixture
def api(forge):
    call = Api(forge, forge.token)
    call("POST", "/user/repos", 201, json={"name": "demo", "auto_init": True})
    for name, color in (("bug", "d73a4a"), ("enhancement", "a2eeef"), ("priority", "b60205")):
        call("POST", f"{R}/labels", 201, json={"name": name, "color": color})
    return call


def branch_with_file(api, branch, path="f.txt", text="x\n"):
    api("POST", f"{R}/contents/{path}", 201,
        json={"content": base64.b64encode(text.encode()).decode(), "new_branch": branch})


def test_issues_and_pulls_share_one_number_space(api):
    api("POST", f"{R}/issues", 201, json={"title": "one"})
    branch_with_file(api, "feature/a")
    pull = api("POST", f"{R}/pulls", 201, json={"head": "feature/a", "base": "main", "title": "two"})
    assert pull["number"] == 2
    assert api("POST", f"{R}/issues", 201, json={"title": "three"})["number"] == 3
    as_issue = api("GET", f"{R}/issues/2", 200)
    assert as_issue["pull_request"] == {"merged": False, "merged_at": None, "draft": False,
                                        "html_url": pull["html_url"]}
    assert as_issue["html_url"].endswith("/bench/demo/pulls/2")
    api("GET", f"{R}/pulls/1", 404)
    listed = api("GET", f"{R}/issues", 200)
    assert [i["number"] for i in listed] == [3, 2, 1]
    assert [i["number"] for i in api("GET", f"{R}/issues?type=issues", 200)] == [3, 1]
    assert [i["number"] for i in api("GET", f"{R}/issues?type=pulls", 200)] == [2]
    assert listed[0]["assignees"] is None and listed[0]["labels"] == []


def test_pagination_headers_and_limits(api, forge):
    for n in range(55):
        api("POST", f"{R}/issues", 201, json={"title": f"issue {n}"})
    page = api("GET", f"{R}/issues", 200)
    assert len(page) == 30 and api.last.headers["X-Total-Count"] == "55"
    assert len(api("GET", f"{R}/issues?limit=100", 200)) == 50  # clamped silently
    api("GET", f"{R}/issues?limit=20&page=2&state=open", 200)
    links = dict(reversed(part.split("; ")) for part in api.last.headers["Link"].split(","))
    root = forge.url
    assert links == {
        'rel="next"': f"<{root}api/v1/repos/bench/demo/issues?limit=20&page=3&state=open>",
        'rel="last"': f"<{root}api/v1/repos/bench/demo/issues?limit=20&page=3&state=open>",
        'rel="first"': f"<{root}api/v1/repos/bench/demo/issues?limit=20&page=1&state=open>",
        'rel="prev"': f"<{root}api/v1/repos/bench/demo/issues?limit=20&page=1&state=open>",
    }
    api("GET", f"{R}/issues?page=0", 200)  # page 0 counts as 1: no first/prev
    assert "first" not in api.last.headers["Link"]
    assert len(api("GET", "/repos/issues/search", 200)) == 20
    assert api("GET", f"{R}/issues?page=9", 200) == []
    api("GET", f"{R}/labels", 200)
    assert api.last.headers["X-Total-Count"] == "3" and "Link" not in api.last.headers


def test_issue_list_filters(api, forge):
    other = Api(forge, forge.create_user("other"))
    api("POST", f"{R}/issues", 201, json={"title": "Crash on start", "labels": [1, 3], "assignees": ["bench"]})
    api("POST", f"{R}/issues", 201, json={"title": "Export", "labels": [2]})
    other("POST", f"{R}/issues", 201, json={"title": "Crash on save", "labels": [1]})  # labels dropped
    api("PATCH", f"{R}/issues/2", 201, json={"state": "closed"})
    titles = lambda query: [i["title"] for i in api("GET", f"{R}/issues?{query}", 200)]  # noqa: E731
    assert titles("labels=bug") == ["Crash on start"]
    assert titles("labels=bug,priority&state=all") == ["Crash on start"]
    assert titles("labels=bug,nosuch") == ["Crash on start"]  # unknown names drop out
    assert titles("labels=nosuch") == ["Crash on save", "Crash on start"]  # all unknown: no filter
    assert titles("state=closed") == ["Export"]
    assert titles("state=all&q=crash") == ["Crash on save", "Crash on start"]
    assert titles("created_by=other") == ["Crash on save"]
    assert titles("assigned_by=bench") == ["Crash on start"]
    api("GET", f"{R}/issues?created_by=ghost", 404)
    api("GET", f"{R}/issues?since=yesterday", 422)
    assert titles("state=all&since=2000-01-01T00:00:00Z&before=2999-01-01T00:00:00%2B02:00") == \
        ["Crash on save", "Export", "Crash on start"]
    assert titles("state=all&before=2000-01-01T00:00:00Z") == []
    found = api("GET", "/repos/issues/search?q=crash&state=all", 200)
    assert [(i["title"], i["repository"]["full_name"]) for i in found] == [
        ("Crash on save", "bench/demo"), ("Crash on start", "bench/demo")]
    assert [i["title"] for i in api("GET", "/repos/issues/search?labels=bug", 200)] == ["Crash on start"]


def test_label_colours_and_issue_labels(api):
    label = api("POST", f"{R}/labels", 201, json={"name": "stale", "color": "#CcC"})
    assert label["color"] == "cccccc"
    assert api("POST", f"{R}/labels", 422, json={"name": "x", "color": "blue"})["message"] == "invalid color: #blue"
    assert api("POST", f"{R}/labels", 422, json={"name": "x"})["message"] == "[Color]: Required"
    assert api("GET", f"{R}/labels/stale", 200)["id"] == label["id"]  # GET also takes a name
    api("POST", f"{R}/issues", 201, json={"title": "t"})
    names = lambda labels: sorted(x["name"] for x in labels)  # noqa: E731
    assert names(api("POST", f"{R}/issues/1/labels", 200, json={"labels": ["bug", "nosuch"]})) == ["bug"]
    assert names(api("POST", f"{R}/issues/1/labels", 200, json={"labels": [3]})) == ["bug", "priority"]
    assert names(api("PUT", f"{R}/issues/1/labels", 200, json={"labels": ["enhancement"]})) == ["enhancement"]
    api("POST", f"{R}/issues/1/labels", 400, json={"labels": [1, "bug"]})
    api("DELETE", f"{R}/issues/1/labels/2", 204)
    api("DELETE", f"{R}/issues/1/labels/999", 422)
    api("POST", f"{R}/issues/1/labels", 200, json={"labels": [1, 2]})
    api("DELETE", f"{R}/issues/1/labels", 204)
    assert api("GET", f"{R}/issues/1/labels", 200) == []
    edited = api("PATCH", f"{R}/labels/{label['id']}", 200, json={"color": "00AABB", "description": "old"})
    assert (edited["color"], edited["description"]) == ("00aabb", "old")
    api("DELETE", f"{R}/labels/{label['id']}", 204)
    api("GET", f"{R}/labels/{label['id']}", 404)


def test_edits_assignees_and_comments(api, forge):
    other = Api(forge, forge.create_user("other"))
    api("POST", f"{R}/issues", 201, json={"title": "t", "body": "b"})
    issue = api("PATCH", f"{R}/issues/1", 201, json={"assignees": ["bench"], "body": "new"})
    assert [u["login"] for u in issue["assignees"]] == ["bench"] and issue["assignee"]["login"] == "bench"
    assert issue["body"] == "new" and issue["content_version"] == 1
    issue = api("PATCH", f"{R}/issues/1", 201, json={"assignees": []})
    assert issue["assignees"] is None and issue["assignee"] is None
    api("PATCH", f"{R}/issues/1", 422, json={"assignees": ["ghost"]})
    api("PATCH", f"{R}/issues/1", 412, json={"state": "shut"})
    closed = api("PATCH", f"{R}/issues/1", 201, json={"state": "closed"})
    assert closed["closed_at"] and api("PATCH", f"{R}/issues/1", 201, json={"state": "closed"})["state"] == "closed"
    other("PATCH", f"{R}/issues/1", 403, json={"title": "mine now"})

    comment = api("POST", f"{R}/issues/1/comments", 201, json={"body": "first"})
    other_comment = other("POST", f"{R}/issues/1/comments", 201, json={"body": "second"})
    assert api("GET", f"{R}/issues/1", 200)["comments"] == 2
    assert api("PATCH", f"{R}/issues/comments/{comment['id']}", 200, json={"body": "edited"})["body"] == "edited"
    other("PATCH", f"{R}/issues/comments/{comment['id']}", 403, json={"body": "hijack"})
    api("DELETE", f"{R}/issues/comments/{other_comment['id']}", 204)
    assert [c["body"] for c in api("GET", f"{R}/issues/1/comments", 200)] == ["edited"]
    assert [c["body"] for c in api("GET", f"{R}/issues/comments", 200)] == ["edited"]
    api("POST", "/user/repos", 201, json={"name": "elsewhere"})
    api("GET", f"/repos/bench/elsewhere/issues/comments/{comment['id']}", 404)
    api("POST", f"{R}/issues/99/comments", 404, json={"body": "x"})


def test_reviews_follow_giteas_rules(api, forge):
    reviewer = Api(forge, forge.create_user("reviewer"))
    branch_with_file(api, "feature/r")
    api("POST", f"{R}/pulls", 201, json={"head": "feature/r", "base": "main", "title": "R"})
    own = api("POST", f"{R}/pulls/1/reviews", 422, json={"event": "APPROVED", "body": "ok"})
    assert own["message"] == "approve your own pull is not allowed"
    own = api("POST", f"{R}/pulls/1/reviews", 422, json={"event": "REQUEST_CHANGES", "body": "no"})
    assert own["message"] == "reject your own pull is not allowed"
    api("POST", f"{R}/pulls/1/reviews", 422, json={"event": "COMMENT"})  # needs a body or a comment
    assert api("POST", f"{R}/pulls/1/reviews", 200, json={"event": "COMMENT", "body": "hm"})["state"] == "COMMENT"

    approved = reviewer("POST", f"{R}/pulls/1/reviews", 200, json={"event": "APPROVED"})
    assert approved["state"] == "APPROVED" and approved["official"] is False  # no write access
    reviewer("POST", f"{R}/pulls/1/reviews", 422, json={"event": "REQUEST_CHANGES"})  # needs a body
    pending = reviewer("POST", f"{R}/pulls/1/reviews", 200, json={"event": "approve", "body": "draft"})
    assert pending["state"] == "PENDING"  # anything but the exact names makes a pending review
    assert len(reviewer("GET", f"{R}/pulls/1/reviews", 200)) == 3
    assert len(api("GET", f"{R}/pulls/1/reviews", 200)) == 2  # others' pending reviews are hidden
    api("GET", f"{R}/pulls/1/reviews/{pending['id']}", 404)
    submitted = reviewer("POST", f"{R}/pulls/1/reviews/{pending['id']}", 200,
                         json={"event": "REQUEST_CHANGES", "body": "please fix"})
    assert submitted["state"] == "REQUEST_CHANGES"
    reviewer("POST", f"{R}/pulls/1/reviews/{pending['id']}", 422, json={"event": "COMMENT", "body": "x"})
    commented = reviewer("POST", f"{R}/pulls/1/reviews", 200, json={
        "event": "COMMENT", "body": "", "comments": [{"path": "f.txt", "body": "line one", "new_position": 1}]})
    lines = reviewer("GET", f"{R}/pulls/1/reviews/{commented['id']}/comments", 200)
    assert [(c["path"], c["body"], c["position"]) for c in lines] == [("f.txt", "line one", 1)]
    # Gitea 1.26 counts the pull request's submitted reviews (its Review timeline comments).
    submitted = [r for r in api("GET", f"{R}/pulls/1/reviews", 200) if r["state"] not in ("PENDING", "REQUEST_REVIEW")]
    assert api("GET", f"{R}/pulls/1", 200)["review_comments"] == len(submitted)
    api("DELETE", f"{R}/pulls/1/reviews/{commented['id']}", 204)  # an admin may delete
    api("GET", f"{R}/pulls/1/reviews/{commented['id']}", 404)


def test_merging(api):
    branch_with_file(api, "feature/m", "m.txt", "merged\n")
    pull = api("POST", f"{R}/pulls", 201, json={"head": "feature/m", "base": "main", "title": "M"})
    assert (pull["head"]["ref"], pull["base"]["ref"], pull["mergeable"]) == ("feature/m", "main", True)
    api("POST", f"{R}/pulls", 409, json={"head": "feature/m", "base": "main", "title": "again"})
    api("POST", f"{R}/pulls", 422, json={"head": "main", "base": "main", "title": "same"})
    api("POST", f"{R}/pulls", 404, json={"head": "nope", "base": "main", "title": "missing"})
    api("GET", f"{R}/pulls/1/merge", 404)
    api("POST", f"{R}/pulls/1/merge", 422, json={})
    api("POST", f"{R}/pulls/1/merge", 200, json={"do": "merge", "merge_title_field": "Merged M",
                                                  "delete_branch_after_merge": True})
    api("GET", f"{R}/pulls/1/merge", 204)
    api("POST", f"{R}/pulls/1/merge", 405, json={"Do": "merge"})
    api("PATCH", f"{R}/pulls/1", 412, json={"state": "open"})
    merged = api("GET", f"{R}/pulls/1", 200)
    assert merged["head"]["ref"] == "refs/pull/1/head" and merged["changed_files"] == 1
    assert api("GET", f"{R}/contents/m.txt", 200)["content"] == base64.b64encode(b"merged\n").decode()
    assert api("GET", f"{R}/branches/main", 200)["commit"]["message"].startswith("Merged M")
    api("GET", f"{R}/branches/feature/m", 404)
    assert [p["number"] for p in api("GET", f"{R}/pulls?state=closed", 200)] == [1]

    branch_with_file(api, "feature/c", "c.txt")
    api("POST", f"{R}/pulls", 201, json={"head": "feature/c", "base": "main", "title": "C", "labels": [2]})
    api("PATCH", f"{R}/pulls/2", 201, json={"state": "closed"})
    api("POST", f"{R}/pulls/2/merge", 404, json={"Do": "merge"})  # closed, not merged
    api("PATCH", f"{R}/pulls/2", 201, json={"state": "open"})
    assert [p["number"] for p in api("GET", f"{R}/pulls?labels=2", 200)] == [2]
    assert api("GET", f"{R}/pulls?labels=1", 200) == []
    api("POST", f"{R}/pulls/2/merge", 200, json={"Do": "squash"})
    files = api("GET", f"{R}/pulls/2/files", 200)
    assert [(f["filename"], f["status"], f["additions"]) for f in files] == [("c.txt", "added", 1)]
    assert [c["commit"]["message"] for c in api("GET", f"{R}/pulls/2/commits", 200)] == ["Add c.txt\n"]


def test_branches_on_one_commit_are_listed_by_name_as_gitea_lists_them(api):
    """Gitea orders branches by commit time (whole seconds), newest first, then by name:
    branches made from one commit tie, whatever order they were made in."""
    for name in ("zeta", "alpha", "mid"):
        api("POST", f"{R}/branches", 201, json={"new_branch_name": name})
    names = [b["name"] for b in api("GET", f"{R}/branches", 200)]
    assert [n for n in names if n in ("zeta", "alpha", "mid", "main")] == ["alpha", "main", "mid", "zeta"]


def test_conflicts_and_content_errors(api):
    assert api("POST", "/user/repos", 409, json={"name": "DEMO"})["message"] == \
        "The repository with the same name already exists."
    api("POST", "/user/repos", 422, json={"name": "bad name"})
    api("POST", f"{R}/branches", 201, json={"new_branch_name": "dev"})
    api("POST", f"{R}/branches", 409, json={"new_branch_name": "dev"})
    content = base64.b64encode(b"y").decode()
    api("POST", f"{R}/contents/README.md", 422, json={"content": content})  # the file exists
    api("POST", f"{R}/contents/n.txt", 422, json={"content": content, "new_branch": "dev"})  # so does the branch
    api("POST", f"{R}/contents/n.txt", 404, json={"content": content, "branch": "nope", "new_branch": "x"})
    api("POST", f"{R}/contents/n.txt", 422, json={"content": "%%%"})
    readme = api("GET", f"{R}/contents/README.md", 200)
    updated = api("PUT", f"{R}/contents/README.md", 200, json={"content": content, "sha": readme["sha"]})
    assert updated["content"]["sha"] != readme["sha"]
    api("PUT", f"{R}/contents/README.md", 409, json={"content": content, "sha": readme["sha"]})


def test_visibility_case_and_deletion(api, forge):
    other = Api(forge, forge.create_user("other"))
    api("POST", "/user/repos", 201, json={"name": "secret", "private": True})
    other("GET", "/repos/bench/secret", 404)
    other("GET", "/repos/bench/secret/issues", 404)
    assert [r["name"] for r in other("GET", "/users/bench/repos", 200)] == ["demo"]
    assert api("GET", "/repos/BENCH/Demo", 200)["full_name"] == "bench/demo"
    other("DELETE", f"{R}", 403)
    other("POST", f"{R}/labels", 403, json={"name": "x", "color": "fff"})
    api("DELETE", "/repos/bench/secret", 204)
    api("GET", "/repos/bench/secret", 404)
    assert other("GET", "/users/bench", 200)["email"] == "bench@noreply.localhost"  # private fields hidden
    assert other("GET", "/users/bench", 200)["is_admin"] is False
    assert api("GET", "/users/other", 200)["email"] == "other@forge.local"  # an admin sees them


def test_commit_statuses_are_the_checks_of_a_pull_request(api):
    branch_with_file(api, "feature/ci")
    pull = api("POST", f"{R}/pulls", 201, json={"head": "feature/ci", "base": "main", "title": "CI"})
    sha = pull["head"]["sha"]
    combined = api("GET", f"{R}/commits/{sha}/status", 200)
    assert (combined["state"], combined["total_count"], combined["statuses"]) == ("", 0, [])  # no CI ran
    api("POST", f"{R}/statuses/{sha}", 201, json={"state": "pending", "context": "build"})
    api("POST", f"{R}/statuses/{sha}", 201, json={"state": "success", "context": "build"})
    api("POST", f"{R}/statuses/{sha}", 201, json={"state": "failure", "context": "lint"})
    api("POST", f"{R}/statuses/{sha}", 422, json={"state": "great"})
    combined = api("GET", f"{R}/commits/feature/ci/status", 200)  # a branch name works as the ref
    assert combined["state"] == "failure"
    assert sorted((s["context"], s["status"]) for s in combined["statuses"]) == [("build", "success"),
                                                                                 ("lint", "failure")]
    assert len(api("GET", f"{R}/commits/{sha}/statuses", 200)) == 3
    assert [c["sha"] for c in api("GET", f"{R}/commits?sha=feature/ci", 200)][0] == sha
    assert api("GET", f"{R}/git/commits/{sha}", 200)["files"] == [{"filename": "f.txt", "status": "added"}]


def test_user_search(api, forge):
    forge.create_user("other")
    found = api("GET", "/users/search?q=oth", 200)
    assert found["ok"] is True and [u["login"] for u in found["data"]] == ["other"]


def test_a_forge_may_permit_self_review():
    from benchkit.forge import Forge

    with Forge(self_review=True) as forge:
        api = Api(forge, forge.token)
        api("POST", "/user/repos", 201, json={"name": "demo", "auto_init": True})
        branch_with_file(api, "feature/s")
        api("POST", f"{R}/pulls", 201, json={"head": "feature/s", "base": "main", "title": "S"})
        assert api("POST", f"{R}/pulls/1/reviews", 200, json={"event": "APPROVED"})["official"] is True
        assert api("POST", f"{R}/pulls/1/reviews", 200,
                   json={"event": "REQUEST_CHANGES", "body": "no"})["state"] == "REQUEST_CHANGES"


def test_timeline_holds_comments_and_events(api, forge):
    reviewer = Api(forge, forge.create_user("reviewer"))
    api("POST", f"{R}/issues", 201, json={"title": "Old", "labels": [1]})
    api("POST", f"{R}/issues/1/comments", 201, json={"body": "note"})
    api("PATCH", f"{R}/issues/1", 201, json={"title": "New", "assignees": ["bench"], "state": "closed"})
    api("POST", f"{R}/issues/1/labels", 200, json={"labels": ["priority"]})
    api("DELETE", f"{R}/issues/1/labels/1", 204)
    events = api("GET", f"{R}/issues/1/timeline", 200)
    assert [(e["type"], e["body"]) for e in events] == [
        ("label", "1"), ("comment", "note"), ("change_title", ""), ("close", ""), ("assignees", ""), ("label", "1"),
        ("label", "")]  # labels given at creation are an event too, as in Gitea
    events = events[1:]
    assert (events[1]["old_title"], events[1]["new_title"]) == ("Old", "New")
    assert events[3]["assignee"]["login"] == "bench" and events[3]["removed_assignee"] is False
    assert events[4]["label"]["name"] == "priority" and events[5]["label"]["name"] == "bug"
    assert [c["body"] for c in api("GET", f"{R}/issues/1/comments", 200)] == ["note"]  # events are not comments
    api("GET", f"{R}/issues/comments/{events[2]['id']}", 204)
    assert api.last.content == b""

    branch_with_file(api, "feature/t")
    api("POST", f"{R}/pulls", 201, json={"head": "feature/t", "base": "main", "title": "T"})
    review = reviewer("POST", f"{R}/pulls/2/reviews", 200, json={"event": "APPROVED", "body": "ship it"})
    reviewer("POST", f"{R}/pulls/2/reviews", 200, json={"event": "PENDING", "body": "private"})
    api("POST", f"{R}/pulls/2/merge", 200, json={"Do": "merge"})
    events = api("GET", f"{R}/issues/2/timeline", 200)
    assert [(e["type"], e["body"], e["review_id"]) for e in events] == [
        ("review", "ship it", review["id"]), ("merge_pull", "", 0)]
    pull = api("GET", f"{R}/pulls/2", 200)  # Gitea 1.26: a review is a review comment, not a comment
    assert (pull["comments"], pull["review_comments"]) == (0, 1)
