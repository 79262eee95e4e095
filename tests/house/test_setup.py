"""`bash scripts/setup` on a fresh copy of the checkout: it installs benchkit into a
virtual environment (the checkout's `.venv/`, or $BENCHKIT_VENV: here one made ahead,
seeing the test environment's packages, with the copy's benchkit installed editable,
so no package is fetched), never into the machine's Python, and says each step it took; and
`--arms` takes an arm whose tool it does not build when that tool is on PATH."""

import os
import shutil
import subprocess
import sys
import sysconfig
from pathlib import Path

import pytest
from conftest import CHECKOUT, IN_CI

CUSTOM_ARM = """id: zz-tool
description: A tool of its author's, on PATH.
tool:
  kind: shell
  binary: zz-tool
  install: "pipx install zz-tool"
  probe:
    run: zz-tool issues
user_agents: [Python-urllib/]
bootstrap: Your one tool is the zz-tool CLI.
"""


def copied_checkout(where: Path) -> tuple[Path, Path]:
    """(the checkout's tracked files copied under `where`, as a clone holds them; a
    virtual environment seeing the test environment's packages, with that copy's benchkit
    installed editable). Fails (in CI) or skips when the copy cannot be installed."""
    copy = where / "checkout"
    files = subprocess.run(["git", "ls-files", "-z"], cwd=CHECKOUT, capture_output=True,
                           check=True).stdout.decode().split("\0")
    for name in filter(None, files):
        if (CHECKOUT / name).is_file():
            (copy / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(CHECKOUT / name, copy / name)
    venv = where / "venv"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", venv], check=True)
    # It sees the packages of the environment running the tests (the checkout's .venv, at
    # the lock's pins), not the machine's Python, which scripts/setup never installs into.
    own = subprocess.run([venv / "bin" / "python", "-c", "import sysconfig; "
                          "print(sysconfig.get_paths()['purelib'])"],
                         capture_output=True, text=True, check=True).stdout.strip()
    Path(own, "tests-packages.pth").write_text(sysconfig.get_paths()["purelib"] + "\n")
    done = subprocess.run([venv / "bin" / "python", "-m", "pip", "install", "--quiet", "--no-deps",
                           "--disable-pip-version-check", "-e", copy],
                          capture_output=True, text=True, timeout=600)
    if done.returncode != 0:
        (pytest.fail if IN_CI else pytest.skip)(f"cannot install the copy's benchkit: "
                                                f"{done.stderr[-500:]}")
    return copy, venv


def clean_environment(venv: Path) -> dict:
    """This process's environment without benchkit's or Python's settings, naming `venv`
    as the one scripts/setup installs into."""
    env = {key: value for key, value in os.environ.items()
           if not key.startswith(("BENCHKIT_", "PYTHON", "VIRTUAL_ENV"))}
    return {**env, "BENCHKIT_VENV": str(venv)}


@pytest.fixture(scope="module")
def fresh_copy(tmp_path_factory) -> tuple[Path, dict, Path]:
    """(the copied checkout, an environment naming its virtual environment, that
    environment's directory)."""
    copy, venv = copied_checkout(tmp_path_factory.mktemp("setup"))
    return copy, clean_environment(venv), venv


def setup(copy: Path, env: dict, *args) -> subprocess.CompletedProcess:
    return subprocess.run(["bash", "scripts/setup", *args], cwd=copy, env=env,
                          capture_output=True, text=True, timeout=600)


def test_setup_installs_into_its_virtual_environment_and_says_so(fresh_copy):
    copy, env, venv = fresh_copy
    done = setup(copy, env)
    assert done.returncode == 0, done.stdout + done.stderr
    lines = done.stdout.splitlines()
    assert lines[0] == "setup: system packages present: curl bubblewrap socat"
    assert lines[1] == (f"setup: benchkit already installed in {venv} at the lock's versions "
                        "(constraints.txt)")
    assert lines[-1] == (f"setup: done; benchkit is {venv}/bin/benchkit (or `source "
                         f"{venv}/bin/activate` for `benchkit`)")
    assert not (copy / ".venv").exists()  # $BENCHKIT_VENV, not the default
    def benchkit_of(python) -> str:
        return subprocess.run([python, "-c", "import benchkit; print(benchkit.__file__)"],
                              env=env, cwd="/", capture_output=True, text=True).stdout.strip()
    assert benchkit_of(venv / "bin" / "python") == str(copy / "benchkit" / "__init__.py")
    assert not benchkit_of(sys.executable).startswith(str(copy))  # the machine's left alone


def test_setup_arms_takes_an_arm_whose_tool_is_on_path(fresh_copy, tmp_path):
    copy, env, _ = fresh_copy
    (copy / "arms.d" / "zz-tool.yaml").write_text(CUSTOM_ARM)
    try:
        missing = setup(copy, env, "--arms", "zz-tool")
        assert missing.returncode == 1
        assert ("setup: arm zz-tool: its tool `zz-tool` is not one this script builds, nor on "
                "PATH; install it: pipx install zz-tool") in missing.stderr
        (tmp_path / "zz-tool").write_text("#!/bin/sh\necho zz-tool 1.0\n")
        (tmp_path / "zz-tool").chmod(0o755)
        found = setup(copy, {**env, "PATH": f"{tmp_path}{os.pathsep}{env['PATH']}"},
                      "--arms", "zz-tool")
        assert found.returncode == 0, found.stdout + found.stderr
        assert (f"setup: arm zz-tool: its tool `zz-tool` is installed ({tmp_path / 'zz-tool'}); "
                "this script builds only the shipped arms' tools") in found.stdout
    finally:
        (copy / "arms.d" / "zz-tool.yaml").unlink()
