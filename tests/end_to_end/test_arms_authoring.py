"""Adding an arm by following docs/adding-an-arm.md: the guide's own arm file and
references, dropped into a temporary tree, are listed (with the tool installed here),
validated, proved by `validate --live` on the embedded forge and run by the guide's own
replay command; and its interpreter section, followed line by line in a shell (a fresh
virtual environment with requests from PyPI), ends the same way, with samples that
record the version the sandbox ran."""

import json
import os
import re
import shlex
import shutil
import subprocess
import sys

import pytest
import yaml
from click.testing import CliRunner
from conftest import BENCHKIT, CHECKOUT, IN_CI

from benchkit.cli import main
from benchkit.documents.reference import no_reference

GUIDE_TEXT = (CHECKOUT / "docs" / "adding-an-arm.md").read_text(encoding="utf-8")
GUIDE, INTERPRETERS = GUIDE_TEXT.split("\n## Interpreter arms\n")
ARM, REFERENCE = re.findall(r"```yaml\n(.*?)```", GUIDE, re.S)
ARM_ID = re.search(r"^id: (\S+)", ARM, re.M).group(1)
COVERED = re.findall(r"^  ([a-z0-9-]+):\n    targets:", REFERENCE, re.M)


def guide_command(start: str, text: str = GUIDE) -> list[str]:
    """The guide's command line that starts so, as its words (its comment left out)."""
    (line,) = [line for block in re.findall(r"```sh\n(.*?)```", text, re.S)
               for line in block.splitlines() if line.startswith(start)]
    return shlex.split(line, comments=True)


@pytest.fixture
def tree(tree_copy, monkeypatch):
    monkeypatch.setenv("BENCHKIT_ROOT", str(tree_copy))
    monkeypatch.chdir(tree_copy)
    (tree_copy / "arms.d" / f"{ARM_ID}.yaml").write_text(ARM)
    return tree_copy


def run(*args):
    result = CliRunner().invoke(main, [str(a) for a in args], catch_exceptions=False)
    return result.exit_code, result.stdout, result.stderr


def test_the_guides_arm_is_listed_with_its_tool_and_validated(tree):
    code, out, _ = run("list", "arms", "--json")
    assert code == 0
    (row,) = [row for row in json.loads(out) if row["id"] == ARM_ID]
    assert row["tool"] == "curl" and row["installed"].startswith("installed: curl ")
    assert row["install"] == yaml.safe_load(ARM)["tool"]["install"]  # the arm file's own line
    assert run(*guide_command("benchkit validate arms.d/")[1:])[0] == 0

    code, _, warnings = run("validate")
    assert code == 0
    assert (f"arms.d/{ARM_ID}.yaml: warning: not provable on arm {ARM_ID}: no "
            f"refs.d/{ARM_ID}.yaml") in warnings  # once for the arm, not per task
    (tree / "refs.d" / f"{ARM_ID}.yaml").write_text(REFERENCE)
    code, _, warnings = run("validate")
    assert code == 0, warnings
    unproved = {line.split(":")[0] for line in warnings.splitlines()
                if line.endswith(no_reference(ARM_ID))}
    assert COVERED and not unproved & {f"tasks.d/{task}.yaml" for task in COVERED}
    assert unproved  # the tasks the guide's reference leaves out are still named


@pytest.mark.slow
def test_the_guides_arm_is_proved_on_the_forge_and_runs_its_replay(tree):
    (tree / "refs.d" / f"{ARM_ID}.yaml").write_text(REFERENCE)
    env = {k: v for k, v in os.environ.items() if not k.startswith("GITEA_")}
    env["XDG_CONFIG_HOME"] = str(tree.parent / "no-tea-config")  # the forge, whatever the shell says

    def benchkit(words):
        assert words[0] == "benchkit"
        return subprocess.run([*BENCHKIT, *words[1:]], cwd=tree, env=env, capture_output=True,
                              text=True, timeout=900)

    live = guide_command("benchkit validate --live")
    assert sorted(live[live.index("--task") + 1::2]) == sorted(COVERED)
    done = benchkit(live)
    assert done.returncode == 0, done.stdout + done.stderr
    for task in COVERED:
        assert re.search(rf"^{ARM_ID}\s+{task}\s.*\sok$", done.stdout, re.MULTILINE), done.stdout

    done = benchkit(guide_command("benchkit run"))
    assert done.returncode == 0, done.stdout + done.stderr
    for task in COVERED:
        (line,) = (tree / "results" / ARM_ID / f"{task}.jsonl").read_text().splitlines()
        sample = json.loads(line)
        assert (sample["outcome"], sample["driver"]) == ("passed", "replay")
    assert (tree / "reports" / "report.md").is_file()


# --- the interpreter section ----------------------------------------------------------

PY_ARM, PY_REFERENCE = re.findall(r"```yaml\n(.*?)```", INTERPRETERS, re.S)
PY_ARM_ID = re.search(r"^id: (\S+)", PY_ARM, re.M).group(1)
PY_COVERED = re.findall(r"^  ([a-z0-9-]+):\n    targets:", PY_REFERENCE, re.M)
# The lines of the guide's shell blocks: making the environment, then benchkit's.
SHELL_LINES = [line for block in re.findall(r"```sh\n(.*?)```", INTERPRETERS, re.S)
               for line in block.splitlines() if line.strip()]


@pytest.mark.slow
def test_the_guides_interpreter_arm_is_proved_and_records_what_the_sandbox_ran(
        tree_copy, tmp_path):
    """The interpreter section, line by line, in one bash: HOME is the test's, `python3`
    the tests' own interpreter (first on PATH), `benchkit` this checkout's."""
    (tree_copy / "arms.d" / f"{PY_ARM_ID}.yaml").write_text(PY_ARM)
    (tree_copy / "refs.d" / f"{PY_ARM_ID}.yaml").write_text(PY_REFERENCE)
    home, bin_dir = tmp_path / "home", tmp_path / "bin"
    home.mkdir()
    bin_dir.mkdir()
    (bin_dir / "benchkit").write_text(f"#!/bin/sh\nexec {shlex.join(BENCHKIT)} \"$@\"\n")
    (bin_dir / "benchkit").chmod(0o755)
    env = {k: v for k, v in os.environ.items()
           if not k.startswith(("GITEA_", "ANTHROPIC_", "CLAUDE_", "BENCHKIT_", "VIRTUAL_ENV"))}
    env.update(HOME=str(home), XDG_CONFIG_HOME=str(tmp_path / "xdg"),
               BENCHKIT_CACHE_DIR=str(tmp_path / "cache"),
               PATH=os.pathsep.join([str(bin_dir), os.path.dirname(sys.executable),
                                     os.environ["PATH"]]))
    script = "set -e\nexec 2>&1\n" + "".join(f"echo '>>> {i}'\n{line}\n" for i, line in enumerate(SHELL_LINES))
    done = subprocess.run(["bash", "-c", script], cwd=tree_copy, env=env, capture_output=True,
                          text=True, timeout=1500)
    outputs = dict(re.findall(r"^>>> (\d+)\n(.*?)(?=^>>> |\Z)", done.stdout, re.S | re.M))
    if done.returncode != 0 and "pip install" in SHELL_LINES[len(outputs) - 1] and not IN_CI:
        pytest.skip(f"no requests from PyPI here: {done.stdout[-500:]}")
    assert done.returncode == 0, done.stdout[-6000:]

    venv = home / "venvs" / PY_ARM_ID
    assert shutil.which("python3", path=str(venv / "bin")), "the guide's environment"
    version = subprocess.run([venv / "bin" / "python3", *yaml.safe_load(PY_ARM)["tool"]["version"]],
                             capture_output=True, text=True, check=True).stdout.strip()
    assert re.fullmatch(r"Python \S+ requests 2\.34\.2", version), version
    listed = SHELL_LINES.index(next(line for line in SHELL_LINES if line.startswith("benchkit list arms")))
    assert re.search(rf"^{PY_ARM_ID}\s+shell\s+python3\s+installed: {re.escape(version)}$",
                     outputs[str(listed)], re.M), outputs[str(listed)]
    live = next(i for i, line in enumerate(SHELL_LINES) if line.startswith("benchkit validate --live"))
    for task in PY_COVERED:
        assert re.search(rf"^{PY_ARM_ID}\s+{task}\s.*\sok$", outputs[str(live)], re.M), outputs[str(live)]
    for task in PY_COVERED:
        (line,) = (tree_copy / "results" / PY_ARM_ID / f"{task}.jsonl").read_text().splitlines()
        sample = json.loads(line)
        assert (sample["outcome"], sample["driver"]) == ("passed", "replay"), sample["failure_class"]
        assert sample["tool_version"] == version
