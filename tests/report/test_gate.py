"""`benchkit gate`: the installed build of an arm's tool against the last release's
samples, end to end under the replay driver on the embedded forge.

The builds are the raw-api arm's real curl behind a wrapper that prints its own version
and re-indents curl's JSON answers with jq: the release indents by 2; a better build
answers compact JSON (fewer bytes: cheaper), a worse one indents by 7 (costlier), an
equal one indents by 2 under another version (the same bytes: equivalent within the
suite's margin). Replay figures are the answers' bytes, so each build's cost is known
before it runs."""

import os
import shutil
import subprocess

import pytest
from conftest import BENCHKIT, CHECKOUT, IN_CI

from benchkit.exits import EXIT_BAD_INPUT, EXIT_FAILED, EXIT_OK, EXIT_UNDECIDED
from benchkit.report.gate import judge
from benchkit.report.model import Figure, VersionComparison, VersionFigures

TASKS = ("read-open-issue-count", "read-bug-issue-titles")
RELEASE = "curl 1.0.0 (release)"
WRAPPER = """#!/bin/sh
if [ "$1" = "--version" ]; then echo '{version}'; exit 0; fi
out=$(/usr/bin/curl "$@"); status=$?
printf '%s' "$out" | /usr/bin/jq {indent} . 2>/dev/null || printf '%s' "$out"
exit $status
"""


def install(where, version: str, indent: str) -> dict:
    """An environment whose `curl` is the build `version`, re-indenting with `indent`."""
    bin_dir = where / "bin"
    bin_dir.mkdir(parents=True, exist_ok=True)
    (bin_dir / "curl").write_text(WRAPPER.format(version=version, indent=indent))
    (bin_dir / "curl").chmod(0o755)
    env = {k: v for k, v in os.environ.items()
           if not k.startswith(("GITEA_", "BENCHKIT_ROOT"))}
    return {**env, "PATH": f"{bin_dir}:{env['PATH']}", "BENCHKIT_ROOT": str(CHECKOUT),
            "BENCHKIT_CACHE_DIR": str(where / "cache")}


def benchkit(*args, cwd, env):
    return subprocess.run([*BENCHKIT, *map(str, args)], cwd=cwd, env=env, capture_output=True,
                          text=True, timeout=900)


@pytest.fixture(scope="module")
def release(tmp_path_factory):
    """A store of the release's replay samples: three trials of each task."""
    if not shutil.which("jq"):
        (pytest.fail if IN_CI else pytest.skip)("the builds re-indent with jq (scripts/test-setup installs it)")
    where = tmp_path_factory.mktemp("release")
    tasks = [arg for task in TASKS for arg in ("--task", task)]
    done = benchkit("run", CHECKOUT / "arms.d/raw-api.yaml", "--driver", "replay", *tasks,
                    "--trials", "3", "--store", where / "results", "--no-report",
                    cwd=where, env=install(where, RELEASE, "--indent 2"))
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-2000:]
    return where / "results"


@pytest.mark.slow
@pytest.mark.parametrize(("build", "indent", "status", "verdict"), [
    ("better", "-c", EXIT_OK, "cheaper"),
    ("worse", "--indent 7", EXIT_FAILED, "costlier"),
    ("equal", "--indent 2", EXIT_OK, "equivalent"),
])
def test_the_gate_on_a_build(release, tmp_path, build, indent, status, verdict):
    """The build against the store's newest other version (the release, found by
    itself): the exit status, the report's verdict, and a summary with the ratio, the
    per-command change and the failing trials."""
    store = tmp_path / "results"
    shutil.copytree(release, store)
    version = f"curl 2.0.0 ({build})"
    done = benchkit("gate", CHECKOUT / "arms.d/raw-api.yaml", "--store", store,
                    "--reports", tmp_path / "reports", "--summary", tmp_path / "gate.md",
                    "--budget", "400000", cwd=tmp_path, env=install(tmp_path, version, indent))
    assert done.returncode == status, done.stdout[-3000:] + done.stderr[-3000:]
    assert f"against {RELEASE}, the newest other version" in done.stderr
    summary = (tmp_path / "gate.md").read_text()
    word = "worse" if status == EXIT_FAILED else "not worse"
    assert summary.startswith(f"## benchkit gate: raw-api {'❌' if status else '✅'} {word}")
    said = (f"{version} {verdict} than {RELEASE}" if verdict != "equivalent"
            else "equivalent within ±5%")
    assert f"`{version}` against `{RELEASE}`: **{said}** on 2 tasks." in summary
    assert "Cost ratio" in summary and "(interval " in summary
    assert "| `curl GET /repos/{owner}/{repo}/issues` |" in summary
    assert "### Failing trials of this build\n\nNone." in summary
    report = (tmp_path / "reports" / "report.md").read_text()
    assert "## Replay (estimates): versions" in report
    by_command = report.split(f"### raw-api: {version} against {RELEASE}, by command", 1)[1]
    row = next(line for line in by_command.splitlines()
               if line.startswith("| `curl GET /repos/{owner}/{repo}/issues` |"))
    change = int(row.split(" | ")[2].replace(",", ""))  # the build's cost minus the release's
    assert {"better": change < -100, "worse": change > 100, "equal": abs(change) < 20}[build], row


def comparison(verdict: str, success_newest: float = 1.0) -> VersionComparison:
    return VersionComparison(
        arm="raw-api", versions=["2", "1"], tasks=list(TASKS),
        figures=VersionFigures(cost_newest=1.0, cost_older=1.0, ratio=Figure(1.0, 0.5, 2.0),
                               success_newest=success_newest, success_older=1.0,
                               success_difference=success_newest - 1.0, samples_newest=4,
                               samples_older=6),
        verdict=verdict, says=verdict, method="", estimated=True)


@pytest.mark.parametrize(("verdict", "success", "status"), [
    ("cheaper", 1.0, EXIT_OK), ("equivalent", 1.0, EXIT_OK), ("costlier", 1.0, EXIT_FAILED),
    ("cheaper", 0.5, EXIT_FAILED), ("inconclusive", 1.0, EXIT_UNDECIDED),
])
def test_the_exit_status_of_a_verdict(verdict, success, status):
    """Not worse is cheaper or equivalent with success not lower; a cheaper build that
    passes less is worse; no verdict within the budget is undecided."""
    assert judge(comparison(verdict, success)).status == status


def test_a_store_without_another_version_is_bad_input(tmp_path):
    """Nothing to compare against: exit 2 with the reason, before anything runs."""
    done = benchkit("gate", CHECKOUT / "arms.d/raw-api.yaml", "--store", tmp_path / "results",
                    "--summary", tmp_path / "gate.md", cwd=tmp_path,
                    env=install(tmp_path, "curl 2.0.0 (lonely)", "-c"))
    assert done.returncode == EXIT_BAD_INPUT, done.stdout + done.stderr
    assert ("holds no replay sample of raw-api at a version other than the installed "
            "'curl 2.0.0 (lonely)'") in done.stderr
    assert not (tmp_path / "gate.md").exists() and not (tmp_path / "results").exists()


def test_a_version_the_store_lacks_is_the_runs_refusal(release, tmp_path):
    store = tmp_path / "results"
    shutil.copytree(release, store)
    before = sorted(p.read_bytes() for p in store.rglob("*.jsonl"))
    done = benchkit("gate", CHECKOUT / "arms.d/raw-api.yaml", "--against", "0.9.9",
                    "--store", store, "--summary", tmp_path / "gate.md", cwd=tmp_path,
                    env=install(tmp_path, "curl 2.0.0 (new)", "-c"))
    assert done.returncode == EXIT_BAD_INPUT, done.stdout + done.stderr
    assert f'at tool version "0.9.9" to compare against (the versions it holds: {RELEASE})' \
        in done.stderr
    assert sorted(p.read_bytes() for p in store.rglob("*.jsonl")) == before


@pytest.mark.slow
def test_a_build_whose_references_changed_is_not_compared(release, tmp_path, tree_copy):
    """Replay figures are the bytes the references' commands show the model: references
    that pipe curl through `jq -c` made a worse build (indent 7) cheaper than the
    release and the gate exit 0. The release's samples played other references: the
    build is refused (exit 2), nothing run, the reason said."""
    refs = tree_copy / "refs.d" / "raw-api.yaml"
    refs.write_text(refs.read_text().replace('limit=50"\n', 'limit=50" | jq -c .\n'))
    store = tmp_path / "results"
    shutil.copytree(release, store)
    before = sorted(p.read_bytes() for p in store.rglob("*.jsonl"))
    env = {**install(tmp_path, "curl 2.0.0 (worse)", "--indent 7"),
           "BENCHKIT_ROOT": str(tree_copy)}
    done = benchkit("gate", tree_copy / "arms.d/raw-api.yaml", "--store", store,
                    "--summary", tmp_path / "gate.md", "--budget", "400000", cwd=tmp_path, env=env)
    assert done.returncode == EXIT_BAD_INPUT, done.stdout[-3000:] + done.stderr[-3000:]
    assert "other references" in done.stderr, done.stderr
    assert sorted(p.read_bytes() for p in store.rglob("*.jsonl")) == before
