"""The environment the tests and CI run in: the lock (constraints.txt) pins every package
benchkit and its test extra need, within pyproject.toml's ranges; the Claude Agent SDK
(which bundles the agent runtime) is pinned exactly, to the lock's version; and
scripts/setup, the README's first step, names the command that installs a missing
system package where it cannot install it."""

import os
import re
import shutil
import subprocess
import tempfile
import tomllib
from pathlib import Path

import pytest
from conftest import CHECKOUT
from packaging.requirements import Requirement
from packaging.utils import canonicalize_name

PROJECT = tomllib.loads((CHECKOUT / "pyproject.toml").read_text(encoding="utf-8"))["project"]
LOCK = {canonicalize_name(m[1]): m[2] for m in re.finditer(
    r"^([A-Za-z0-9_.-]+)==(\S+)", (CHECKOUT / "constraints.txt").read_text(encoding="utf-8"),
    re.MULTILINE)}
REQUIREMENTS = [Requirement(line) for line in
                PROJECT["dependencies"] + PROJECT["optional-dependencies"]["test"]]


@pytest.mark.parametrize("requirement", REQUIREMENTS, ids=str)
def test_the_lock_pins_each_requirement_within_its_range(requirement):
    pinned = LOCK.get(canonicalize_name(requirement.name))
    assert pinned is not None, f"constraints.txt lacks {requirement.name}: run `bash scripts/lock`"
    assert requirement.specifier.contains(pinned, prereleases=True), (
        f"constraints.txt pins {requirement.name}=={pinned}, outside {requirement}")


def test_the_agent_runtime_is_pinned_exactly_and_so_locked():
    sdk = next(r for r in REQUIREMENTS if r.name == "claude-agent-sdk")
    (spec,) = sdk.specifier
    assert spec.operator == "==" and LOCK["claude-agent-sdk"] == spec.version


def test_setup_names_the_install_command_when_it_cannot_install():
    runuser = shutil.which("runuser")
    if runuser is None or os.geteuid() != 0:
        pytest.skip("needs root and runuser, to run scripts/setup as another user")
    python = "/usr/bin/python3"  # the system's, which the other user may run
    if subprocess.run([python, "-c", "import ensurepip, venv"]).returncode != 0:
        pytest.skip("the system's python3 lacks venv (python3-venv)")
    # A PATH with curl and a Python that makes virtual environments but neither bwrap nor
    # socat, and a copy of the script, where the other user reaches them (pytest's
    # temporary directory, maybe the checkout, are root's); then without the Python.
    for programs, missing in ((("python3",), "bubblewrap socat"),
                              ((), "bubblewrap socat python3-venv")):
        with tempfile.TemporaryDirectory() as place:
            Path(place).chmod(0o755)
            for directory in ("bin", "scripts"):
                (Path(place) / directory).mkdir()
            for program in ("bash", "curl", "id", "dirname", *programs):
                (Path(place) / "bin" / program).symlink_to(
                    python if program == "python3" else shutil.which(program))
            shutil.copy(CHECKOUT / "scripts" / "setup", Path(place) / "scripts")
            done = subprocess.run([runuser, "-u", "nobody", "--", f"{place}/bin/bash",
                                   f"{place}/scripts/setup"], env={"PATH": f"{place}/bin"},
                                  capture_output=True, text=True, timeout=60)
        assert done.returncode == 1 and done.stdout == ""
        assert done.stderr.splitlines() == [
            f"setup: {missing} not installed: run `sudo apt-get install -y {missing}`, then "
            "this again"]


def test_the_readmes_first_command_sets_the_machine_up_then_runs_the_main_job():
    readme = (CHECKOUT / "README.md").read_text(encoding="utf-8")
    first = next(line for line in readme.split("```sh\n", 1)[1].splitlines()
                 if not line.startswith("#"))
    assert first == "bash scripts/setup && .venv/bin/benchkit run arms.d/raw-api.yaml --driver replay"
    assert "bash scripts/setup --test" in (CHECKOUT / "scripts" / "test-setup").read_text()


def test_the_lock_says_how_it_is_refreshed():
    lock = (CHECKOUT / "constraints.txt").read_text(encoding="utf-8")
    assert "#    bash scripts/lock\n" in lock  # pip-compile's header, set by scripts/lock
    assert "piptools compile" in (CHECKOUT / "scripts" / "lock").read_text(encoding="utf-8")
