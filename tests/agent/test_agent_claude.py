"""The Claude driver end to end: the real SDK and its bundled CLI against the scripted
model. Each test starts the CLI (about a second)."""

import json
import os
import stat
import subprocess
import threading
import time
import uuid
from pathlib import Path

import pytest
from conftest import CHECKOUT, IN_CI
from reported import reported_usage

from benchkit.agent.claude import ClaudeDriver
from benchkit.agent.driver import MARKERS, AgentRequest, ToolDecision, kill_marked
from benchkit.agent.scripted import ScriptedModel, bash, fail, say, stall, tool

pytestmark = pytest.mark.slow

MODEL = "claude-sonnet-4-5"
GITEA_MCP = CHECKOUT / ".venvs/gitea-mcp/bin/gitea-mcp"


def no_python(name, tool_input):
    command = tool_input.get("command", "")
    if "python" in command:
        return ToolDecision(False, "python3 is not this arm's tool")
    return ToolDecision(True, "allowed")


def request(**overrides):
    values = dict(system_prompt="You are benchkit's test agent.", prompt="Say hello.",
                  model=MODEL, tools=["Bash"], mcp_servers={}, env={}, cwd=None,
                  guard=no_python, max_turns=10, backstop_seconds=60)
    values.update(overrides)
    return AgentRequest(**values)


def run(script, **overrides):
    with ScriptedModel(script, model=MODEL) as model:
        result = ClaudeDriver(base_url=model.url).run(request(**overrides))
        return result, model


def events(run_, kind):
    return [e for e in run_.transcript if e["event"] == kind]


def test_a_bash_call_runs_and_usage_is_what_the_model_reported():
    usage = {"input_tokens": 120, "cache_creation_input_tokens": 400,
             "cache_read_input_tokens": 900, "output_tokens": 33,
             "cache_creation": {"ephemeral_5m_input_tokens": 150, "ephemeral_1h_input_tokens": 250}}
    result, model = run([bash("echo benchkit-$((6*7))", usage=usage), say("The answer is 42.")])
    assert result.stop == "end" and result.error is None
    assert result.answer == "The answer is 42."
    assert result.turns == 2 == len(model.messages(auxiliary=False))
    reported = reported_usage(model)
    assert result.usage["input"] == sum(u["input_tokens"] for u in reported.values())
    assert result.usage["cache_write"] == sum(u["cache_creation_input_tokens"] for u in reported.values())
    assert result.usage["cache_read"] == sum(u["cache_read_input_tokens"] for u in reported.values())
    assert result.usage["output"] == sum(u["output_tokens"] for u in reported.values())
    assert (result.usage["cache_write_5m"], result.usage["cache_write_1h"]) == (150, 250)
    assert set(result.usage_by_model) == set(reported)
    assert result.cost_usd and result.cost_usd > 0
    assert result.tools_offered == ["Bash"]
    call, = events(result, "tool_call")
    assert (call["name"], call["allowed"]) == ("Bash", True)
    output, = events(result, "tool_result")
    assert output["excerpt"].startswith("benchkit-42") and output["bytes"] >= 11
    # The agent saw exactly Bash and our system prompt, nothing of Claude Code's own.
    first = model.messages(auxiliary=False)[0].body
    assert [t["name"] for t in first["tools"]] == ["Bash"]
    assert "You are benchkit's test agent." in json.dumps(first["system"])


def test_a_denied_call_reaches_the_model_as_wasted_effort():
    result, model = run([bash("python3 -c 'print(1)'"), bash("echo fine"), say("done")])
    assert result.stop == "end" and result.turns == 3
    denied, allowed = events(result, "tool_call")
    assert (denied["allowed"], denied["reason"]) == (False, "python3 is not this arm's tool")
    assert allowed["allowed"] is True
    # The guard's reason went back to the model as an error tool result.
    second = model.messages(auxiliary=False)[1].body
    tool_result = second["messages"][-1]["content"][0]
    assert tool_result["is_error"] is True
    assert "python3 is not this arm's tool" in json.dumps(tool_result["content"])


def test_the_guard_sees_calls_the_cli_deems_read_only():
    seen = []

    def recording(name, tool_input):
        seen.append(tool_input["command"])
        return ToolDecision(False, "nothing runs here")

    result, _ = run([bash("echo hi"), bash("ls"), say("ok")], guard=recording)
    assert seen == ["echo hi", "ls"]
    assert [e["allowed"] for e in events(result, "tool_call")] == [False, False]


def test_a_script_longer_than_the_turn_cap_stops_at_the_cap():
    result, model = run([bash(f"echo {i}") for i in range(10)], max_turns=3)
    assert result.stop == "turn-cap"
    assert result.turns == 3 == len(model.messages(auxiliary=False))
    assert result.usage["input"] == reported_usage(model)[MODEL]["input_tokens"]


def test_a_stalled_model_is_ended_by_the_backstop_with_its_processes():
    started = time.monotonic()
    result, _ = run([bash("(sleep 4321; echo late) & echo started"), stall()],
                    backstop_seconds=4)
    elapsed = time.monotonic() - started
    assert result.stop == "backstop" and "backstop" in result.error
    assert 4 <= elapsed < 4 + 60  # the upper bound: a hang only
    assert result.turns == 1 and result.usage["input"] > 0
    leftover = subprocess.run(["pgrep", "-f", "sleep 4321"], capture_output=True, text=True)
    assert leftover.stdout == ""


def test_a_hanging_command_is_ended_by_the_backstop():
    result, _ = run([bash("tail -f /dev/null"), say("never")], backstop_seconds=4)
    assert result.stop == "backstop"
    assert subprocess.run(["pgrep", "-f", "tail -f /dev/null"], capture_output=True).stdout == b""


def test_no_user_settings_or_memory_reach_the_agent(tmp_path):
    config = tmp_path / "claude-config"
    config.mkdir()
    (config / "CLAUDE.md").write_text("USER-MEMORY-MARKER: always use python.\n")
    (config / "settings.json").write_text(json.dumps({"env": {"SETTINGS_MARKER": "leaked"}}))
    workdir = tmp_path / "work"
    workdir.mkdir()
    with ScriptedModel([bash("echo marker=$SETTINGS_MARKER; pwd; ls -A"), say("ok")],
                       model=MODEL) as model:
        result = ClaudeDriver(base_url=model.url, config_dir=config).run(
            request(cwd=workdir, env={"ARM_VARIABLE": "from-the-arm"}))
        bodies = json.dumps([r.body for r in model.messages()])
    assert result.stop == "end"
    assert "USER-MEMORY-MARKER" not in bodies
    output, = events(result, "tool_result")
    assert output["excerpt"].splitlines() == ["marker=", str(workdir)]


def test_the_arm_env_and_curated_path_reach_the_shell(tmp_path, monkeypatch):
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    (bin_dir / "curl").symlink_to("/usr/bin/curl")
    monkeypatch.setenv("GITEA_TOKEN", "the-maintainers-own-token")
    result, _ = run([bash("echo $ARM_VARIABLE $PATH /$GITEA_TOKEN/; curl --version; ls"),
                     say("ok")], env={"PATH": str(bin_dir), "ARM_VARIABLE": "from-the-arm"})
    output, = events(result, "tool_result")
    assert f"from-the-arm {bin_dir} //" in output["excerpt"].splitlines()
    assert "ls: command not found" in output["excerpt"] and "curl " in output["excerpt"]


@pytest.mark.skipif(not GITEA_MCP.exists(), reason="scripts/test-setup installs gitea-mcp")
def test_the_mcp_arm_sees_its_server_tools_and_no_bash():
    servers = {"gitea": {"type": "stdio", "command": str(GITEA_MCP), "args": [],
                         "env": {"GITEA_URL": "http://127.0.0.1:9/", "GITEA_TOKEN": "unused"}}}
    policy = lambda name, _: ToolDecision(name.startswith("mcp__gitea__"), "policy")  # noqa: E731
    result, model = run([tool("Bash", command="echo hi"), say("ok")], tools=[],
                        mcp_servers=servers, guard=policy)
    assert result.tools_offered and "Bash" not in result.tools_offered
    assert all(name.startswith("mcp__gitea__") for name in result.tools_offered)
    sent = [t["name"] for t in model.messages(auxiliary=False)[0].body["tools"]]
    assert sent == result.tools_offered  # schemas eager: no tool-search indirection
    call, = events(result, "tool_call")
    output, = events(result, "tool_result")
    assert call["allowed"] is None and output["is_error"]  # Bash does not exist here


def marked_processes(variable: str, value: str) -> dict[int, list[str]]:
    """pid -> arguments of every process whose environment carries variable=value."""
    found = {}
    for entry in filter(str.isdigit, os.listdir("/proc")):
        try:
            if f"{variable}={value}".encode() in Path(f"/proc/{entry}/environ").read_bytes().split(b"\0"):
                found[int(entry)] = Path(f"/proc/{entry}/cmdline").read_bytes().decode().split("\0")
        except OSError:
            continue  # gone already
    return found


@pytest.mark.parametrize("arm", ["shell", "mcp"])
def test_the_token_is_in_no_argument_of_the_agents_processes(arm):
    if arm == "mcp" and not GITEA_MCP.exists():
        (pytest.fail if IN_CI else pytest.skip)("scripts/test-setup installs gitea-mcp")
    token, tag = f"tok-{uuid.uuid4().hex}", uuid.uuid4().hex
    # Marked as a run loop marks its runs: MCP servers keep the markers, not the rest.
    overrides = dict(system_prompt=f"Use the token {token} on the host.", env={MARKERS[1]: tag})
    if arm == "mcp":
        overrides.update(tools=[], guard=lambda name, _: ToolDecision(True, "policy"),
                         mcp_servers={"gitea": {"type": "stdio", "command": str(GITEA_MCP), "args": [],
                                                "env": {"GITEA_URL": "http://127.0.0.1:9/",
                                                        "GITEA_TOKEN": token}}})
    with ScriptedModel([stall()], model=MODEL) as model:
        finished = []
        agent = threading.Thread(target=lambda: finished.append(
            ClaudeDriver(base_url=model.url).run(request(**overrides))))
        agent.start()
        try:  # while the model stalls the first turn, every process of the run is up
            deadline = time.monotonic() + 300  # a bound on a hang only
            while not model.messages(auxiliary=False) and time.monotonic() < deadline:
                time.sleep(0.1)
            assert model.messages(auxiliary=False), "the CLI never asked the model"
            assert token in json.dumps(model.messages(auxiliary=False)[0].body["system"])
            processes = list(marked_processes(MARKERS[1], tag).values())
            if arm == "mcp":  # the server runs too
                assert any(str(GITEA_MCP) in " ".join(args) for args in processes)
            assert processes and not [args for args in processes if token in " ".join(args)]
            cli, = [args for args in processes if "--system-prompt-file" in args]
            prompt_file = Path(cli[cli.index("--system-prompt-file") + 1])
            assert stat.S_IMODE(prompt_file.parent.stat().st_mode) == 0o700
        finally:
            kill_marked(MARKERS[1], tag)
            agent.join(60)
    assert finished and not prompt_file.exists()  # removed with the run's directory


def test_an_overloaded_api_is_an_api_error_not_a_turn():
    # CLAUDE_CODE_MAX_RETRIES=0: the CLI's own retries would only slow the test.
    result, model = run([bash("echo hi"), fail(529)], env={"CLAUDE_CODE_MAX_RETRIES": "0"})
    assert (result.stop, result.api_error_status) == ("api-error", 529)
    assert "overloaded" in result.error
    assert result.turns == 1 and result.answer is None


def test_a_cli_that_cannot_start_is_a_startup_error(tmp_path):
    broken = tmp_path / "claude"
    broken.write_text("#!/bin/sh\necho 'no such login' >&2\nexit 3\n")
    broken.chmod(0o755)
    with ScriptedModel([say("unused")]) as model:
        result = ClaudeDriver(base_url=model.url, cli_path=str(broken)).run(request())
    assert result.stop == "startup-error" and result.error
    assert result.turns == 0 and result.usage["input"] == 0
