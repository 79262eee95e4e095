"""Forge performance figures: seeding time, requests per second, memory.

    python3 benchmarks/forge_bench.py [--rounds 5] [--clients 8] [--requests 400]

Runs `benchkit forge` in its own process on loopback (so the clients here do not
share its interpreter) and prints:
  - the time to create a repository and bring it to the reference seed through the
    API, with the number of requests that took (target: at most 0.5 s);
  - requests per second with N concurrent keep-alive clients on a mix of reads
    and writes an agent makes (target: at least 300);
  - the forge process's resident memory after seeding and at its peak.
Every loop is bounded in count and time; traffic goes to 127.0.0.1 only.
"""

import argparse
import base64
import statistics
import subprocess
import sys
import threading
import time
from pathlib import Path

import requests
import yaml

ROOT = Path(__file__).resolve().parent.parent
SEED = ROOT / "seeds" / "default.yaml"
BENCHKIT = [sys.executable, "-c", "from benchkit.cli import main; main()"]


def start_forge() -> tuple[subprocess.Popen, str, str]:
    process = subprocess.Popen([*BENCHKIT, "forge", "--port", "0"], stdout=subprocess.PIPE, text=True, cwd=ROOT)
    lines = dict(process.stdout.readline().strip().split(": ", 1) for _ in range(3))
    return process, lines["url"], lines["token"]


def memory(pid: int) -> dict:
    fields = {}
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        key, _, value = line.partition(":")
        if key in ("VmRSS", "VmHWM"):
            fields[key] = int(value.split()[0]) / 1024
    return fields


def seed_repo(s: requests.Session, api: str, name: str, seed: dict) -> int:
    """Bring a new repository to the seed, as a seeder would; return the request count."""
    count = 0

    def call(method, path, **body):
        nonlocal count
        count += 1
        response = s.request(method, api + path, json=body)
        response.raise_for_status()
        return response.json() if response.content else None

    call("POST", "/user/repos", name=name, auto_init=True)
    repo = f"/repos/bench/{name}"
    ids = {label["name"]: call("POST", f"{repo}/labels", **label)["id"] for label in seed["labels"]}
    for issue in seed["issues"]:
        number = call("POST", f"{repo}/issues", title=issue["title"], body=issue["body"],
                      labels=[ids[n] for n in issue.get("labels", [])],
                      assignees=["bench"] if issue.get("assigned") else [])["number"]
        for comment in issue.get("comments", []):
            call("POST", f"{repo}/issues/{number}/comments", body=comment)
        if issue.get("state") == "closed":
            call("PATCH", f"{repo}/issues/{number}", state="closed")
    for pull in seed["pull_requests"]:
        content = base64.b64encode(pull["file"]["content"].encode()).decode()
        call("POST", f"{repo}/contents/{pull['file']['path']}", content=content, new_branch=pull["head"])
        number = call("POST", f"{repo}/pulls", head=pull["head"], base="main", title=pull["title"],
                      body=pull["body"], labels=[ids[n] for n in pull.get("labels", [])])["number"]
        for comment in pull.get("comments", []):
            call("POST", f"{repo}/issues/{number}/comments", body=comment)
        for review in pull.get("reviews", []):
            call("POST", f"{repo}/pulls/{number}/reviews", event="COMMENT", body=review["body"])
    # The readiness probe a seeder ends with: the seed is visible to a reader.
    call("GET", f"{repo}/issues?state=all&limit=50")
    return count


def throughput(api: str, token: str, repo: str, clients: int, per_client: int, cap: float) -> tuple[int, float]:
    """N keep-alive clients, each making up to per_client requests of an agent's mix."""
    mix = [("GET", f"{repo}/issues", None), ("GET", f"{repo}/issues/3", None),
           ("GET", f"{repo}/pulls/10/reviews", None), ("GET", f"{repo}/labels", None),
           ("POST", f"{repo}/issues/2/comments", {"body": "load"}), ("GET", "/version", None),
           ("GET", f"{repo}/issues?labels=bug&state=all", None), ("PATCH", f"{repo}/issues/7", {"body": "x"})]
    done = [0] * clients
    deadline = time.monotonic() + cap
    barrier = threading.Barrier(clients + 1)

    def client(index):
        s = requests.Session()
        s.headers["Authorization"] = f"token {token}"
        barrier.wait()
        for n in range(per_client):
            if time.monotonic() > deadline:
                break
            method, path, body = mix[(n + index) % len(mix)]
            s.request(method, api + path, json=body).raise_for_status()
            done[index] += 1

    threads = [threading.Thread(target=client, args=(i,)) for i in range(clients)]
    for thread in threads:
        thread.start()
    barrier.wait()
    started = time.perf_counter()
    for thread in threads:
        thread.join()
    return sum(done), time.perf_counter() - started


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--clients", type=int, default=8)
    parser.add_argument("--requests", type=int, default=400, help="requests per client")
    parser.add_argument("--cap", type=float, default=60.0, help="seconds at most for the load phase")
    args = parser.parse_args()
    seed = yaml.safe_load(SEED.read_text())

    process, url, token = start_forge()
    try:
        api = url + "api/v1"
        s = requests.Session()
        s.headers["Authorization"] = f"token {token}"
        s.get(api + "/version").raise_for_status()
        times, count = [], 0
        for n in range(args.rounds):
            started = time.perf_counter()
            count = seed_repo(s, api, f"seed-{n}", seed)
            times.append(time.perf_counter() - started)
        after_seed = memory(process.pid)
        print(f"seed: {count} requests; median {statistics.median(times) * 1000:.0f} ms, "
              f"max {max(times) * 1000:.0f} ms over {args.rounds} repositories (target <= 500 ms)")

        total, elapsed = throughput(api, token, "/repos/bench/seed-0", args.clients, args.requests, args.cap)
        print(f"throughput: {total} requests by {args.clients} concurrent clients in {elapsed:.2f} s = "
              f"{total / elapsed:.0f} requests/s (target >= 300)")
        peak = memory(process.pid)
        print(f"memory: {after_seed['VmRSS']:.1f} MiB resident after seeding, "
              f"{peak['VmHWM']:.1f} MiB peak")
    finally:
        process.terminate()
        process.wait(timeout=10)


if __name__ == "__main__":
    main()
