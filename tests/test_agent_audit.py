"""The post-run audit on recorded evidence: proposed calls re-checked against the arm's
real guard, the offered tool list, and a forge's request log in the run window."""

from datetime import datetime, timedelta, timezone
from pathlib import Path

import requests

from benchkit.agent.audit import (audit_offered, audit_requests, audit_transcript,
                                  fetch_request_log)
from benchkit.isolation import Guard
from benchkit.spec import load_arm

CHECKOUT = Path(__file__).resolve().parents[1]
RAW_API = load_arm(CHECKOUT / "arms.d/raw-api.yaml")
MCP = load_arm(CHECKOUT / "tests/arms/gitea-mcp-pypi.yaml")


def call(command, allowed, id_="t1"):
    return {"event": "tool_call", "id": id_, "name": "Bash", "input": {"command": command},
            "allowed": allowed, "reason": None}


def result(text, is_error=False, id_="t1"):
    return {"event": "tool_result", "id": id_, "bytes": len(text), "is_error": is_error,
            "excerpt": text}


def test_a_call_that_ran_against_the_policy_is_a_leak():
    policy = Guard.for_arm(RAW_API).decide_tool
    events = [call("/usr/bin/curl -s http://127.0.0.1/", True), result("{}")]
    leaks = audit_transcript(events, policy)
    assert len(leaks) == 1 and "/usr/bin/curl" in leaks[0]


def test_denied_and_refused_calls_did_not_run_and_are_no_leak():
    policy = Guard.for_arm(RAW_API).decide_tool
    events = [call("python3 -c 1", False, "a"), result("denied", True, "a"),
              call("sleep 100 & python3", None, "b"),
              result("<tool_use_error>Blocked: sleep</tool_use_error>", True, "b"),
              call("curl -s http://127.0.0.1/", True, "c"), result("{}", id_="c")]
    assert audit_transcript(events, policy) == []


def test_a_call_no_guard_was_asked_about_is_rechecked():
    policy = Guard.for_arm(RAW_API).decide_tool
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


def test_the_request_log_is_read_in_the_run_window_for_this_repository():
    start = datetime(2025, 1, 1, 12, 0, tzinfo=timezone.utc)
    end = start + timedelta(seconds=30)
    at = lambda seconds: (start + timedelta(seconds=seconds)).timestamp()  # noqa: E731
    log = [
        {"method": "GET", "path": "/api/v1/repos/bench/r1/issues", "user_agent": "curl/8.5", "started": at(1)},
        {"method": "PATCH", "path": "/api/v1/repos/bench/r1/issues/2", "user_agent": "python-requests/2.32", "started": at(2)},
        {"method": "GET", "path": "/api/v1/user", "user_agent": "", "started": at(3)},
        {"method": "GET", "path": "/api/v1/repos/bench/other/issues", "user_agent": "Go-http-client/1.1", "started": at(4)},
        {"method": "POST", "path": "/api/v1/user/repos", "user_agent": "benchkit/0.1", "started": at(-5)},
        {"method": "DELETE", "path": "/api/v1/repos/bench/r1", "user_agent": "benchkit/0.1", "started": at(40)},
    ]
    leaks = audit_requests(log, "curl/", start, end, owner="bench", repo="r1")
    assert len(leaks) == 2
    assert "python-requests/2.32" in leaks[0] and "PATCH" in leaks[0]
    assert "/api/v1/user came with User-Agent ''" in leaks[1]


def test_the_forge_serves_its_request_log_and_a_live_host_has_none(forge, dead_url):
    requests.get(forge.api_url + "/version", headers={"User-Agent": "curl/8"}, timeout=10)
    log = fetch_request_log(forge.url, forge.token)
    assert any(e["path"] == "/api/v1/version" and e["user_agent"] == "curl/8" for e in log)
    assert fetch_request_log(forge.url, None) is None  # an admin's token only
    assert fetch_request_log(dead_url, "token", timeout=2) is None
