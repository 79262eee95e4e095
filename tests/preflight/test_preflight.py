"""`benchkit run` pre-flight, through the CLI: each failure has its own message, the
exit status is 2, and nothing is recorded (no store, no repository on the host)."""

import http.server
import json
import threading
from pathlib import Path

import pytest
import yaml
from click.testing import CliRunner
from conftest import CHECKOUT

from benchkit.cli import main
from benchkit.gitea import Client
from benchkit.preflight.checks import claude_credentials

RAW_API = str(CHECKOUT / "arms.d/raw-api.yaml")
TASK = "close-csv-export-issue"
INSTALL_PYPI = yaml.safe_load((CHECKOUT / "tests/arms/gitea-mcp-pypi.yaml").read_text())[
    "tool"].get("install")


@pytest.fixture(autouse=True)
def quiet_machine(tmp_path, monkeypatch):
    """No GITEA_*, tea login or Claude credentials of the machine reach these runs."""
    for name in ("GITEA_URL", "GITEA_TOKEN", "ANTHROPIC_API_KEY", "ANTHROPIC_AUTH_TOKEN",
                 "CLAUDE_CODE_OAUTH_TOKEN", "ANTHROPIC_BASE_URL", "CLAUDE_CODE_USE_BEDROCK",
                 "CLAUDE_CODE_USE_VERTEX", "BENCHKIT_ROOT"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "xdg"))
    monkeypatch.setenv("CLAUDE_CONFIG_DIR", str(tmp_path / "claude"))
    monkeypatch.setenv("BENCHKIT_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.chdir(tmp_path)


def run(tmp_path, *args):
    store = tmp_path / "results"
    result = CliRunner().invoke(main, ["run", *args, "--store", str(store), "--no-report"],
                                catch_exceptions=False)
    assert not store.exists(), "a failed pre-flight recorded something"
    return result


def arm_copy(tmp_path, source: str, change) -> str:
    data = yaml.safe_load(Path(source).read_text())
    change(data)
    path = tmp_path / Path(source).name
    path.write_text(yaml.safe_dump(data))
    return str(path)


def failures(result) -> list[str]:
    return [line for line in result.stderr.splitlines() if line.startswith("pre-flight ")]


def test_an_unknown_task_id_or_glob_names_itself(tmp_path):
    result = run(tmp_path, RAW_API, "--task", "no-such-task", "--task", "zzz-*",
                 "--driver", "replay")
    assert result.exit_code == 2
    assert "no task matches 'no-such-task'" in result.stderr
    assert "no task matches 'zzz-*'" in result.stderr


def test_a_broken_document_is_named_by_file_and_line(tmp_path, tree_copy, monkeypatch):
    monkeypatch.setenv("BENCHKIT_ROOT", str(tree_copy))
    task = tree_copy / "tasks.d" / f"{TASK}.yaml"
    task.write_text(task.read_text().replace("tier: single-mutation", "tier: sideways"))
    result = run(tmp_path, str(tree_copy / "arms.d/raw-api.yaml"), "--task", TASK,
                 "--driver", "replay")
    assert result.exit_code == 2
    problem = next(line for line in result.stderr.splitlines() if f"{TASK}.yaml:" in line)
    number = next(i for i, line in enumerate(task.read_text().splitlines(), 1)
                  if line.startswith("tier:"))
    assert f"{TASK}.yaml:{number}:" in problem


def test_an_arm_binary_that_is_not_installed(tmp_path):
    arm = arm_copy(tmp_path, RAW_API, lambda d: (d["tool"].update(binary="benchkit-no-such-tool"),
                                                 d["tool"].pop("install")))
    result = run(tmp_path, arm, "--task", TASK, "--driver", "replay")
    assert result.exit_code == 2
    assert failures(result) == ["pre-flight tools: arm raw-api: its binary "
                                "`benchkit-no-such-tool` is not installed (not on PATH); "
                                "install it: no install line for `benchkit-no-such-tool`: add "
                                f"`install:` to the `tool:` of {arm}"]


@pytest.fixture
def no_tools(tmp_path, monkeypatch):
    """A machine with curl but none of the arms' other tools: neither on PATH nor among
    the checkout's pinned builds."""
    monkeypatch.setenv("PATH", "/usr/bin:/bin")
    (tmp_path / "no-builds").mkdir()
    monkeypatch.setenv("BENCHKIT_TOOLS_DIR", str(tmp_path / "no-builds"))


def test_a_missing_tool_is_named_with_its_install_line_and_the_flag(tmp_path, no_tools):
    result = run(tmp_path, RAW_API, str(CHECKOUT / "arms.d/tea.yaml"), "--task", TASK,
                 "--driver", "replay")
    assert result.exit_code == 2
    assert failures(result) == [
        "pre-flight tools: arm tea: its binary `tea` is not installed (not on PATH); install "
        "it: `bash scripts/setup --arms tea` (pinned: 0.11.1-13-g68b9620)",
        "pre-flight tools: 1 arm(s) cannot run here; `--only-installed` runs the 1 whose tools "
        "are installed (raw-api) and lists the others"]


def test_only_installed_with_no_tool_installed_runs_nothing(tmp_path, no_tools):
    result = run(tmp_path, str(CHECKOUT / "arms.d/tea.yaml"), "--task", TASK, "--driver",
                 "replay", "--only-installed")
    assert result.exit_code == 2
    assert failures(result)[-1] == ("pre-flight tools: --only-installed: none of the chosen "
                                    "arms' tools is installed, so there is nothing to run")


def test_a_missing_binary_is_named_before_its_missing_skill(tmp_path, no_tools, monkeypatch):
    monkeypatch.setenv("BENCHKIT_GITEA_AXI_SKILL", str(tmp_path / "missing/SKILL.md"))
    result = run(tmp_path, str(CHECKOUT / "arms.d/gitea-axi.yaml"), "--task", TASK)
    [tool] = [f for f in failures(result) if f.startswith("pre-flight tools:")]
    assert tool.startswith("pre-flight tools: arm gitea-axi: its binary `gitea-axi` is not "
                           "installed (not on PATH); install it: `bash scripts/setup --arms "
                           "gitea-axi`"), tool


def test_an_mcp_server_command_that_is_not_installed(tmp_path):
    arm = arm_copy(tmp_path, str(CHECKOUT / "tests/arms/gitea-mcp-pypi.yaml"),
                   lambda d: d["tool"]["server"].update(command="/nonexistent/gitea-mcp"))
    result = run(tmp_path, arm, "--task", TASK, "--driver", "replay")
    assert result.exit_code == 2
    assert failures(result) == ["pre-flight tools: arm gitea-mcp-pypi: its MCP server command "
                                "`/nonexistent/gitea-mcp` is not installed (not on PATH); "
                                f"install it: {INSTALL_PYPI}"]


def test_a_skill_file_that_is_missing(tmp_path, monkeypatch):
    monkeypatch.setenv("BENCHKIT_GITEA_AXI_SKILL", str(tmp_path / "missing/SKILL.md"))
    result = run(tmp_path, str(CHECKOUT / "arms.d/gitea-axi.yaml"), "--task", TASK)
    assert result.exit_code == 2
    [tool] = [f for f in failures(result) if f.startswith("pre-flight tools:")]
    assert "its skill was not found" in tool and "missing/SKILL.md" in tool


def test_no_claude_credentials_for_the_claude_driver(tmp_path):
    result = run(tmp_path, RAW_API, "--task", TASK, "--driver", "claude")
    assert result.exit_code == 2
    [claude] = failures(result)
    assert claude.startswith("pre-flight claude: no Claude credentials: set ANTHROPIC_API_KEY")
    assert str(tmp_path / "claude" / ".credentials.json") in claude


def test_claude_credentials_are_found_where_the_cli_looks(tmp_path):
    login = tmp_path / "claude" / ".credentials.json"
    assert claude_credentials({"CLAUDE_CONFIG_DIR": str(login.parent)}) is None
    assert claude_credentials({"ANTHROPIC_BASE_URL": "http://127.0.0.1:9/"}) == "ANTHROPIC_BASE_URL"
    login.parent.mkdir()
    login.write_text("{}")
    assert claude_credentials({"CLAUDE_CONFIG_DIR": str(login.parent)}) == str(login)


def test_a_host_that_is_down(tmp_path, dead_url):
    result = run(tmp_path, RAW_API, "--task", TASK, "--driver", "replay",
                 "--host", dead_url, "--token", "some-token-value")
    assert result.exit_code == 2
    [host] = failures(result)
    assert host.startswith(f"pre-flight host: cannot reach the Gitea host {dead_url} (from flags)")
    assert "some-token-value" not in result.output


def test_a_token_the_host_rejects(tmp_path, forge):
    result = run(tmp_path, RAW_API, "--task", TASK, "--driver", "replay",
                 "--host", forge.url, "--token", "wrong-token-0123456789")
    assert result.exit_code == 2
    assert failures(result) == [f"pre-flight host: the Gitea host {forge.url} (from flags) "
                                f"rejected the token (HTTP 401); check --token / GITEA_TOKEN"]
    assert "wrong-token-0123456789" not in result.output
    assert repos(forge) == []


def test_a_host_without_a_token_is_not_replaced_by_an_embedded_forge(tmp_path, forge):
    result = run(tmp_path, RAW_API, "--task", TASK, "--driver", "replay", "--host", forge.url)
    assert result.exit_code == 2
    [host] = failures(result)
    assert host.startswith(f"pre-flight host: no token for {forge.url}")


def test_every_failure_at_once_and_as_a_json_event(tmp_path, dead_url):
    arm = arm_copy(tmp_path, RAW_API, lambda d: d["tool"].update(binary="benchkit-no-such-tool"))
    result = run(tmp_path, arm, "--task", TASK, "--driver", "claude", "--json",
                 "--host", dead_url, "--token", "t")
    assert result.exit_code == 2
    assert [f.split(":")[0] for f in failures(result)] == [
        "pre-flight tools", "pre-flight claude", "pre-flight host"]
    [event] = [json.loads(line) for line in result.stdout.splitlines()]
    assert event["event"] == "preflight" and event["ok"] is False
    assert [f["check"] for f in event["failures"]] == ["tools", "claude", "host"]


class ModelServer:
    """A Messages API endpoint that only counts what reaches it: the model must never
    be called when pre-flight fails."""

    def __init__(self):
        calls = self.calls = []

        class Handler(http.server.BaseHTTPRequestHandler):
            def do_POST(self):  # the http.server API's name
                calls.append(self.path)
                self.send_response(500)
                self.end_headers()

            def log_message(self, *args):
                pass

        self.server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def close(self):
        self.server.shutdown()
        self.server.server_close()


@pytest.fixture
def model(monkeypatch):
    server = ModelServer()
    monkeypatch.setenv("ANTHROPIC_BASE_URL", server.url)
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-ant-never-used")
    yield server
    server.close()


def test_an_mcp_arm_whose_token_misses_its_server_stops_before_the_model(tmp_path, model):
    """Acceptance: a copy of an arm with its token under another name stops in
    pre-flight (exit 2), before the model is called, and records nothing."""
    def rename(data):
        server_env = data["tool"]["server"]["env"]
        server_env["GITEA_TOKN"] = server_env.pop("GITEA_TOKEN")
    arm = arm_copy(tmp_path, str(CHECKOUT / "tests/arms/gitea-mcp-pypi.yaml"), rename)
    result = run(tmp_path, arm, "--task", TASK, "--driver", "claude", "--json")
    assert result.exit_code == 2
    [probe] = failures(result)
    assert probe.startswith("pre-flight probe: arm gitea-mcp-pypi: its probe `list_issues {")
    assert "GITEA_TOKEN environment variable is required" in probe
    assert model.calls == []
    [event] = [json.loads(line) for line in result.stdout.splitlines()]
    assert (event["event"], [f["check"] for f in event["failures"]]) == ("preflight", ["probe"])


def test_a_shell_arm_whose_token_misses_its_command_stops_and_leaves_no_repository(
        tmp_path, model, forge):
    def rename(data):
        data["credentials"]["env"] = {"GITEA_TOKN": "{{ token }}"}
        data["tool"]["probe"]["run"] = data["tool"]["probe"]["run"].replace("{{ token }}", "$GITEA_TOKEN")
    arm = arm_copy(tmp_path, RAW_API, rename)
    result = run(tmp_path, arm, "--task", TASK, "--driver", "claude",
                 "--host", forge.url, "--token", forge.token)
    assert result.exit_code == 2
    [probe] = failures(result)
    assert probe.startswith('pre-flight probe: arm raw-api: its probe `curl -sS --fail-with-body -H '
                            '"Authorization: token $GITEA_TOKEN"')
    assert "failed: exit status 22: " in probe and "401" in probe
    assert model.calls == [] and repos(forge) == []
    assert forge.token not in result.output


def test_trials_and_until_exclude_each_other(tmp_path):
    result = run(tmp_path, RAW_API, "--trials", "2", "--until", "3")
    assert result.exit_code == 2 and "not both" in result.stderr
    result = run(tmp_path, RAW_API, "--until", "sometimes")
    assert result.exit_code == 2 and "positive number, `floor` or `trials`" in result.stderr


def repos(forge) -> list[str]:
    with Client(forge.url, forge.token) as client:
        return [r["name"] for r in client.get(f"/users/{forge.user}/repos")]
