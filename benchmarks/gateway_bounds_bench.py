#!/usr/bin/env python3
"""What hostile requests cost the harness through the trial gateway (in this process,
as in a run), with the suite's limits:

- answer: a 1 GiB JSON answer of a stand-in host (its own process) naming the host's
  URL throughout, read by a client here: the resident memory it adds at its peak;
- bodies: twelve 9 MiB file bodies (the contents API: text the host would parse is
  held to 16 KiB, benchkit.gateway.hostwork) sent at once to the embedded forge (or a
  real Gitea) against the 100 MiB per-trial budget: how many were taken, the bytes
  forwarded, the peak memory (the forge's own included when it is the host);
- r14: the red team's R14 shape, two 4 MiB labels (8 MiB uploaded) on every issue of
  a host in a process of its own (the forge, or with --gitea a real Gitea): four issue
  lists at once through the gateway (each hundreds of MiB, the trial's download budget
  lifted to let them through): the harness's resident memory at its peak;
- connections: 500 connections each sending half a request line, through a real sandbox
  bridge (socat) to a trial's door: the harness's threads and bridge processes at their
  peak, and how long until each was answered and closed;
- comment: a 1 MiB comment (of words, and of letters) through the gateway to the forge,
  each in a child process with a time limit (a text check worse than linear holds the
  interpreter, so a client in the same process could not even time out): refused, past
  what the host may be made to parse.

    python3 benchmarks/gateway_bounds_bench.py [--only answer|bodies|r14|connections|comment]
                                               [--gitea] [--issues N]
"""

from __future__ import annotations

import argparse
import base64
import contextlib
import json
import os
import socket
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

import requests

from benchkit.documents import load_tree
from benchkit.forge import Forge
from benchkit.gateway.framing import Limits
from benchkit.gateway.server import Gateway
from benchkit.gitea import Client, delete_repo, provision
from benchkit.gitea.server import Gitea

MIB = 1024 * 1024
HERE = Path(__file__).resolve()
HOST = (HERE.parent.parent / "tests" / "gateway" / "test_gateway_bounds.py").read_text().split(
    'HOST = r"""', 1)[1].split('"""', 1)[0]  # the tests' stand-in host


def rss() -> int:
    with open("/proc/self/statm") as statm:
        return int(statm.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")


class Peak:
    """The highest value of `probe()` while the block runs (sampled every 5 ms)."""

    def __init__(self, probe=rss):
        self.probe = probe

    def __enter__(self):
        self.start = self.peak = self.probe()
        self._done = threading.Event()
        self._thread = threading.Thread(target=self._watch, daemon=True)
        self._thread.start()
        return self

    def _watch(self):
        while not self._done.wait(0.005):
            self.peak = max(self.peak, self.probe())

    def __exit__(self, *exc):
        self._done.set()
        self._thread.join()


def answer() -> None:
    host = subprocess.Popen([sys.executable, "-c", HOST], stdout=subprocess.PIPE, text=True)
    try:
        root, _ = host.stdout.readline().split()
        with Gateway(root + "/") as gateway:
            grant = gateway.issue("o", "r", "t")
            size, got = 1024 * MIB, 0
            started = time.perf_counter()
            with Peak() as peak, requests.get(
                    f"{grant.api_url}/repos/o/r/issues", params={"limit": size}, stream=True,
                    headers={"Authorization": f"token {grant.token}"}, timeout=600) as reply:
                for piece in reply.iter_content(64 * 1024):
                    got += len(piece)
            took = time.perf_counter() - started
        print(f"answer: {got / MIB:.0f} MiB of JSON through the gateway in {took:.1f} s "
              f"({got / MIB / took:.0f} MiB/s), URLs rewritten; harness memory "
              f"{peak.start / MIB:.0f} MiB before, +{(peak.peak - peak.start) / MIB:.1f} MiB at peak")
    finally:
        host.kill()
        host.wait()




def bodies(on_gitea: bool) -> None:
    tree = load_tree()
    with (Gitea() if on_gitea else Forge()) as host, Client(host.url, host.token) as client, \
            Gateway(host.url) as gateway:
        repo = provision(client, tree.seeds["default"])
        try:
            grant = gateway.issue(repo.owner, repo.name, host.token)
            body = json.dumps({"content": base64.b64encode(b"lorem ipsum " * (9 * MIB // 16)).decode(),
                               "message": "m"}).encode()
            port = int(grant.url.rstrip("/").rsplit(":", 1)[1])
            answers: list[bytes] = []

            def send(n: int) -> None:
                head = (f"POST /api/v1/repos/{repo.full_name}/contents/f{n}.bin HTTP/1.1\r\n"
                        f"Host: x\r\nAuthorization: token {grant.token}\r\nConnection: close\r\n"
                        f"Content-Type: application/json\r\nContent-Length: {len(body)}\r\n\r\n")
                with socket.create_connection(("127.0.0.1", port), timeout=300) as conn:
                    conn.sendall(head.encode())
                    try:
                        conn.sendall(body)
                    except OSError:
                        pass
                    answers.append(conn.recv(64).split(b" ")[1])
            with Peak() as peak:
                senders = [threading.Thread(target=send, args=(n,)) for n in range(12)]
                for sender in senders:
                    sender.start()
                for sender in senders:
                    sender.join()
                gateway.idle()
            forwarded = sum(e["bytes_in"] for e in grant.requests if e["status"] == 201)
            print(f"bodies ({'a real Gitea' if on_gitea else 'the embedded forge, in this process'}): "
                  f"12 x {len(body) / MIB:.1f} MiB at once, budget "
                  f"{gateway.limits.trial_bytes / MIB:.0f} MiB: {answers.count(b'201')} taken, "
                  f"{answers.count(b'413')} refused (413); {forwarded} bytes forwarded "
                  f"({forwarded / MIB:.1f} MiB); harness memory +{(peak.peak - peak.start) / MIB:.0f} MiB at peak")
            gateway.end(grant)
        finally:
            delete_repo(client, repo.owner, repo.name)


@contextlib.contextmanager
def _host_apart(on_gitea: bool):
    """(url, token) of a host in a process of its own: its memory is not the harness's."""
    if on_gitea:
        with Gitea() as gitea:
            yield gitea.url, gitea.token
        return
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    forge = subprocess.Popen([sys.executable, "-c", "from benchkit.cli import main; main()",
                              "forge", "--port", str(port)], stdout=subprocess.PIPE, text=True)
    try:
        said = dict(forge.stdout.readline().strip().split(": ", 1) for _ in range(3))
        yield said["url"], said["token"]
    finally:
        forge.kill()
        forge.wait()


def r14(on_gitea: bool, issues: int) -> None:
    with _host_apart(on_gitea) as (url, token), Client(url, token) as client:
        name = f"r14-{os.getpid()}"
        client.post("/user/repos", json={"name": name, "auto_init": True})
        try:
            labels = [client.post(f"/repos/{client.user}/{name}/labels", json={
                "name": f"big-{n}", "color": "#ff0000",
                "description": "lorem ipsum " * (4 * MIB // 12)})["id"] for n in range(2)]
            for n in range(issues):
                client.post(f"/repos/{client.user}/{name}/issues",
                            json={"title": f"Issue {n}", "labels": labels})
            limits = Limits(download_bytes=1 << 40)
            with Gateway(url, limits=limits) as gateway:
                grant = gateway.issue(client.user, name, token)
                sizes: list[int] = []

                def read() -> None:
                    with requests.get(f"{grant.api_url}/repos/{client.user}/{name}/issues",
                                      params={"limit": 50, "state": "all"}, stream=True,
                                      headers={"Authorization": f"token {grant.token}"},
                                      timeout=600) as answer:
                        sizes.append(sum(len(p) for p in answer.iter_content(64 * 1024)))
                with Peak() as peak:
                    readers = [threading.Thread(target=read) for _ in range(4)]
                    for reader in readers:
                        reader.start()
                    for reader in readers:
                        reader.join()
                    gateway.idle()
            kind = "a real Gitea" if on_gitea else "the forge, in a process of its own"
            print(f"r14 ({kind}): two 4 MiB labels on each of {issues} issues, four issue "
                  f"lists at once: {sum(sizes) / MIB:.0f} MiB through the gateway; harness "
                  f"memory {peak.start / MIB:.0f} MiB before, +{(peak.peak - peak.start) / MIB:.1f} "
                  f"MiB at peak")
        finally:
            delete_repo(client, client.user, name)


def _bridge_children(pid: int) -> int:
    try:
        return len(Path(f"/proc/{pid}/task/{pid}/children").read_text().split())
    except OSError:
        return 0


def connections() -> None:
    from benchkit.isolation.sandbox import Sandbox
    with Forge() as forge, Gateway(forge.url) as gateway, \
            tempfile.TemporaryDirectory(prefix="benchkit-bench-") as scratch:
        grant = gateway.issue(forge.user, "anything", forge.token)
        top = Path(scratch)
        sandbox = Sandbox(top / "root", workdir=top / "work", home=top / "home", tmp=top / "tmp",
                          host_url=grant.url)
        with sandbox:
            bridge = sandbox._bridge
            assert bridge is not None
            threads = Peak(threading.active_count)
            children = Peak(lambda: _bridge_children(bridge.pid))
            conns = []
            started = time.perf_counter()
            with threads, children:
                for _ in range(500):
                    conn = socket.socket(socket.AF_UNIX)
                    conn.connect(str(sandbox.socket))
                    conn.sendall(b"GET /api/v1/vers")
                    conns.append(conn)
                for conn in conns:
                    conn.settimeout(120)
                    try:
                        while conn.recv(4096):
                            pass
                    except OSError:
                        pass
                    conn.close()
            took = time.perf_counter() - started
        print(f"connections: 500 half-sent requests through a sandbox bridge: harness threads "
              f"{threads.start} before, {threads.peak} at peak; bridge processes at peak "
              f"{children.peak} (socat max-children); all answered and closed in {took:.1f} s; "
              f"{sum(e['status'] == 408 for e in grant.requests)} cut off (408), "
              f"{sum(e['status'] == 429 for e in grant.requests)} turned away (429) on the record")


def comment(kind: str) -> None:
    tree = load_tree()
    with Forge() as forge, Client(forge.url, forge.token) as client, Gateway(forge.url) as gateway:
        repo = provision(client, tree.seeds["default"])
        try:
            grant = gateway.issue(repo.owner, repo.name, forge.token)
            text = "a" * MIB if kind == "letters" else ("lorem ipsum " * (MIB // 12))
            started = time.perf_counter()
            reply = requests.post(f"{grant.api_url}/repos/{repo.full_name}/issues/1/comments",
                                  json={"body": text}, timeout=600,
                                  headers={"Authorization": f"token {grant.token}"})
            took = time.perf_counter() - started
            print(f"comment: 1 MiB of {kind}: HTTP {reply.status_code} in {took:.2f} s")
        finally:
            delete_repo(client, repo.owner, repo.name)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--only", choices=["answer", "bodies", "r14", "connections", "comment"])
    parser.add_argument("--issues", type=int, default=12,
                        help="r14: issues carrying the two labels (default 12)")
    parser.add_argument("--gitea", action="store_true",
                        help="the bodies and r14 against a real Gitea (scripts/test-setup builds it)")
    parser.add_argument("--comment-of", choices=["words", "letters"], help=argparse.SUPPRESS)
    parser.add_argument("--limit", type=float, default=120.0,
                        help="seconds a 1 MiB comment may take (default 120)")
    args = parser.parse_args()
    if args.comment_of:
        return comment(args.comment_of)
    sections = {"answer": answer, "bodies": lambda: bodies(args.gitea),
                "r14": lambda: r14(args.gitea, args.issues), "connections": connections}
    for name, run in sections.items():
        if args.only in (None, name):
            run()
    if args.only in (None, "comment"):
        for kind in ("words", "letters"):
            try:
                done = subprocess.run([sys.executable, str(HERE), "--comment-of", kind],
                                      capture_output=True, text=True, timeout=args.limit)
                print(done.stdout.strip() or done.stderr.strip()[-300:])
            except subprocess.TimeoutExpired:
                print(f"comment: 1 MiB of {kind}: no answer within {args.limit:.0f} s")


if __name__ == "__main__":
    main()
