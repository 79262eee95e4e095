"""An interpreter arm run from a Python virtual environment: the agent's PATH names the
environment's bin/ first with VIRTUAL_ENV set, and the sandbox shows the environment
(read-only) and the installation its interpreter comes from, so `python3` runs there
with the environment active, as it does for the user."""

import os
import subprocess
import sys
import venv
from pathlib import Path

import pytest
from conftest import CHECKOUT, IN_CI

from benchkit.documents import load_arm, load_suite
from benchkit.isolation import assemble
from benchkit.isolation.sandbox import Sandbox, missing

ARM = """\
id: py
description: Python from a virtual environment.
tool:
  kind: shell
  binary: python3
  install: "`python3 -m venv VENV`, then VENV/bin first on PATH"
  version: [-c, "import sys; print(sys.prefix)"]
  probe:
    run: python3 -c "print(1)"
bootstrap: Python.
"""
SHOW = "import os, sys; print(sys.prefix, sys.base_prefix != sys.prefix, os.environ['VIRTUAL_ENV'])"


@pytest.fixture
def environment(tmp_path) -> Path:
    """A virtual environment of the tests' own interpreter, under /tmp (which the
    sandbox hides), with a module of its own in its site-packages."""
    where = tmp_path / "venv"
    venv.create(where, with_pip=False)
    [site] = where.glob("lib/python3*/site-packages")
    (site / "only_in_the_venv.py").write_text("WHERE = 'venv'\n")
    return where


def test_python_runs_in_the_sandbox_with_its_virtual_environment(tmp_path, environment):
    if missing() is not None:
        (pytest.fail if IN_CI else pytest.skip)(missing())
    arm_file = tmp_path / "py.yaml"
    arm_file.write_text(ARM)
    search = os.pathsep.join([str(environment / "bin"), os.path.dirname(sys.executable),
                              os.environ["PATH"]])
    assembly = assemble(load_arm(arm_file), load_suite(CHECKOUT / "suite.yaml"),
                        host_url="http://127.0.0.1:9/", api_url="http://127.0.0.1:9/api/v1",
                        token="t0k3n", owner="o", repo="r", user="u", workdir=tmp_path / "work",
                        search_path=search, environ={"PATH": search})
    assert assembly.env["PATH"].split(os.pathsep)[0] == str(environment / "bin")
    assert assembly.env["VIRTUAL_ENV"] == str(environment)
    assert not assembly.guard.decide("pip install requests").allowed  # on PATH, denied by name
    with assembly, Sandbox(tmp_path / "sandbox", workdir=tmp_path / "work", home=tmp_path / "home",
                           tmp=tmp_path / "tmp", env=dict(assembly.env)) as sandbox:
        done = subprocess.run(
            [str(sandbox.prefix), f"python3 -c {SHOW!r} && python3 -c "
             "'import only_in_the_venv as m; print(m.WHERE)' && (: > "
             f"{environment}/written) 2>/dev/null || echo read-only"],
            cwd=tmp_path / "work", capture_output=True, text=True, timeout=60)
    assert done.stdout.split() == [str(environment), "True", str(environment), "venv",
                                   "read-only"], done.stderr
    assert not (environment / "written").exists()


def test_a_path_as_binary_is_refused_with_the_way_to_pick_an_interpreter(tmp_path):
    from benchkit.documents import DocumentError
    arm_file = tmp_path / "py.yaml"
    arm_file.write_text(ARM.replace("binary: python3", "binary: /usr/bin/python3"))
    with pytest.raises(DocumentError, match="found on PATH .*a virtual environment's bin/"):
        load_arm(arm_file)
