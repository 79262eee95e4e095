"""The store's trials one at a time: which ones (filters, newest first) and, for one,
what happened: outcome, failure class, the checker's differences, tokens per
component, turns, and its transcript read as a conversation.

`benchkit show` prints these views and the HTML report's trial pages render them, so
the terminal and the browser say the same thing. Samples are read whole (the report's
loader decodes only the fields it aggregates); their transcripts sit beside them.
"""

from __future__ import annotations

import fnmatch
import json
import os
import re
from dataclasses import dataclass, field

from benchkit.agent.audit import AuditEvent
from benchkit.agent.service import describe as describe_service
from benchkit.cost import components, cost, token_figure
from benchkit.evidence import AUDIT, INIT, REPLAY, RESULT, STOP, TEXT, TOOL_CALL, TOOL_RESULT
from benchkit.replays import PENDING, FailureReplay
from benchkit.report.matrix import DEFAULT_WEIGHTS
from benchkit.sample import COMPONENTS, PROVOKED
from benchkit.store import Store

PASSED = "passed"
TERMINAL_CHARS = 600
WHY_CHARS = 80  # of the "why" column in `benchkit show`'s table


@dataclass
class Trials:
    """The trials chosen from a store, newest first, and the lines it could not read."""

    samples: list = field(default_factory=list)
    problems: list = field(default_factory=list)


def load_trials(store: Store, *, arms=(), tasks=(), outcomes=()) -> Trials:
    """Every sample whose arm and task match one of the globs given (all when none) and
    whose outcome is one of `outcomes` ("failures": every outcome but passed)."""
    if not store.root.is_dir():
        raise FileNotFoundError(f"{store.root}: no such store directory")
    chosen = [s for s in store.samples()
              if _matches(s.get("arm", ""), arms) and _matches(s.get("task", ""), tasks)
              and _outcome_matches(s.get("outcome"), outcomes)]
    chosen.sort(key=lambda s: str(s.get("started_at", "")), reverse=True)
    return Trials(chosen, list(store.problems))


def failures_first(samples: list) -> list:
    """The same samples, those that did not pass first (each group keeps its order)."""
    return sorted(samples, key=lambda s: s.get("outcome") == PASSED)


def find_trial(store: Store, sample_id: str) -> dict:
    """The one sample whose id starts with sample_id; LookupError when none or several."""
    found = [s for s in load_trials(store).samples if str(s.get("id", "")).startswith(sample_id)]
    if len(found) != 1:
        why = "no trial" if not found else f"{len(found)} trials"
        raise LookupError(f"{why} in {store.root} with an id starting {sample_id!r}"
                          + ("" if not found else ": give more of it"))
    return found[0]


def _matches(value: str, patterns) -> bool:
    return not patterns or any(fnmatch.fnmatchcase(value, p) for p in patterns)


def _outcome_matches(outcome, outcomes) -> bool:
    if not outcomes:
        return True
    return outcome in outcomes or ("failures" in outcomes and outcome != PASSED)


# --- one trial -----------------------------------------------------------------------

def read_transcript(store: Store, sample: dict) -> tuple[list | None, str]:
    """(the transcript's events, "") or (None, why not): none was recorded, the file
    the sample names is gone or unreadable, or it lies outside the store (a line merged
    from elsewhere may name any file of this machine)."""
    relative = sample.get("transcript")
    if not relative:
        return None, "none recorded"
    path = store.root / relative
    if not os.path.realpath(path).startswith(os.path.realpath(store.root) + os.sep):
        return None, f"{relative} lies outside the store: not read"
    try:
        events = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        return None, f"{path} is gone (the sample names it; it was recorded)"
    except (OSError, ValueError) as error:
        return None, f"{path} cannot be read: {error}"
    if not isinstance(events, list):
        return None, f"{path} cannot be read: not a list of events"
    return events, ""


def tokens(sample: dict, weights: dict | None = None) -> dict:
    """Tokens per component (COMPONENTS order) and their cost-equivalent total."""
    usage = sample.get("usage") or {}
    split = components(usage.get("input", 0), usage.get("cache_write", 0),
                       usage.get("cache_write_1h"), usage.get("cache_read", 0),
                       usage.get("output", 0))
    weights = {**DEFAULT_WEIGHTS, **(weights or {})}
    return {"components": dict(zip(COMPONENTS, split, strict=True)),
            "cost": cost(split, tuple(weights[c] for c in COMPONENTS)),
            "estimated": bool(sample.get("usage_estimated")) or sample.get("driver") == "replay"}


def trial_view(store: Store, sample: dict, weights: dict | None = None,
               replays: dict[str, FailureReplay] | None = None) -> dict:
    """What a trial page and `benchkit show ID` show, as plain data (the failure
    replay's verdict as its record, benchkit.replays). `replays`: the store's failure
    replays (Store.failure_replays), when already read."""
    events, missing = read_transcript(store, sample)
    if replays is None:
        replays = store.failure_replays()
    return {
        "sample": sample,
        "summary": summary(sample),
        "tokens": tokens(sample, weights),
        "conversation": conversation(events) if events is not None else None,
        "transcript_missing": missing,
        "failure_replay": replays.get(sample.get("id", "")),
    }


def summary(sample: dict) -> str:
    """Why a trial did not pass, in one line ("" when it passed)."""
    if sample.get("outcome") == PASSED:
        return ""
    differences = sample.get("differences") or []
    if differences:
        more = f" (+{len(differences) - 1} more)" if len(differences) > 1 else ""
        return differences[0] + more
    error = (sample.get("error") or "").strip()
    if sample.get("failure_class") == PROVOKED:  # a failure with a host's error text
        return f"{PROVOKED}: {error.splitlines()[0] if error else ''}"
    return error.splitlines()[0] if error else (sample.get("failure_class") or "")


def conversation(events: list) -> list[dict]:
    """The transcript as turns: {"who": agent|tool|harness, "kind", "title", "body"}.
    A call is shown with its input, a denial with the guard's reason, a result with
    what the tool returned (as recorded: an excerpt) under the call it answers."""
    calls = {e.get("id"): e for e in events if e.get("event") == TOOL_CALL}
    turns = []
    for event in events:
        kind = event.get("event")
        if kind == TEXT and (event.get("text") or "").strip():
            turns.append(_turn("agent", "text", "says", event["text"]))
        elif kind == TOOL_CALL:
            turns.append(_call(event))
        elif kind == TOOL_RESULT:
            turns.append(_result(event, calls.get(event.get("id"))))
        elif kind in NOTES:
            turns.append(_turn("harness", "note", kind, NOTES[kind](event)))
    return turns


def _turn(who: str, kind: str, title: str, body: str | None) -> dict:
    return {"who": who, "kind": kind, "title": title, "body": body}


def _call(event: dict) -> dict:
    value = event.get("input")
    body = value.get("command") if isinstance(value, dict) and set(value) <= {"command", "description"} \
        else json.dumps(value, indent=1, ensure_ascii=False)
    title = f"calls {event.get('name')}"
    if event.get("allowed") is False:
        return _turn("agent", "denied", title + f", DENIED by the guard: {event.get('reason')}", body)
    return _turn("agent", "call", title, body)


def _result(event: dict, call: dict | None) -> dict:
    size = event.get("bytes")
    title = (f"{call.get('name') if call else 'the tool'} returned"
             + (" an error" if event.get("is_error") else "")
             + (f", {size:,} bytes" if size is not None else ""))
    excerpt = event.get("excerpt") or ""
    if size is not None and len(excerpt.encode()) < size:
        title += " (excerpt)"
    return _turn("tool", "error" if event.get("is_error") else "result", title, excerpt)


def _init(event) -> str:
    servers = ", ".join(s.get("name", "?") if isinstance(s, dict) else str(s)
                        for s in event.get("mcp_servers") or []) or "none"
    return (f"model {event.get('model')}; tools offered: {', '.join(event.get('tools') or []) or 'none'}; "
            f"MCP servers: {servers}")


def _result_note(event) -> str:
    return (f"{event.get('num_turns')} turns in {event.get('duration_ms')} ms; "
            f"{event.get('subtype')}, {event.get('terminal_reason') or 'no terminal reason'}"
            + (f"; errors: {event['errors']}" if event.get("errors") else ""))


def _audit(event) -> str:
    audit = AuditEvent.read(event) or AuditEvent()  # unreadable: says nothing was checked
    return "; ".join(str(v) for v in (audit.gateway, audit.request_log) if v) \
        + f"; leaks: {len(audit.leaks)}"


def _replay(event) -> str:
    failed = event.get("failed_steps") or {}
    text = f"scripted model: {event.get('served')} of {event.get('steps')} steps served"
    return text + "".join(f"; step {n} failed: {why}" for n, why in failed.items())


NOTES = {
    INIT: _init,
    RESULT: _result_note,
    STOP: lambda e: f"stopped: {e.get('stop')}" + (f" ({e['error']})" if e.get("error") else ""),
    REPLAY: _replay,
    AUDIT: _audit,
}


def request_line(entry: dict) -> str:
    """One request of the trial through the gateway, as the drill-down lists it."""
    why = f" ({entry['reason']})" if entry.get("reason") else ""
    return (f"{entry.get('method')} {entry.get('path')} -> {entry.get('status')} "
            f"[{entry.get('scope')}{why}] {entry.get('user_agent') or '(no User-Agent)'}, "
            f"{entry.get('bytes_in', 0):,} B in, {entry.get('bytes_out', 0):,} B out")


# --- as text -------------------------------------------------------------------------

def trial_lines(view: dict, *, full: bool = False) -> list[str]:
    """One trial for the terminal; a tool's output cut at TERMINAL_CHARS unless full."""
    s, t = view["sample"], view["tokens"]
    estimated = t["estimated"]
    lines = [f"trial {s.get('id')}: {s.get('arm')} {s.get('task')} trial {s.get('trial', 0)} "
             f"({s.get('driver')}, {s.get('model')}, {s.get('started_at')})",
             f"tool: {tool_line(s)}",
             f"outcome: {s.get('outcome')}" + (f" ({s['failure_class']})" if s.get("failure_class") else "")
             + ("" if s.get("valid", True) else ", INVALID: not scored"),
             f"turns: {s.get('turns')}, tool calls: {s.get('tool_calls')} ({s.get('blocked_calls')} "
             f"blocked), {s.get('duration_s')} s",
             f"tokens{' (estimated)' if t['estimated'] else ''}: "
             + ", ".join(f"{name} {token_figure(value, estimated)}"
                         for name, value in t["components"].items())
             + f"; cost-equivalent {token_figure(t['cost'], estimated)}"]
    if s.get("differences"):
        lines.append("differences:")
        lines += [f"  - {d}" for d in s["differences"]]
    if s.get("error"):
        lines.append(f"error: {s['error'].strip()}")
    if s.get("model_service"):
        lines.append(f"model service: {describe_service(s['model_service'])}")
    if s.get("leaks"):
        lines.append(f"leaks: {json.dumps(s['leaks'], ensure_ascii=False)}")
    lines += replay_lines(view.get("failure_replay"))
    if s.get("calls"):
        lines.append("calls by command (result bytes; failed, retry):")
        lines += [f"  {call['command']} ({call.get('bytes', 0):,} B"
                  + (f"; {call['failed']}" if call.get("failed") else "")
                  + ("; retry" if call.get("retry") else "") + ")" for call in s["calls"]]
    lines.append(f"answer: {(s.get('answer') or '').strip() or '(none)'}")
    if "requests" in s:  # older samples predate the gateway's record
        lines.append(f"requests through the gateway: {len(s['requests'])}")
        lines += [f"  {request_line(entry)}" for entry in s["requests"]]
    lines.append("")
    if view["conversation"] is None:
        lines.append(f"transcript: {view.get('transcript_missing') or 'none recorded'}")
        return lines
    lines.append("transcript:")
    for turn in view["conversation"]:
        lines.append(f"  [{turn['who']}] {turn['title']}")
        body = turn["body"]
        if not full and turn["who"] == "tool" and len(body) > TERMINAL_CHARS:
            body = body[:TERMINAL_CHARS] + f" ... ({len(body) - TERMINAL_CHARS:,} more characters: --full)"
        lines += [f"      {line}" for line in body.splitlines()]
    return lines


def tool_line(sample: dict) -> str:
    """The arm's tool as the trial ran it: its version line and the agent runtime."""
    runtime = sample.get("runtime")
    return ((sample.get("tool_version") or "version unknown")
            + (f"; runtime Claude Code {str(runtime.get('cli', '?')).split(' (')[0]}, "
               f"claude-agent-sdk {runtime.get('sdk', '?')}" if isinstance(runtime, dict) else ""))


def replay_lines(entry: FailureReplay | None) -> list[str]:
    """A failure replay's verdict and both sets of differences."""
    if not entry:
        return []
    if entry.verdict == PENDING:  # written before it ran: a kill cut it off
        return [f"failure replay: never replayed - the run stopped during its replay "
                f"(begun {entry.at or None}); the trial has no replay verdict"]
    replay = entry.replay or None
    lines = [f"failure replay: {entry.verdict} - its {replay and replay.calls} call(s) replayed "
             f"on a fresh repository: {replay and replay.outcome}"
             + (f" ({replay.failure_class})" if replay and replay.failure_class else "")]
    for title, differences in (("the trial's differences", entry.differences),
                               ("the replay's differences", replay and replay.differences)):
        lines.append(f"  {title}:" + ("" if differences else " none"))
        lines += [f"    - {d}" for d in differences or []]
    if replay and replay.error:
        lines.append(f"  the replay's error: {replay.error.strip()}")
    if replay and replay.leaks:  # the trial counts as invalid (benchkit.counting)
        lines.append("  the replay leaked, so the trial counts as invalid (replay-leak):")
        lines += [f"    - {leak}" for leak in replay.leaks]
    return lines


def list_lines(samples: list) -> list[str]:
    """The trials as a table, one line each."""
    rows = [["started", "id", "arm", "task", "trial", "outcome", "tokens", "why"]]
    for s in samples:
        t = tokens(s)
        rows.append([str(s.get("started_at", ""))[:19].replace("T", " "), str(s.get("id", ""))[:12],
                     s.get("arm", ""), s.get("task", ""), str(s.get("trial", 0)),
                     s.get("outcome", ""), token_figure(t["cost"], t["estimated"]),
                     clipped(summary(s))])
    widths = [max(len(r[i]) for r in rows) for i in range(len(rows[0]) - 1)]
    return ["  ".join([*(v.ljust(w) for v, w in zip(r, widths, strict=False)), r[-1]]).rstrip() for r in rows]


def clipped(text: str, width: int = WHY_CHARS) -> str:
    """`text` in at most about `width` characters for a table: cut between words (never
    inside a name, such as the run user's), keeping its closing parentheses, which say
    what kind of difference it is ("(intended change missing)", "(+2 more)")."""
    if len(text) <= width:
        return text
    found = re.search(r"(?:\s\([^()]*\))+$", text)
    tail = found.group(0) if found and len(found.group(0)) <= width // 2 else ""
    head = text[:len(text) - len(tail)]
    room = width - len(tail) - 2
    cut = head[:room + 1].rsplit(" ", 1)[0] if " " in head[:room + 1] else head[:room]
    return f"{cut.rstrip(' :,')} …{tail}"
