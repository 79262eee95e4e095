#!/usr/bin/env python3
"""What the trial gateway costs: the latency it adds to one request, and to a whole
replay trial, on the embedded forge (or a real Gitea with --gitea), in one run.

Per request: GET of one issue of a seeded repository, direct to the host and through
the gateway, interleaved so both see the same machine load; median and p99, over a
kept-alive connection (an SDK client, an MCP server) and a new connection per request
(curl, one process a call).
Per trial: the raw-api replay of one task with the gateway (as every run has it) and
without it (the tools handed the host's URL and token, the path before the gateway).

    python3 benchmarks/gateway_bench.py [--requests 500] [--trials 5] [--gitea]
"""

from __future__ import annotations

import argparse
import statistics
import tempfile
import time
from pathlib import Path

import requests

import benchkit.trial.cell as cell
from benchkit.agent.driver import Coordinates
from benchkit.agent.replay import ReplayDriver
from benchkit.documents import load_arm, load_tree
from benchkit.documents.reference import reference_for
from benchkit.forge import Forge
from benchkit.gateway.server import Gateway
from benchkit.gitea import Client, delete_repo, provision
from benchkit.gitea.server import Gitea
from benchkit.planning.plan import Trial
from benchkit.preflight.host import probe_host
from benchkit.store import Store
from benchkit.trial.cell import run_trial
from benchkit.trial.prepare import RunContext

ROOT = Path(__file__).resolve().parent.parent
TASK = "close-csv-export-issue"


def per_request(host, tree, count: int) -> dict[str, list[float]]:
    """Milliseconds per GET, by path: direct and through the gateway, kept-alive and fresh."""
    client = Client(host.url, host.token)
    repo = provision(client, tree.seeds[tree.tasks[TASK].seed], prefix="benchkit-gwbench-")
    timings: dict[str, list[float]] = {}
    try:
        with Gateway(host.url) as gateway:
            grant = gateway.issue(repo.owner, repo.name, host.token)
            path = f"api/v1/repos/{repo.owner}/{repo.name}/issues/1"
            routes = {"direct": (host.url, host.token), "gateway": (grant.url, grant.token)}
            sessions = {name: requests.Session() for name in routes}
            for _ in range(count):
                for name, (base, token) in routes.items():
                    headers = {"Authorization": f"token {token}"}
                    for mode, get in (("kept-alive", sessions[name].get), ("fresh", requests.get)):
                        started = time.perf_counter()
                        answer = get(base + path, headers=headers, timeout=30)
                        elapsed = (time.perf_counter() - started) * 1000
                        assert answer.status_code == 200, answer.text
                        timings.setdefault(f"{mode} {name}", []).append(elapsed)
    finally:
        delete_repo(client, repo.owner, repo.name)
    return timings


def per_trial(host, tree, trials: int) -> dict[str, list[float]]:
    """Seconds per replay trial, with the gateway and without it, interleaved."""
    arm = load_arm(ROOT / "arms.d" / "raw-api.yaml")
    reference = reference_for(arm, ROOT)
    seconds: dict[str, list[float]] = {"with gateway": [], "without": []}
    through = cell._coordinates
    for _ in range(trials):
        for name in seconds:
            cell._coordinates = through if name == "with gateway" else _direct
            try:
                seconds[name].append(_one_trial(host, tree, arm, reference))
            finally:
                cell._coordinates = through
    return seconds


def _direct(ctx, prepared, user):
    """The coordinates before the gateway: the host's own URL and a real token."""
    repo = prepared.repo
    return Coordinates(host_url=ctx.client.url, api_url=ctx.client.api_url,
                       token=prepared.token or ctx.client.token, owner=repo.owner,
                       repo=repo.name, user=user)


def _one_trial(host, tree, arm, reference) -> float:
    with Client(host.url, host.token) as client, \
            tempfile.TemporaryDirectory(prefix="benchkit-gwbench-") as store_dir:
        ctx = RunContext(suite=tree.suite, seeds=tree.seeds, client=client,
                         store=Store(store_dir, secrets=[client.token]),
                         driver=ReplayDriver(reference), root=ROOT,
                         host=probe_host(client, tree.suite.repo_prefix))
        started = time.perf_counter()
        sample = run_trial(Trial(arm, tree.tasks[TASK]), ctx).sample
        elapsed = time.perf_counter() - started
    if sample.outcome != "passed":
        raise SystemExit(f"the replay trial did not pass: {sample.outcome} "
                         f"{sample.error or sample.differences}")
    return elapsed


def p99(values: list[float]) -> float:
    return statistics.quantiles(values, n=100)[98]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--requests", type=int, default=500)
    parser.add_argument("--trials", type=int, default=5)
    parser.add_argument("--gitea", action="store_true", help="a real Gitea, not the forge")
    args = parser.parse_args()
    tree = load_tree(ROOT)
    with (Gitea() if args.gitea else Forge()) as host:
        kind = "real Gitea" if args.gitea else "forge"
        timings = per_request(host, tree, args.requests)
        print(f"{kind}: GET one issue, {args.requests} times each way, interleaved")
        print(f"{'path':<22}{'median ms':>10}{'p99 ms':>10}")
        for name, values in timings.items():
            print(f"{name:<22}{statistics.median(values):>10.2f}{p99(values):>10.2f}")
        for mode in ("kept-alive", "fresh"):
            added = [g - d for g, d in zip(timings[f"{mode} gateway"], timings[f"{mode} direct"],
                                           strict=True)]
            print(f"added by the gateway ({mode}): median {statistics.median(added):.2f} ms, "
                  f"p99 {p99(added):.2f} ms (pairwise differences)")
        seconds = per_trial(host, tree, args.trials)
        print(f"replay trial raw-api {TASK}, {args.trials} each, interleaved:")
        for name, values in seconds.items():
            print(f"  {name:<14} median {statistics.median(values):.2f} s "
                  f"(min {min(values):.2f}, max {max(values):.2f})")


if __name__ == "__main__":
    main()
