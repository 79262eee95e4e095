"""The post-run audit: did the agent reach anything outside its arm?

It does not trust the run's own bookkeeping. From independent evidence:
- the calls the model proposed, as they appear in the message stream, are re-checked
  against the arm's tool policy (the guard's `decide_tool`, the predicate the driver
  applied in-band): a call that ran although the policy denies it is a leak;
- the tools the agent was offered must be exactly the arm's;
- on the forge, the host's request log for the run window: every request must carry
  the arm's declared client User-Agent (a leak shows as another client's).
Any finding makes the trial invalid: it is recorded, never scored.
"""

from __future__ import annotations

import re
from datetime import datetime

import requests

from .driver import ToolGuard
from .transcript import tool_calls

MCP_PREFIX = "mcp__{}__"


def audit_offered(offered: list[str], tool: dict, mcp_servers: dict) -> list[str]:
    """Findings about the tool list the agent was shown."""
    if tool.get("kind") == "shell":
        foreign = [name for name in offered if name != "Bash"]
    else:
        prefixes = tuple(MCP_PREFIX.format(name) for name in mcp_servers)
        foreign = [name for name in offered if not (prefixes and name.startswith(prefixes))]
    return [f"the agent was offered a foreign tool: {name}" for name in foreign]


def audit_transcript(events: list[dict], policy: ToolGuard) -> list[str]:
    """Findings about the calls the model proposed: each that ran is re-checked."""
    results = {e["id"]: e for e in events if e["event"] == "tool_result"}
    findings = []
    for call in tool_calls(events):
        if not _ran(call, results.get(call["id"])):
            continue
        decision = policy(call["name"], call.get("input") or {})
        if not decision.allowed:
            findings.append(f"{call['name']} call ran although the policy denies it "
                            f"({decision.reason}): {_brief(call.get('input'))}")
    return findings


def _ran(call: dict, result: dict | None) -> bool:
    """A call ran unless the guard denied it or the runtime refused it before it ran
    (the CLI's own input checks answer with a <tool_use_error>)."""
    if call.get("allowed") is False:
        return False
    if call.get("allowed") is None and result is not None and result.get("is_error") \
            and result.get("excerpt", "").lstrip().startswith("<tool_use_error>"):
        return False
    return True


def audit_requests(log: list[dict], user_agent: str, since: datetime, until: datetime,
                   owner: str | None = None, repo: str | None = None) -> list[str]:
    """Findings in the host's request log: in [since, until], every request except
    those about another repository must carry a User-Agent starting with `user_agent`."""
    other_repo = re.compile(r"/repos/([^/]+)/([^/?]+)")
    findings = []
    for entry in log:
        when = _when(entry.get("started"))
        if when is None or not since.timestamp() <= when <= until.timestamp():
            continue
        path = str(entry.get("path", ""))
        if path.startswith("/_forge/"):
            continue
        named = other_repo.search(path)
        if named and owner and repo and (named.group(1), named.group(2)) != (owner, repo):
            continue  # another cell's repository on the same host
        agent = str(entry.get("user_agent") or "")
        if not agent.startswith(user_agent):
            findings.append(f"{entry.get('method')} {path} came with User-Agent {agent!r}, "
                            f"not the arm's {user_agent!r}")
    return findings


def fetch_request_log(host_url: str, token: str | None, timeout: float = 10) -> list[dict] | None:
    """The forge's request log (GET /_forge/requests); None where the host keeps none
    (a live Gitea)."""
    headers = {"Authorization": f"token {token}"} if token else {}
    try:
        response = requests.get(host_url.rstrip("/") + "/_forge/requests", headers=headers,
                                timeout=timeout)
        if response.status_code != 200:
            return None
        data = response.json()
    except (requests.RequestException, ValueError):
        return None
    if isinstance(data, dict):
        data = data.get("requests")
    return data if isinstance(data, list) else None


def _when(value) -> float | None:
    if isinstance(value, (int, float)):
        return float(value)
    if isinstance(value, str):
        try:
            return datetime.fromisoformat(value.replace("Z", "+00:00")).timestamp()
        except ValueError:
            return None
    return None


def _brief(value, limit: int = 200) -> str:
    text = str(value)
    return text if len(text) <= limit else text[:limit] + "..."
