"""A trial's tool calls, each named by the tool's own command, with what its result cost,
whether it failed and whether it retried the call before it (docs/anatomy.md, "Per
command").

    calls = trial_calls(transcript, anatomy, tool, schema_bytes)

The name is what the tool's author knows the call by:
- a shell arm's line, read by the guard's parser (benchkit.isolation.shell): each run of
  the arm's binary by its sub-command path (`tea issues list`, `gitea-axi issue view`),
  curl by its method and the API route it asks, templated as the gateway's list of
  operations names it (`curl GET /repos/{owner}/{repo}/issues/{index}`); a line that
  runs the binary twice joins both with ` + `, one that runs only text utilities is
  named by its first (`cat`, `jq`), one the parser refuses `(unparsed)`;
- an MCP tool by its name without the runtime's `mcp__<server>__` prefix.

A call's cost is its result's share of the cost anatomy's tool-output part
(benchkit.anatomy): the fresh prompt tokens the next model request took for the results
that came since the request before, split over those results by their bytes, so the
calls of a trial sum to its tool-output part exactly. Later requests re-read the result
from the cache (carried context); `later` counts them.

A call failed when the guard refused it, when the tool's result was an error (a
non-zero exit status, an MCP error result), or when its whole answer is a Gitea error
body (`{"message": ..., "url": ...}`, what curl prints for a 404 with exit status 0).
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping

import msgspec

from benchkit.anatomy import fresh_split
from benchkit.evidence import REQUEST, TOOL_CALL, TOOL_RESULT, Event, ToolCallEvent, ToolResultEvent
from benchkit.gateway.operations import catalogue
from benchkit.isolation.options import CURL, getopt
from benchkit.isolation.shell import parse
from benchkit.isolation.syntax import Command, ParseError
from benchkit.sample import NO_PART, Anatomy, Call, CallFailure, Part
from benchkit.tool import ToolSpec

MAX_PATH = 2  # sub-command words after the binary: `tea issues list`
_WORD = re.compile(r"[a-z][a-z0-9-]*")
_API = "/api/v1"
_PARAM_KIND = re.compile(r"\{(\w+):\w+\}")
_ERROR_KEYS = frozenset({"message", "url", "errors"})
_BODY_FLAGS = ("-d", "--data", "--data-ascii", "--data-binary", "--data-raw",
               "--data-urlencode", "--json", "-F", "--form", "--form-string")


def trial_calls(events: list[Event], anatomy: Anatomy | None, tool: ToolSpec,
                schema_bytes: Mapping[str, int] | None = None) -> list[Call]:
    """Every tool call of the transcript `events`, in order, named, costed and judged.
    `anatomy`: the trial's (its tool-output part bounds the calls' sum; without one, no
    call has a share); `schema_bytes`: as benchkit.anatomy takes them."""
    proposed = [e for e in events if e["event"] == TOOL_CALL]
    results = {e["id"]: e for e in events if e["event"] == TOOL_RESULT}
    shares: dict[str, tuple[list[int], int]] = {}
    if anatomy is not None:  # else the figures failed their check: no share is known
        bound = list(msgspec.structs.astuple(anatomy.tool_output))[:3]
        shares = _fitted(_result_shares(events, tool, schema_bytes), bound)
    calls: list[Call] = []
    for event in proposed:
        result: ToolResultEvent | dict = results.get(event["id"], {})
        share, later = shares.get(event["id"], ([0, 0, 0], 0))
        command = name(event, tool)
        failed = _failed(event, result)
        retry = bool(calls) and calls[-1].command == command and calls[-1].failed is not None
        part = Part(share[0], share[1], share[2], 0, 0) if any(share) else NO_PART
        calls.append(Call(command=command, result=part,
                          bytes=int(result.get("bytes") or 0), failed=failed, retry=retry,
                          later=later))
    return calls


def name(event: ToolCallEvent, tool: ToolSpec) -> str:
    """The call's command as the tool's author knows it (the module's docstring)."""
    called = str(event.get("name") or "")
    if called.startswith("mcp__") and called.count("__") >= 2:
        return called.split("__", 2)[2]
    command = (event.get("input") or {}).get("command")
    if called != "Bash" or not isinstance(command, str) or tool.binary is None:
        return called or "(unnamed)"
    try:
        script = parse(command)
    except ParseError:
        return "(unparsed)"
    runs = [cmd for cmd in script.commands if cmd.name and cmd.name.literal == tool.binary]
    if not runs:
        programs = [cmd.name.literal for cmd in script.commands if cmd.name and cmd.name.literal]
        return programs[0] if programs else "(shell)"
    named = [curl_route(cmd) if tool.binary == "curl" else sub_command(cmd) for cmd in runs]
    return " + ".join(dict.fromkeys(named))


def sub_command(cmd: Command) -> str:
    """`tea issues list`: the binary and up to MAX_PATH sub-command words after it,
    leading options skipped; the path ends at the first word that is no sub-command
    (an option, a number, a value only known at run time)."""
    words = [w.literal for w in cmd.words]
    path = [words[0] or ""]
    for word in words[1:]:
        if word is None:
            break
        if word.startswith("-"):
            if len(path) > 1:
                break
            continue
        if not _WORD.fullmatch(word) or len(path) > MAX_PATH:
            break
        path.append(word)
    return " ".join(path)


def curl_route(cmd: Command) -> str:
    """`curl GET /repos/{owner}/{repo}/issues`: the method curl sends and the API route
    its URL asks, templated as the gateway's operations name it (else its owner and
    repository, numbers and values only known at run time templated by position)."""
    parsed = getopt(cmd.words, CURL)
    asked = [w.literal for w in parsed.values("-X", "--request") if w is not None]
    method = (asked[-1].upper() if asked and asked[-1] else
              "PUT" if parsed.has("-T", "--upload-file") else
              "POST" if parsed.has(*_BODY_FLAGS) else
              "HEAD" if parsed.has("-I", "--head") else "GET")
    urls = [w for w in (*parsed.operands, *parsed.values("--url")) if w is not None]
    for word in urls:
        text = word.text
        if _API in text or "://" in text or text.startswith("$"):
            return f"curl {method} {_route(method, text)}"
    return f"curl {method}"


def _route(method: str, url: str) -> str:
    """The API route of a URL as the agent wrote it (expansions as written)."""
    path = (url.split(_API, 1)[1] if _API in url  # else the host part, or the variable
            else re.sub(r"^[^/]*//[^/]*|^\$\{?\w+\}?", "", url))  # holding it, goes
    path = re.split(r"[?#]", path, maxsplit=1)[0]
    segments = [s for s in path.split("/") if s]
    # A value only known at run time stands as one a route parameter may take.
    probe = "/" + "/".join("1" if "$" in s or "`" in s else s for s in segments)
    asked = "GET" if method == "HEAD" else method
    for operation in catalogue().operations:
        if operation.method == asked and operation.route.startswith(_API + "/"):
            if operation.pattern.fullmatch(_API + probe):
                return _PARAM_KIND.sub(r"{\1}", operation.route.removeprefix(_API))
    templated = []
    for index, segment in enumerate(segments):
        after_repos = index in (1, 2) and segments[0] == "repos"
        templated.append(("{owner}" if index == 1 else "{repo}") if after_repos else
                         "{index}" if segment.isdigit() else
                         "{}" if "$" in segment or "`" in segment else segment)
    return "/" + "/".join(templated)


def _failed(event: ToolCallEvent, result: ToolResultEvent | dict) -> CallFailure | None:
    if event.get("allowed") is False:
        return "refused"
    if result.get("is_error"):
        return "error"
    if _error_body(str(result.get("excerpt") or "")):
        return "error-answer"
    return None


def _error_body(text: str) -> bool:
    """Whether the whole answer is a Gitea error body: a JSON object holding a message,
    and nothing but a message, a URL and errors."""
    text = text.strip()
    if not text.startswith("{"):
        return False
    try:
        found = json.loads(text)
    except ValueError:
        return False
    return isinstance(found, dict) and "message" in found and set(found) <= _ERROR_KEYS


def _result_shares(events: list[Event], tool: ToolSpec,
                   schema_bytes: Mapping[str, int] | None) -> dict[str, tuple[list[int], int]]:
    """tool call id -> (its result's share of the next request's tool-output tokens, in
    input / 5-minute / 1-hour writes, and how many requests came after that one). A
    tool search's result is not output (the anatomy counts its schemas apart)."""
    searches = set(tool.runtime_tools)
    named = {e["id"]: e.get("name") for e in events if e["event"] == TOOL_CALL}
    shares: dict[str, tuple[list[int], int]] = {}
    waiting: list[tuple[str, int]] = []  # (call id, bytes) since the last request
    number, requests = 0, sum(1 for e in events if e["event"] == REQUEST)
    for event in events:
        if event["event"] == TOOL_RESULT and named.get(event["id"]) not in searches:
            waiting.append((event["id"], int(event.get("bytes") or 0)))
        elif event["event"] == REQUEST:
            if number and waiting:
                _, _, tool_share = fresh_split(event, schema_bytes)
                later = requests - number - 1
                for (call, _), share in zip(waiting, _by_bytes(tool_share, waiting), strict=True):
                    shares[call] = (share, later)
            waiting, number = [], number + 1
    return shares


def _by_bytes(total: list[int], results: list[tuple[str, int]]) -> list[list[int]]:
    """`total` (per component) split over the results by their bytes, in integers that
    sum to it: each component's remainder to the largest results first."""
    weights = [size for _, size in results]
    whole = sum(weights)
    if whole == 0:  # empty results: an even split
        weights, whole = [1] * len(results), len(results)
    split = [[0] * len(total) for _ in results]
    for c, amount in enumerate(total):
        for i, weight in enumerate(weights):
            split[i][c] = amount * weight // whole
        left = amount - sum(row[c] for row in split)
        for i in sorted(range(len(results)), key=lambda i: -weights[i])[:left]:
            split[i][c] += 1
    return split


def _fitted(shares: dict[str, tuple[list[int], int]], bound: list[int]
            ) -> dict[str, tuple[list[int], int]]:
    """The shares cut to the trial's tool-output part where the anatomy cut it (a run
    whose requests report more than its total: benchkit.anatomy), so they sum to it."""
    ids = list(shares)
    for c, most in enumerate(bound):
        have = sum(shares[i][0][c] for i in ids)
        if have <= most:
            continue
        cut = _by_bytes([most], [(i, shares[i][0][c]) for i in ids])
        for i, row in zip(ids, cut, strict=True):
            shares[i][0][c] = row[0]
    return shares
