"""The gitea-mcp-search arm: the pinned gitea-mcp behind the runtime's tool search, on
the real server, the real CLI and the scripted model, on the forge and a real Gitea.

Every shape the replay relies on is read off the requests the real CLI sends here:
the first request carries ToolSearch and a placeholder but no mcp__gitea__* schema, the
tools are announced by name in the conversation, a ToolSearch result is a
tool_reference block, and the next request carries the found tool's schema, deferred,
before the agent calls it. `validate --live` and the replay main job of the arm pass
on both hosts, and a report of both MCP arms puts them side by side with their
anatomy, its ambient figures agreeing with the first requests' bytes.

Outside CI, without `gitea-mcp`, these skip saying how to install it; in CI they fail."""

import json
import math

import msgspec
import pytest
from click.testing import CliRunner
from conftest import CHECKOUT, real_tool
from test_arm_gitea_mcp import listed_tools

import benchkit.agent.replay as replay
from benchkit.agent.runtime import installed_runtime
from benchkit.cli import main
from benchkit.documents import load_tree
from benchkit.documents.reference import reference_for
from benchkit.gitea import Client
from benchkit.isolation import assemble
from benchkit.planning.plan import select_cells
from benchkit.preflight.host import probe_host
from benchkit.preflight.probe import ProbeSite, probe_arms
from benchkit.proving.selfcheck import validate_live
from benchkit.report import build_report, load_store
from benchkit.report.matrix import matrix_from_tree

TREE = load_tree(CHECKOUT)
SEARCH, EAGER = TREE.arms["gitea-mcp-search"], TREE.arms["gitea-mcp"]
ARM_FILE = CHECKOUT / "arms.d" / "gitea-mcp-search.yaml"
PREFIX = "mcp__gitea__"


class Recording(replay.ReplayModel):
    """The replay's model stand-in, keeping every request of its trial (a list per
    trial, in `trials`)."""

    trials: list[list] = []

    def __exit__(self, *exc):
        Recording.trials.append(list(self.received))
        return super().__exit__(*exc)


@pytest.fixture
def recorded(monkeypatch):
    monkeypatch.setattr(Recording, "trials", [])
    monkeypatch.setattr(replay, "ReplayModel", Recording)
    return Recording.trials


def test_it_is_the_mcp_arm_with_the_runtimes_tool_search_on(tmp_path):
    """Same server, probe, bootstrap and User-Agents as the eager arm; its assembly
    offers ToolSearch and turns tool search on, the eager arm's turns it off; its
    references are the eager arm's, each tool searched for before its first call."""
    assert (SEARCH.tool.server, SEARCH.tool.probe, SEARCH.tool.version) == \
        (EAGER.tool.server, EAGER.tool.probe, EAGER.tool.version)
    assert (SEARCH.bootstrap, SEARCH.user_agents) == (EAGER.bootstrap, EAGER.user_agents)
    names = dict(host_url="http://127.0.0.1:1", api_url="http://127.0.0.1:1/api/v1",
                 token="t", owner="o", repo="r", user="o", workdir=tmp_path)
    search, eager = assemble(SEARCH, TREE.suite, **names), assemble(EAGER, TREE.suite, **names)
    assert (search.tools, search.env["ENABLE_TOOL_SEARCH"]) == (["ToolSearch"], "true")
    assert (eager.tools, eager.env["ENABLE_TOOL_SEARCH"]) == ([], "false")
    assert search.guard.decide_tool("ToolSearch", {"query": "select:x"}).allowed
    assert not eager.guard.decide_tool("ToolSearch", {"query": "select:x"}).allowed

    mine, theirs = reference_for(SEARCH, CHECKOUT), reference_for(EAGER, CHECKOUT)
    assert set(mine.tasks) == set(theirs.tasks)
    for task_id, task in mine.tasks.items():
        calls = [s for s in task.steps if not s.search]
        assert calls == list(theirs.tasks[task_id].steps)
        searched = [s.input["query"] for s in task.steps if s.search]
        assert searched == [f"select:{tool}" for tool in dict.fromkeys(s.tool for s in calls)]


def test_its_surface_is_the_names_announced_and_every_schema_the_server_lists(forge):
    """Pre-flight's probe: the search arm's surface holds the server's whole tools/list
    (a schema changed anywhere changes its digest) and the names the runtime announces;
    its ambient size is those names, not the schemas the eager arm carries."""
    real_tool("gitea-mcp")
    with Client(forge.url, forge.token) as client:
        site = ProbeSite(client, TREE.suite, probe_host(client, TREE.suite.repo_prefix))
        problems, surfaces = probe_arms([SEARCH, EAGER], site, TREE.seeds["default"])
    assert problems == []
    search, eager = surfaces[SEARCH.id], surfaces[EAGER.id]
    assert search.tools == eager.tools and len(search.tools) > 20
    assert list(search.announced) == sorted(PREFIX + t["name"] for t in eager.tools)
    assert eager.announced == () and search.digest != eager.digest
    assert search.ambient_size.schemas == len("\n".join(search.announced).encode())
    assert search.ambient_size.schemas * 10 < eager.ambient_size.schemas
    changed = msgspec.structs.replace(search, tools=[{**search.tools[0], "description": "x"},
                                                     *search.tools[1:]])
    assert changed.digest != search.digest


def first_agent_request(trial: list) -> dict:
    return next(r.body for r in trial if not r.auxiliary)


def tool_uses(body: dict) -> list[dict]:
    return [block for message in body["messages"] if message["role"] == "assistant"
            for block in message["content"] if block.get("type") == "tool_use"]


def assert_searched_before_called(trial: list, listed: dict) -> None:
    """The agent's first request offers no Gitea schema but announces every tool by
    name; each ToolSearch's result is a tool_reference, and the request after it
    carries the found tool's schema (the server's), which the next call then uses."""
    agent = [r.body for r in trial if not r.auxiliary]
    first = agent[0]
    assert [t["name"] for t in first["tools"] if t["name"].startswith(PREFIX)] == []
    assert {t["name"] for t in first["tools"]} == {"ToolSearch", "DeferredToolPlaceholder"}
    announced = json.dumps(first["messages"][0]["content"])
    assert all(PREFIX + name in announced for name in listed)
    calls = tool_uses(agent[-1])
    assert calls and calls[0]["name"] == "ToolSearch", calls
    for number, request in enumerate(agent[1:], start=1):
        made = tool_uses(request)[-1]  # the call this request answers
        if made["name"] != "ToolSearch":
            continue
        wanted = made["input"]["query"].removeprefix("select:")
        result = request["messages"][-1]["content"][0]
        assert result["type"] == "tool_result"
        assert result["content"] == [{"type": "tool_reference", "tool_name": wanted}]
        [schema] = [t for t in request["tools"] if t["name"] == wanted]
        assert schema["defer_loading"] is True
        server = listed[wanted.removeprefix(PREFIX)]
        assert schema["description"] == server["description"]
        assert set(schema["input_schema"]["properties"]) == set(server["inputSchema"]["properties"])
        following = tool_uses(agent[number + 1])[-1] if number + 1 < len(agent) else None
        assert following is not None and following["name"] == wanted


def run_replay(tmp_path, host, *arguments) -> list[dict]:
    result = CliRunner().invoke(main, [
        "run", *arguments, "--driver", "replay", "--host", host.url, "--token", host.token,
        "--store", str(tmp_path / "results"), "--no-report"], catch_exceptions=False)
    assert result.exit_code == 0, result.output
    return [json.loads(line) for path in sorted((tmp_path / "results").glob("*/*.jsonl"))
            for line in path.read_text().splitlines()]


@pytest.mark.slow
def test_the_replay_main_job_passes_every_task_the_eager_arm_can_run(host, tmp_path, quiet,
                                                                      recorded):
    """`benchkit run arms.d/gitea-mcp-search.yaml --driver replay`: every task the eager
    arm's references cover runs and passes, each through tool searches, and every
    sample names its runtime."""
    gitea_mcp = real_tool("gitea-mcp")
    listed = {tool["name"]: tool for tool in listed_tools(
        gitea_mcp, {"GITEA_HOST": host.url, "GITEA_ACCESS_TOKEN": host.token})}
    samples = run_replay(tmp_path, host, str(ARM_FILE))
    eager, _ = select_cells([EAGER], list(TREE.tasks.values()), self_review=False,
                            references={EAGER.id: reference_for(EAGER, CHECKOUT)})
    assert sorted(s["task"] for s in samples) == sorted(task.id for _, task in eager)
    failed = [(s["task"], s["outcome"], s["differences"], s["error"]) for s in samples
              if s["scored"] and s["outcome"] != "passed"]
    assert failed == []
    runtime = msgspec.to_builtins(installed_runtime())
    assert all(s["runtime"] == runtime for s in samples)
    assert all(s["anatomy"]["search_calls"] >= 1 for s in samples if s["tool_calls"])
    assert len(recorded) == len(samples)
    for trial in recorded:
        assert_searched_before_called(trial, listed)


@pytest.mark.slow
def test_validate_live_proves_every_task(forge):
    """On the forge: the host sees the same MCP server's requests as the eager arm's, whose
    proof on the real Gitea (tests/end_to_end/test_arms_real_tools.py) covers them, and the
    replay main job above runs this arm on both hosts; a second proof on Gitea took four
    minutes and showed nothing new."""
    real_tool("gitea-mcp")
    checks = validate_live([ARM_FILE], host=forge.url, token=forge.token, root=CHECKOUT)
    assert [(c.task, c.verdict, c.reason) for c in checks if c.problem] == []
    assert any(c.verdict == "ok" for c in checks)


def ambient_tokens(body: dict) -> int:
    """A first request's prompt in tokens as the replay estimates it, from the bytes
    the CLI sent: the tools the API keeps in the prompt (a deferred one is not), the
    system prompt and the messages, at four bytes a token."""
    tools = [tool for tool in body.get("tools") or [] if not tool.get("defer_loading")]
    sent = b"".join(json.dumps(part, sort_keys=True, separators=(",", ":")).encode()
                    for part in (tools, body.get("system"), body.get("messages")))
    return math.ceil(len(sent) / 4)


@pytest.mark.slow
def test_a_report_of_both_mcp_arms_puts_them_side_by_side(forge, tmp_path, quiet, recorded):
    """Both MCP arms on the same tasks: the report's anatomy has a row for each, their
    ambient figures are the bytes of the first requests the CLI sent, and where their
    costs part shows: the eager arm's first prompt is larger by the schemas, the search
    arm pays in tool searches instead."""
    real_tool("gitea-mcp")
    tasks = ["read-issue-labels-and-state", "close-csv-export-issue"]
    chosen = [argument for task in tasks for argument in ("--task", task)]
    samples = run_replay(tmp_path, forge, str(CHECKOUT / "arms.d/gitea-mcp.yaml"),
                         str(ARM_FILE), *chosen)
    assert sorted((s["arm"], s["task"], s["outcome"]) for s in samples) == sorted(
        (arm, task, "passed") for arm in ("gitea-mcp", "gitea-mcp-search") for task in tasks)
    first = {}  # arm -> ambient tokens of each trial's first request
    for trial, sample in zip(recorded, sorted(samples, key=lambda s: s["started_at"]),
                             strict=True):
        first.setdefault(sample["arm"], []).append(ambient_tokens(first_agent_request(trial)))
        assert sample["anatomy"]["ambient_tokens"] == first[sample["arm"]][-1]

    report = build_report(load_store(tmp_path / "results"), matrix_from_tree(TREE))
    rows = {row.arm: row for row in report.anatomy if row.kind == "replay"}
    assert set(rows) == {"gitea-mcp", "gitea-mcp-search"}
    for arm, row in rows.items():
        assert row.ambient_tokens == pytest.approx(sum(first[arm]) / len(first[arm]))
    eager, search = rows["gitea-mcp"], rows["gitea-mcp-search"]
    schemas = report.ambient_size["gitea-mcp"].tokens_estimated["schemas"]
    assert eager.ambient_tokens - search.ambient_tokens > 0.8 * schemas
    assert eager.parts["searches"] == 0 < search.parts["searches"]
    assert search.search_calls >= 2 and eager.search_calls == 0
    assert report.ambient_size["gitea-mcp-search"].bytes["schemas"] < 3000
    assert rows["gitea-mcp"].parts["runtime_own"] > 0  # the session title, apart
