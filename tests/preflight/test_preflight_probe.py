"""The tool probe and the version command, on the forge with real tools: curl (raw-api),
the PyPI gitea-mcp server (the test MCP arm) and an npm-style gitea-axi stand-in of the
suite's own. A probe passes only when the arm's tool, with exactly the agent's
environment, reads the seeded repository through the host with the probe's own token;
each way an arm can be wrong fails it with a message naming the arm, the call and its
output, and never the token."""

import os
import subprocess
from pathlib import Path

import pytest
import yaml
from conftest import CHECKOUT

from benchkit.documents import load_arm, load_tree
from benchkit.gateway.server import gateway_for
from benchkit.gitea import Client, list_leftovers
from benchkit.preflight.checks import check_tools
from benchkit.preflight.host import probe_host
from benchkit.preflight.probe import ProbeSite, probe_tools

TREE = load_tree(CHECKOUT)
SEED = TREE.seeds["default"]
RAW_API = CHECKOUT / "arms.d" / "raw-api.yaml"
MCP_PYPI = CHECKOUT / "tests" / "arms" / "gitea-mcp-pypi.yaml"
AXI = CHECKOUT / "arms.d" / "gitea-axi.yaml"
SERVER = CHECKOUT / ".venvs" / "gitea-mcp" / "bin" / "gitea-mcp"
needs_server = pytest.mark.skipif(not SERVER.exists(), reason="scripts/test-setup installs the gitea-mcp server")


def arm_copy(tmp_path, source: Path, change=None, name: str | None = None):
    data = yaml.safe_load(source.read_text())
    if change:
        change(data)
    path = tmp_path / (name or source.name)
    path.write_text(yaml.safe_dump(data))
    return load_arm(path)


@pytest.fixture
def ctx(forge):
    with Client(forge.url, forge.token) as client:
        yield ProbeSite(client, TREE.suite, probe_host(client, TREE.suite.repo_prefix), root=CHECKOUT)


def probe(ctx, *arms) -> list[str]:
    return probe_tools(list(arms), ctx, SEED)


def leftovers(ctx) -> list:
    return list_leftovers(ctx.client, TREE.suite.repo_prefix)


# --- passing probes --------------------------------------------------------------------

@needs_server
def test_raw_api_and_the_mcp_arm_pass_on_the_forge_and_on_real_gitea(host, monkeypatch):
    monkeypatch.setenv("BENCHKIT_ROOT", str(CHECKOUT))
    with Client(host.url, host.token) as client:
        ctx = ProbeSite(client, TREE.suite, probe_host(client, TREE.suite.repo_prefix), root=CHECKOUT)
        before = leftovers(ctx)  # the session's Gitea is shared with other tests
        logged = len(host.requests()) if hasattr(host, "requests") else 0
        assert probe(ctx, load_arm(RAW_API), load_arm(MCP_PYPI)) == []
        assert leftovers(ctx) == before
    if hasattr(host, "requests"):  # the host's log since the probe: each tool's own requests
        probed = [r for r in host.requests()[logged:]
                  if r["path"].endswith("/issues") and not r["user_agent"].startswith("benchkit/")]
        assert {r["user_agent"].split("/")[0] for r in probed} == {"curl", "python-httpx"}


def test_a_bad_token_fails_on_real_gitea_too(gitea, tmp_path):
    """Where no request log exists, the seeded titles in the output are the evidence."""
    arm = arm_copy(tmp_path, RAW_API, lambda d: d["tool"]["probe"].update(
        run=d["tool"]["probe"]["run"].replace("{{ token }}", "not-a-token")))
    with Client(gitea.url, gitea.token) as client:
        ctx = ProbeSite(client, TREE.suite, probe_host(client, TREE.suite.repo_prefix))
        before = leftovers(ctx)  # the session's Gitea is shared with other tests
        [failure] = probe(ctx, arm)
        assert leftovers(ctx) == before
    assert "failed: exit status 22:" in failure and gitea.token not in failure


def test_an_npm_style_gitea_axi_passes_with_its_own_variables(ctx, forge, npm_axi, monkeypatch):
    monkeypatch.setenv("PATH", f"{npm_axi}{os.pathsep}{os.environ['PATH']}")
    assert probe(ctx, load_arm(AXI)) == []
    assert any(r["user_agent"] == "node" for r in forge.requests())


# --- failing probes --------------------------------------------------------------------

def test_gitea_axi_given_the_old_variable_names_fails(ctx, npm_axi, tmp_path, monkeypatch):
    """The issue's own case: GITEA_URL/GITEA_TOKEN reach gitea-axi as nothing."""
    monkeypatch.setenv("PATH", f"{npm_axi}{os.pathsep}{os.environ['PATH']}")
    arm = arm_copy(tmp_path, AXI, lambda d: d["credentials"].update(
        env={"GITEA_URL": "{{ host_url }}", "GITEA_TOKEN": "{{ token }}"}))
    [failure] = probe(ctx, arm)
    assert failure.startswith("arm gitea-axi: its probe `gitea-axi issue list -R bench/")
    assert "failed: exit status 1: error: TEA_NOT_INSTALLED" in failure
    assert leftovers(ctx) == []


@needs_server
def test_the_mcp_arm_with_its_token_under_another_name_fails(ctx, tmp_path, monkeypatch):
    monkeypatch.setenv("BENCHKIT_ROOT", str(CHECKOUT))
    arm = arm_copy(tmp_path, MCP_PYPI, lambda d: d["tool"]["server"]["env"].update(
        GITEA_TOKN=d["tool"]["server"]["env"].pop("GITEA_TOKEN")))
    [failure] = probe(ctx, arm)
    assert failure.startswith("arm gitea-mcp-pypi: its probe `list_issues {") and "'owner': 'bench'" in failure
    assert "the MCP server failed" in failure and "GITEA_TOKEN environment variable is required" in failure


def test_a_token_under_a_name_the_command_does_not_use_fails(ctx, forge, tmp_path):
    def change(d):
        d["credentials"]["env"] = {"GITEA_TOKN": "{{ token }}"}
        d["tool"]["probe"]["run"] = d["tool"]["probe"]["run"].replace("{{ token }}", "$GITEA_TOKEN")
    [failure] = probe(ctx, arm_copy(tmp_path, RAW_API, change))
    assert 'its probe `curl -sS --fail-with-body -H "Authorization: token $GITEA_TOKEN"' in failure
    assert "failed: exit status 22:" in failure and "401" in failure
    assert forge.token not in failure


def test_a_user_agent_the_arm_does_not_declare_fails(ctx, tmp_path):
    [failure] = probe(ctx, arm_copy(tmp_path, RAW_API, lambda d: d.update(user_agents=["tea/"])))
    assert "came with User-Agent 'curl/" in failure and "not the arm's 'tea/'" in failure
    assert "(the arm declares user_agents ['tea/'])" in failure


def test_a_probe_that_writes_fails(ctx, tmp_path):
    def change(d):
        d["tool"]["probe"]["run"] = (
            'curl -sS -X POST -H "Authorization: token {{ token }}" -H "Content-Type: application/json" '
            '-d \'{"name": "probe", "color": "#ffffff"}\' "{{ api_url }}/repos/{{ owner }}/{{ repo }}/labels"; '
            + d["tool"]["probe"]["run"])
    [failure] = probe(ctx, arm_copy(tmp_path, RAW_API, change))
    assert "is not read-only: it made POST /api/v1/repos/bench/" in failure


def test_a_probe_that_prints_an_error_or_shows_nothing_fails(ctx, tmp_path, forge):
    printed = arm_copy(tmp_path, RAW_API, lambda d: d["tool"]["probe"].update(
        run=d["tool"]["probe"]["run"] + "; echo 'Error: the cache is stale' >&2"), "printed.yaml")
    empty = arm_copy(tmp_path, RAW_API, lambda d: d["tool"]["probe"].update(
        run='curl -sS -H "Authorization: token {{ token }}" "{{ api_url }}/version"'), "empty.yaml")
    first, second = probe(ctx, printed, empty)
    assert "printed an error: " in first and "Error: the cache is stale" in first
    assert "does not show the seeded repository bench/" in second and '{"version":' in second
    assert forge.token not in first + second and "[token]" in first


def test_the_guard_judges_the_probe_as_it_would_the_agent(ctx, tmp_path):
    arm = arm_copy(tmp_path, RAW_API, lambda d: d["tool"]["probe"].update(run="python3 -c 'print(1)'"))
    [failure] = probe(ctx, arm)
    assert "its probe `python3 -c 'print(1)'` failed: the arm's guard denies it:" in failure


# --- the version command ----------------------------------------------------------------

@needs_server
def test_each_arm_tool_says_its_version(monkeypatch, npm_axi):
    monkeypatch.setenv("BENCHKIT_ROOT", str(CHECKOUT))
    monkeypatch.setenv("PATH", f"{npm_axi}{os.pathsep}{os.environ['PATH']}")
    problems, versions = check_tools([load_arm(p) for p in (RAW_API, MCP_PYPI, AXI)], TREE.suite)
    assert problems == []
    assert versions["raw-api"].startswith("curl ") and versions["gitea-mcp-pypi"].startswith("gitea-mcp ")
    assert versions["gitea-axi"] == "gitea-axi-standin 0.0.1"


def test_a_version_command_that_fails_is_a_tools_problem(tmp_path):
    arm = arm_copy(tmp_path, RAW_API, lambda d: d["tool"].update(version=["--no-such-flag"]))
    [problem], versions = check_tools([arm], TREE.suite)
    assert problem.startswith("arm raw-api: its version command `curl --no-such-flag` failed (exit status 2)")
    assert versions == {}


def test_a_confined_probe_sees_only_what_the_agents_shell_sees(ctx, forge, tmp_path, monkeypatch):
    """A probe leaning on the harness's environment passes unconfined (where the agent's
    shell would see it too) and fails confined, as the agent's sandboxed shell would."""
    monkeypatch.setenv("BENCHKIT_TEST_HARNESS_API", gateway_for(forge.url).api_url)
    arm = arm_copy(tmp_path, RAW_API, lambda d: d["tool"]["probe"].update(
        run=d["tool"]["probe"]["run"].replace("{{ api_url }}", "$BENCHKIT_TEST_HARNESS_API")))
    assert probe_tools([arm], ctx, SEED, confine=False) == []
    [failure] = probe_tools([arm], ctx, SEED, confine=True)
    assert "failed: exit status 3:" in failure  # curl: the URL is empty inside


def test_a_tool_version_is_its_whole_first_line():
    """curl's first line runs past 200 characters (its libraries): stored whole."""
    first = subprocess.run(["curl", "--version"], capture_output=True, text=True,
                           check=True).stdout.splitlines()[0].strip()
    problems, versions = check_tools([load_arm(RAW_API)], TREE.suite)
    assert problems == [] and versions["raw-api"] == first
