"""The arms on their real tools: tea (v0.14.0), the official gitea-mcp (v1.8.0) and
gitea-axi. Each test runs only when its tool is on PATH and otherwise skips saying why:
on the machines benchkit is developed on the Go module proxy refuses tea and gitea-mcp,
and gitea-axi is on no registry (never vendored). With the tool there: its version is
read, its probe passes on the forge and on real Gitea, and `validate --live` proves
every task it supports; gitea-axi also through an npm-style symlink."""

import os
import shutil
from pathlib import Path

import pytest
from conftest import CHECKOUT, IN_CI

from benchkit.gitea import Client
from benchkit.run.host import probe_host
from benchkit.run.preflight import check_tools
from benchkit.run.probe import ProbeSite, probe_tools
from benchkit.run.selfcheck import validate_live
from benchkit.spec import load_arm, load_tree

TREE = load_tree(CHECKOUT)
WHY_ABSENT = {
    "tea": "the Go module proxy refuses code.gitea.io/tea here",
    "gitea-mcp": ("install it as its upstream does: build gitea.com/gitea/gitea-mcp at commit "
                  "a5dd03c with `go build -ldflags '-X main.Version=a5dd03c'` and put it on "
                  "PATH, or run scripts/test-setup"),
    "gitea-axi": "gitea-axi is on no package registry; install it from its repository",
}


def on_path(binary: str):
    """A parameter that skips, saying why, before any host starts for it; in CI, where
    the suite builds the tool, a missing one fails instead (installed())."""
    return pytest.param(binary, marks=pytest.mark.skipif(
        shutil.which(binary) is None and not (IN_CI and binary == "gitea-mcp"),
        reason=f"`{binary}` is not on PATH ({WHY_ABSENT[binary]}): its real-tool tests did not run"))


ARMS = [on_path(name) for name in ("tea", "gitea-mcp", "gitea-axi")]


def installed(binary: str):
    found = shutil.which(binary)
    if found is None:
        (pytest.fail if IN_CI else pytest.skip)(
            f"`{binary}` is not on PATH ({WHY_ABSENT[binary]}): its real-tool tests did not run")
    return found


def arm_file(name: str) -> Path:
    return CHECKOUT / "arms.d" / f"{name}.yaml"


@pytest.mark.parametrize("name", ARMS)
def test_the_tool_says_its_version_and_its_probe_passes(name, host):
    installed(name)
    arm = load_arm(arm_file(name))
    problems, versions = check_tools([arm], TREE.suite)
    assert problems == [] and versions[name]
    with Client(host.url, host.token) as client:
        ctx = ProbeSite(client, TREE.suite, probe_host(client, TREE.suite.repo_prefix))
        assert probe_tools([arm], ctx, TREE.seeds["default"]) == []


@pytest.mark.slow
@pytest.mark.parametrize("name", ARMS)
def test_validate_live_proves_every_supported_task(name, host):
    installed(name)
    checks = validate_live([arm_file(name)], host=host.url, token=host.token, root=CHECKOUT)
    assert [(c.task, c.verdict, c.reason) for c in checks if c.problem] == []


def test_gitea_axi_through_an_npm_style_symlink(tmp_path, forge, monkeypatch):
    real = Path(installed("gitea-axi")).resolve()
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    (bin_dir / "gitea-axi").symlink_to(real)
    monkeypatch.setenv("PATH", f"{bin_dir}{os.pathsep}{os.environ['PATH']}")
    arm = load_arm(arm_file("gitea-axi"))
    with Client(forge.url, forge.token) as client:
        ctx = ProbeSite(client, TREE.suite, probe_host(client, TREE.suite.repo_prefix))
        assert probe_tools([arm], ctx, TREE.seeds["default"]) == []
