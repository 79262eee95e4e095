"""The arms on their real tools: tea, the official gitea-mcp and gitea-axi, found on PATH
(scripts/test-setup builds the pinned ones from source). Outside CI a missing tool skips,
saying how to install it its upstream's own way; in CI, where every real-tool test must
run, it fails saying why. With the tool there: its version is read and its probe passes
on the forge and on a real Gitea, `validate --live` proves every task it supports,
`benchkit run --driver replay` passes with the tool installed under a directory the
agent's sandbox hides (an nvm prefix, ~/.npm-global, ~/go/bin), and an arm whose token
is wrong stops in pre-flight before the model is called, recording nothing."""

import json
import os
import shutil
from pathlib import Path

import pytest
import yaml
from click.testing import CliRunner
from conftest import CHECKOUT, real_tool
from test_preflight import ModelServer, failures, repos

from benchkit.cli import main
from benchkit.documents import load_arm, load_tree
from benchkit.gitea import Client
from benchkit.preflight.checks import check_tools
from benchkit.preflight.host import probe_host
from benchkit.preflight.probe import ProbeSite, probe_tools
from benchkit.proving.selfcheck import validate_live

TREE = load_tree(CHECKOUT)
ARMS = ["tea", "gitea-mcp", "gitea-axi"]
SHELL_ARMS = ["tea", "gitea-axi"]


def arm_file(name: str) -> Path:
    return CHECKOUT / "arms.d" / f"{name}.yaml"


@pytest.mark.parametrize("name", ARMS)
def test_the_tool_says_its_version_and_its_probe_passes(name, host):
    real_tool(name)
    arm = load_arm(arm_file(name))
    problems, versions = check_tools([arm], TREE.suite)
    assert problems == [] and versions[name]
    assert "\x1b" not in versions[name]  # recorded as text, without terminal escapes
    with Client(host.url, host.token) as client:
        ctx = ProbeSite(client, TREE.suite, probe_host(client, TREE.suite.repo_prefix))
        assert probe_tools([arm], ctx, TREE.seeds["default"]) == []


@pytest.mark.slow
@pytest.mark.parametrize("name", ARMS)
def test_validate_live_proves_every_supported_task(name, host):
    real_tool(name)
    checks = validate_live([arm_file(name)], host=host.url, token=host.token, root=CHECKOUT)
    assert [(c.task, c.verdict, c.reason) for c in checks if c.problem] == []
    assert any(c.verdict == "ok" for c in checks)  # some task was proved, not all skipped


# --- installed where the agent's sandbox hides it ----------------------------------

def link_or_copy(source: str, dest: str | Path) -> None:
    Path(dest).parent.mkdir(parents=True, exist_ok=True)
    try:
        os.link(source, dest)
    except OSError:
        shutil.copy2(source, dest)


def package_of(entry: str) -> Path:
    """The npm package an npm-style entry point belongs to (its package.json names it)."""
    directory = Path(os.path.realpath(entry)).parent
    while directory != directory.parent:
        manifest = directory / "package.json"
        if manifest.is_file() and json.loads(manifest.read_text()).get("name"):
            return directory
        directory = directory.parent
    raise AssertionError(f"{entry} is in no npm package")


def install_axi(prefix: Path, with_node: bool) -> Path:
    """An npm-style install of the real gitea-axi under `prefix` (its package copied,
    node_modules/ with it): bin/gitea-axi links to the package's dist/main.js; with
    `with_node`, an nvm-like prefix whose bin/ holds node too. Returns bin/."""
    package = prefix / "lib" / "node_modules" / "gitea-axi"
    shutil.copytree(package_of(real_tool("gitea-axi")), package, symlinks=True,
                    copy_function=link_or_copy)
    (prefix / "bin").mkdir(parents=True)
    (prefix / "bin" / "gitea-axi").symlink_to("../lib/node_modules/gitea-axi/dist/main.js")
    if with_node:
        link_or_copy(os.path.realpath(shutil.which("node") or "node"), prefix / "bin" / "node")
    return prefix / "bin"


def install_tea(home: Path) -> Path:
    link_or_copy(os.path.realpath(real_tool("tea")), home / "go" / "bin" / "tea")
    return home / "go" / "bin"


SHAPES = {  # name -> (arm, installs under a hidden HOME and returns the bin directory)
    "nvm": ("gitea-axi", lambda home: install_axi(home / ".nvm/versions/node/v20.0.0", True)),
    "npm-global": ("gitea-axi", lambda home: install_axi(home / ".npm-global", False)),
    "go-bin": ("tea", install_tea),
}


def only_on_path(bin_dir: Path, binary: str) -> str:
    """PATH with `bin_dir` first and no other directory holding `binary`."""
    rest = [d for d in os.environ["PATH"].split(os.pathsep)
            if d and shutil.which(binary, path=d) is None]
    return os.pathsep.join([str(bin_dir), *rest])


@pytest.mark.parametrize("shape", list(SHAPES))
def test_a_replay_run_passes_with_the_tool_under_a_hidden_home(shape, tmp_path, quiet,
                                                                monkeypatch):
    """tmp_path lies under /tmp, which the sandbox hides: the tool, its package and
    (nvm) its node are there for real. A mutation task: the arm's credentials, its
    curated PATH and the sandbox all take part."""
    arm, install = SHAPES[shape]
    bin_dir = install(tmp_path / "home")
    monkeypatch.setenv("PATH", only_on_path(bin_dir, arm))
    task = "label-startup-crash"
    result = CliRunner().invoke(main, [
        "run", str(arm_file(arm)), "--driver", "replay", "--task", task,
        "--store", str(tmp_path / "results"), "--no-report"], catch_exceptions=False)
    assert result.exit_code == 0, result.output
    [sample] = [json.loads(line) for line in
                (tmp_path / "results" / arm / f"{task}.jsonl").read_text().splitlines()]
    assert (sample["outcome"], sample["confined"]) == ("passed", True), sample["differences"]


# --- a wrong token stops the run before the model is called --------------------------

WRONG = "wrong-token-0123456789abcdef"


def with_wrong_token(tmp_path: Path, name: str) -> str:
    """A copy of the arm whose credentials carry a token the host never issued."""
    text = arm_file(name).read_text().replace("{{ token }}", WRONG)
    data = yaml.safe_load(text)
    path = tmp_path / f"{name}.yaml"
    path.write_text(yaml.safe_dump(data))
    return str(path)


@pytest.mark.parametrize("name", SHELL_ARMS)
def test_a_wrong_token_stops_in_pre_flight_with_no_model_call_and_nothing_stored(
        name, tmp_path, quiet, forge, monkeypatch):
    real_tool(name)
    model = ModelServer()
    monkeypatch.setenv("ANTHROPIC_BASE_URL", model.url)
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-ant-never-used")
    try:
        result = CliRunner().invoke(main, [
            "run", with_wrong_token(tmp_path, name), "--task", "close-csv-export-issue",
            "--driver", "claude", "--host", forge.url, "--token", forge.token,
            "--store", str(tmp_path / "results"), "--no-report"], catch_exceptions=False)
    finally:
        model.close()
    assert result.exit_code == 2, result.output
    [probe] = failures(result)
    assert probe.startswith(f"pre-flight probe: arm {name}: its probe `")
    assert model.calls == [] and repos(forge) == []
    assert not (tmp_path / "results").exists()
    assert WRONG not in result.output and forge.token not in result.output
