"""Every script in benchmarks/ runs, at its smallest setting, and leaves nothing behind.

A refactor that moves what a benchmark imports breaks it silently (nothing else runs
the scripts), and the figure it printed can no longer be reproduced: each is run here
as a user runs it (`python3 benchmarks/NAME.py ...`, a fresh process), in an empty
working directory with a TMPDIR of its own that must be empty again at its end.
A new script needs a line in SMALLEST.
"""

import os
import subprocess
import sys

import pytest
from conftest import CHECKOUT, IN_CI

BENCHMARKS = CHECKOUT / "benchmarks"
CLI = "the Claude CLI"
GITEA = "a real Gitea"
GITEA_IF_BUILT = "a real Gitea where one is built (its figures are left out without)"
# The TypeScript harness's side: its archive, node and npm (the npm registry once, for its
# lock's packages). Without them the script times benchkit alone and says why on a line
# starting "skipped:"; that skips the test outside CI and fails it in CI.
NPM = "the TypeScript harness: its source archive, node and npm"

# script -> (its smallest setting, what it needs beyond the forge: the CLI or a real Gitea
# makes it slow)
SMALLEST: dict[str, tuple[list[str], str | None]] = {
    "cell_bench.py": (["--runs", "1", "--appends", "10"], CLI),
    "checker_bench.py": (["--runs", "1", "--issues", "20", "--answer-kib", "16"], None),
    "control_bench.py": (["--failures", "2"], None),
    "forge_bench.py": (["--rounds", "1", "--clients", "1", "--requests", "5", "--cap", "5"], None),
    "gateway_bench.py": (["--requests", "5", "--trials", "1"], None),
    "gateway_bounds_bench.py": (["--only", "comment", "--limit", "30"], None),
    "gateway_upload_bench.py": (["--gib", "0.012"], None),  # past the 10 MiB a request
    "guard_bench.py": (["--runs", "1"], None),
    "hostwork_bench.py": (["--largest", "4096"], GITEA),
    "hosts_bench.py": (["--runs", "1", "--task", "read-open-issue-count"], GITEA),
    "identity_bench.py": (["--runs", "1"], GITEA_IF_BUILT),
    "model_probe_bench.py": (["--runs", "1", "--model", "sonnet"], CLI),
    "report_bench.py": (["--samples", "50", "--repeat", "1"], None),
    "report_vs_ts_bench.py": (["--samples", "50", "--pairs", "1"], NPM),
    "run_bench.py": (["--latency", "0", "--jobs", "2", "--cells", "1"], CLI),
    "sandbox_bench.py": (["1", "1"], CLI),
    "seed_bench.py": (["--runs", "1"], None),
    "simulate.py": (["--replications", "2"], None),
    "snapshot_bench.py": (["--runs", "1", "--labels", "1", "--label-mib", "0.01", "--hosts", "forge"],
                          None),
    "spec_bench.py": (["--runs", "1", "--tasks", "5", "--issues", "20"], None),
    "startup_bench.py": (["--repeat", "1"], None),
    "sweep_bench.py": (["--arm", "raw-api", "--trials", "2", "--jobs", "1", "--every", "1",
                        "--task", "read-open-issue-count"], CLI),
    "text_checks_bench.py": ([], None),  # every worst case, up to 1 MiB: seconds
    "validate_live_bench.py": (["--jobs", "1", "--task", "read-open-issue-count"], None),
    "version_probe_bench.py": (["--runs", "1", "--arm", "raw-api"], None),
}
SCRIPTS = sorted(path.name for path in BENCHMARKS.glob("*.py") if not path.name.startswith("_"))


def test_every_benchmark_has_a_smallest_setting():
    assert sorted(SMALLEST) == SCRIPTS


def _cases():
    for name in SCRIPTS:
        args, needs = SMALLEST.get(name, ([], None))
        marks = [pytest.mark.slow] if needs in (CLI, GITEA, GITEA_IF_BUILT) else []
        yield pytest.param(name, args, needs, id=name, marks=marks)


def _gitea_or_skip() -> None:
    from benchkit.gitea.server import Gitea
    from benchkit.gitea.tools import ToolUnavailable
    try:
        Gitea()  # finds the build; starts nothing
    except ToolUnavailable as exc:
        (pytest.fail if IN_CI else pytest.skip)(f"no real Gitea: {exc}")


@pytest.mark.parametrize(("name", "args", "needs"), list(_cases()))
def test_the_benchmark_runs_and_leaves_nothing_behind(name, args, needs, tmp_path):
    if needs == GITEA:
        _gitea_or_skip()
    temporary, cwd = tmp_path / "tmp", tmp_path / "cwd"
    temporary.mkdir()
    cwd.mkdir()
    env = {**os.environ, "TMPDIR": str(temporary), "PYTHONPATH": str(CHECKOUT)}
    for name_ in ("GITEA_URL", "GITEA_TOKEN", "ANTHROPIC_BASE_URL"):
        env.pop(name_, None)
    done = subprocess.run([sys.executable, str(BENCHMARKS / name), *args], cwd=cwd, env=env,
                          capture_output=True, text=True, timeout=240)
    assert done.returncode == 0, f"{name} {' '.join(args)}:\n{done.stdout[-2000:]}\n{done.stderr[-3000:]}"
    assert done.stdout.strip(), f"{name} printed no figure"
    assert sorted(os.listdir(temporary)) == [], f"{name} left these in TMPDIR"
    assert sorted(os.listdir(cwd)) == [], f"{name} left these in its working directory"
    skipped = [line for line in done.stdout.splitlines() if line.startswith("skipped:")]
    if needs == NPM and skipped:
        (pytest.fail if IN_CI else pytest.skip)(skipped[0])


def test_help_works_for_every_benchmark():
    for name in SCRIPTS:
        done = subprocess.run([sys.executable, str(BENCHMARKS / name), "--help"],
                              capture_output=True, text=True, timeout=60,
                              env={**os.environ, "PYTHONPATH": str(CHECKOUT)})
        assert done.returncode == 0 and "usage:" in done.stdout, f"{name}: {done.stderr[-2000:]}"
