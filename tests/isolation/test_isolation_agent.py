"""The assembled raw-api arm under the real Claude Code CLI (scripted model, forge on
loopback): the Bash tool runs with the curated PATH alone, the guard's denial reaches
the model as its reason, and the one tool reaches the host."""

import json

import pytest
from conftest import CHECKOUT

from benchkit.agent.claude import ClaudeDriver
from benchkit.agent.driver import AgentRequest
from benchkit.agent.scripted import ScriptedModel, bash, say
from benchkit.documents import load_arm, load_suite
from benchkit.isolation import assemble

pytestmark = pytest.mark.slow


def test_the_raw_api_arm_runs_curl_alone(forge, tmp_path):
    suite = load_suite(CHECKOUT / "suite.yaml")
    workdir = tmp_path / "work"
    workdir.mkdir()
    assembly = assemble(load_arm(CHECKOUT / "arms.d/raw-api.yaml"), suite,
                        host_url=forge.url, api_url=forge.api_url, token=forge.token,
                        owner=forge.user, repo="demo", user=forge.user, workdir=workdir)
    script = [
        bash('echo "PATH=$PATH"; command -v python3 || echo no-python3'),
        bash("python3 -c 'print(1)'"),
        bash(f'curl -s -H "Authorization: token {forge.token}" {forge.api_url}/version | jq -r .version'),
        say("done"),
    ]
    with assembly, ScriptedModel(script, model=suite.model) as model:
        run = ClaudeDriver(base_url=model.url).run(AgentRequest(
            system_prompt=assembly.system_prompt, prompt="Check the host.", model=suite.model,
            tools=assembly.tools, mcp_servers=assembly.mcp_servers, env=assembly.env,
            cwd=workdir, guard=assembly.guard.decide_tool, max_turns=10, backstop_seconds=90,
            network=forge.url))
        path_dir = str(assembly.path_dir)
        first_request = model.messages(auxiliary=False)[0].body
    assert run.stop == "end", run.error
    calls = [e for e in run.transcript if e["event"] == "tool_call"]
    results = {e["id"]: e for e in run.transcript if e["event"] == "tool_result"}
    assert [c["allowed"] for c in calls] == [True, False, True]
    path_shown = results[calls[0]["id"]]["excerpt"]
    assert f"PATH={path_dir}\n" in path_shown and "no-python3" in path_shown
    assert calls[1]["reason"].startswith("`python3` is not available in this session: use `curl`")
    assert "`python3` is not available" in results[calls[1]["id"]]["excerpt"]
    version = results[calls[2]["id"]]["excerpt"].strip()
    assert version and version[0].isdigit()
    assert json.dumps(first_request["system"]).count("Repository: bench/demo") == 1
