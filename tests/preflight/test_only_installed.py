"""`benchkit run arms.d/*.yaml --only-installed` on a machine with curl alone (none of
the other arms' tools on PATH, nor among the checkout's builds): raw-api runs, every
other shipped arm is listed as not run with its own install line, and the run exits 0;
the same run without the flag stops at pre-flight, naming the flag."""

import json
import os
import subprocess

import pytest
from conftest import BENCHKIT

from benchkit.documents.tree import load_tree

pytestmark = pytest.mark.slow
TASK = "read-open-issue-count"


def test_only_installed_runs_raw_api_and_lists_the_others_with_their_install_lines(
        tree_copy, tmp_path):
    (tmp_path / "no-builds").mkdir()
    env = {key: value for key, value in os.environ.items()
           if not key.startswith(("GITEA_", "ANTHROPIC_", "CLAUDE_", "BENCHKIT_"))}
    env.update(PATH="/usr/local/bin:/usr/bin:/bin", HOME=str(tmp_path),
               XDG_CONFIG_HOME=str(tmp_path / "xdg"), BENCHKIT_CACHE_DIR=str(tmp_path / "cache"),
               BENCHKIT_TOOLS_DIR=str(tmp_path / "no-builds"))
    arms = sorted(str(p.relative_to(tree_copy)) for p in (tree_copy / "arms.d").glob("*.yaml"))
    run = [*BENCHKIT, "run", *arms, "--driver", "replay", "--task", TASK, "--no-report"]

    stopped = subprocess.run(run, cwd=tree_copy, env=env, capture_output=True, text=True,
                             timeout=600)
    assert stopped.returncode == 2
    assert ("`--only-installed` runs the 1 whose tools are installed (raw-api) and lists the "
            "others") in stopped.stderr
    assert not (tree_copy / "results").exists()

    done = subprocess.run([*run, "--only-installed"], cwd=tree_copy, env=env,
                          capture_output=True, text=True, timeout=900)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    tree = load_tree(tree_copy)
    for arm in tree.arms.values():
        if arm.id == "raw-api":
            continue
        what = "binary" if arm.tool.kind == "shell" else "MCP server command"
        assert (f"not run (--only-installed): arm {arm.id}: its {what} `{arm.tool.executable}` "
                f"is not installed (not on PATH); install it: {arm.tool.install}"
                ) in done.stdout.splitlines(), done.stdout
    assert sorted(p.name for p in (tree_copy / "results").iterdir() if p.is_dir()) == ["raw-api"]
    [sample] = [json.loads(line) for line in
                (tree_copy / "results" / "raw-api" / f"{TASK}.jsonl").read_text().splitlines()]
    assert sample["outcome"] == "passed"
