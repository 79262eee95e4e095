"""The post-run audit: did the agent reach anything outside its arm?

It does not trust the run's own bookkeeping. From independent evidence:
- the calls the model proposed, as they appear in the message stream, are re-checked
  against the arm's tool policy (the guard's `decide_tool`, the predicate the driver
  applied in-band): a call that ran although the policy denies it is a leak;
- the tools the agent was offered must be exactly the arm's;
- on the forge, the host's request log: the agent holds a token minted for its cell
  alone (`mint_agent_token`), and every request made with it must carry the arm's
  declared client User-Agent (a leak shows as another client's). Other cells, other
  arms and the harness itself use other tokens, so cells side by side never blur.
  A live Gitea keeps no such log: there the audit rests on the two checks above.
Any finding makes the trial invalid: it is recorded, never scored.
"""

from __future__ import annotations

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


def audit_requests(log: list[dict], user_agents, token_id: str) -> list[str]:
    """Findings in the host's request log: every request made with the agent's token
    (known by its identity, `token_id`) must carry a User-Agent starting with one of
    `user_agents` (a prefix, or several). Requests made with any other token are not
    this agent's."""
    allowed = (user_agents,) if isinstance(user_agents, str) else tuple(user_agents)
    expected = (f"the arm's {allowed[0]!r}" if len(allowed) == 1
                else f"one of the arm's {', '.join(map(repr, allowed))}")
    findings = []
    for entry in log:
        if entry.get("token_id") != token_id:
            continue
        agent = str(entry.get("user_agent") or "")
        if not agent.startswith(allowed):
            findings.append(f"{entry.get('method')} {entry.get('path')} came with User-Agent "
                            f"{agent!r}, not {expected}")
    return findings


def mint_agent_token(host_url: str, token: str | None, timeout: float = 10) -> tuple[str, str]:
    """A token of the host's user for one agent alone, and its identity in the request
    log, from the forge's admin route (POST /_forge/tokens). HostError where the host
    will not mint one."""
    from benchkit.errors import HostError
    try:
        response = _admin("POST", host_url, "tokens", token, timeout, json={})
        minted = response.json() if response.status_code == 201 else None
    except (requests.RequestException, ValueError) as exc:
        raise HostError(f"cannot mint the agent's token on {host_url}: {type(exc).__name__}") from None
    if not isinstance(minted, dict) or not minted.get("token") or not minted.get("token_id"):
        raise HostError(f"cannot mint the agent's token on {host_url}: HTTP {response.status_code}")
    return minted["token"], minted["token_id"]


def revoke_agent_token(host_url: str, token: str | None, token_id: str, timeout: float = 10) -> bool:
    """Revoke an agent's token (DELETE /_forge/tokens/<token_id>); whether it went."""
    try:
        response = _admin("DELETE", host_url, f"tokens/{token_id}", token, timeout)
    except requests.RequestException:
        return False
    return response.status_code == 200


def fetch_request_log(host_url: str, token: str | None, timeout: float = 10, *,
                      token_id: str | None = None) -> list[dict] | None:
    """The forge's request log (GET /_forge/requests), only the requests made with the
    token `token_id` names when given; None where the host keeps none (a live Gitea)."""
    try:
        response = _admin("GET", host_url, "requests", token, timeout,
                          params={"token_id": token_id} if token_id else None)
        if response.status_code != 200:
            return None
        data = response.json()
    except (requests.RequestException, ValueError):
        return None
    if isinstance(data, dict):
        data = data.get("requests")
    return data if isinstance(data, list) else None


def _admin(method: str, host_url: str, path: str, token: str | None, timeout: float,
           **kwargs) -> requests.Response:
    """One call to the forge's admin routes (/_forge/PATH), which want an admin's token."""
    headers = {"Authorization": f"token {token}"} if token else {}
    return requests.request(method, f"{host_url.rstrip('/')}/_forge/{path}", headers=headers,
                            timeout=timeout, **kwargs)


def _brief(value, limit: int = 200) -> str:
    text = str(value)
    return text if len(text) <= limit else text[:limit] + "..."
