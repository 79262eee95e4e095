"""Who a trial's trouble is charged to, from evidence the agent cannot forge: the host's
time, its health, the tool's files.

    host-slow     a trial a cap ended (the backstop, the turn cap) whose time went
                  mostly to the host: the gateway times the host's answer to each
                  request (`host_s`: from the request forwarded to the answer's head,
                  so neither a slow upload nor a slow reader counts); answers that each
                  took SLOW_ANSWER_S or more, overlapping ones once, within the trial,
                  make up HOST_SHARE of its time, while the trial never had more than
                  MAX_AT_ONCE requests at the host at once (a flood is the agent's load)
    host-5xx      an agent's request answered 5xx is the arm's, unless the host is
                  shown failing on its own: the harness's own health request, made by
                  the gateway right after the 5xx (GET /api/v1/version, `health` on the
                  request's entry), failed too. A 5xx the agent provoked (a condition of
                  its own repository, a milestone that does not exist) leaves the host
                  healthy: charged, whatever a replay on another repository shows
    tool-missing  the arm's tool vanished mid-trial: a file the curated bin directory
                  links to is gone when the trial ends (checked by the harness, outside
                  the sandbox, whose read-only root the agent cannot change), and one of
                  the agent's commands failed on it: bwrap's own start error ("Can't
                  find source path") or the shell's "No such file or directory"/"command
                  not found". A tool that runs and crashes is the arm's.
"""

from __future__ import annotations

from benchkit.agent.events import tool_calls

SLOW_ANSWER_S = 5.0   # no answer of a healthy host to one request takes this long
HOST_SHARE = 0.5      # of a capped trial's time, in slow answers: the host's cap
MAX_AT_ONCE = 4       # requests at the host at once beyond which the load is the agent's
_START_ERRORS = ("bwrap: Can't find source path", "No such file or directory",
                 "command not found")


def host_time(requests: list[dict], started: float, duration_s: float) -> dict | None:
    """What the host's slow answers took of a trial that began at `started` (Unix
    time) and ran `duration_s`: {"host_s", "of_s", "answers"}; None when none was slow."""
    end = started + duration_s
    spans = []
    for entry in requests:
        took = entry.get("host_s", entry.get("duration"))
        at = entry.get("started")
        if not isinstance(took, (int, float)) or not isinstance(at, (int, float)) \
                or took < SLOW_ANSWER_S:
            continue
        low, high = max(at, started), min(at + took, end)
        if high > low:
            spans.append((low, high))
    if not spans:
        return None
    return {"host_s": round(_union(spans), 1), "of_s": round(duration_s, 1),
            "answers": len(spans)}


def host_slow(requests: list[dict], found: dict | None) -> bool:
    """Whether the host took a capped trial's time (see the module's docstring)."""
    if not found or found["of_s"] <= 0:
        return False
    return found["host_s"] >= HOST_SHARE * found["of_s"] and _most_at_once(requests) <= MAX_AT_ONCE


def describe_host_time(found: dict | None) -> str:
    """"host answers took 70 s of 60 s (2 answers of 5 s or more)"."""
    if not found:
        return ""
    return (f"host answers took {found['host_s']:.0f} s of {found['of_s']:.0f} s "
            f"({found['answers']} answer{'s' if found['answers'] != 1 else ''} of "
            f"{SLOW_ANSWER_S:.0f} s or more)")


def host_failing(requests: list[dict]) -> list[str]:
    """The agent's requests the host failed on its own, one line each: answered 5xx
    while the harness's own health request right after failed too, or never answered
    (the gateway's 502: the host could not be reached)."""
    shown = []
    for entry in requests:
        status, health = entry.get("status"), entry.get("health")
        if entry.get("unreachable"):  # the gateway's own 502: no answer came from the host
            shown.append(f"{entry.get('method')} {entry.get('path')}: the host could not be "
                         f"reached ({entry['unreachable']})")
            continue
        if not (isinstance(status, int) and status >= 500) or health is None:
            continue
        if not isinstance(health, int) or health >= 500:
            said = f"HTTP {health}" if isinstance(health, int) else f"no answer ({health})"
            shown.append(f"{entry.get('method')} {entry.get('path')}: HTTP {status}, and the "
                         f"harness's own health request right after: {said}")
    return shown


def tool_missing(transcript: list[dict], vanished: dict[str, str]) -> str | None:
    """Why the arm's tool could not start mid-trial, when the harness found files of it
    gone (`vanished`: the bin directory's name -> the file it linked to) and a command
    of the agent failed on one of them; None otherwise."""
    if not vanished:
        return None
    ran = {call.get("id") for call in tool_calls(transcript) if call.get("name") == "Bash"}
    named = (*vanished, *vanished.values())
    for event in transcript:
        if event.get("event") != "tool_result" or event.get("id") not in ran \
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


def _most_at_once(requests: list[dict]) -> int:
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
