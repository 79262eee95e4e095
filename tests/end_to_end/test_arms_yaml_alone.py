"""An arm declared in YAML alone, for a tool benchkit has never heard of: a small Gitea
CLI that writes its listings to the file its `-o`/`--output` names. Its arm file carries
its install line (which `benchkit list arms` shows while the tool is missing) and those
options (which the guard reads, holding the file to the trial's own places); with the
tool on PATH, its probe, references and replay trial pass. Nothing of benchkit/ changes."""

import json
import os
import subprocess
from pathlib import Path

import pytest
from conftest import BENCHKIT

TOOL = '''#!/usr/bin/python3
"""gitea-lite: a tiny Gitea CLI (a test's tool): lists issues, to stdout or to a file."""
import argparse, os, sys, urllib.request
parser = argparse.ArgumentParser(prog="gitea-lite")
parser.add_argument("--version", action="store_true")
parser.add_argument("command", nargs="?", choices=["issues"])
parser.add_argument("--state", default="open")
parser.add_argument("-o", "--output")
args = parser.parse_args()
if args.version:
    sys.exit(print("gitea-lite 1.0"))
url = (os.environ["GITEA_LITE_URL"].rstrip("/") + "/api/v1/repos/" + os.environ["GITEA_LITE_REPO"]
       + "/issues?type=issues&limit=50&state=" + args.state)
request = urllib.request.Request(url, headers={"Authorization": "token " + os.environ["GITEA_LITE_TOKEN"]})
body = urllib.request.urlopen(request).read().decode()
if args.output:
    with open(args.output, "w") as file:
        file.write(body)
else:
    print(body)
'''
INSTALL = "`install -m 755 gitea-lite ~/.local/bin/` (gitea-lite 1.0)"
ARM = f'''id: gitea-lite
description: A tiny Gitea CLI that writes its listings to files.
tool:
  kind: shell
  binary: gitea-lite
  install: "{INSTALL}"
  writes: [-o, --output]
  version: [--version]
  probe:
    run: gitea-lite issues --state all
user_agents: [Python-urllib/]
bootstrap: |
  Your one tool is the `gitea-lite` CLI, run through the Bash tool, already configured
  for the repository {{{{ owner }}}}/{{{{ repo }}}}: `gitea-lite issues --state open -o FILE`.
credentials:
  env:
    GITEA_LITE_URL: "{{{{ host_url }}}}"
    GITEA_LITE_TOKEN: "{{{{ token }}}}"
    GITEA_LITE_REPO: "{{{{ owner }}}}/{{{{ repo }}}}"
'''
REFERENCE = '''arm: gitea-lite
verified: false
tasks:
  read-open-issue-count:
    targets: {state: open}
    decoys: {state: closed}
    steps:
      - run: gitea-lite issues --state {{ state }} -o issues.json
      - run: cat issues.json
    answer: "There are {{ outputs[1] | fromjson | length }} {{ state }} issues."
'''


@pytest.fixture
def tree(tree_copy, tmp_path) -> tuple[Path, dict]:
    if not os.access("/usr/bin/python3", os.X_OK):
        pytest.skip("the test's tool is a /usr/bin/python3 script")
    (tree_copy / "arms.d" / "gitea-lite.yaml").write_text(ARM)
    (tree_copy / "refs.d" / "gitea-lite.yaml").write_text(REFERENCE)
    env = {key: value for key, value in os.environ.items()
           if not key.startswith(("GITEA_", "ANTHROPIC_", "CLAUDE_", "BENCHKIT_"))}
    env.update(HOME=str(tmp_path), XDG_CONFIG_HOME=str(tmp_path / "xdg"),
               BENCHKIT_CACHE_DIR=str(tmp_path / "cache"))
    return tree_copy, env


def benchkit(tree, env, *args) -> subprocess.CompletedProcess:
    return subprocess.run([*BENCHKIT, *args], cwd=tree, env=env, capture_output=True, text=True,
                          timeout=900)


def test_the_arm_files_install_line_and_write_options_are_all_benchkit_needs(tree, tmp_path):
    tree, env = tree
    listed = {row["id"]: row for row in json.loads(benchkit(tree, env, "list", "arms", "--json").stdout)}
    assert listed["gitea-lite"]["installed"] == f"not installed: {INSTALL}"

    def guard(line):
        done = benchkit(tree, env, "guard", "arms.d/gitea-lite.yaml", "--", line)
        return done.returncode, json.loads(done.stdout)["reason"]

    assert guard("gitea-lite issues -o issues.json")[0] == 0
    assert guard("gitea-lite issues --output=/tmp/issues.json")[0] == 0
    for line in ("gitea-lite issues -o /etc/cron.d/x", "gitea-lite issues --output ../x",
                 "gitea-lite issues -o/root/.bashrc", "cd / && gitea-lite issues -o x"):
        code, reason = guard(line)
        assert code == 1 and ("`gitea-lite -o`" in reason or "`gitea-lite --output`" in reason), line


@pytest.mark.slow
def test_the_yaml_only_arm_is_probed_and_replayed(tree, tmp_path):
    tree, env = tree
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    (bin_dir / "gitea-lite").write_text(TOOL)
    (bin_dir / "gitea-lite").chmod(0o755)
    env["PATH"] = f"{bin_dir}{os.pathsep}{os.environ['PATH']}"
    done = benchkit(tree, env, "run", "arms.d/gitea-lite.yaml", "--driver", "replay", "--task",
                    "read-open-issue-count", "--no-report")
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    [sample] = [json.loads(line) for line in
                (tree / "results" / "gitea-lite" / "read-open-issue-count.jsonl").read_text().splitlines()]
    assert (sample["outcome"], sample["tool_version"]) == ("passed", "gitea-lite 1.0")
