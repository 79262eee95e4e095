#!/usr/bin/env python3
"""How long seeding, the readiness gate, a snapshot and a deletion take against the
embedded forge, and how many HTTP requests each makes (read from the forge's log).

    python3 benchmarks/seed_bench.py [--runs 5] [--seed seeds/default.yaml] [--index-lag 0]
"""

from __future__ import annotations

import argparse
import statistics
import time
from pathlib import Path

from benchkit.documents import load_seed
from benchkit.forge import Forge
from benchkit.gitea.client import Client
from benchkit.gitea.ready import wait_ready
from benchkit.gitea.repos import create_repo, delete_repo
from benchkit.gitea.seed import seed_plan, seed_repo
from benchkit.gitea.snapshot import snapshot

ROOT = Path(__file__).resolve().parent.parent
PHASES = ("seed", "gate", "snapshot", "delete")


def one_run(forge: Forge, client: Client, plan: dict) -> dict:
    """{phase: (seconds, requests)} for one throwaway repository."""
    results = {}

    def measure(phase, action):
        before, started = logged(forge), time.perf_counter()
        value = action()
        elapsed = time.perf_counter() - started
        results[phase] = (elapsed, logged(forge) - before)
        return value

    repo = measure("seed", lambda: _seed(client, plan))
    measure("gate", lambda: wait_ready(client.url, client.token, repo, plan))
    measure("snapshot", lambda: snapshot(client, repo.owner, repo.name))
    measure("delete", lambda: delete_repo(client, repo.owner, repo.name))
    return results


def logged(forge: Forge) -> int:
    """Requests in the forge's log (it logs each before the last byte of its answer
    leaves, so every answered request is in)."""
    return len(forge.requests())


def _seed(client: Client, plan: dict):
    repo, branch = create_repo(client, "benchkit-bench-")
    seed_repo(client, repo, plan, branch=branch)
    return repo


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--seed", default=str(ROOT / "seeds" / "default.yaml"))
    parser.add_argument("--index-lag", type=float, default=0.0,
                        help="seconds the forge's search index trails writes")
    args = parser.parse_args()
    plan = seed_plan(load_seed(args.seed))
    entities = (len(plan["labels"]) + len(plan["issues"]) + 2 * len(plan["pull_requests"])
                + sum(len(i["comments"]) for i in plan["issues"] + plan["pull_requests"])
                + sum(len(p["reviews"]) for p in plan["pull_requests"]))
    with Forge(index_lag=args.index_lag) as forge, Client(forge.url, forge.token) as client:
        _ = client.user  # GET /user once, outside the timings, as a run does
        runs = [one_run(forge, client, plan) for _ in range(args.runs)]
    print(f"seed {Path(args.seed).name}: {entities} entities to create "
          f"(labels, issues, branches, pull requests, comments, reviews); "
          f"{args.runs} runs, index lag {args.index_lag:g} s")
    print(f"{'phase':<10}{'median ms':>11}{'min ms':>9}{'max ms':>9}{'requests':>10}"
          f"{'ms/request':>12}")
    for phase in PHASES:
        seconds = [run[phase][0] * 1000 for run in runs]
        requests = sorted({run[phase][1] for run in runs})
        per_request = statistics.median(seconds) / max(requests[-1], 1)
        print(f"{phase:<10}{statistics.median(seconds):>11.1f}{min(seconds):>9.1f}"
              f"{max(seconds):>9.1f}{'/'.join(map(str, requests)):>10}{per_request:>12.1f}")
    total = [sum(run[p][0] for p in PHASES) * 1000 for run in runs]
    print(f"{'total':<10}{statistics.median(total):>11.1f}{min(total):>9.1f}{max(total):>9.1f}")


if __name__ == "__main__":
    main()
