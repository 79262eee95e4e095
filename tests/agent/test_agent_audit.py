"""The post-run audit on recorded evidence: proposed calls re-checked against the arm's
real guard, the offered tool list, and a forge's request log of the agent's own token."""

from concurrent.futures import ThreadPoolExecutor

import pytest
import requests
from conftest import CHECKOUT

from benchkit.agent.audit import (
    AuditEvent,
    audit_offered,
    audit_requests,
    audit_transcript,
)
from benchkit.documents import load_arm
from benchkit.errors import HostError
from benchkit.gitea.admin import fetch_request_log, mint_agent_token, revoke_agent_token
from benchkit.isolation import Guard

RAW_API = load_arm(CHECKOUT / "arms.d/raw-api.yaml")
MCP = load_arm(CHECKOUT / "tests/arms/gitea-mcp-pypi.yaml")


def call(command, allowed, id_="t1"):
    return {"event": "tool_call", "id": id_, "name": "Bash", "input": {"command": command},
            "allowed": allowed, "reason": None}


def result(text, is_error=False, id_="t1"):
    return {"event": "tool_result", "id": id_, "bytes": len(text), "is_error": is_error,
            "excerpt": text}


def test_a_call_that_ran_against_the_policy_is_a_leak():
    policy = Guard.for_tool(RAW_API.id, RAW_API.tool).decide_tool
    events = [call("/usr/bin/curl -s http://127.0.0.1/", True), result("{}")]
    leaks = audit_transcript(events, policy)
    assert len(leaks) == 1 and "/usr/bin/curl" in leaks[0]


def test_denied_and_refused_calls_did_not_run_and_are_no_leak():
    policy = Guard.for_tool(RAW_API.id, RAW_API.tool).decide_tool
    events = [call("python3 -c 1", False, "a"), result("denied", True, "a"),
              call("sleep 100 & python3", None, "b"),
              result("<tool_use_error>Blocked: sleep</tool_use_error>", True, "b"),
              call("curl -s http://127.0.0.1/", True, "c"), result("{}", id_="c")]
    assert audit_transcript(events, policy) == []


def test_a_call_no_guard_was_asked_about_is_rechecked():
    policy = Guard.for_tool(RAW_API.id, RAW_API.tool).decide_tool
    events = [call("wget http://127.0.0.1/", None), result("saved")]
    assert audit_transcript(events, policy)


def test_the_offered_tools_must_be_exactly_the_arms():
    assert audit_offered(["Bash"], RAW_API.tool, {}) == []
    assert audit_offered(["Bash", "Read"], RAW_API.tool, {}) == [
        "the agent was offered a foreign tool: Read"]
    servers = {"gitea": {}}
    assert audit_offered(["mcp__gitea__get_issue"], MCP.tool, servers) == []
    assert audit_offered(["mcp__gitea__get_issue", "Bash"], MCP.tool, servers) == [
        "the agent was offered a foreign tool: Bash"]


def test_the_request_log_is_read_for_the_agents_token_alone():
    log = [
        {"method": "GET", "path": "/api/v1/repos/bench/r1/issues", "user_agent": "curl/8.5", "token_id": "aaa"},
        {"method": "PATCH", "path": "/api/v1/repos/bench/r1/issues/2", "user_agent": "python-requests/2.32", "token_id": "aaa"},
        {"method": "GET", "path": "/api/v1/user", "user_agent": "", "token_id": "aaa"},
        # Another cell's agent, on this very repository's path or not, and the harness.
        {"method": "GET", "path": "/api/v1/repos/bench/r1/issues", "user_agent": "Go-http-client/1.1", "token_id": "bbb"},
        {"method": "POST", "path": "/api/v1/user/repos", "user_agent": "benchkit/0.1", "token_id": "ccc"},
        {"method": "GET", "path": "/api/v1/version", "user_agent": "python-urllib/3.11", "token_id": None},
    ]
    leaks = audit_requests(log, "curl/", "aaa")
    assert len(leaks) == 2
    assert "python-requests/2.32" in leaks[0] and "PATCH" in leaks[0]
    assert "/api/v1/user came with User-Agent ''" in leaks[1]
    assert audit_requests(log, "Go-http-client/", "bbb") == []


def test_cells_side_by_side_on_one_forge_are_told_apart_by_their_tokens(forge):
    """Two agents of different arms (curl, and an MCP server talking through httpx) and
    the harness hit one forge at the same time, even the same repository: each agent's
    audit sees its own requests only. A request with an agent's token and another
    client's User-Agent is that agent's leak."""
    (curl_token, curl_id), (mcp_token, mcp_id) = (mint_agent_token(forge.url, forge.token)
                                                  for _ in range(2))
    path = "api/v1/repos/bench/shared/issues"
    requests.post(forge.api_url + "/user/repos", json={"name": "shared"}, timeout=10,
                  headers={"Authorization": f"token {forge.token}", "User-Agent": "benchkit/0.1"})
    clients = [(curl_token, "curl/8.5.0"), (mcp_token, "python-httpx/0.28.1"),
               (forge.token, "benchkit/0.1")]

    def hit(client):
        token, agent = client
        for _ in range(10):
            requests.get(forge.url + path, timeout=10,
                         headers={"Authorization": f"token {token}", "User-Agent": agent})

    with ThreadPoolExecutor(max_workers=3) as pool:  # interleaved in time
        list(pool.map(hit, clients))
    log = fetch_request_log(forge.url, forge.token)
    assert audit_requests(log, "curl/", curl_id) == []
    assert audit_requests(log, "python-httpx/", mcp_id) == []
    assert sum(e["token_id"] == curl_id for e in log) == 10
    assert len(fetch_request_log(forge.url, forge.token, token_id=curl_id)) == 10

    requests.get(forge.url + path, timeout=10,
                 headers={"Authorization": f"token {curl_token}", "User-Agent": "python-requests/2.32"})
    leaks = audit_requests(fetch_request_log(forge.url, forge.token), "curl/", curl_id)
    assert leaks == [f"GET /{path} came with User-Agent 'python-requests/2.32', not the arm's 'curl/'"]
    assert audit_requests(fetch_request_log(forge.url, forge.token), "python-httpx/", mcp_id) == []


def test_an_agents_token_is_revoked_and_a_live_host_mints_none(forge, dead_url):
    token, identity = mint_agent_token(forge.url, forge.token)
    assert revoke_agent_token(forge.url, forge.token, identity) is True
    assert requests.get(forge.api_url + "/user", headers={"Authorization": f"token {token}"},
                        timeout=10).status_code == 401
    assert revoke_agent_token(forge.url, forge.token, identity) is False
    with pytest.raises(HostError, match="cannot mint"):
        mint_agent_token(forge.url, token)  # not an admin's token
    with pytest.raises(HostError, match="cannot mint"):
        mint_agent_token(dead_url, "token", timeout=2)


def test_the_forge_serves_its_request_log_and_a_live_host_has_none(forge, dead_url):
    requests.get(forge.api_url + "/version", headers={"User-Agent": "curl/8"}, timeout=10)
    log = fetch_request_log(forge.url, forge.token)
    assert any(e["path"] == "/api/v1/version" and e["user_agent"] == "curl/8" for e in log)
    assert fetch_request_log(forge.url, None) is None  # an admin's token only
    assert fetch_request_log(dead_url, "token", timeout=2) is None


# The audit's account as transcripts stored it: today's, and one from before the gateway
# (request_log and leaks only).
STORED_AUDITS = [
    {"event": "audit", "gateway": "checked: 2 request(s) against the trial's repository (the "
     "arm declares no User-Agent)", "request_log": "checked for host errors only: the arm "
     "declares no User-Agent", "leaks": [], "host_errors": ["PATCH /api/v1/repos/o/r/issues/2: "
                                                            "HTTP 500"]},
    {"event": "audit", "request_log": "checked: every request made with this agent's token "
     "came with User-Agent 'curl/'", "leaks": ["GET /api/v1/user came with User-Agent 'x'"]},
]


@pytest.mark.parametrize("stored", STORED_AUDITS, ids=["today", "before-the-gateway"])
def test_a_stored_audit_event_reads_as_the_record_and_writes_back_the_same(stored):
    audit = AuditEvent.read(stored)
    assert audit is not None and audit.builtins() == stored
    assert list(audit.builtins()) == list(stored)  # the same fields in the same order
    assert audit.leaks == stored["leaks"]
    assert AuditEvent.read({"event": "stop", "stop": "end"}) is None  # another event
