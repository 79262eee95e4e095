"""Who a trial's trouble is charged to, from evidence the agent cannot forge: the host's
control requests, its own timing, the tool's files. (The harness's own stops are
benchkit.trial.pauses'.)

    host-5xx      an agent's request the host answered 5xx, never answered (the
                  gateway's 502, `unreachable`: no connection, or one dropped) or
                  answered in a form the gateway could not read (`unreadable`) is the
                  arm's, unless the host is shown failing on its own: the control request
                  the gateway sent at once (benchkit.gateway.control: one of the same
                  kind, on an object of the run's own that no agent reaches) failed too.
                  A failure the agent provoked (a condition of its own repository, a
                  body the host chokes on) leaves the control answered: charged, whatever
                  a replay on another repository shows
    host-slow     a trial a cap ended (the backstop, the turn cap) whose time went mostly
                  to a slow host: of each request's wait for the host's answer (`host_s`,
                  or its whole wait when the trial ended first), the host owes what its
                  control showed: as long as the control itself took (all of it when the
                  control failed); a request answered before it needed a control owes
                  nothing. Those shares, overlapping ones once, within the trial, make up
                  HOST_SHARE of its time, while the trial never had more than MAX_AT_ONCE
                  requests at the host at once (a flood is the agent's load)
    tool-missing  the arm's tool vanished mid-trial: a file the curated bin directory
                  links to is gone when the trial ends (checked by the harness, outside
                  the sandbox, whose read-only root the agent cannot change), and one of
                  the agent's commands failed on it: bwrap's own start error ("Can't
                  find source path") or the shell's "No such file or directory"/"command
                  not found". A tool that runs and crashes is the arm's.
"""

from __future__ import annotations

from benchkit.agent.events import tool_calls
from benchkit.evidence import TOOL_RESULT, Event, GatewayRequest, HostTime
from benchkit.gateway.control import failed

HOST_SHARE = 0.5      # of a capped trial's time, in the host's shares: the host's cap
MAX_AT_ONCE = 4       # requests at the host at once beyond which the load is the agent's
_START_ERRORS = ("bwrap: Can't find source path", "No such file or directory",
                 "command not found")


def host_share(entry: GatewayRequest) -> float:
    """Of one request's wait for the host, the seconds its control shows the host owes
    (see the module's docstring)."""
    control, took = entry.get("control"), entry.get("host_s", entry.get("duration"))
    if not control or not isinstance(took, (int, float)):
        return 0.0
    if failed(control):
        return float(took)
    seconds = control.get("s")
    return min(float(took), float(seconds)) if isinstance(seconds, (int, float)) else 0.0


def host_time(requests: list[GatewayRequest], started: float,
              duration_s: float) -> HostTime | None:
    """What the host owes of a trial that began at `started` (Unix time) and ran
    `duration_s`: {"host_s", "of_s", "answers"}; None when it owes nothing."""
    end = started + duration_s
    spans = []
    for entry in requests:
        share, at = host_share(entry), entry.get("started")
        if share <= 0 or not isinstance(at, (int, float)):
            continue
        low, high = max(at, started), min(at + share, end)
        if high > low:
            spans.append((low, high))
    if not spans:
        return None
    return {"host_s": round(_union(spans), 1), "of_s": round(duration_s, 1),
            "answers": len(spans)}


def host_slow(requests: list[GatewayRequest], found: HostTime | None) -> bool:
    """Whether the host took a capped trial's time (see the module's docstring)."""
    if not found or found["of_s"] <= 0:
        return False
    return found["host_s"] >= HOST_SHARE * found["of_s"] and _most_at_once(requests) <= MAX_AT_ONCE


def describe_host_time(found: HostTime | None) -> str:
    """"host answers took 70 s of 60 s (2 answers its controls showed slow)"."""
    if not found:
        return ""
    return (f"host answers took {found['host_s']:.0f} s of {found['of_s']:.0f} s "
            f"({found['answers']} answer{'s' if found['answers'] != 1 else ''} its controls "
            f"showed slow)")


def host_failing(requests: list[GatewayRequest]) -> list[str]:
    """The agent's requests the host failed on its own, one line each: answered 5xx,
    never answered or answered unreadably, while the control request sent at once
    failed too."""
    shown = []
    for entry in requests:
        status, control = entry.get("status"), entry.get("control")
        cause = (f"no answer ({entry['unreachable']})" if entry.get("unreachable") else
                 f"an answer the gateway could not read ({entry['unreadable']})"
                 if entry.get("unreadable") else
                 f"HTTP {status}" if isinstance(status, int) and status >= 500 else None)
        if cause is None or control is None or not failed(control):
            continue
        said = control["status"]
        said = f"HTTP {said}" if isinstance(said, int) else f"no answer ({said})"
        shown.append(f"{entry.get('method')} {entry.get('path')}: {cause}, and the harness's "
                     f"own control {control.get('kind')} right after: {said}")
    return shown


def tool_missing(transcript: list[Event], vanished: dict[str, str]) -> str | None:
    """Why the arm's tool could not start mid-trial, when the harness found files of it
    gone (`vanished`: the bin directory's name -> the file it linked to) and a command
    of the agent failed on one of them; None otherwise."""
    if not vanished:
        return None
    ran = {call.get("id") for call in tool_calls(transcript) if call.get("name") == "Bash"}
    named = (*vanished, *vanished.values())
    for event in transcript:
        if event["event"] != TOOL_RESULT or event.get("id") not in ran \
                or not event.get("is_error"):
            continue
        line = next((line for line in (event.get("excerpt") or "").splitlines()
                     if any(words in line for words in _START_ERRORS)
                     and any(name in line for name in named)), None)
        if line is not None:
            gone = ", ".join(sorted(set(vanished.values())))
            return (f"the arm's tool vanished mid-trial ({gone} gone); a command could not "
                    f"start it: {line.strip()[:200]}")
    return None


def _union(spans: list[tuple[float, float]]) -> float:
    total, reach = 0.0, float("-inf")
    for low, high in sorted(spans):
        if high > reach:
            total += high - max(low, reach)
            reach = high
    return total


def _most_at_once(requests: list[GatewayRequest]) -> int:
    """The most requests the trial had at the gateway at one moment."""
    edges = []
    for entry in requests:
        at, took = entry.get("started"), entry.get("duration")
        if isinstance(at, (int, float)) and isinstance(took, (int, float)):
            edges += [(at, 1), (at + took, -1)]
    most = current = 0
    for _, step in sorted(edges, key=lambda edge: (edge[0], edge[1])):
        current += step
        most = max(most, current)
    return most
