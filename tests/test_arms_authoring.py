"""Adding an arm by following docs/adding-an-arm.md: the guide's own arm file and
references, dropped into a temporary tree, are listed (with the tool installed here),
validated, proved by `validate --live` on the embedded forge and run by the guide's own
replay command."""

import json
import os
import re
import shlex
import subprocess

import pytest
from click.testing import CliRunner
from conftest import BENCHKIT, CHECKOUT

from benchkit.cli import main
from benchkit.documents.reference import no_reference

GUIDE = (CHECKOUT / "docs" / "adding-an-arm.md").read_text(encoding="utf-8")
ARM, REFERENCE = re.findall(r"```yaml\n(.*?)```", GUIDE, re.S)
ARM_ID = re.search(r"^id: (\S+)", ARM, re.M).group(1)
COVERED = re.findall(r"^  ([a-z0-9-]+):\n    targets:", REFERENCE, re.M)


def guide_command(start: str) -> list[str]:
    """The guide's command line that starts so, as its words (its comment left out)."""
    (line,) = [line for block in re.findall(r"```sh\n(.*?)```", GUIDE, re.S)
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
    assert row["install"] == "`apt-get install curl`"  # the arm file's own line
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
