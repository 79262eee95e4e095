"""The post-run audit: did the agent reach anything outside its arm?

It does not trust the run's own bookkeeping. From independent evidence:
- the calls the model proposed, as they appear in the message stream, are re-checked
  against the arm's guard (its `decide_tool`, the predicate the driver applied
  in-band): a call that ran although the guard denies it is a leak;
- the tools the agent was offered must be exactly the arm's;
- on every host, the gateway's record of the trial (benchkit.gateway.server): the
  agent's tools reach the host only through it, with a token valid for this trial
  alone; a request the gateway refused (outside the trial's repository) is a leak, and
  every request must carry one of the arm's declared client User-Agents (a leak shows
  as another client's);
- on the forge, besides, the host's own request log: behind the gateway the forge
  sees a token minted for this trial alone (benchkit.gitea.admin), held to the same
  User-Agent rule (defence in depth).
Any finding makes the trial invalid: it is recorded, never scored. The audit fails
closed: a record it cannot read makes the trial `unaudited` (never valid), and a 5xx
answer to the agent's own request makes it a harness error (the host's fault, or the
gateway's when the host could not be reached, not the arm's).
"""

from __future__ import annotations

import msgspec

from benchkit.evidence import (
    AUDIT,
    TOOL_RESULT,
    AuditAccount,
    Event,
    GatewayRequest,
    ToolCallEvent,
    ToolResultEvent,
)
from benchkit.scrub import scrub
from benchkit.tool import ToolSpec

from .driver import ToolGuard
from .events import tool_calls

MCP_PREFIX = "mcp__{}__"


class AuditEvent(msgspec.Struct, tag_field="event", tag=AUDIT, kw_only=True):
    """The audit's account in the trial's transcript (its last event): what each record
    was checked against, or why it was unread, and what was found. Older transcripts
    have no `gateway` or `host_errors` (unset: left out when written back)."""
    gateway: str | msgspec.UnsetType = msgspec.UNSET  # the gateway's record of the trial
    request_log: str = ""  # the forge's own log of the trial's host token
    leaks: list[str] = msgspec.field(default_factory=list)
    host_errors: list[str] | msgspec.UnsetType = msgspec.UNSET

    def builtins(self) -> AuditAccount:
        """As the transcript stores it, `event` first."""
        return msgspec.to_builtins(self)

    @classmethod
    def read(cls, stored: dict) -> AuditEvent | None:
        """A stored transcript's audit event; None when it is not one."""
        try:
            return msgspec.convert(stored, cls)
        except msgspec.ValidationError:
            return None


def audit_offered(offered: list[str], tool: ToolSpec, mcp_servers: dict) -> list[str]:
    """Findings about the tool list the agent was shown."""
    if tool.kind == "shell":
        foreign = [name for name in offered if name != "Bash"]
    else:
        prefixes = tuple(MCP_PREFIX.format(name) for name in mcp_servers)
        foreign = [name for name in offered if not (prefixes and name.startswith(prefixes))
                   and name not in tool.runtime_tools]
    return [f"the agent was offered a foreign tool: {name}" for name in foreign]


def audit_transcript(events: list[Event], guard: ToolGuard, secrets=()) -> list[str]:
    """Findings about the calls the model proposed: each that ran is re-checked. A
    finding quotes the call shortened, its secrets scrubbed before it is cut."""
    results = {e["id"]: e for e in events if e["event"] == TOOL_RESULT}
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


def _ran(call: ToolCallEvent, result: ToolResultEvent | None) -> bool:
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


def audit_gateway(requests: list[GatewayRequest], user_agents) -> list[str]:
    """Findings in the gateway's record of one trial: each request it refused (outside
    the trial's repository), and, when the arm declares User-Agents, each request that
    came with another (a foreign client)."""
    findings = [f"{e.get('method')} {e.get('path')} was refused by the gateway: "
                f"{e.get('reason') or 'outside the trial'}" for e in requests
                if e.get("scope") == "refused"]
    if user_agents:
        findings += audit_requests([{**e, "token_id": ""} for e in requests], user_agents, "")
    return findings


def gateway_host_errors(requests: list[GatewayRequest]) -> list[str]:
    """The trial's requests answered with a 5xx (by the host, or by the gateway when
    the host could not be reached)."""
    return audit_host_errors([{**e, "token_id": ""} for e in requests], "")


def audit_host_errors(log: list[dict], token_id: str) -> list[str]:
    """The agent's requests the host answered with a 5xx: the host's fault, not the arm's."""
    return [f"{e.get('method')} {e.get('path')}: HTTP {e.get('status')}" for e in log
            if e.get("token_id") == token_id and isinstance(e.get("status"), int)
            and e["status"] >= 500]


def _brief(value, limit: int = 200) -> str:
    text = str(value)
    return text if len(text) <= limit else text[:limit] + "..."
