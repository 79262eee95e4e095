"""`bash scripts/setup --arms ...` on a fresh copy of the checkout: the pinned tool of
each arm named is built from its source archive (here offline: the Go module proxy
off, the module and build caches as they are), without Gitea, into .tools/, where that
copy's benchkit then finds it off PATH. The copy's benchkit is installed editable into
a virtual environment of its own (the machine's packages seen through it), which
$BENCHKIT_VENV names to the script, so its pip step finds it in place and the machine's
benchkit is left alone."""

import json
import os
import shutil
import subprocess
from pathlib import Path

import pytest
from conftest import CHECKOUT, IN_CI
from test_setup import clean_environment, copied_checkout

from benchkit.gitea.tools import pin

pytestmark = pytest.mark.slow

ARCHIVES = Path(os.environ.get("BENCHKIT_TOOL_ARCHIVES") or CHECKOUT.parent / "shared" / "tools")


def unavailable(why: str) -> None:
    (pytest.fail if IN_CI else pytest.skip)(why)


@pytest.fixture
def fresh_copy(tmp_path) -> tuple[Path, dict]:
    """The checkout's tracked files (as a clone of this tree would hold them), and an
    environment whose `python3` has that copy's benchkit installed editable."""
    if shutil.which("go") is None:
        unavailable("Go is not installed (scripts/test-setup)")
    if not (ARCHIVES / pin("tea").source).is_file():
        unavailable(f"no source archive {ARCHIVES / pin('tea').source} (BENCHKIT_TOOL_ARCHIVES)")
    copy, venv = copied_checkout(tmp_path)
    env = clean_environment(venv)  # setup's environment: this one, not the copy's .venv
    env.update(PATH=f"{venv / 'bin'}{os.pathsep}/usr/local/bin:/usr/bin:/bin{os.pathsep}"
                    f"{os.path.dirname(shutil.which('go'))}",
               BENCHKIT_TOOL_ARCHIVES=str(ARCHIVES), GOPROXY="off", GOTOOLCHAIN="local")
    return copy, env


def test_setup_arms_installs_the_pinned_tool_where_benchkit_finds_it(fresh_copy):
    copy, env = fresh_copy
    tea = pin("tea")
    done = subprocess.run(["bash", "scripts/setup", "--arms", "tea"], cwd=copy, env=env,
                          capture_output=True, text=True, timeout=1800)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    built = copy / ".tools" / f"tea-{tea.version}" / "tea"
    assert f"setup: tea {tea.version} built (.tools/tea-{tea.version}/)" in done.stdout
    assert [p.name for p in (copy / ".tools").iterdir() if p.is_dir()] == [f"tea-{tea.version}"]
    printed = subprocess.run([built, "--version"], capture_output=True, text=True, check=True)
    assert tea.version in printed.stdout

    # Not on PATH, and found all the same: the copy's benchkit looks in its .tools/.
    assert shutil.which("tea", path=env["PATH"]) is None
    listed = subprocess.run(["python3", "-c", "from benchkit.cli import main; main()", "list",
                             "arms", "--json"], cwd=copy, env=env, capture_output=True,
                            text=True, timeout=120)
    rows = {row["id"]: row for row in json.loads(listed.stdout)}
    assert rows["tea"]["tool_path"] == str(built)
    assert rows["tea"]["installed"].startswith(f"installed: Version: {tea.version} ")
    assert rows["gitea-mcp"]["installed"].startswith("not installed: `bash scripts/setup --arms")

    again = subprocess.run(["bash", "scripts/setup", "--arms", "tea"], cwd=copy, env=env,
                           capture_output=True, text=True, timeout=300)
    assert f"setup: tea {tea.version} already built" in again.stdout, again.stderr
    wrong = subprocess.run(["bash", "scripts/setup", "--arms", "tea,no-such-arm"], cwd=copy,
                           env=env, capture_output=True, text=True, timeout=300)
    assert wrong.returncode != 0 and "setup: no arm no-such-arm in arms.d/" in wrong.stderr
