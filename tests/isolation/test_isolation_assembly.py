"""Arm assembly and the curated bin directory, with real bash, real files and the
shipped arms: prompts share one base, credentials live only in the harness's own
directory, and the agent's PATH holds the arm's tool and the utilities alone."""

import os
import shutil
import stat
import subprocess
from pathlib import Path

import pytest
from conftest import CHECKOUT

from benchkit.documents import load_arm, load_suite
from benchkit.isolation import UTILITIES, IsolationError, assemble, make_bin_dir

SUITE = load_suite(CHECKOUT / "suite.yaml")
ARMS = {arm: load_arm(CHECKOUT / "arms.d" / f"{arm}.yaml")
        for arm in ("gitea-axi", "tea", "gitea-mcp", "raw-api")}
TOKEN = "0123456789abcdef0123456789abcdef01234567"
COORDINATES = dict(host_url="http://127.0.0.1:3999/", api_url="http://127.0.0.1:3999/api/v1",
                   token=TOKEN, owner="bench", repo="benchkit-demo-1", user="bench")
SKILL = """---
name: gitea-axi
description: Drive Gitea issues and pull requests.
---

# gitea-axi

Run `gitea-axi issues list` to see the open issues.
"""
# Stand-ins for the CLIs this machine does not have. The tea one prints the login it
# would use, from where tea looks for it.
FAKE_TEA = '#!/bin/sh\ncat "${XDG_CONFIG_HOME:-$HOME/.config}/tea/config.yml"\n'
FAKE_AXI = '#!/bin/sh\necho "gitea-axi talks to $GITEA_AXI_API_URL"\n'


@pytest.fixture
def fake_bin(tmp_path):
    directory = tmp_path / "fake-bin"
    directory.mkdir()
    for name, text in (("tea", FAKE_TEA), ("gitea-axi", FAKE_AXI)):
        (directory / name).write_text(text)
        (directory / name).chmod(0o755)
    return directory


@pytest.fixture
def search_path(fake_bin):
    return f"{fake_bin}{os.pathsep}{os.environ['PATH']}"


@pytest.fixture
def environ(tmp_path, search_path):
    skill = tmp_path / "SKILL.md"
    skill.write_text(SKILL)
    return {"PATH": search_path, "BENCHKIT_GITEA_AXI_SKILL": str(skill)}


def build(arm, tmp_path, **options):
    return assemble(ARMS[arm] if isinstance(arm, str) else arm, SUITE,
                    workdir=tmp_path / "work", **COORDINATES, **options)


def bash(script, assembly, cwd):
    """Run a script as the agent's Bash tool would: the harness env plus the arm's."""
    cwd.mkdir(exist_ok=True)
    return subprocess.run(["/bin/bash", "-c", script], env={**os.environ, **assembly.env},
                          cwd=cwd, capture_output=True, text=True, timeout=120)


# --- prompts ---------------------------------------------------------------------------

def test_the_four_prompts_share_one_base_and_differ_only_in_bootstrap(tmp_path, environ):
    assemblies = {arm: build(arm, tmp_path, environ=environ) for arm in ARMS}
    bases = {a.base_prompt for a in assemblies.values()}
    assert len(bases) == 1
    base, = bases
    for value in COORDINATES.values():
        assert value in base
    assert "state your final answer plainly" in base
    for assembly in assemblies.values():
        assert assembly.system_prompt.startswith(base + "\n")
        assert len(assembly.system_prompt) > len(base) + 20
    # gitea-axi carries its skill's body, without the front matter.
    axi = assemblies["gitea-axi"].system_prompt
    assert "Run `gitea-axi issues list` to see the open issues." in axi
    assert "description: Drive Gitea" not in axi and "---" not in axi
    assert "Run `gitea-axi issues list`" not in assemblies["tea"].system_prompt
    assert "`tea api` is not available" in assemblies["tea"].system_prompt


def test_tools_env_and_servers_per_arm(tmp_path, environ):
    raw = build("raw-api", tmp_path, environ=environ)
    assert raw.tools == ["Bash"] and raw.mcp_servers == {}
    assert raw.env["PATH"] == str(raw.path_dir) and raw.env["SHELL"].endswith("bash")
    assert raw.allowed_binaries == ("curl", *UTILITIES)
    axi = build("gitea-axi", tmp_path, environ=environ)
    assert (axi.env["GITEA_AXI_API_URL"], axi.env["GITEA_AXI_TOKEN"], axi.env["GITEA_AXI_REPO"]) \
        == (COORDINATES["host_url"], TOKEN, "bench/benchkit-demo-1")
    assert not any(name.startswith("GITEA_") and not name.startswith("GITEA_AXI_") for name in axi.env)
    mcp = build("gitea-mcp", tmp_path, environ=environ)
    assert mcp.tools == [] and mcp.allowed_binaries == () and "PATH" not in mcp.env
    assert mcp.env["ENABLE_TOOL_SEARCH"] == "false"
    server = mcp.mcp_servers["gitea"]
    assert (server["type"], server["args"]) == ("stdio", ["-t", "stdio"])
    assert server["env"] == {"GITEA_HOST": COORDINATES["host_url"], "GITEA_ACCESS_TOKEN": TOKEN}
    assert not mcp.guard.decide("ls").allowed
    assert mcp.guard.decide_tool("mcp__gitea__list_repo_issues", {}).allowed


def test_the_test_mcp_arm_launches_its_server_by_path(tmp_path, environ):
    arm = load_arm(CHECKOUT / "tests/arms/gitea-mcp-pypi.yaml")
    assembly = build(arm, tmp_path, environ=environ)
    server = assembly.mcp_servers["gitea"]
    assert server["command"].endswith(".venvs/gitea-mcp/bin/gitea-mcp")
    assert server["env"] == {"GITEA_URL": COORDINATES["host_url"], "GITEA_TOKEN": TOKEN}
    with assembly:
        assert assembly.path_dir is None and assembly.config_dir.is_dir()
    assert not assembly.harness_dir.exists()


def test_a_missing_skill_is_a_clear_error(tmp_path):
    with pytest.raises(IsolationError, match="gitea-axi: its skill was not found; looked in: "
                                             "BENCHKIT_GITEA_AXI_SKILL=.*nowhere.md"):
        build("gitea-axi", tmp_path, environ={"BENCHKIT_GITEA_AXI_SKILL": str(tmp_path / "nowhere.md")})


def test_the_token_is_not_in_the_assembly_repr(tmp_path, environ):
    assert TOKEN not in repr(build("tea", tmp_path, environ=environ))


# --- credentials -----------------------------------------------------------------------

def _snapshot(directory: Path) -> dict:
    return {p: (p.read_bytes(), p.stat().st_mtime_ns) for p in directory.rglob("*") if p.is_file()}


def test_tea_login_lives_only_in_the_harness_directory(tmp_path, environ, monkeypatch):
    home = tmp_path / "user-home"
    own = home / ".config/tea/config.yml"
    own.parent.mkdir(parents=True)
    own.write_text("logins:\n  - name: mine\n    url: https://gitea.example\n    token: secret\n")
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.setenv("XDG_CONFIG_HOME", str(home / ".config"))
    before = _snapshot(home)

    assembly = build("tea", tmp_path, environ=environ)
    assert not assembly.harness_dir.exists()  # nothing is written before setup()
    with assembly:
        config = assembly.config_dir / "tea/config.yml"
        assert stat.S_IMODE(config.stat().st_mode) == 0o600
        assert assembly.harness_dir != home and home not in assembly.harness_dir.parents
        # tea, run as the agent runs it, finds the harness's login and no other.
        shown = bash("tea", assembly, tmp_path / "work")
        assert shown.returncode == 0, shown.stderr
        assert f"url: {COORDINATES['host_url']}" in shown.stdout and f"token: {TOKEN}" in shown.stdout
        assert "name: benchkit" in shown.stdout and "mine" not in shown.stdout
        assembly.setup()  # idempotent
    assert not assembly.harness_dir.exists()
    assembly.teardown()  # idempotent
    assert _snapshot(home) == before


def test_setup_commands_run_with_the_arm_env_and_failures_hide_the_token(tmp_path, search_path):
    fake = tmp_path / "fake-bin" / "tea"
    fake.write_text('#!/bin/sh\nmkdir -p "$XDG_CONFIG_HOME/tea"\n'
                    'echo "$*" > "$XDG_CONFIG_HOME/tea/login"\n')
    arm_file = tmp_path / "tea-login.yaml"
    arm_file.write_text(
        "id: tea-login\ndescription: tea logged in by a set-up command\n"
        "tool: {kind: shell, binary: tea, probe: {run: tea}}\nbootstrap: Use tea.\n"
        "credentials:\n  env: {XDG_CONFIG_HOME: '{{ config_dir }}'}\n"
        "  setup:\n    - tea login add --url {{ host_url }} --token {{ token }}\n")
    assembly = build(load_arm(arm_file), tmp_path, search_path=search_path)
    with assembly:
        login = (assembly.config_dir / "tea/login").read_text()
        assert login.strip() == f"login add --url {COORDINATES['host_url']} --token {TOKEN}"
    assert not assembly.harness_dir.exists()

    arm_file.write_text(arm_file.read_text().replace(
        "tea login add", "echo refused {{ token }} >&2; exit 3; tea"))
    failing = build(load_arm(arm_file), tmp_path, search_path=search_path)
    with pytest.raises(IsolationError) as raised:
        failing.setup()
    assert "set-up command 1 failed with exit status 3" in str(raised.value)
    assert "refused [token]" in str(raised.value) and TOKEN not in str(raised.value)
    assert not failing.harness_dir.exists()


# --- the curated PATH ------------------------------------------------------------------

def test_the_agent_path_holds_the_arm_tool_and_utilities_alone(tmp_path, environ):
    assembly = build("raw-api", tmp_path, environ=environ)
    with assembly:
        entries = {p.name for p in assembly.path_dir.iterdir()}
        expected = {"curl"} | {u for u in UTILITIES if shutil.which(u, path=environ["PATH"])}
        assert entries == expected
        assert all((assembly.path_dir / name).is_symlink() for name in entries)
        found = bash("for n in curl jq sed python3 perl bash sh tea; do "
                     "command -v $n || echo missing:$n; done", assembly, tmp_path / "work")
        lines = found.stdout.split()
        assert lines[:3] == [str(assembly.path_dir / n) for n in ("curl", "jq", "sed")]
        assert lines[3:] == [f"missing:{n}" for n in ("python3", "perl", "bash", "sh", "tea")]
        ran = bash("python3 -c 'print(1)'", assembly, tmp_path / "work")
        assert ran.returncode == 127
        assert bash("echo '[1,2]' | jq length", assembly, tmp_path / "work").stdout == "2\n"


def test_make_bin_dir_for_each_kind_of_arm(tmp_path, search_path):
    tea = make_bin_dir("tea", ARMS["tea"].tool, tmp_path / "tea-bin", search_path)
    assert os.readlink(tea / "tea") == str(tmp_path / "fake-bin" / "tea")
    assert "curl" not in {p.name for p in tea.iterdir()}
    mcp_bin = make_bin_dir("gitea-mcp", ARMS["gitea-mcp"].tool, tmp_path / "mcp-bin", search_path)
    assert list(mcp_bin.iterdir()) == []
    # Made again, it is rebuilt; its own directory on the search path is never used.
    again = make_bin_dir("tea", ARMS["tea"].tool, tea, f"{tea}{os.pathsep}{search_path}")
    assert os.readlink(again / "tea") == str(tmp_path / "fake-bin" / "tea")


def test_a_missing_arm_binary_is_a_clear_error(tmp_path):
    with pytest.raises(IsolationError, match="arm tea: its binary `tea` is not installed"):
        make_bin_dir("tea", ARMS["tea"].tool, tmp_path / "bin", "/usr/bin")
    assembly = build("tea", tmp_path, search_path="/usr/bin", environ={})
    with pytest.raises(IsolationError, match="`tea` is not installed"):
        assembly.setup()
    assert not assembly.harness_dir.exists()


def test_make_bin_dir_refuses_a_directory_it_did_not_make(tmp_path, search_path):
    (tmp_path / "bin").mkdir()
    (tmp_path / "bin" / "notes.txt").write_text("mine")
    with pytest.raises(IsolationError, match="notes.txt, which is not a link"):
        make_bin_dir("raw-api", ARMS["raw-api"].tool, tmp_path / "bin", search_path)
    assert (tmp_path / "bin" / "notes.txt").read_text() == "mine"
