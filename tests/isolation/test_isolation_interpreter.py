"""What a binary needs to start, on the curated PATH: an npm-style `gitea-axi` (a symlink
to a `#!/usr/bin/env node` script of the suite's own) starts there, with `node` linked
beside it, while the guard still denies `node` to the agent."""

import os
import shutil
import subprocess
from pathlib import Path

import pytest
from conftest import CHECKOUT

from benchkit.documents import load_arm, load_suite
from benchkit.isolation import IsolationError, assemble, make_bin_dir, start_needs

AXI = load_arm(CHECKOUT / "arms.d" / "gitea-axi.yaml")
NODE = shutil.which("node")
pytestmark = pytest.mark.skipif(NODE is None, reason="node is not installed (scripts/test-setup)")


def script(path: Path, text: str) -> Path:
    path.write_text(text)
    path.chmod(0o755)
    return path


def test_the_node_of_an_env_shebang_is_found_through_the_symlink(npm_axi):
    search = f"{npm_axi}{os.pathsep}{os.environ['PATH']}"
    assert start_needs(str(npm_axi / "gitea-axi"), search, what="x") == {"node": NODE}


def test_env_split_string_and_assignments_name_the_program_env_runs(tmp_path):
    search = os.environ["PATH"]
    for line in ("#!/usr/bin/env -S node --no-warnings", "#!/usr/bin/env -Snode",
                 "#!/usr/bin/env -S LANG=C node"):
        tool = script(tmp_path / "tool", f"{line}\nconsole.log(1)\n")
        assert start_needs(str(tool), search, what="x") == {"node": NODE}, line


def test_an_absolute_interpreter_needs_nothing_on_path(tmp_path):
    tool = script(tmp_path / "tool", "#!/bin/sh\necho hi\n")
    assert start_needs(str(tool), "", what="x") == {}
    assert start_needs(shutil.which("curl"), "", what="x") == {}  # not a script at all


def test_an_interpreter_that_is_a_script_is_followed(tmp_path):
    (tmp_path / "bin").mkdir()
    wrapper = script(tmp_path / "bin" / "mynode", f"#!/usr/bin/env bash\nexec {NODE} \"$@\"\n")
    tool = script(tmp_path / "tool", "#!/usr/bin/env mynode\nconsole.log(1)\n")
    search = f"{tmp_path / 'bin'}{os.pathsep}{os.environ['PATH']}"
    assert start_needs(str(tool), search, what="x") == {
        "mynode": str(wrapper), "bash": shutil.which("bash", path=search)}


def test_a_missing_interpreter_is_a_clear_error(tmp_path, npm_axi):
    with pytest.raises(IsolationError, match=r"`gitea-axi` starts with `#!/usr/bin/env node`, "
                                             r"and `node` is not on PATH"):
        make_bin_dir(AXI.id, AXI.tool, tmp_path / "curated", str(npm_axi))
    tool = script(tmp_path / "tool", "#!/nonexistent/python\n")
    with pytest.raises(IsolationError, match="`#!/nonexistent/python`, which is not an executable"):
        start_needs(str(tool), "", what="it")


def test_the_curated_path_starts_the_tool_and_the_guard_still_denies_node(tmp_path, npm_axi):
    search = f"{npm_axi}{os.pathsep}{os.environ['PATH']}"
    suite = load_suite(CHECKOUT / "suite.yaml")
    assembly = assemble(AXI, suite, host_url="http://127.0.0.1:9/", api_url="http://127.0.0.1:9/api/v1",
                        token="t0k3n", owner="bench", repo="demo", user="bench",
                        workdir=tmp_path, search_path=search, environ={"PATH": search})
    with assembly:
        entries = {p.name for p in assembly.path_dir.iterdir()}
        assert {"gitea-axi", "node"} <= entries
        assert os.readlink(assembly.path_dir / "node") == NODE
        ran = subprocess.run([assembly.env["SHELL"], "-c", "gitea-axi --version"], env=assembly.agent_env(),
                             cwd=tmp_path, capture_output=True, text=True, timeout=120)
        assert (ran.returncode, ran.stdout) == (0, "gitea-axi-standin 0.0.1\n"), ran.stderr
    guard = assembly.guard
    assert guard.decide("gitea-axi issue list -R bench/demo").allowed
    for typed in ("node -e 'require(\"child_process\").execSync(\"id\")'",
                  "env node -e 1", "xargs node < /dev/null", "./node -e 1",
                  f"{assembly.path_dir}/node -e 1", "gitea-axi setup"):
        assert not guard.decide(typed).allowed, typed
