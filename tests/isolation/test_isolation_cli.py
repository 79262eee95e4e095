"""`benchkit guard ARM_YAML -- COMMAND`, as docs/contracts.md states it: JSON out, exit 0
allowed, 1 denied, 2 bad input."""

import json
import subprocess
from pathlib import Path

import pytest
from click.testing import CliRunner
from conftest import BENCHKIT, CHECKOUT

from benchkit.cli import main

RAW_API = str(CHECKOUT / "arms.d/raw-api.yaml")
TEA = str(CHECKOUT / "arms.d/tea.yaml")


def guard(*args, stdin=None):
    result = CliRunner().invoke(main, ["guard", *args], input=stdin)
    return result.exit_code, result.stdout, result.stderr


def test_allowed_prints_the_decision_and_exits_0():
    code, out, _ = guard(RAW_API, "--", "curl -s http://127.0.0.1:3000/api/v1/version | jq .")
    assert code == 0
    assert json.loads(out) == {"allowed": True, "reason": "allowed: runs curl, jq",
                               "binaries": ["curl", "jq"]}


def test_denied_exits_1_with_the_reason():
    code, out, _ = guard(TEA, "--", "tea", "api", "/repos/bench/demo/issues")
    decision = json.loads(out)
    assert code == 1 and decision["allowed"] is False
    assert decision["reason"].startswith("`tea api` is not available")
    assert decision["binaries"] == ["tea"]


def test_several_arguments_are_joined_as_the_shell_passed_them():
    # One argument holding `a | b` is a pipe; two arguments `a` and `|` are not.
    code, out, _ = guard(RAW_API, "--", "echo", "x | python3")
    assert code == 0 and json.loads(out)["binaries"] == []
    code, out, _ = guard(RAW_API, "--", "echo x | python3")
    assert code == 1 and json.loads(out)["binaries"] == ["python3"]


def test_a_multi_line_command_can_come_on_stdin():
    script = "for n in 1 2; do\n  curl -s x/$n\ndone\ncat <<EOF\n$(perl -e 1)\nEOF\n"
    code, out, _ = guard(RAW_API, stdin=script)
    assert code == 1 and "`perl` is not available" in json.loads(out)["reason"]


@pytest.mark.parametrize("arm_yaml", ["arms.d/nope.yaml", "suite.yaml"])
def test_bad_input_exits_2(arm_yaml):
    code, out, err = guard(str(CHECKOUT / arm_yaml), "--", "curl x")
    assert code == 2 and out == ""
    named = err.split(":", 1)[0]  # the file, as the document loader shows it (relative to the cwd)
    assert (Path.cwd() / named).resolve() == (CHECKOUT / arm_yaml).resolve()


def test_an_invalid_arm_is_reported_by_file_and_line(tmp_path):
    arm = tmp_path / "broken.yaml"
    arm.write_text("id: broken\ndescription: x\ntool:\n  kind: shell\nbootstrap: x\n")
    code, _, err = guard(str(arm), "--", "curl x")
    assert code == 2
    named, line, message = err.split(":", 2)
    assert ((Path.cwd() / named).resolve(), line) == (arm.resolve(), "4") and "binary" in message


def test_the_installed_command():
    done = subprocess.run([*BENCHKIT,
                           "guard", TEA, "--", "tea issues list --repo bench/demo"],
                          capture_output=True, text=True, cwd=CHECKOUT, timeout=60)
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["allowed"] is True
