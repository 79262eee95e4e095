"""Two runs of one arm with two versions of its tool, end to end: every sample records
the version its run's pre-flight found, the arm fingerprint takes it in, `--until`
counts only the current version's samples, and the report keeps the versions apart."""

import json
import os
import shutil
import subprocess

import pytest
from conftest import BENCHKIT

pytestmark = pytest.mark.slow

TASK = "close-csv-export-issue"
CURL = shutil.which("curl")


def curl_of_version(bin_dir, version: str) -> None:
    """A `curl` that is the real one, save for the version it reports."""
    wrapper = bin_dir / "curl"
    wrapper.write_text(f'#!/bin/sh\nif [ "$1" = --version ]; then echo "curl {version} (test)"; '
                       f'exit 0; fi\nexec {CURL} "$@"\n')
    wrapper.chmod(0o755)


def benchkit(tree, env, *args) -> subprocess.CompletedProcess:
    done = subprocess.run([*BENCHKIT, *args],
                          cwd=tree, env=env, capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    return done


def test_samples_of_two_tool_versions_are_recorded_and_reported_apart(tree_copy, tmp_path):
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    env = {key: value for key, value in os.environ.items()
           if not key.startswith(("GITEA_", "ANTHROPIC_", "CLAUDE_", "BENCHKIT_"))}
    env.update(PATH=f"{bin_dir}{os.pathsep}{os.environ['PATH']}", HOME=str(tmp_path),
               XDG_CONFIG_HOME=str(tmp_path / "xdg"), BENCHKIT_CACHE_DIR=str(tmp_path / "cache"))
    run = ("run", "arms.d/raw-api.yaml", "--task", TASK, "--driver", "replay", "--no-report")
    curl_of_version(bin_dir, "1.0")
    benchkit(tree_copy, env, *run, "--until", "1")
    curl_of_version(bin_dir, "2.0")
    topped = benchkit(tree_copy, env, *run, "--until", "1")  # 1.0's sample does not count
    assert "1 trial(s) of 1 cell(s)" in topped.stdout

    samples = [json.loads(line) for line in
               (tree_copy / "results" / "raw-api" / f"{TASK}.jsonl").read_text().splitlines()]
    assert [(s["tool_version"], s["outcome"]) for s in samples] == [
        ("curl 1.0 (test)", "passed"), ("curl 2.0 (test)", "passed")]
    assert samples[0]["fingerprints"]["arm"] != samples[1]["fingerprints"]["arm"]

    benchkit(tree_copy, env, "report", "--format", "json", "-o", str(tmp_path / "report.json"))
    report = json.loads((tmp_path / "report.json").read_text())
    assert report["tool_versions"] == {"raw-api": "curl 2.0 (test)"}
    [replayed] = [r for r in report["replay"] if r["arm"] == "raw-api"]
    assert replayed["samples"] == 1
    assert [(r["task"], r["changed"], r["samples"]) for r in report["other_versions"]] == [
        (TASK, ["tool curl 1.0 (test)"], 1)]


def test_the_version_recorded_is_the_one_the_sandbox_ran(tree_copy, tmp_path):
    """The version command runs again inside the agent's sandbox (its own PID namespace,
    where this curl's PID is small), and that line is what the sample records."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    wrapper = bin_dir / "curl"
    wrapper.write_text('#!/bin/sh\nif [ "$1" = --version ]; then\n'
                       '  if [ $$ -lt 100 ]; then echo "curl 3.0 (sandboxed)"; '
                       'else echo "curl 3.0 (host)"; fi; exit 0\nfi\n'
                       f'exec {CURL} "$@"\n')
    wrapper.chmod(0o755)
    env = {key: value for key, value in os.environ.items()
           if not key.startswith(("GITEA_", "ANTHROPIC_", "CLAUDE_", "BENCHKIT_"))}
    env.update(PATH=f"{bin_dir}{os.pathsep}{os.environ['PATH']}", HOME=str(tmp_path),
               XDG_CONFIG_HOME=str(tmp_path / "xdg"), BENCHKIT_CACHE_DIR=str(tmp_path / "cache"))
    benchkit(tree_copy, env, "run", "arms.d/raw-api.yaml", "--task", TASK, "--driver", "replay",
             "--no-report")
    [sample] = [json.loads(line) for line in
                (tree_copy / "results" / "raw-api" / f"{TASK}.jsonl").read_text().splitlines()]
    assert (sample["tool_version"], sample["outcome"]) == ("curl 3.0 (sandboxed)", "passed")
