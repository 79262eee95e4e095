"""The post-run audit: did the agent reach anything outside its arm?

It does not trust the run's own bookkeeping. From independent evidence:
- the calls the model proposed, as they appear in the message stream, are re-checked
  against the arm's guard (its `decide_tool`, the predicate the driver applied
  in-band): a call that ran although the guard denies it is a leak;
- the tools the agent was offered must be exactly the arm's;
- on the forge, the host's request log: the agent holds a token minted for its cell
  alone (benchkit.gitea.admin), and every request made with it must carry the arm's
  declared client User-Agent (a leak shows as another client's). Other cells, other
  arms and the harness itself use other tokens, so cells side by side never blur.
  A live Gitea keeps no such log: there the audit rests on the two checks above.
Any finding makes the trial invalid: it is recorded, never scored. The audit fails
closed: on a host that keeps a request log, a log it cannot read makes the trial
`unaudited` (never valid), and a 5xx the host answered the agent's own request with
makes it a harness error (the host's fault, not the arm's).
"""

from __future__ import annotations

from benchkit.scrub import scrub

from .driver import ToolGuard
from .events import tool_calls

MCP_PREFIX = "mcp__{}__"


def audit_offered(offered: list[str], tool: dict, mcp_servers: dict) -> list[str]:
    """Findings about the tool list the agent was shown."""
    if tool.get("kind") == "shell":
        foreign = [name for name in offered if name != "Bash"]
    else:
        prefixes = tuple(MCP_PREFIX.format(name) for name in mcp_servers)
        foreign = [name for name in offered if not (prefixes and name.startswith(prefixes))]
    return [f"the agent was offered a foreign tool: {name}" for name in foreign]


def audit_transcript(events: list[dict], guard: ToolGuard, secrets=()) -> list[str]:
    """Findings about the calls the model proposed: each that ran is re-checked. A
    finding quotes the call shortened, its secrets scrubbed before it is cut."""
    results = {e["id"]: e for e in events if e["event"] == "tool_result"}
    findings = []
    for call in tool_calls(events):
        if not _ran(call, results.get(call["id"])):
            continue
        decision = guard(call["name"], call.get("input") or {})
        if not decision.allowed:
            findings.append(f"{call['name']} call ran although the policy denies it "
                            f"({scrub(str(decision.reason), secrets)}): "
                            f"{_brief(scrub(str(call.get('input')), secrets))}")
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


def audit_host_errors(log: list[dict], token_id: str) -> list[str]:
    """The agent's requests the host answered with a 5xx: the host's fault, not the arm's."""
    return [f"{e.get('method')} {e.get('path')}: HTTP {e.get('status')}" for e in log
            if e.get("token_id") == token_id and isinstance(e.get("status"), int)
            and e["status"] >= 500]


def _brief(value, limit: int = 200) -> str:
    text = str(value)
    return text if len(text) <= limit else text[:limit] + "..."
