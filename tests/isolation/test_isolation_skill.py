"""gitea-axi's skill, found from the installed tool: the package beside the resolved
binary, then ~/.claude/skills, overridable; missing, an error naming every place tried."""

import os
from pathlib import Path

import pytest
from conftest import CHECKOUT

from benchkit.documents import load_arm, load_suite
from benchkit.isolation import IsolationError, assemble

AXI = load_arm(CHECKOUT / "arms.d" / "gitea-axi.yaml")
SUITE = load_suite(CHECKOUT / "suite.yaml")


@pytest.fixture(autouse=True)
def only_the_given_path(tmp_path, monkeypatch):
    """The tool is looked for on the PATH each test gives, not among the checkout's
    pinned builds too."""
    (tmp_path / "no-builds").mkdir()
    monkeypatch.setenv("BENCHKIT_TOOLS_DIR", str(tmp_path / "no-builds"))


def prompt(tmp_path, environ: dict) -> str:
    assembly = assemble(AXI, SUITE, host_url="http://127.0.0.1:9/", api_url="http://127.0.0.1:9/api/v1",
                        token="t", owner="bench", repo="demo", user="bench", workdir=tmp_path,
                        environ=environ)
    return assembly.system_prompt


def home_skill(tmp_path) -> Path:
    skill = tmp_path / "home" / ".claude" / "skills" / "gitea-axi" / "SKILL.md"
    skill.parent.mkdir(parents=True)
    skill.write_text("---\nname: gitea-axi\n---\n# gitea-axi (from setup)\n")
    return skill


def test_the_skill_beside_the_resolved_binary_comes_first(tmp_path, npm_axi):
    home_skill(tmp_path)
    environ = {"PATH": f"{npm_axi}{os.pathsep}{os.environ['PATH']}", "HOME": str(tmp_path / "home")}
    text = prompt(tmp_path, environ)
    assert "# gitea-axi (from the package)" in text and "name: gitea-axi" not in text


def test_then_the_copy_gitea_axi_setup_makes(tmp_path):
    home_skill(tmp_path)
    assert "# gitea-axi (from setup)" in prompt(tmp_path, {"PATH": "", "HOME": str(tmp_path / "home")})


def test_the_override_wins_and_is_the_one_place_looked(tmp_path, npm_axi):
    mine = tmp_path / "mine.md"
    mine.write_text("# my skill\n")
    environ = {"PATH": str(npm_axi), "HOME": str(tmp_path), "BENCHKIT_GITEA_AXI_SKILL": str(mine)}
    assert "# my skill" in prompt(tmp_path, environ)
    mine.unlink()
    with pytest.raises(IsolationError) as raised:
        prompt(tmp_path, environ)
    assert str(raised.value) == (f"arm gitea-axi: its skill was not found; looked in: "
                                 f"BENCHKIT_GITEA_AXI_SKILL={mine} (No such file or directory)")


def test_a_missing_skill_names_every_place_tried(tmp_path, npm_axi):
    (npm_axi.parent / "lib/node_modules/gitea-axi/skills/gitea-axi/SKILL.md").unlink()
    package = (npm_axi / "gitea-axi").resolve().parent.parent
    with pytest.raises(IsolationError) as raised:
        prompt(tmp_path, {"PATH": str(npm_axi), "HOME": str(tmp_path / "nohome")})
    assert str(raised.value) == (
        f"arm gitea-axi: its skill was not found; looked in: "
        f"{package}/skills/gitea-axi/SKILL.md (No such file or directory); "
        f"{tmp_path}/nohome/.claude/skills/gitea-axi/SKILL.md (No such file or directory) "
        f"(or set BENCHKIT_GITEA_AXI_SKILL to name the file)")
    with pytest.raises(IsolationError, match="beside the tool \\(its executable `gitea-axi` is not installed\\)"):
        prompt(tmp_path, {"PATH": "", "HOME": str(tmp_path / "nohome")})
