"""The gitea-mcp arm on its real tool, the official server built at its pinned commit:
the version a sample records names that build, an arm whose token is wrong stops in
pre-flight (so does raw-api's), the tool's surface (its tools/list) is what the
fingerprint takes, and the agent's first request carries every tool the server lists.

Outside CI, without `gitea-mcp` on PATH, these skip saying how to install it; in CI,
where scripts/test-setup builds it, they fail instead."""

import asyncio
import json
import shutil

import pytest
from conftest import CHECKOUT, IN_CI
from test_preflight import ModelServer, arm_copy, failures, repos, run

from benchkit.agent.claude import ClaudeDriver
from benchkit.agent.driver import AgentRequest, ToolDecision
from benchkit.agent.scripted import ScriptedModel, say
from benchkit.documents import load_arm, load_tree
from benchkit.gitea import Client
from benchkit.isolation import assemble
from benchkit.isolation.assembly import MCP_SERVER_NAME
from benchkit.preflight.checks import check_tools
from benchkit.preflight.host import probe_host
from benchkit.preflight.probe import ProbeSite, probe_arms
from benchkit.surface import canonical_tools

PIN = "a5dd03c"  # the commit arms.d/gitea-mcp.yaml is written for
ARM = CHECKOUT / "arms.d/gitea-mcp.yaml"
RAW_API = CHECKOUT / "arms.d/raw-api.yaml"
TREE = load_tree(CHECKOUT)
MODEL = "claude-sonnet-4-5"
WRONG = "0123456789abcdef0123456789abcdef01234567"  # a token no host issued
HOW_TO_INSTALL = (f"install it as its upstream does: build gitea.com/gitea/gitea-mcp at commit "
                  f"{PIN} with `go build -ldflags '-X main.Version={PIN}'` and put it on PATH, "
                  f"or run scripts/test-setup")


@pytest.fixture
def gitea_mcp():
    found = shutil.which("gitea-mcp")
    if found is None:
        (pytest.fail if IN_CI else pytest.skip)(
            f"`gitea-mcp` is not on PATH ({HOW_TO_INSTALL}): its real-tool tests did not run")
    return found


@pytest.fixture
def quiet(tmp_path, monkeypatch):
    """No Gitea or Claude settings of the machine reach a run; a model that counts calls."""
    for name in ("GITEA_URL", "GITEA_TOKEN", "ANTHROPIC_API_KEY", "ANTHROPIC_AUTH_TOKEN",
                 "CLAUDE_CODE_OAUTH_TOKEN", "BENCHKIT_ROOT"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "xdg"))
    monkeypatch.setenv("CLAUDE_CONFIG_DIR", str(tmp_path / "claude"))
    monkeypatch.chdir(tmp_path)
    server = ModelServer()
    monkeypatch.setenv("ANTHROPIC_BASE_URL", server.url)
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-ant-never-used")
    yield server
    server.close()


def test_its_version_names_the_pinned_build(gitea_mcp):
    problems, versions = check_tools([load_arm(ARM)], TREE.suite)
    assert problems == [] and PIN in versions["gitea-mcp"]


def with_wrong_token(data):
    """The arm's credentials, as the tool receives them, replaced by a wrong token."""
    if data["tool"]["kind"] == "mcp":
        data["tool"]["server"]["env"]["GITEA_ACCESS_TOKEN"] = WRONG
    else:
        data["tool"]["probe"]["run"] = data["tool"]["probe"]["run"].replace("{{ token }}", WRONG)


@pytest.mark.parametrize("source", [ARM, RAW_API], ids=["gitea-mcp", "raw-api"])
def test_an_arm_whose_token_is_wrong_stops_in_preflight(source, quiet, tmp_path, host, request):
    if source == ARM:
        request.getfixturevalue("gitea_mcp")
    arm = arm_copy(tmp_path, str(source), with_wrong_token)
    before = repos(host)
    result = run(tmp_path, arm, "--task", "close-csv-export-issue", "--driver", "claude",
                 "--host", host.url, "--token", host.token)  # run() asserts nothing was stored
    assert result.exit_code == 2, result.output
    [probe] = failures(result)
    assert probe.startswith("pre-flight probe: arm ")
    assert quiet.calls == []  # zero model calls
    assert repos(host) == before  # the probe's repository is gone again
    assert host.token not in result.output


def listed_tools(command: str, env: dict) -> list[dict]:
    """The server's tools/list, asked by a client of the test's own."""
    from mcp import ClientSession, StdioServerParameters
    from mcp.client.stdio import stdio_client

    async def ask():
        params = StdioServerParameters(command=command, args=["-t", "stdio"], env=env)
        async with stdio_client(params) as (read, write), ClientSession(read, write) as session:
            await session.initialize()
            return [t.model_dump(mode="json", by_alias=True, exclude_none=True)
                    for t in (await session.list_tools()).tools]
    return asyncio.run(asyncio.wait_for(ask(), 60))


def test_its_surface_is_the_servers_tools_list(gitea_mcp, forge):
    """Pre-flight's probe takes tools/list in its own MCP session: the surface holds
    every listed tool, and two probes of one build agree on its digest."""
    arm = load_arm(ARM)
    with Client(forge.url, forge.token) as client:
        site = ProbeSite(client, TREE.suite, probe_host(client, TREE.suite.repo_prefix))
        problems, surfaces = probe_arms([arm], site, TREE.seeds["default"])
        again = probe_arms([arm], site, TREE.seeds["default"])[1]
    assert problems == []
    listed = listed_tools(gitea_mcp, {"GITEA_HOST": forge.url, "GITEA_ACCESS_TOKEN": forge.token})
    assert surfaces["gitea-mcp"].tools == canonical_tools(listed) and len(listed) > 20
    assert surfaces["gitea-mcp"].digest == again["gitea-mcp"].digest
    assert surfaces["gitea-mcp"].ambient_size.schemas > 10_000


@pytest.mark.slow
def test_the_first_request_carries_every_tool_the_server_lists(gitea_mcp, forge, tmp_path,
                                                                  monkeypatch):
    """The MCP arm loads its tools eagerly: the CLI defers MCP tools behind a tool
    search unless ENABLE_TOOL_SEARCH is off, and the arm's assembly turns it off, even
    when the harness's own environment asks for it."""
    monkeypatch.setenv("ENABLE_TOOL_SEARCH", "true")
    arm = load_arm(ARM)
    assembly = assemble(arm, TREE.suite, host_url=forge.url, api_url=forge.api_url,
                        token=forge.token, owner=forge.user, repo="none", user=forge.user,
                        workdir=tmp_path)
    assert assembly.env["ENABLE_TOOL_SEARCH"] == "false"
    server = assembly.mcp_servers[MCP_SERVER_NAME]
    listed = listed_tools(server["command"], server["env"])
    with assembly, ScriptedModel([say("Nothing to do.")], model=MODEL) as model:
        result = ClaudeDriver(base_url=model.url).run(AgentRequest(
            system_prompt=assembly.system_prompt, prompt="Say nothing.", model=MODEL,
            tools=list(assembly.tools), mcp_servers=dict(assembly.mcp_servers),
            env=dict(assembly.env), cwd=tmp_path, guard=lambda *_: ToolDecision(True, "ok"),
            max_turns=3, backstop_seconds=120))
        first = model.messages(auxiliary=False)[0].body
    assert result.stop == "end", result.error
    sent = sorted(t["name"] for t in first["tools"] if t["name"].startswith("mcp__"))
    assert sent == sorted(f"mcp__{MCP_SERVER_NAME}__{t['name']}" for t in listed)
    assert not [t for t in first["tools"] if t.get("defer_loading")]
    assert json.dumps(first).count("mcp__gitea__") >= len(listed)
