"""The trial gateway in front of real hosts (the forge and a real Gitea): it takes the
trial's token wherever Gitea reads one and nothing else, forwards only the trial's
repository (its API, git smart HTTP, the global issue search cut down to it) and a few
global reads, rewrites the host's URLs to its own, records every request without a
secret, and turns an unreachable or untrusted host into a 502."""

import base64
import re
import shutil
import socket
import subprocess
import threading
import time
import uuid

import pytest
import requests

from benchkit.agent.audit import audit_gateway, gateway_host_errors
from benchkit.gateway.scope import decide
from benchkit.gateway.server import Gateway
from benchkit.gitea import Client, delete_repo
from benchkit.gitea.server import Gitea


@pytest.fixture
def site(host):
    """A gateway in front of the host, the trial's repository and another one of the
    same user (each with an open issue), and a grant for the trial's."""
    client = Client(host.url, host.token)
    names = [f"gw-{word}-{uuid.uuid4().hex[:6]}" for word in ("trial", "other")]
    for name, title in zip(names, ("Mine to read", "Not yours to see"), strict=True):
        client.post("/user/repos", json={"name": name, "auto_init": True})
        client.post(f"/repos/{client.user}/{name}/issues", json={"title": title})
    with Gateway(host.url) as gateway:
        grant = gateway.issue(client.user, names[0], host.token)
        yield gateway, grant, client, names
    for name in names:
        delete_repo(client, client.user, name)


def get(gateway, path, **kwargs):
    return requests.get(gateway.url + path.lstrip("/"), timeout=30, **kwargs)


def test_the_token_is_taken_wherever_gitea_reads_one_and_nothing_else(site):
    gateway, grant, client, (mine, _) = site
    path, token = f"api/v1/repos/{client.user}/{mine}", grant.token
    basic = base64.b64encode(f"someone:{token}".encode()).decode()
    as_user = base64.b64encode(f"{token}:x-oauth-basic".encode()).decode()
    accepted = [{"headers": {"Authorization": f"token {token}"}},
                {"headers": {"Authorization": f"Bearer {token}"}},
                {"headers": {"Authorization": f"Basic {basic}"}},
                {"headers": {"Authorization": f"Basic {as_user}"}},
                {"params": {"token": token}}, {"params": {"access_token": token}}]
    for kwargs in accepted:
        answer = get(gateway, path, **kwargs)
        assert answer.status_code == 200 and answer.json()["name"] == mine, kwargs
    refused = [{}, {"headers": {"Authorization": "token not-the-trials"}},
               {"headers": {"Authorization": f"token {token}"}, "params": {"token": "another"}},
               {"headers": {"Authorization": f"token {token}", "Sudo": "someone"}},
               {"headers": {"Authorization": f"Digest {token}"}},
               {"headers": {"Authorization": f"token {client.token}"}}]  # the real one, too
    for kwargs in refused:
        answer = get(gateway, path, **kwargs)
        assert answer.status_code == 401 and answer.json()["message"], kwargs
    assert get(gateway, path).headers["WWW-Authenticate"].startswith("Basic")  # git retries
    assert gateway.idle()  # each answer is out just before its record is kept
    # the three that came with the trial's token, and the real token's stray, are its leaks
    assert len(grant.requests) == len(accepted) + 4 and len(gateway.strays) == 4
    assert [e["scope"] for e in grant.requests[len(accepted):]] == ["refused"] * 4
    recorded = repr(grant.requests) + repr(gateway.strays)
    assert token not in recorded and client.token not in recorded and "?" not in recorded


def test_only_the_trials_repository_and_named_global_reads_pass(site):
    gateway, grant, client, (mine, other) = site
    auth = {"Authorization": f"token {grant.token}"}
    user = client.user
    assert get(gateway, "api/v1/version", headers=auth).status_code == 200
    assert get(gateway, "api/v1/user", headers=auth).json()["login"] == user
    assert get(gateway, f"api/v1/repos/{user.upper()}/{mine.upper()}/issues",
               headers=auth).status_code == 200  # Gitea matches names case-insensitively
    outside = [("GET", f"api/v1/repos/{user}/{other}"), ("GET", f"api/v1/repos/{user}/{other}/issues"),
               ("PATCH", f"api/v1/repos/{user}/{other}/issues/1"), ("GET", "api/v1/user/repos"),
               ("GET", "api/v1/repos/search"), ("GET", "api/v1/admin/users"),
               ("DELETE", f"api/v1/repos/{user}/{mine}"), ("POST", f"api/v1/repos/{user}/{mine}/transfer"),
               ("POST", f"api/v1/repos/{user}/{mine}/forks"), ("POST", f"api/v1/repos/{user}/{mine}/Transfer"),
               ("GET", f"api/v1/repos/{user}/{mine}/../{other}"),
               ("GET", f"api/v1/repos/{user}/{mine}%2F..%2F{other}"), ("POST", "api/v1/user/repos"),
               ("GET", f"{user}/{other}.git/info/refs?service=git-upload-pack"), ("GET", f"{user}/{mine}")]
    for method, path in outside:
        answer = requests.request(method, gateway.url + path, headers=auth, json={}, timeout=30)
        assert answer.status_code == 403, (method, path)
        assert answer.json()["message"].startswith("benchkit gateway:")
    assert gateway.idle()
    refused = [e for e in grant.requests if e["scope"] == "refused"]
    assert len(refused) == len(outside) and all(e["status"] == 403 for e in refused)
    assert len(audit_gateway(grant.requests, ["python-requests/"])) == len(outside)
    assert audit_gateway(grant.requests[:3], ["curl/"])  # a foreign User-Agent is found too


def test_the_global_issue_search_answers_for_the_trials_repository_alone(site):
    gateway, grant, client, (mine, _) = site
    answer = get(gateway, "api/v1/repos/issues/search",
                 params={"type": "issues", "state": "open", "owner": client.user, "limit": 50},
                 headers={"Authorization": f"token {grant.token}"})
    assert answer.status_code == 200
    assert [i["title"] for i in answer.json()] == ["Mine to read"]
    assert {i["repository"]["full_name"] for i in answer.json()} == {f"{client.user}/{mine}"}
    assert answer.headers.get("X-Total-Count") == "1"  # honest paging: the repository's count
    assert gateway.idle() and grant.requests[-1]["scope"] == "confined"


def test_the_hosts_urls_become_the_gateways(site, host):
    gateway, grant, client, (mine, _) = site
    client.post(f"/repos/{client.user}/{mine}/issues", json={"title": "Second"})
    answer = get(gateway, f"api/v1/repos/{client.user}/{mine}/issues", params={"limit": 1},
                 headers={"Authorization": f"token {grant.token}",
                          "Accept-Encoding": "gzip, deflate"})
    assert answer.status_code == 200
    assert host.url not in answer.text and gateway.url in answer.text
    assert answer.json()[0]["html_url"].startswith(gateway.url)
    link = answer.headers["Link"]
    assert host.url not in link and gateway.url in link and 'rel="next"' in link
    assert int(answer.headers["Content-Length"]) == len(answer.content)


@pytest.mark.skipif(shutil.which("git") is None, reason="no git")
def test_git_smart_http_clones_the_trials_repository_only_and_never_pushes(site, tmp_path):
    gateway, grant, client, (mine, other) = site
    base = gateway.url.replace("http://", f"http://benchkit:{grant.token}@")
    env = {"PATH": "/usr/bin:/bin", "HOME": str(tmp_path), "GIT_TERMINAL_PROMPT": "0",
           "GIT_CONFIG_NOSYSTEM": "1"}

    def git(*args, cwd=tmp_path):
        return subprocess.run(["git", *args], cwd=cwd, env=env, capture_output=True, text=True,
                              timeout=120)
    assert git("clone", f"{base}{client.user}/{mine}.git", "mine").returncode == 0
    refused = git("clone", f"{base}{client.user}/{other}.git", "other")
    assert refused.returncode != 0 and "403" in refused.stderr
    assert gateway.idle() and grant.requests[-1]["scope"] == "refused"
    work = tmp_path / "mine"
    (work / "NOTES.md").write_text("through the gateway\n")
    for args in (("add", "NOTES.md"), ("-c", "user.name=b", "-c", "user.email=b@x.y", "commit",
                                       "-qm", "notes")):
        assert git(*args, cwd=work).returncode == 0
    pushed = git("push", "-o", "repo.private=false", "origin", "HEAD:gw-branch", cwd=work)
    assert pushed.returncode != 0 and "403" in pushed.stderr
    assert gateway.idle() and grant.requests[-1]["scope"] == "refused"
    branches = [b["name"] for b in client.get(f"/repos/{client.user}/{mine}/branches")]
    assert "gw-branch" not in branches


def test_an_unreachable_host_is_a_502_the_audit_calls_a_host_error(dead_url):
    with Gateway(dead_url) as gateway:
        grant = gateway.issue("bench", "repo", "real-token")
        answer = get(gateway, "api/v1/repos/bench/repo",
                     headers={"Authorization": f"token {grant.token}"})
        assert gateway.idle()
    assert answer.status_code == 502 and "could not be reached" in answer.json()["message"]
    assert gateway_host_errors(grant.requests) == ["GET /api/v1/repos/bench/repo: HTTP 502"]


@pytest.mark.skipif(shutil.which("openssl") is None or shutil.which("socat") is None,
                    reason="needs openssl and socat")
def test_an_https_host_is_reached_with_its_certificate_checked(forge, tmp_path):
    cert, key = tmp_path / "cert.pem", tmp_path / "key.pem"
    subprocess.run(["openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "1",
                    "-subj", "/CN=127.0.0.1", "-addext", "subjectAltName=IP:127.0.0.1",
                    "-keyout", str(key), "-out", str(cert)], check=True, capture_output=True)
    port = int(forge.url.rstrip("/").rsplit(":", 1)[1])
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        tls_port = probe.getsockname()[1]
    front = subprocess.Popen(["socat", f"OPENSSL-LISTEN:{tls_port},bind=127.0.0.1,reuseaddr,fork,"
                              f"cert={cert},key={key},verify=0", f"TCP:127.0.0.1:{port}"],
                             stderr=subprocess.DEVNULL)  # its notes on the refused handshake
    try:
        https = f"https://127.0.0.1:{tls_port}/"
        _wait_for_port(tls_port)
        with Gateway(https, cafile=str(cert)) as trusted, Gateway(https) as untrusted:
            for gateway, status in ((trusted, 200), (untrusted, 502)):
                grant = gateway.issue(forge.user, "any", forge.token)
                answer = get(gateway, "api/v1/version",
                             headers={"Authorization": f"token {grant.token}"})
                assert answer.status_code == status, answer.text
    finally:
        front.kill()
        front.wait()


def _wait_for_port(port: int) -> None:
    deadline = time.monotonic() + 30  # bounds a hang; the loop ends on the connection
    while time.monotonic() < deadline:
        try:
            socket.create_connection(("127.0.0.1", port), timeout=1).close()
            return
        except OSError:
            time.sleep(0.05)
    raise AssertionError(f"nothing listens on {port}")


@pytest.mark.parametrize(("method", "path", "scope"), [
    ("GET", "/api/v1/repos/o/r", "repo"), ("PATCH", "/api/v1/repos/o/r", "refused"),
    ("POST", "/api/v1/repos/O/R/issues", "repo"), ("GET", "/api/v1/repos/o/r2/issues", "refused"),
    ("GET", "/api/v1/repos/o/r/../x", "refused"), ("GET", "/o/r.git/info/refs", "refused"),
    ("POST", "/o/r/git-receive-pack", "refused"), ("POST", "/api/v1/version", "refused"),
    ("POST", "/o/r/git-upload-pack", "refused"),  # not a fetch's Content-Type
    ("GET", "/api/v1/repos/issues/search", "confined"), ("GET", "/api/v1/orgs", "refused"),
    ("PATCH", "/api/v1/repos/o/R/issues/null/", "answered"),  # a jq result that was null
    ("GET", "/api/v1/repos/o/r/issues/-1/comments", "answered"),
    ("PUT", "/api/v1/repos/o/r/issues/x", "refused"), ("PATCH", "/api/v1/repos/o/r2/issues/null", "refused"),
    ("GET", "/api/v1/repos/o/r/x/null", "refused"), ("GET", "/api/v1/repos/o/r/issues/+1", "refused"),
    ("GET", "/api/v1/repos/o/r/issues/Pinned", "refused"), ("GET", "/api/v1/repos/o/r/pulls/1.x", "refused"),
    ("GET", "/api/v1/repos/o/r/git/commits/main", "refused"),  # Gitea reads a ref there
])
def test_the_scope_rule(method, path, scope):
    assert decide(method, path, "", "o", "r").scope == scope


def test_a_parameter_of_another_form_on_the_trials_route_gets_the_hosts_404_no_leak(
        site, host, monkeypatch):
    """`PATCH .../issues/null` (a jq result that was null) is an honest mistake: Gitea
    reads the index as 0 and answers 404. The gateway answers so without asking the host
    (the forge routes such paths its own way: Gitea's answer is the one to give); the same
    naming another repository, or off the route's methods or words, is refused."""
    gateway, grant, client, (mine, other) = site
    forwarded: list[str] = []
    forward = gateway.upstream.forward
    monkeypatch.setattr(gateway.upstream, "forward",
                        lambda method, target, *rest: forwarded.append(target) or
                        forward(method, target, *rest))
    user, body = client.user, {"state": "closed"}
    answered = [("PATCH", f"repos/{user}/{mine}/issues/null"), ("GET", f"repos/{user}/{mine}/pulls/x.diff"),
                ("GET", f"repos/{user.upper()}/{mine}/releases/null")]
    for method, path in answered:
        via = requests.request(method, f"{gateway.api_url}/{path}", json=body, timeout=30,
                               headers={"Authorization": f"token {grant.token}"})
        assert via.status_code == 404 and via.json() == {
            "errors": None, "message": "not found", "url": gateway.url + "api/swagger"}
        if isinstance(host, Gitea):  # byte for byte Gitea's, its address the gateway's
            direct = requests.request(method, f"{host.api_url}/{path}", json=body, timeout=30,
                                      headers={"Authorization": f"token {client.token}"})
            assert direct.status_code == 404, (method, path)
            assert via.content == gateway.to_gateway(direct.content), (method, path)
    refused = [("PATCH", f"repos/{user}/{other}/issues/null"), ("PUT", f"repos/{user}/{mine}/issues/null"),
               ("PATCH", f"repos/{user}/{mine}/issues/null/x"), ("PATCH", f"repos/{user}/{mine}/isues/null"),
               ("PATCH", f"repos/{user}/{mine}/issues/%2e%2e")]
    for method, path in refused:
        answer = requests.request(method, f"{gateway.api_url}/{path}", json=body, timeout=30,
                                  headers={"Authorization": f"token {grant.token}"})
        assert answer.status_code == 403, (method, path)
    assert gateway.idle() and forwarded == []
    assert [(e["scope"], e["status"]) for e in grant.requests] == \
        [("answered", 404)] * len(answered) + [("refused", 403)] * len(refused)
    assert len(audit_gateway(grant.requests, ["python-requests/"])) == len(refused)


def test_no_operation_of_gitea_s_own_is_answered_by_the_gateway(gitea):
    """Gitea's own description of its API, each path and method on the trial's repository:
    where a route of Gitea's has a word and the list a number (`issues/pinned`,
    `releases/latest`), Gitea finds something, so the gateway answers none of them."""
    described = requests.get(gitea.url + "swagger.v1.json", timeout=30).json()["paths"]
    answered = []
    for template, methods in described.items():
        path = "/api/v1" + template.replace("{owner}", "o").replace("{repo}", "r")
        path = re.sub(r"\{(index|id|\w*_id)\}", "1", path).replace("{sha}", "ab12" * 10)
        path = re.sub(r"\{\w+\}", "x", path)
        for method in {m.upper() for m in methods} & {"GET", "POST", "PUT", "PATCH", "DELETE"}:
            if decide(method, path, "", "o", "r", b"{}", "", "application/json").scope == "answered":
                answered.append((method, template))
    assert answered == []


def _raw(gateway, request: bytes) -> bytes:
    port = int(gateway.url.rstrip("/").rsplit(":", 1)[1])
    with socket.create_connection(("127.0.0.1", port), timeout=30) as conn:
        conn.sendall(request)
        answer = b""
        while chunk := conn.recv(65536):
            answer += chunk
    return answer


def test_a_route_that_names_another_repository_in_its_body_is_refused(site):
    gateway, grant, client, (mine, other) = site
    auth, user = {"Authorization": f"token {grant.token}"}, client.user
    base = gateway.url + f"api/v1/repos/{user}/{mine}"
    for route in ("dependencies", "blocks"):
        for body in ({"owner": user, "repo": other, "index": 1},
                     {"owner": user.upper(), "repo": other.upper(), "index": 1}):
            answer = requests.post(f"{base}/issues/1/{route}", json=body, headers=auth, timeout=30)
            assert answer.status_code == 403, (route, body, answer.text)
        answer = requests.post(f"{base}/issues/1/{route}", data=b"{not json", headers=auth,
                               timeout=30)
        assert answer.status_code == 403
    deps = requests.get(f"{base}/issues/1/dependencies", headers=auth, timeout=30)
    assert deps.status_code == 200 and deps.json() == []  # nothing of the other's was linked
    for body in ({"head": f"{user}2:main", "base": "main", "title": "x"},
                 {"head": f"{user}/{other}:main", "base": "main", "title": "x"}):
        assert requests.post(f"{base}/pulls", json=body, headers=auth,
                             timeout=30).status_code == 403, body
    assert get(gateway, f"api/v1/repos/{user}/{mine}/compare/main...{user}2:main",
               headers=auth).status_code == 403
    assert gateway.idle()
    refused = [e for e in grant.requests if e["scope"] == "refused"]
    assert len(refused) == 9 and len(audit_gateway(grant.requests, [])) == 9


def test_files_the_host_acts_on_cannot_be_written(site, host):
    """A merge-message template is the host's own text: merged without a title, Gitea
    commits it unchecked and acts on its closing keywords in any repository."""
    gateway, grant, client, (mine, other) = site
    auth, user = {"Authorization": f"token {grant.token}"}, client.user
    base = gateway.url + f"api/v1/repos/{user}/{mine}"

    def write(path, text, **fields):
        content = base64.b64encode(text.encode()).decode()
        return requests.post(f"{base}/contents/{path}", headers=auth, timeout=30,
                             json={"content": content, "message": "add", **fields})
    for path in (".gitea/default_merge_message/MERGE_TEMPLATE.md", ".GitHub/workflows/x.yml",
                 "%20.gitea/default_merge_message/MERGE_TEMPLATE.md"):
        assert write(path, f"Fixes {user}/{other}#1\n").status_code == 403, path
    assert write("notes/x.txt", "x", new_branch="feature").status_code == 201
    pull = requests.post(f"{base}/pulls", headers=auth, timeout=30,
                         json={"head": "feature", "base": "main", "title": "x"})
    merged = requests.post(f"{base}/pulls/{pull.json()['number']}/merge", headers=auth,
                           json={"Do": "merge"}, timeout=30)
    assert merged.status_code == 200, merged.text
    assert client.get(f"/repos/{user}/{other}/issues/1")["state"] == "open"
    assert gateway.idle()
    assert [e["scope"] for e in grant.requests].count("refused") == 3


def test_text_referring_to_another_repositorys_issue_is_refused(site):
    """A reference alone writes a cross-reference into the other issue's timeline; after
    a keyword it closes it. Gitea's contents API commits a file with "Add <path>" when
    no message is given: a path is text the host acts on too."""
    gateway, grant, client, (mine, other) = site
    auth, user = {"Authorization": f"token {grant.token}"}, client.user
    base = gateway.url + f"api/v1/repos/{user}/{mine}"
    content = base64.b64encode(b"x").decode()
    for path in (f"closes%20{user}/{other}%231", f"notes/Fixes%20{user}/{other}%231.md"):
        answer = requests.post(f"{base}/contents/{path}", json={"content": content},
                               headers=auth, timeout=30)
        assert answer.status_code == 403, (path, answer.text)
    for text in (f"see {user}/{other}#1", f"[that](/{user}/{other}/issues/1)"):
        answer = requests.post(f"{base}/issues/1/comments", json={"body": text},
                               headers=auth, timeout=30)
        assert answer.status_code == 403, (text, answer.text)
    assert requests.post(f"{base}/contents/see%20{user}/{other}%231", json={"content": content},
                         headers=auth, timeout=30).status_code == 403
    assert requests.post(f"{base}/issues/1/comments", json={"body": f"see #1 and {user}/{mine}#1"},
                         headers=auth, timeout=30).status_code == 201  # its own pass
    assert client.get(f"/repos/{user}/{other}/issues/1")["state"] == "open"
    assert not client.get(f"/repos/{user}/{other}/issues/1/timeline")  # nothing written


def test_refused_credentials_that_came_with_the_trials_token_are_the_trials_leak(site):
    gateway, grant, client, (mine, _) = site
    path, token = f"api/v1/repos/{client.user}/{mine}", grant.token
    bystander = gateway.issue(client.user, mine, client.token)  # another live trial
    for kwargs in ({"headers": {"Authorization": f"token {token}", "Sudo": "someone"}},
                   {"headers": {"Authorization": f"token {token}"}, "params": {"token": "x"}},
                   {"headers": {"Authorization": f"Digest {token}"}}):
        assert get(gateway, path, **kwargs).status_code == 401, kwargs
    assert gateway.idle() and [e["scope"] for e in grant.requests] == ["refused"] * 3
    assert bystander.requests == []  # it came with this trial's token, not the other's
    # a stray with the harness's own token: every live trial's audit finds it
    assert get(gateway, path, headers={"Authorization": f"token {client.token}"}).status_code == 401
    assert gateway.idle()
    for live in (grant, bystander):
        assert live.requests[-1]["scope"] == "refused" and audit_gateway(live.requests, [])
    assert get(gateway, path).status_code == 401  # no credential at all: a plain stray
    assert gateway.idle() and len(grant.requests) == 4 and bystander.requests[1:] == []
    assert client.token not in repr(grant.requests) + repr(gateway.strays)


def test_a_malformed_body_is_a_400_the_record_keeps(site):
    gateway, grant, client, (mine, _) = site
    head = (f"POST /api/v1/repos/{client.user}/{mine}/issues HTTP/1.1\r\nHost: x\r\n"
            f"Authorization: token {grant.token}\r\nConnection: close\r\n")
    for framing in ("Transfer-Encoding: chunked\r\n\r\nzz\r\n", "Content-Length: x\r\n\r\n",
                    "Content-Length: -5\r\n\r\n"):
        answer = _raw(gateway, (head + framing).encode())
        assert answer.startswith(b"HTTP/1.1 400"), (framing, answer[:80])
    assert gateway.idle()
    assert [(e["scope"], e["status"]) for e in grant.requests] == [("refused", 400)] * 3


def test_the_confined_search_keeps_the_user_filters(site):
    gateway, grant, client, (mine, _) = site
    user = client.user
    grant.user = user
    client.post(f"/repos/{user}/{mine}/issues", json={"title": "Assigned", "assignees": [user]})
    auth = {"Authorization": f"token {grant.token}"}

    def titles(**params):
        answer = get(gateway, "api/v1/repos/issues/search", params={"type": "issues", **params},
                     headers=auth)
        return answer.status_code, sorted(i["title"] for i in answer.json() if answer.ok)
    assert titles(assigned="true") == (200, ["Assigned"])
    assert titles(created="true") == (200, ["Assigned", "Mine to read"])
    assert titles(owner="nobody-else") == (200, [])
    assert titles(owner=user.upper()) == (200, ["Assigned", "Mine to read"])
    assert titles(review_requested="true")[0] == 403


def _ended_mid_request(gateway, grant, path: str, token: str) -> tuple[list, bytes]:
    """(the trial's record, the answer) for a request whose body is half sent when the
    trial ends and finished only once the grant is dead."""
    body = b'{"title": "late"}'
    port = int(gateway.url.rstrip("/").rsplit(":", 1)[1])
    with socket.create_connection(("127.0.0.1", port), timeout=30) as conn:
        conn.sendall(f"POST {path} HTTP/1.1\r\nHost: x\r\nAuthorization: token {token}\r\n"
                     f"Content-Type: application/json\r\nContent-Length: {len(body)}\r\n"
                     "Connection: close\r\n\r\n".encode() + body[:5])
        with gateway.changed:  # 30 s bounds a hang; the wait ends when the gateway counts it
            assert gateway.changed.wait_for(lambda: gateway.busy == 1, timeout=30)
        assert not gateway.idle(timeout=0.1)  # half a body: the gateway is still busy
        ending = threading.Thread(target=gateway.end, args=(grant,))
        ending.start()
        with gateway.changed:
            assert gateway.changed.wait_for(lambda: not grant.live, timeout=30)
        conn.sendall(body[5:])
        ending.join(timeout=60)
        assert not ending.is_alive()
        return list(grant.requests), conn.recv(64)


def test_a_request_in_flight_when_the_trial_ends_is_in_its_record(site):
    gateway, grant, client, (mine, _) = site
    path = f"/api/v1/repos/{client.user}/{mine}/issues"
    recorded, answer = _ended_mid_request(gateway, grant, path, grant.token)
    assert answer.startswith(b"HTTP/1.1 201")
    assert [(e["method"], e["status"]) for e in recorded] == [("POST", 201)]


def test_a_stray_in_flight_when_the_trial_ends_is_its_leak_too(site):
    """A refused credential without the trial's token (the harness's own here) may be the
    trial's own tool, sent from the background just as the trial ends: its record waits."""
    gateway, grant, client, (mine, _) = site
    path = f"/api/v1/repos/{client.user}/{mine}/issues"
    recorded, answer = _ended_mid_request(gateway, grant, path, client.token)
    assert answer.startswith(b"HTTP/1.1 401")
    assert [(e["scope"], e["status"]) for e in recorded] == [("refused", 401)]
    assert "a stray request while this trial ran" in recorded[0]["reason"]


def _sent_before_the_answer(gateway, head: str, blocks: int, block: bytes) -> tuple[bytes, int]:
    """(the answer, the bytes of body sent when it came) for a request whose body is
    `blocks` blocks, sent block by block while the gateway's answer is watched for."""
    port = int(gateway.url.rstrip("/").rsplit(":", 1)[1])
    sent = 0
    with socket.create_connection(("127.0.0.1", port), timeout=30) as conn:
        conn.sendall(head.encode())
        for _ in range(blocks):
            conn.settimeout(0.001)
            try:
                answer = conn.recv(4096)
                if answer:
                    return answer, sent
            except TimeoutError:
                pass
            conn.settimeout(30)
            try:
                conn.sendall(block)
            except OSError:  # the gateway closed: its answer is in the socket's buffer
                break
            sent += len(block)
        conn.settimeout(30)
        return conn.recv(4096), sent


def test_a_body_over_the_limit_is_refused_as_it_streams_in_never_held(forge):
    """A declared Content-Length over the limit is answered 413 at once; a chunked body
    at the chunk that passes it: either way long before the client has sent it all.
    The trial's bodies in all are capped too."""
    from benchkit.gateway.framing import Limits
    client = Client(forge.url, forge.token)
    name = f"gw-limit-{uuid.uuid4().hex[:6]}"
    client.post("/user/repos", json={"name": name, "auto_init": True})
    try:
        with Gateway(forge.url, limits=Limits(request_bytes=64 * 1024,
                                              trial_bytes=96 * 1024)) as gateway:
            grant = gateway.issue(client.user, name, forge.token)
            path = f"/api/v1/repos/{client.user}/{name}/issues"
            head = (f"POST {path} HTTP/1.1\r\nHost: x\r\nAuthorization: token {grant.token}\r\n"
                    "Content-Type: application/json\r\n")
            block = b"x" * 16 * 1024
            gib = 1024 ** 3
            answer, sent = _sent_before_the_answer(
                gateway, head + f"Content-Length: {gib}\r\n\r\n", gib // len(block), block)
            assert answer.startswith(b"HTTP/1.1 413") and sent < 1024 * 1024, (answer[:60], sent)
            chunk = b"%x\r\n%s\r\n" % (len(block), block)
            answer, sent = _sent_before_the_answer(
                gateway, head + "Transfer-Encoding: chunked\r\n\r\n", 1024 ** 2, chunk)
            assert answer.startswith(b"HTTP/1.1 413") and sent < 1024 * 1024, (answer[:60], sent)
            # each fits one request's limit, two not a trial's (a file: no text the host parses)
            body = {"content": base64.b64encode(b"x" * 37 * 1024).decode(), "message": "m"}
            auth = {"Authorization": f"token {grant.token}"}
            files = gateway.url + path.lstrip("/").replace("/issues", "/contents/")
            first = requests.post(files + "a.txt", json=body, headers=auth, timeout=30)
            second = requests.post(files + "b.txt", json=body, headers=auth, timeout=30)
            assert (first.status_code, second.status_code) == (201, 413)
            assert gateway.idle()
        assert [(e["status"], e["scope"]) for e in grant.requests] == [
            (413, "refused"), (413, "refused"), (201, "repo"), (413, "refused")]
        refused = [f for f in audit_gateway(grant.requests, ["python-requests/"]) if "refused" in f]
        assert len(refused) == 3
    finally:
        delete_repo(client, client.user, name)


def test_pipelined_and_smuggled_requests_are_each_judged_on_their_own(site):
    """Two requests in one write, and a body framed both by Content-Length and chunked
    (the gateway reads the chunks, as the host would, and sends its own framing): the
    request for another repository behind each is refused, never forwarded."""
    gateway, grant, client, (mine, other) = site
    auth = f"Authorization: token {grant.token}\r\n"
    theirs = (f"GET /api/v1/repos/{client.user}/{other}/issues HTTP/1.1\r\nHost: x\r\n{auth}"
              "Connection: close\r\n\r\n")
    pipelined = (f"GET /api/v1/repos/{client.user}/{mine} HTTP/1.1\r\nHost: x\r\n{auth}\r\n"
                 + theirs)
    body = '{"body": "hi"}'
    smuggled = (f"POST /api/v1/repos/{client.user}/{mine}/issues/1/comments HTTP/1.1\r\n"
                f"Host: x\r\n{auth}Content-Type: application/json\r\n"
                f"Content-Length: {len(body) + 5 + len(theirs)}\r\n"
                f"Transfer-Encoding: chunked\r\n\r\n{len(body):x}\r\n{body}\r\n0\r\n\r\n" + theirs)
    for raw in (pipelined, smuggled):
        answers = _raw(gateway, raw.encode())
        assert answers.count(b"HTTP/1.1 ") == 2 and b"HTTP/1.1 403" in answers, answers[:200]
    assert gateway.idle()
    assert [(e["method"], e["scope"]) for e in grant.requests] == [
        ("GET", "repo"), ("GET", "refused"), ("POST", "repo"), ("GET", "refused")]
