"""Per-command attribution: every tool call of a trial named by the tool's own command,
its result's share of the cost anatomy's tool output, whether it failed, and retries.

The names are read off the shipped arms' tools as the guard's parser reads a line; the
shares and failures off transcript events of the recorder's shape; and a replay run of
every shipped arm on the embedded forge (the real tea, gitea-mcp and gitea-axi) renders
a report whose per-command rows sum to each arm's tool output."""

import json
import math
import subprocess

import msgspec
import pytest
from conftest import BENCHKIT, CHECKOUT, real_tool

from benchkit.agent.calls import name, trial_calls
from benchkit.anatomy import anatomy
from benchkit.cost import cost
from benchkit.documents.models import load_arm
from benchkit.sample import COMPONENTS

ARMS = {arm: load_arm(CHECKOUT / "arms.d" / f"{arm}.yaml").tool
        for arm in ("raw-api", "tea", "gitea-axi", "gitea-mcp", "gitea-mcp-search")}


def bash(command: str) -> dict:
    return {"event": "tool_call", "id": "1", "name": "Bash", "input": {"command": command}}


@pytest.mark.parametrize(("arm", "line", "named"), [
    ("tea", "tea issues list --state all --repo o/r", "tea issues list"),
    ("tea", "tea issues 3 --login bench", "tea issues"),
    ("tea", "tea labels create bug --color ff0000", "tea labels create"),
    ("tea", "tea issues list | jq '.[].title'; tea labels ls", "tea issues list + tea labels ls"),
    ("gitea-axi", "gitea-axi issue view 3", "gitea-axi issue view"),
    ("gitea-axi", 'gitea-axi "$CMD" view', "gitea-axi"),
    ("raw-api", 'curl -s -H "Authorization: token $T" "$GITEA_API/repos/$OWNER/$REPO/issues?state=all"',
     "curl GET /repos/{owner}/{repo}/issues"),
    ("raw-api", "curl -sX PATCH -d '{\"state\":\"closed\"}' http://h/api/v1/repos/o/r/issues/3",
     "curl PATCH /repos/{owner}/{repo}/issues/{index}"),
    ("raw-api", "curl -s --json '{\"body\":\"x\"}' \"$API/repos/o/r/issues/$N/comments\"",
     "curl POST /repos/{owner}/{repo}/issues/{index}/comments"),
    ("raw-api", "curl -s http://h/api/v1/repos/o/r/topics/x", "curl GET /repos/{owner}/{repo}/topics/x"),
    ("raw-api", "cat issues.json | jq length", "cat"),
    ("raw-api", "curl 'unterminated", "(unparsed)"),
])
def test_a_shell_line_is_named_by_the_tools_own_command(arm, line, named):
    assert name(bash(line), ARMS[arm]) == named


def test_an_mcp_tool_is_named_without_the_runtimes_prefix():
    call = {"event": "tool_call", "id": "1", "name": "mcp__gitea__list_repo_issues", "input": {}}
    assert name(call, ARMS["gitea-mcp"]) == "list_repo_issues"
    assert name({**call, "name": "ToolSearch"}, ARMS["gitea-mcp-search"]) == "ToolSearch"


def request(number: int, fresh: int, read: int = 0, results=(0, 0)) -> dict:
    return {"event": "request", "id": f"m{number}", "usage": {
        "input": 0, "cache_write": fresh, "cache_write_5m": fresh, "cache_write_1h": 0,
        "cache_read": read, "output": 50}, "tool_results": results[0],
        "tool_result_bytes": results[1]}


def result(call: str, size: int, *, error=False, excerpt="ok") -> dict:
    return {"event": "tool_result", "id": call, "bytes": size, "is_error": error,
            "excerpt": excerpt}


def call(call_id: str, line: str, allowed=True) -> dict:
    return {**bash(line), "id": call_id, "allowed": allowed}


def test_shares_failures_and_retries_of_a_trial():
    """Three calls before request 2 (two results of 3000 and 1000 bytes, a refusal with
    none), one after: the shares split request 2's tool output by bytes and sum to the
    anatomy's tool output; an error answer with exit 0, an error exit and a refusal
    are failures; the same command right after a failure is a retry."""
    gone = json.dumps({"message": "The target couldn't be found.", "url": "http://h/api/swagger"})
    events = [
        request(0, 5000),
        call("a", "curl -s http://h/api/v1/repos/o/r/issues/9"),
        result("a", 3000, excerpt=gone),
        call("b", "curl -s http://h/api/v1/repos/o/r/issues/9"),
        result("b", 1000),
        call("c", "python3 -c 1", allowed=False),
        result("c", 120, error=True, excerpt="`python3` is not available"),
        request(1, 1100, read=5000, results=(3, 4120)),
        call("d", "tea issues list"),
        result("d", 400, error=True, excerpt="exit status 1"),
        request(2, 150, read=6100, results=(1, 400)),
    ]
    requests = [e for e in events if e["event"] == "request"]
    total = {k: sum(r["usage"][k] for r in requests) for k in requests[0]["usage"]}
    parts = anatomy(requests, total, estimated=True)
    calls = trial_calls(events, parts, ARMS["raw-api"])
    assert [c.command for c in calls] == ["curl GET /repos/{owner}/{repo}/issues/{index}"] * 2 + [
        "python3", "tea"]
    assert [c.failed for c in calls] == ["error-answer", None, "refused", "error"]
    assert [c.retry for c in calls] == [False, True, False, False]
    assert [c.later for c in calls] == [1, 1, 1, 0]
    summed = [sum(getattr(c.result, f) for c in calls) for f in COMPONENTS]
    assert summed == list(msgspec.structs.astuple(parts.tool_output))  # the tool output
    # request 2 took ceil(4120 / 4) = 1030 tokens of tool output, split by bytes
    assert [c.result.cache_write_5m for c in calls] == [750, 250, 30, 100]


@pytest.mark.slow
def test_a_replay_report_has_every_arms_commands_summing_to_its_tool_output(tree_copy, quiet):
    """Every shipped arm replayed on two tasks (the embedded forge, the real tools):
    report.json has a command table for each, its rows named by the arm's own commands
    and summing to the arm's tool output in "Where the tokens go"."""
    for tool in ("tea", "gitea-mcp", "gitea-axi"):
        real_tool(tool)
    done = subprocess.run(
        [*BENCHKIT, "run", *(f"arms.d/{arm}.yaml" for arm in ARMS), "--driver", "replay",
         "--task", "read-open-issue-count", "--task", "close-csv-export-issue"],
        cwd=tree_copy, capture_output=True, text=True, timeout=900)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    report = json.loads((tree_copy / "reports" / "report.json").read_text())
    weights = tuple(report["weights"][c] for c in COMPONENTS)
    anatomy_rows = {row["arm"]: row for row in report["anatomy"]}
    tables = {table["arm"]: table for table in report["commands"]}
    assert sorted(tables) == sorted(ARMS) and all(t["kind"] == "replay" for t in tables.values())
    for arm, table in tables.items():
        output = anatomy_rows[arm]["parts"]["tool_output"]
        assert table["tool_output"] == pytest.approx(output, rel=1e-9)
        assert math.fsum(row["cost"] for row in table["rows"]) == pytest.approx(output, rel=1e-9)
        commands = {row["command"] for row in table["rows"]}
        prefix = {"raw-api": "curl ", "tea": "tea ", "gitea-axi": "gitea-axi "}.get(arm)
        if prefix:
            assert all(c.startswith(prefix) or c in ("cat", "jq") for c in commands), commands
        else:
            assert commands and not any(c.startswith("mcp__") for c in commands), commands
    # a trial's calls sum to its own tool output, component by component
    for path in (tree_copy / "results").glob("*/*.jsonl"):
        for line in path.read_text().splitlines():
            sample = json.loads(line)
            shares = [sum(c["result"][i] for c in sample["calls"]) for i in range(len(COMPONENTS))]
            assert shares == sample["anatomy"]["tool_output"], (path, shares)
            assert cost(tuple(shares), weights) >= 0
