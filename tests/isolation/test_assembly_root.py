"""`{{ root }}` in an arm is the loaded tree's root (RunContext.root, passed to the
arm's assembly), not whatever tree the working directory happens to be in."""

from pathlib import Path

import yaml

from benchkit.documents import load_arm, load_tree
from benchkit.isolation import assemble

CHECKOUT = Path(__file__).resolve().parents[2]


def test_root_in_an_arm_is_the_root_it_is_given_not_the_working_directorys(tmp_path, monkeypatch):
    data = yaml.safe_load((CHECKOUT / "arms.d/raw-api.yaml").read_text())
    data["bootstrap"] += "\nThe suite lives in {{ root }}.\n"
    (tmp_path / "raw-api.yaml").write_text(yaml.safe_dump(data))
    arm = load_arm(tmp_path / "raw-api.yaml")
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    monkeypatch.chdir(elsewhere)  # no tree here: find_root() would find none
    monkeypatch.delenv("BENCHKIT_ROOT", raising=False)
    tree_root = tmp_path / "the-tree"
    coordinates = dict(host_url="http://h", api_url="http://h/api/v1", token="t", owner="o",
                       repo="r", user="u", workdir=tmp_path)
    suite = load_tree(CHECKOUT).suite
    given = assemble(arm, suite, root=tree_root, **coordinates)
    assert f"The suite lives in {tree_root}." in given.system_prompt
    found = assemble(arm, suite, **coordinates)
    assert str(tree_root) not in found.system_prompt
