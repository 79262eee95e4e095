#!/usr/bin/env python3
"""What a snapshot costs a trial: its wall time and the snapshotting process's peak
resident memory, on the embedded forge and on a real Gitea, for a freshly seeded
repository and for the large-labels shape (R14 at the upload cap: N labels whose
descriptions are M MiB each, every one on every issue and pull request, so each issue
the host lists carries N x M MiB of label text).

Each snapshot runs in a child process of its own, so the figure is the peak of a
process that did nothing else (its baseline, Python and benchkit imported, is printed
beside it); the host runs in another process (the forge as `benchkit forge`, Gitea as
the pinned build), as a real Gitea always does.

    python3 benchmarks/snapshot_bench.py [--runs 3] [--labels 25] [--label-mib 4]
        [--hosts forge,gitea]

Needs the pinned Gitea build for its Gitea half (`bash scripts/test-setup`).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
from contextlib import contextmanager
from pathlib import Path

from benchkit.documents import load_tree
from benchkit.gitea import Client, delete_repo, provision
from benchkit.gitea.server import Gitea

ROOT = Path(__file__).resolve().parent.parent
MIB = 1024 * 1024

# The child: imports what a run has imported by then, notes its resident memory, takes
# the snapshot, and prints seconds, peak and baseline (kB) and the state's size.
CHILD = """
import json, sys, time
from benchkit.gitea import Client, snapshot
def status(field):  # kB; VmHWM, unlike ru_maxrss, does not carry the parent's over exec
    for line in open("/proc/self/status"):
        if line.startswith(field + ":"):
            return int(line.split()[1])
url, token, owner, name = sys.argv[1:5]
client = Client(url, token)
base = status("VmRSS")
started = time.perf_counter()
state = snapshot(client, owner, name)
seconds = time.perf_counter() - started
print(json.dumps({"seconds": seconds, "peak_kb": status("VmHWM"),
                  "base_kb": base, "state_bytes": len(json.dumps(state))}))
"""


def child_snapshot(url: str, token: str, owner: str, name: str) -> dict:
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    done = subprocess.run([sys.executable, "-c", CHILD, url, token, owner, name], env=env,
                          capture_output=True, text=True, timeout=1800)
    if done.returncode != 0:
        raise SystemExit(f"the snapshot failed: {done.stderr.strip()[-800:]}")
    return json.loads(done.stdout)


@contextmanager
def forge_process():
    """`benchkit forge` on a free port, in its own process: (url, token)."""
    proc = subprocess.Popen([sys.executable, "-m", "benchkit.cli", "forge", "--port", "0"],
                            stdout=subprocess.PIPE, text=True,
                            env={**os.environ, "PYTHONPATH": str(ROOT)})
    try:
        assert proc.stdout is not None
        lines = dict(proc.stdout.readline().strip().split(": ", 1) for _ in range(3))
        yield lines["url"], lines["token"]
    finally:
        proc.terminate()
        proc.wait(timeout=30)


@contextmanager
def gitea_process():
    with Gitea() as gitea:
        yield gitea.url, gitea.token


def large_labels(client: Client, repo, labels: int, size: int) -> int:
    """`labels` labels of `size`-byte descriptions, each on every issue and pull
    request; the bytes uploaded."""
    numbers = [item["number"] for item in client.paginate(f"{repo.path}/issues",
                                                          {"state": "all", "type": ""})]
    ids = []
    for index in range(labels):
        text = chr(ord("a") + index % 26) * size
        ids.append(client.post(f"{repo.path}/labels", {"name": f"big-{index}",
                                                       "color": "ff0000",
                                                       "description": text})["id"])
    for number in numbers:
        client.post(f"{repo.path}/issues/{number}/labels", {"labels": ids})
    return labels * size


def measure(host: str, opened, tree, runs: int, labels: int, size: int) -> list[str]:
    rows = []
    with opened as (url, token):
        client = Client(url, token)
        repo = provision(client, tree.seeds["default"], prefix="benchkit-bench-")
        try:
            seeded = [child_snapshot(url, token, repo.owner, repo.name) for _ in range(runs)]
            rows.append(_row(host, "seeded", seeded))
            if labels:
                uploaded = large_labels(client, repo, labels, size)
                big = [child_snapshot(url, token, repo.owner, repo.name)]
                rows.append(_row(host, f"{labels} x {size / MIB:g} MiB labels "
                                       f"({uploaded / MIB:.0f} MiB up)", big))
        finally:
            delete_repo(client, repo.owner, repo.name)
    return rows


def _row(host: str, shape: str, results: list[dict]) -> str:
    seconds = statistics.median(r["seconds"] for r in results)
    peak = max(r["peak_kb"] for r in results) / 1024
    base = min(r["base_kb"] for r in results) / 1024
    size = results[0]["state_bytes"] / 1024
    return (f"{host:<7}{shape:<34}{seconds * 1000:>10.0f}{peak:>10.0f}{base:>10.0f}"
            f"{size:>10.0f}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=3, help="snapshots of the seeded repository")
    parser.add_argument("--labels", type=int, default=25,
                        help="large labels (0: the seeded shape alone)")
    parser.add_argument("--label-mib", type=float, default=4.0, help="each label's description")
    parser.add_argument("--hosts", default="forge,gitea")
    args = parser.parse_args()
    tree = load_tree(ROOT)
    size = int(args.label_mib * MIB)
    hosts = {"forge": forge_process, "gitea": gitea_process}
    print(f"{'host':<7}{'shape':<34}{'ms':>10}{'peak MiB':>10}{'base MiB':>10}{'state KiB':>10}")
    for host in args.hosts.split(","):
        for row in measure(host, hosts[host](), tree, args.runs, args.labels, size):
            print(row, flush=True)
    print("ms: median wall time of the snapshot (seeded: of --runs; labels: one); peak: the "
          "snapshotting process's peak resident memory; base: its memory before the "
          "snapshot; state: the RepoState's JSON")


if __name__ == "__main__":
    main()
