"""The forge held to a real Gitea for the real gitea-mcp server: every task's reference
(refs.d/gitea-mcp.yaml) is played through the server on a fresh repository of each host,
and the sequences of (method, route, status) of the server's requests must agree. A
difference fails unless tests/data/differential-gitea-mcp-accepted.yaml accepts it,
with its reason; an accepted one that no longer occurs fails too."""

import difflib
import os
import shutil
from pathlib import Path

import pytest
import yaml
from clientdiff import play
from conftest import CHECKOUT, IN_CI

from benchkit.spec import load_arm, load_tree
from benchkit.spec.reference import reference_for

ACCEPTED = Path(__file__).parent / "data/differential-gitea-mcp-accepted.yaml"
TREE = load_tree(CHECKOUT)

pytestmark = pytest.mark.slow


def differences(forge_seen, gitea_seen) -> list[str]:
    """The lines only one host saw: "- " the forge's, "+ " Gitea's."""
    return [line for line in difflib.ndiff(list(map(str, forge_seen)), list(map(str, gitea_seen)))
            if line[:2] in ("- ", "+ ")]


def test_differences_are_the_lines_only_one_host_saw():
    assert differences(["GET /a -> 200", "GET /b -> 200"], ["GET /a -> 200", "GET /b -> 404"]) == [
        "- GET /b -> 200", "+ GET /b -> 404"]


@pytest.fixture(scope="module")
def played(gitea, tmp_path_factory):
    """task id -> (the forge's requests, Gitea's requests)."""
    from benchkit.forge import Forge
    command = shutil.which("gitea-mcp")
    if command is None:
        (pytest.fail if IN_CI else pytest.skip)(
            "`gitea-mcp` is not on PATH: build gitea.com/gitea/gitea-mcp at commit a5dd03c "
            "(`go build -ldflags '-X main.Version=a5dd03c'`) or run scripts/test-setup")
    os.environ["HOME"] = str(tmp_path_factory.mktemp("home"))  # its log file goes there
    reference = reference_for(load_arm(CHECKOUT / "arms.d/gitea-mcp.yaml"), CHECKOUT)
    prefix = TREE.suite.repo_prefix
    found = {}
    with Forge() as forge:
        for task_id, task in reference.tasks.items():
            if task.steps:
                seed = TREE.seeds[TREE.tasks[task_id].seed]
                found[task_id] = (play(forge, seed, task, command, prefix),
                                  play(gitea, seed, task, command, prefix))
    return found


def test_gitea_mcp_makes_the_same_requests_on_both_hosts(played):
    accepted = yaml.safe_load(ACCEPTED.read_text()) or []
    allowed = {(entry["task"], entry["line"]) for entry in accepted}
    found = {(task, line) for task, (mine, theirs) in played.items()
             for line in differences(mine, theirs)}
    unlisted = sorted(found - allowed)
    stale = sorted(allowed - found)
    assert not unlisted, "differences not accepted in " + ACCEPTED.name + ":\n" + "\n".join(
        f"{task}: {line}" for task, line in unlisted)
    assert not stale, f"accepted differences that no longer occur: {stale}"
    assert all(mine for mine, _ in played.values())  # the proxy saw the server's requests
