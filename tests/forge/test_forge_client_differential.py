"""The forge held to a real Gitea for the real clients (tests/client_differential.py):
every task's reference of tea, gitea-axi and gitea-mcp, played with the real tool on both hosts
through the same recording proxy, makes the same sequence of (method, route, status),
and each of its requests is an operation the trial gateway forwards;
a difference must be accepted, with its reason, in
tests/data/differential-clients-accepted.yaml, and every entry there must still be
needed."""

import sys
from pathlib import Path

import pytest
from conftest import CHECKOUT, real_tool

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
import client_differential as clients

from benchkit.documents import load_tree
from benchkit.gateway.scope import decide

TREE = load_tree(CHECKOUT)


def test_every_accepted_difference_has_a_reason():
    for entry in clients.load_accepted():
        assert {"arm", "task", "reason"} <= set(entry) and len(entry["reason"].split()) >= 2, entry


def test_judge_flags_unlisted_and_stale():
    found = [clients.Difference("tea", "a", [("GET", "/x", 200)], [("GET", "/x", 404)])]
    entries = [{"arm": "tea", "task": "a", "reason": "r r"}, {"arm": "tea", "task": "b", "reason": "r r"},
               {"arm": "gitea-axi", "task": "*", "reason": "r r"}]
    unlisted, stale = clients.judge("tea", found, entries)
    assert unlisted == [] and stale == [entries[1]]
    unlisted, _ = clients.judge("tea", [clients.Difference("tea", "c", [], [])], entries)
    assert [d.task for d in unlisted] == ["c"]


def test_reads_sent_at_once_compare_in_any_order():
    reads = [("GET", "/b", 200), ("GET", "/a", 200)]
    assert clients.in_order([*reads, ("POST", "/c", 201), *reads]) == \
        [("GET", "/a", 200), ("GET", "/b", 200), ("POST", "/c", 201), ("GET", "/a", 200), ("GET", "/b", 200)]
    assert clients.route("/api/v1/repos/o/r/commits/" + "ab" * 20 + "/status?x=1", "o", "r") == \
        "/api/v1/repos/{repo}/commits/{sha}/status"
    assert clients.route("/api/v1/repos/o/r/pulls/10/reviews/41/comments", "o", "r") == \
        "/api/v1/repos/{repo}/pulls/10/reviews/{id}/comments"
    assert clients.route("/api/v1/repos/o/r/issues/3/labels/7", "o", "r") == \
        "/api/v1/repos/{repo}/issues/3/labels/{id}"


def test_the_proxy_records_what_it_forwards(forge):
    import requests
    proxy = clients.RecordingProxy(forge.url)
    try:
        answer = requests.get(proxy.url + "api/v1/version", timeout=10)
        missing = requests.get(proxy.url + "api/v1/repos/nobody/nothing",
                               headers={"Authorization": f"token {forge.token}"}, timeout=10)
    finally:
        proxy.close()
    assert answer.json()["version"] and missing.status_code == 404
    assert proxy.take() == [("GET", "/api/v1/version", 200), ("GET", "/api/v1/repos/nobody/nothing", 404)]


@pytest.mark.slow
@pytest.mark.parametrize("name", ["tea", "gitea-axi", "gitea-mcp"])
def test_the_real_client_makes_the_same_requests_on_both_hosts(name, gitea):
    from benchkit.forge import Forge

    real_tool(name)
    arm = TREE.arms[name]
    sent: list = []
    with Forge() as forge:
        mine = clients.play_arm(arm, forge, TREE, sent)
    theirs = clients.play_arm(arm, gitea, TREE, sent)
    assert mine and set(mine) == set(theirs)
    # every request the tool made is an operation the trial gateway forwards
    decisions = {(m, p): decide(m, p.partition("?")[0], p.partition("?")[2], "o", "r")
                 for m, p, _ in sent}
    assert not {k: d.reason for k, d in decisions.items() if not d.allowed}
    unlisted, stale = clients.judge(name, clients.differences(name, mine, theirs),
                                    clients.load_accepted())
    assert not unlisted, "differences not accepted:\n" + "\n".join(map(str, unlisted))
    assert not stale, f"accepted differences that no longer occur: {stale}"
