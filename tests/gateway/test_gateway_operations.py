"""The gateway's allow-list of operations (benchkit/gateway/operations.yaml) and how a
request is read against it: every operation of Gitea's own API description that is not
on the list is refused on the trial's own repository; the list's are matched on Gitea's
path normalisation and nothing looser; bodies are read as Gitea's binding reads them and
re-written; the raw-api references, played with real curl through a gateway in front of
the forge, make only operations of the list (the real tools' are held to it by
tests/forge/test_forge_client_differential.py)."""

import re
import subprocess

import pytest
import requests
from conftest import CHECKOUT
from shipped import replay_params

from benchkit.agent.audit import audit_gateway
from benchkit.agent.replay import context_for
from benchkit.documents.reference import load_reference, render_step
from benchkit.documents.tree import load_tree
from benchkit.gateway.bodies import Refused, canonical
from benchkit.gateway.crossrefs import acts_elsewhere
from benchkit.gateway.operations import catalogue, match, normalise
from benchkit.gateway.scope import decide
from benchkit.gateway.server import Gateway
from benchkit.gitea import Client, delete_repo, provision

TREE = load_tree(CHECKOUT)
RAW_API = load_reference(CHECKOUT / "refs.d" / "raw-api.yaml", kind="shell")
JSON = "application/json"
R = "/api/v1/repos/o/r"


def test_every_line_of_the_list_is_read_and_every_body_is_described():
    ops = catalogue().operations
    assert len(ops) > 50 and len({(op.method, op.route) for op in ops}) == len(ops)
    assert all(op.body is None or op.body == "git" or op.body in catalogue().bodies for op in ops)


@pytest.mark.parametrize("path", [
    f"{R}/issues/1/blocks/", f"{R}//issues//1/blocks", f"{R}/ISSUES/1/Blocks",
    "/api/v1/repos/O/R/issues/1/blocks/",
])
def test_gitea_s_own_normalisation_finds_the_same_operation(path):
    found = match("POST", path, "o", "r")
    assert found is not None and found.path == f"{R}/issues/1/blocks"
    assert found.operation.body == "IssueMeta"  # and so its body is checked


@pytest.mark.parametrize("path", [
    f"{R}/%69ssues/1", f"{R}/issues/%31/../2", f"{R}/issues/1%2f..%2f2", f"{R}/./issues",
    f"{R}/issues/1%00", "/api/v1/repos/o/r2/issues", "/api/v1/repos/o/r/../r2/issues",
    "api/v1/version", f"{R}/issues\\1",
])
def test_a_path_not_read_one_way_only_matches_nothing(path):
    assert match("GET", path, "o", "r") is None


@pytest.mark.parametrize(("method", "tail"), [
    ("POST", "/hooks"), ("POST", "/hooks/1/tests"), ("PATCH", "/hooks/git/post-receive"),
    ("GET", "/hooks/git"), ("POST", "/keys"), ("PUT", "/collaborators/someone"),
    ("POST", "/push_mirrors"), ("POST", "/push_mirrors-sync"), ("POST", "/mirror-sync"),
    ("POST", "/merge-upstream"), ("POST", "/transfer"), ("PUT", "/teams/owners"),
    ("POST", "/avatar"), ("PUT", "/topics/x"), ("PATCH", ""), ("DELETE", ""), ("POST", "/forks"),
    ("POST", "/generate"), ("POST", "/issues/1/reactions"), ("GET", "/compare/main...x:main"),
    ("POST", "/issues/1/subscriptions"), ("GET", "/actions/secrets"),
])
def test_operations_off_the_list_are_refused_on_the_trials_own_repository(method, tail):
    decision = decide(method, R + tail, "", "o", "r", b"{}" if method != "GET" else b"", "", JSON)
    assert decision.scope == "refused" and "no operation" in decision.reason


def test_every_operation_of_gitea_s_api_not_on_the_list_is_refused(gitea):
    """Gitea's own description of its API (its /swagger.v1.json), every path and method,
    on the trial's repository: those not on the list are refused."""
    described = requests.get(gitea.url + "swagger.v1.json", timeout=30).json()["paths"]
    listed = {(op.method, re.sub(r"\{\w+(:\w+)?\}", "{}", op.route)) for op in catalogue().operations}
    allowed = []
    for template, methods in described.items():
        path = "/api/v1" + template.replace("{owner}", "o").replace("{repo}", "r")
        path = re.sub(r"\{(index|id|\w*_id)\}", "1", path).replace("{sha}", "ab12" * 10)
        path = re.sub(r"\{\w+\}", "x", path)
        for method in methods:
            if method.upper() not in ("GET", "POST", "PUT", "PATCH", "DELETE"):
                continue
            found = match(method.upper(), path, "o", "r")
            shape = (method.upper(), "/api/v1" + re.sub(r"\{\w+\}", "{}", template))
            if found is not None:
                allowed.append((shape, found.operation.route))
    # A route of the list the description has under another shape, or a read of the
    # trial's repository that the pull-by-branches route takes in.
    stray = [(shape, route) for shape, route in allowed
             if shape not in listed and not route.endswith("{base}/{head:path}")]
    assert stray == []
    assert len(allowed) >= len(listed) - 10  # the list's own, found in the description


def test_a_body_is_read_as_gitea_reads_it_and_written_anew():
    fields = catalogue().bodies["IssueMeta"]
    data, checked = canonical(b'{"index": 2, "owner": "o", "repo": "r", "extra": [1]}',
                              "application/json; charset=utf-8", fields, "o", "r")
    assert data == b'{"index": 2, "owner": "o", "repo": "r"}' and checked == {
        "index": 2, "owner": "o", "repo": "r"}
    refused = [
        (b'{"repo": "r", "repo": "x"}', JSON, "duplicate"),
        (b'{"repo": "r", "REPO": "x"}', JSON, "letter case"),
        (b'{"OWNER": "o", "Repo": "x"}', JSON, "letter case"),
        (b'{"\\u0072epo": "r", "repo": "x"}', JSON, "duplicate"),  # an escaped key is the key
        (b'{"index": 1, "nested": {"Sudo": "admin"}}', JSON, "credential"),
        (b'{"index": 1, "access_token": "t"}', JSON, "credential"),
        (b'{"x":"&owner=o&name=x&index=1&y="}', "application/x-www-form-urlencoded", "form"),
        (b'{"index": 1}', "application/json; x=form-urlencoded", "form"),  # Gitea's order
        (b"index=1&sudo=admin", "application/x-www-form-urlencoded", "form"),
        (b'--b\r\nContent-Disposition: form-data; name="sudo"\r\n\r\nadmin\r\n--b--\r\n',
         "multipart/form-data; boundary=b", "multipart"),
        (b'{"index": 1}', "", "none"), (b'{"index": 1}', "text/plain", "other"),
        (b'{"index": NaN}', JSON, "number"), (b'\xff{"index": 1}', JSON, "not JSON"),
        (b'[{"index": 1}]', JSON, "not an object"),
    ]
    for body, content_type, reason in refused:
        with pytest.raises(Refused, match=reason):
            canonical(body, content_type, fields, "o", "r")
    with pytest.raises(Refused, match="takes none"):
        canonical(b'{"x": 1}', JSON, None, "o", "r")
    assert canonical(b" {} ", JSON, None, "o", "r") == (b"", None)  # a client's "nothing"
    with pytest.raises(Refused, match="not JSON"):
        canonical(b"[" * 100000, JSON, fields, "o", "r")  # deeper than Python reads


@pytest.mark.parametrize(("text", "found"), [
    ("Fixes o/victim#1", "o/victim#1"), ("closes: O/Victim!2", "o/victim!2"),
    ("FIXED (o/victim#1)", "o/victim#1"), ("Reopens someone/private#3", "someone/private#3"),
    ("Reſolves o/victim#1", "o/victim#1"),  # Unicode folding: a long s is an s
    ("resolved http://host:3000/o/victim/issues/1", "/o/victim/issues/1"),
    ("Fixes #1, see o/victim#1", "o/victim#1"),
    # a mention alone writes a cross-reference into the other issue's timeline
    ("See o/victim#1", "o/victim#1"), ("prefix o/victim#1", "o/victim#1"),
    ("[it](/o/victim/pulls/2)", "/o/victim/pulls/2"),
    ("Fixes #1", ""), ("Fixes o/r#1", ""), ("see O/R!2 and /o/r/issues/3", ""),
])
def test_text_referring_to_another_repositorys_issue(text, found):
    assert acts_elsewhere(text, "o", "r") == found


@pytest.mark.parametrize(("method", "query", "kept"), [
    ("GET", "state=open&per_page=5&limit=3", "state=open&limit=3"),  # a read drops the unknown
    ("POST", "style=rebase", "style=rebase"),
    ("POST", "style=rebase&owner=x", None),  # a write refuses it: Gitea binds the query
])
def test_the_query_is_the_operations_own(method, query, kept):
    path = f"{R}/issues" if method == "GET" else f"{R}/pulls/1/update"
    decision = decide(method, path, query, "o", "r", b"", "", "")
    assert (decision.query if decision.allowed else None) == kept


def test_normalise_keeps_what_the_host_routes_on():
    assert normalise("/a//b/") == "/a/b" and normalise("/a/%2e%2e/b") is None


PLAYABLE = replay_params(TREE, RAW_API, bonus=True)


@pytest.fixture(scope="module")
def behind_a_gateway():
    from benchkit.forge import Forge
    with Forge() as forge, Client(forge.url, forge.token) as client, Gateway(forge.url) as gateway:
        yield forge, client, gateway


@pytest.mark.parametrize("task_id", PLAYABLE)
def test_the_raw_api_references_make_only_operations_of_the_list(task_id, behind_a_gateway):
    forge, client, gateway = behind_a_gateway
    reference = RAW_API.for_task(task_id)
    repo = provision(client, TREE.seeds[TREE.tasks[task_id].seed])
    grant = gateway.issue(repo.owner, repo.name, forge.token, user=forge.user)
    try:
        context = context_for(host_url=gateway.url, api_url=gateway.api_url, token=grant.token,
                              owner=repo.owner, repo=repo.name, user=forge.user,
                              targets=reference.targets)
        for step in reference.steps:
            done = subprocess.run(["bash", "-c", render_step(step, context).run or ""],
                                  capture_output=True, text=True, timeout=120)
            context["outputs"].append(done.stdout)
    finally:
        gateway.end(grant)
        delete_repo(client, repo.owner, repo.name)
    assert grant.requests and audit_gateway(grant.requests, ["curl/"]) == []
