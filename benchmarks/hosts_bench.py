#!/usr/bin/env python3
"""The forge beside a real Gitea, in one run: seeding, the readiness gate, a snapshot,
a deletion, and a full replay cell (provision, the raw-api reference through the real
Claude CLI, snapshot, check, audit, delete), each as wall time and HTTP requests the
host answered (the forge's request log; Gitea's own access log); and how long the real
Gitea takes to start (migrate, admin user and token, web up).

    python3 benchmarks/hosts_bench.py [--runs 3] [--task close-csv-export-issue]

Needs the pinned Gitea build (`bash scripts/test-setup`).
"""

from __future__ import annotations

import argparse
import statistics
import tempfile
import time
from pathlib import Path

from benchkit.agent.replay import ReplayDriver
from benchkit.documents import load_arm, load_tree
from benchkit.documents.expectation import seed_plan
from benchkit.documents.reference import reference_for
from benchkit.forge import Forge
from benchkit.gitea import Client
from benchkit.gitea.ready import wait_ready
from benchkit.gitea.repos import create_repo, delete_repo
from benchkit.gitea.seed import seed_repo
from benchkit.gitea.server import Gitea
from benchkit.gitea.snapshot import snapshot
from benchkit.planning.plan import Trial
from benchkit.preflight.host import probe_host
from benchkit.sample import Record
from benchkit.store import Store
from benchkit.trial.cell import run_trial
from benchkit.trial.prepare import RunContext

ROOT = Path(__file__).resolve().parent.parent
PHASES = ("seed", "gate", "snapshot", "delete", "replay cell")


def settled_count(host) -> int:
    """Requests the host has logged, once its log stops growing (Gitea writes its
    access log asynchronously)."""
    count, stable_since = len(host.requests()), time.monotonic()
    while time.monotonic() - stable_since < 0.3:
        time.sleep(0.05)
        now = len(host.requests())
        if now != count:
            count, stable_since = now, time.monotonic()
    return count


def measure(host, action):
    """(value, seconds, requests) of one action."""
    before = settled_count(host)
    started = time.perf_counter()
    value = action()
    seconds = time.perf_counter() - started
    return value, seconds, settled_count(host) - before


def one_run(host, tree, plan: dict, task: str) -> dict:
    results = {}
    with Client(host.url, host.token) as client:
        _ = client.user  # GET /user once, outside the timings, as a run does

        def seeded():
            repo, branch = create_repo(client, "benchkit-bench-")
            seed_repo(client, repo, plan, branch=branch)
            return repo

        repo, *results["seed"] = measure(host, seeded)
        _, *results["gate"] = measure(host, lambda: wait_ready(client.url, client.token, repo, plan))
        _, *results["snapshot"] = measure(host, lambda: snapshot(client, repo.owner, repo.name))
        _, *results["delete"] = measure(host, lambda: delete_repo(client, repo.owner, repo.name))
        sample, *results["replay cell"] = measure(host, lambda: _replay_cell(client, tree, task))
    if sample.outcome != "passed":
        raise SystemExit(f"the replay cell did not pass on {host!r}: {sample.outcome} "
                         f"{sample.error or sample.differences}")
    return results


def _replay_cell(client: Client, tree, task: str) -> Record:
    arm = load_arm(ROOT / "arms.d" / "raw-api.yaml")
    with tempfile.TemporaryDirectory(prefix="benchkit-hosts-bench-") as store_dir:
        ctx = RunContext(suite=tree.suite, seeds=tree.seeds, client=client,
                         store=Store(store_dir, secrets=[client.token]),
                         driver=ReplayDriver(reference_for(arm, ROOT)), root=ROOT,
                         host=probe_host(client, tree.suite.repo_prefix))
        return run_trial(Trial(arm, tree.tasks[task]), ctx).sample


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--task", default="close-csv-export-issue",
                        help="the task of the replay cell (raw-api reference)")
    args = parser.parse_args()
    tree = load_tree(ROOT)
    plan = seed_plan(tree.seeds[tree.tasks[args.task].seed])
    started = time.perf_counter()
    with Gitea() as gitea:
        launch = time.perf_counter() - started
        gitea_runs = [one_run(gitea, tree, plan, args.task) for _ in range(args.runs)]
        version = gitea.version
    with Forge() as forge:
        forge_runs = [one_run(forge, tree, plan, args.task) for _ in range(args.runs)]
    print(f"real Gitea {version}: started in {launch:.2f} s (migrate, admin user and "
          f"token, web answering); {args.runs} runs each, replay cell {args.task}")
    print(f"{'phase':<13}{'forge ms':>10}{'requests':>10}{'gitea ms':>10}{'requests':>10}"
          f"{'gitea/forge':>13}")
    for phase in PHASES:
        forge_ms, forge_n = _median(forge_runs, phase)
        gitea_ms, gitea_n = _median(gitea_runs, phase)
        print(f"{phase:<13}{forge_ms:>10.0f}{forge_n:>10}{gitea_ms:>10.0f}{gitea_n:>10}"
              f"{gitea_ms / max(forge_ms, 1e-9):>12.1f}x")
    print("ms: median wall time; requests: what the host logged (Gitea's includes the "
          "audit's 404 for the forge-only request log)")


def _median(runs: list[dict], phase: str) -> tuple[float, str]:
    seconds = [run[phase][0] * 1000 for run in runs]
    counts = sorted({run[phase][1] for run in runs})
    return statistics.median(seconds), "/".join(map(str, counts))


if __name__ == "__main__":
    main()
