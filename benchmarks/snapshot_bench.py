#!/usr/bin/env python3
"""What a snapshot costs a trial: its wall time and the snapshotting process's peak
resident memory, on the embedded forge and on a real Gitea, for a freshly seeded
repository and for the large-labels shape (R14 at the upload cap: N labels whose
descriptions are M MiB each, every one on every issue and pull request, so each issue
the host lists carries N x M MiB of label text).

Each measurement runs in a child process of its own, its peak reset just before the
snapshot (so the figure is the snapshot's, over the process's baseline, which is
printed beside it). The host is another process (`forge`: `benchkit forge`; `gitea`:
the pinned build), as a real Gitea always is; `embedded` puts the forge in the
snapshotting process itself, as `benchkit run` does when given no host, so its peak
is the forge's answers and the snapshot's together.

    python3 benchmarks/snapshot_bench.py [--runs 3] [--labels 25] [--label-mib 4]
        [--hosts forge,gitea,embedded]

Needs the pinned Gitea build for its Gitea row (`bash scripts/test-setup`).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time
from contextlib import contextmanager
from pathlib import Path

from benchkit.documents import load_tree
from benchkit.gitea import Client, delete_repo, provision, snapshot
from benchkit.gitea.server import Gitea

ROOT = Path(__file__).resolve().parent.parent
MIB = 1024 * 1024


def status(field: str) -> int:
    """A field of /proc/self/status, in kB (VmHWM: the peak since the last reset)."""
    for line in open("/proc/self/status"):
        if line.startswith(field + ":"):
            return int(line.split()[1])
    raise RuntimeError(f"no {field} in /proc/self/status")


def measured(client: Client, repo) -> dict:
    """One snapshot, with this process's peak reset first (Linux: clear_refs 5)."""
    with open("/proc/self/clear_refs", "w") as refs:
        refs.write("5")
    base = status("VmRSS")
    started = time.perf_counter()
    state = snapshot(client, repo.owner, repo.name)
    return {"seconds": time.perf_counter() - started, "peak_kb": status("VmHWM"),
            "base_kb": base, "state_bytes": len(json.dumps(state))}


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
    for number in numbers:  # the answer lists every label whole: left unread
        answer = client.session.post(f"{client.api_url}{repo.path}/issues/{number}/labels",
                                     json={"labels": ids}, stream=True, timeout=600)
        answer.close()
        assert answer.status_code == 200, answer.status_code
    return labels * size


def child(argv: list[str]) -> None:
    """In the child: take the snapshots asked for and print their figures (one JSON
    line each). `embedded RUNS LABELS SIZE` seeds an in-process forge first."""
    if argv[0] == "embedded":
        from benchkit.forge import Forge
        runs, labels, size = map(int, argv[1:4])
        with Forge() as forge:
            client = Client(forge.url, forge.token)
            repo = provision(client, load_tree(ROOT).seeds["default"], prefix="benchkit-bench-")
            for _ in range(runs):
                print(json.dumps(measured(client, repo)), flush=True)
            if labels:
                large_labels(client, repo, labels, size)
                print(json.dumps(measured(client, repo)), flush=True)
        return
    url, token, owner, name = argv
    from benchkit.gitea import Repo
    print(json.dumps(measured(Client(url, token), Repo(owner, name))), flush=True)


def in_child(*args: str) -> list[dict]:
    done = subprocess.run([sys.executable, __file__, "--child", *args], capture_output=True,
                          text=True, timeout=3600, env={**os.environ, "PYTHONPATH": str(ROOT)})
    if done.returncode != 0:
        raise SystemExit(f"the snapshot failed: {done.stderr.strip()[-800:]}")
    return [json.loads(line) for line in done.stdout.splitlines()]


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


def measure(host: str, tree, runs: int, labels: int, size: int) -> list[str]:
    if host == "embedded":
        found = in_child("embedded", str(runs), str(labels), str(size))
        rows = [_row(host, "seeded", found[:runs])]
        if labels:
            rows.append(_row(host, _shape(labels, size), found[runs:]))
        return rows
    rows = []
    with {"forge": forge_process, "gitea": gitea_process}[host]() as (url, token):
        client = Client(url, token)
        repo = provision(client, tree.seeds["default"], prefix="benchkit-bench-")
        try:
            args = (url, token, repo.owner, repo.name)
            rows.append(_row(host, "seeded", [in_child(*args)[0] for _ in range(runs)]))
            if labels:
                large_labels(client, repo, labels, size)
                rows.append(_row(host, _shape(labels, size), in_child(*args)))
        finally:
            delete_repo(client, repo.owner, repo.name)
    return rows


def _shape(labels: int, size: int) -> str:
    return f"{labels} x {size / MIB:g} MiB labels ({labels * size / MIB:.0f} MiB up)"


def _row(host: str, shape: str, results: list[dict]) -> str:
    seconds = statistics.median(r["seconds"] for r in results)
    peak = max(r["peak_kb"] for r in results) / 1024
    base = min(r["base_kb"] for r in results) / 1024
    size = results[0]["state_bytes"] / 1024
    return (f"{host:<9}{shape:<34}{seconds * 1000:>10.0f}{peak:>10.0f}{base:>10.0f}"
            f"{size:>10.0f}")


def main() -> None:
    if sys.argv[1:2] == ["--child"]:
        child(sys.argv[2:])
        return
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=3, help="snapshots of the seeded repository")
    parser.add_argument("--labels", type=int, default=25,
                        help="large labels (0: the seeded shape alone)")
    parser.add_argument("--label-mib", type=float, default=4.0, help="each label's description")
    parser.add_argument("--hosts", default="forge,gitea,embedded")
    args = parser.parse_args()
    tree = load_tree(ROOT)
    size = int(args.label_mib * MIB)
    print(f"{'host':<9}{'shape':<34}{'ms':>10}{'peak MiB':>10}{'base MiB':>10}{'state KiB':>10}")
    for host in args.hosts.split(","):
        for row in measure(host, tree, args.runs, args.labels, size):
            print(row, flush=True)
    print("ms: median wall time of the snapshot (seeded: of --runs; labels: one); peak: the "
          "snapshotting process's peak resident memory during the snapshot (embedded: the "
          "forge's too); base: its memory before it; state: the RepoState's JSON")


if __name__ == "__main__":
    main()
