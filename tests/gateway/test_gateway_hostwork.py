"""The host's work on what a request carries, bounded by the gateway (benchkit.gateway.
hostwork) and its budgets: each bound refuses past it and forwards within it, and its
check is linear; on a real Gitea the worst text the bounds let through costs the host
well under a second a request, while the red team's bodies and queries never reach it
(R04's 300 KB comment, R15's 32 lists of 32k milestones, R01's 40 KB label filter); a
trial's downloads (R18) and, on a host this machine runs, the host's CPU time count
against the trial's budgets, and a request past one is refused (a leak: the agent's own,
a failure of its arm)."""

import base64
import json
import threading
import time
import uuid

import pytest
import requests

from benchkit.gateway.framing import Limits
from benchkit.gateway.hostcpu import HostCpu
from benchkit.gateway.hostwork import (
    LIST_ITEMS,
    MARKUP_CHARS,
    QUERY_BYTES,
    REFERENCE_WORK,
    TEXT_BYTES,
)
from benchkit.gateway.scope import decide
from benchkit.gateway.server import Gateway
from benchkit.gitea import Client, delete_repo

JSON = "application/json"
R = "/api/v1/repos/owner/r"
DEADLINE = 60


def asked(method: str, path: str, body: dict | None = None, query: str = ""):
    data = json.dumps(body).encode() if body is not None else b""
    return decide(method, path, query, "owner", "r", data, "owner", JSON if data else "")


def fill(unit: str, size: int) -> str:
    return (unit * (size // len(unit) + 1))[:size]


def references(count: int, size: int) -> str:
    """`count` references at the end of `size` characters of words: the host's worst."""
    tail = "#1\n" * count
    return fill("a ", size - len(tail)) + tail


WITHIN = {
    "a comment of the largest size": ("POST", f"{R}/issues/1/comments", {"body": fill("lorem ", TEXT_BYTES)}, ""),
    "Markdown punctuation to the bound": ("POST", f"{R}/issues/1/comments", {"body": fill("*a_", MARKUP_CHARS * 3 // 2)}, ""),
    "references to the bound": ("POST", f"{R}/issues", {"title": "t", "body": references(REFERENCE_WORK // TEXT_BYTES, TEXT_BYTES)}, ""),
    "many references in short text": ("POST", f"{R}/issues/1/comments", {"body": references(120, 1024)}, ""),
    "a file's content, never parsed": ("POST", f"{R}/contents/a.md", {"content": base64.b64encode(b"#1 *a_" * 200_000).decode()}, ""),
    "a list to the bound": ("POST", f"{R}/issues/1/labels", {"labels": list(range(LIST_ITEMS))}, ""),
    "a filter's items to the bound": ("GET", f"{R}/issues", None, "milestones=" + ",".join(["1"] * LIST_ITEMS)),
}
PAST = {  # what each is refused for
    "R04, a 300 KB comment": ("POST", f"{R}/issues/1/comments", {"body": fill("*a_", 300_000)}, "bytes of text"),
    "a comment a byte too large": ("POST", f"{R}/issues/1/comments", {"body": fill("lorem ", TEXT_BYTES + 1)}, "bytes of text"),
    "R02, emphasis past the bound": ("PATCH", f"{R}/issues/1", {"body": fill("*a_", MARKUP_CHARS * 3 // 2 + 3)}, "Markdown punctuation"),
    "nested lists": ("POST", f"{R}/issues/1/comments", {"body": fill("1. ", 8000)}, "Markdown punctuation"),
    "one reference too many": ("POST", f"{R}/issues", {"title": "t", "body": references(REFERENCE_WORK // TEXT_BYTES + 1, TEXT_BYTES)}, "issue references"),
    "references in a title": ("POST", f"{R}/issues", {"title": references(200, 2000)}, "issue references"),
    "references in a commit message": ("POST", f"{R}/contents/a.md", {"content": "aGk=", "message": references(200, 2000)}, "issue references"),
    "references in a path": ("POST", f"{R}/contents/{fill('%231%20', 3000)}.md", {"content": "aGk="}, "issue references"),
    "two strings past the request's text": ("POST", f"{R}/issues", {"title": fill("a ", TEXT_BYTES), "body": fill("b ", TEXT_BYTES), "ref": "x"}, "characters of text"),
    "a list past the bound": ("POST", f"{R}/issues/1/labels", {"labels": list(range(LIST_ITEMS + 1))}, "a list of"),
    "review comments past the bound": ("POST", f"{R}/pulls/1/reviews", {"body": "b", "comments": [{"body": "x", "path": "a"}] * (LIST_ITEMS + 1)}, "a list of"),
}
QUERIES = {  # (path, query): the reason's words
    "R01, a 40 KB label filter": (f"{R}/issues", "state=all&limit=1&labels=" + "x" * 40_000, "a query of"),
    "R11, through the confined search": ("/api/v1/repos/issues/search", "labels=" + "x" * 40_000, "a query of"),
    "R15, 32k milestones": (f"{R}/issues", "milestones=" + ",".join(["1"] * 32_000), "a query of"),
    "milestones past the bound": (f"{R}/issues", "milestones=" + ",".join(["1"] * (LIST_ITEMS + 1)), "items"),
    "the search's milestones": ("/api/v1/repos/issues/search", "milestones=" + ",".join(["1"] * (LIST_ITEMS + 1)), "items"),
    "a filter repeated, short each": (f"{R}/issues", "&".join(["labels=bug"] * 500), "a query of"),
    "a long keyword": (f"{R}/issues", "q=" + "word " * 1000, "a query of"),
}


@pytest.mark.parametrize("name", sorted(WITHIN))
def test_what_the_bounds_let_through(name):
    method, path, body, query = WITHIN[name]
    decision = asked(method, path, body, query)
    assert decision.allowed, decision.reason


@pytest.mark.parametrize("name", sorted(PAST))
def test_a_body_past_a_bound_is_refused(name):
    method, path, body, words = PAST[name]
    decision = asked(method, path, body)
    assert not decision.allowed and words in decision.reason, decision.reason


@pytest.mark.parametrize("name", sorted(QUERIES))
def test_a_query_past_a_bound_is_refused(name):
    path, query, words = QUERIES[name]
    decision = asked("GET", path, None, query)
    assert not decision.allowed and words in decision.reason, decision.reason
    assert len(query) > QUERY_BYTES or "items" in words


def test_a_ten_mebibyte_body_is_decided_in_well_under_a_second():
    started = time.process_time()  # CPU time: the machine's load does not count
    for unit in ("*a_", "#1\n", "lorem ", "[a]("):
        asked("POST", f"{R}/contents/a.md", {"content": "aGk=", "message": fill(unit, 10 << 20)})
        asked("POST", f"{R}/issues/1/labels", {"labels": [fill(unit, 64)] * 150_000})
    assert time.process_time() - started < 2.0


@pytest.fixture
def trial(gitea):
    """A repository of the session Gitea's user, a gateway in front of the host: the
    gateway, its grant, the client."""
    client = Client(gitea.url, gitea.token)
    name = f"hostwork-{uuid.uuid4().hex[:6]}"
    client.post("/user/repos", json={"name": name, "auto_init": True})
    client.post(f"/repos/{client.user}/{name}/issues", json={"title": "talk here"})
    with Gateway(gitea.url) as gateway:
        grant = gateway.issue(client.user, name, gitea.token)
        yield gateway, grant, client
    delete_repo(client, client.user, name)


def worst_allowed() -> list[str]:
    """The costliest text of each kind Gitea's parsing is superlinear in that the bounds
    let through (benchmarks/hostwork_bench.py times them on Gitea's own code)."""
    bodies = [references(REFERENCE_WORK // TEXT_BYTES, TEXT_BYTES)]
    for unit in ("*a_", "_*a", "[a](", "~a", "`a", "1. ", "* ", "+ ", "> "):
        size = max(n for n in range(len(unit), TEXT_BYTES + 1, len(unit))
                   if not asked("POST", f"{R}/issues/1/comments", {"body": fill(unit, n)}).reason)
        bodies.append(fill(unit, size) + fill("a ", TEXT_BYTES - size))
    return bodies


@pytest.mark.slow
def test_the_worst_text_the_bounds_allow_costs_a_real_gitea_well_under_a_second(gitea, trial):
    gateway, grant, client = trial
    clock = HostCpu(gitea.url)
    auth = {"Authorization": f"token {grant.token}"}
    before = clock.seconds()
    assert before is not None  # the session's Gitea is a process of this machine
    for body in worst_allowed():
        answer = requests.post(f"{grant.api_url}/repos/{client.user}/{grant.repo}/issues/1/comments",
                               json={"body": body}, headers=auth, timeout=DEADLINE)
        assert answer.status_code == 201, answer.text[:200]
    assert gateway.idle(DEADLINE)
    slowest = max(e["host_s"] for e in grant.requests)
    assert slowest < 1.0, [e["host_s"] for e in grant.requests]
    assert clock.seconds() - before < 5.0  # all ten, Gitea's CPU


@pytest.mark.slow
def test_the_red_teams_bodies_and_queries_never_reach_a_real_gitea(gitea, trial):
    """R04's 300 KB comment burnt 29 CPU-seconds of Gitea's after its client left, R15's
    32 lists of thousands of milestones held requests 49 s: each refused at once now, and
    Gitea's CPU in the seconds after stays under 2 s."""
    gateway, grant, client = trial
    clock, auth = HostCpu(gitea.url), {"Authorization": f"token {grant.token}"}
    issues = f"{grant.api_url}/repos/{client.user}/{grant.repo}/issues"
    before = clock.seconds()
    r04 = requests.post(f"{issues}/1/comments", json={"body": fill("*a_", 300_000)},
                        headers=auth, timeout=DEADLINE)
    statuses: list[int] = []

    def r15() -> None:
        statuses.append(requests.get(issues, params={"milestones": ",".join(["1"] * 10_000)},
                                     headers=auth, timeout=DEADLINE).status_code)
    threads = [threading.Thread(target=r15) for _ in range(32)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(DEADLINE)
    assert gateway.idle(DEADLINE)
    assert r04.status_code == 403 and statuses == [403] * 32
    assert max(e["duration"] for e in grant.requests) < 2.0
    assert all(e["scope"] == "refused" and "host_s" not in e for e in grant.requests)
    gateway.idle(DEADLINE)
    time.sleep(2)  # what the host does after the client has gone (R04: 29 s of CPU)
    assert clock.seconds() - before < 2.0
    assert client.get(f"/repos/{client.user}/{grant.repo}/issues/1/comments") == []


@pytest.mark.slow
def test_the_host_cpu_a_trial_costs_counts_against_its_budget(gitea, trial):
    """A host this machine runs: its CPU time while the trial runs is the trial's, and
    past the suite's limit the trial's requests are refused."""
    gateway, grant, client = trial
    assert HostCpu(gitea.url).pid == gitea._process.pid
    gateway.limits = Limits(host_cpu_seconds=0.05)
    auth = {"Authorization": f"token {grant.token}"}
    for _ in range(200):
        answer = requests.get(f"{grant.api_url}/repos/{client.user}/{grant.repo}/issues",
                              params={"state": "all"}, headers=auth, timeout=DEADLINE)
        if answer.status_code == 403:
            break
    assert answer.status_code == 403, "the host's CPU never passed 0.05 s"
    assert gateway.idle(DEADLINE)  # the record is kept just after the answer is out
    assert "the host's CPU time while the trial ran passed its limit" in grant.requests[-1]["reason"]
    assert grant.requests[0]["status"] == 200


def test_a_trials_downloads_are_counted_and_cut_at_its_budget(host):
    """R18: 506 MB streamed out of 16 parallel fetches counted against nothing. The
    answers a trial's tools receive count against its download budget: the answer that
    passes it is cut off there (refused on the record), and the next request is refused."""
    client = Client(host.url, host.token)
    name = f"downloads-{uuid.uuid4().hex[:6]}"
    client.post("/user/repos", json={"name": name, "auto_init": True})
    try:
        big = base64.b64encode(b"lorem ipsum " * 40_000).decode()  # 480 KB
        client.post(f"/repos/{client.user}/{name}/contents/big.txt", json={"content": big})
        with Gateway(host.url, limits=Limits(download_bytes=300_000)) as gateway:
            grant = gateway.issue(client.user, name, host.token)
            auth = {"Authorization": f"token {grant.token}"}
            raw = f"{grant.api_url}/repos/{client.user}/{name}/raw/big.txt"
            with pytest.raises(requests.RequestException):
                requests.get(raw, headers=auth, timeout=DEADLINE).raise_for_status()
            after = requests.get(raw, headers=auth, timeout=DEADLINE)
            assert gateway.idle(DEADLINE)
        first, second = grant.requests
        assert first["scope"] == "refused" and "downloads passed" in first["reason"]
        assert 0 < first["bytes_out"] <= 300_000 <= grant.downloaded
        assert after.status_code == 403 and "downloads passed" in second["reason"]
    finally:
        delete_repo(client, client.user, name)
