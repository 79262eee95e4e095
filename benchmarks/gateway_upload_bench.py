#!/usr/bin/env python3
"""What a huge upload does to the harness's memory: 1 GiB sent through the trial gateway
(in this process, as in a run) to the embedded forge, by curl streaming it chunked
(`curl -T -`, as `curl -T /dev/zero` does) and by a client that declares the whole
Content-Length and streams it. The gateway refuses each (413) as it streams in; printed:
the process's resident memory before, its peak while the upload ran, and after, and
how many bytes the client got to send before the answer.

    python3 benchmarks/gateway_upload_bench.py [--gib 1]
"""

from __future__ import annotations

import argparse
import socket
import subprocess
import threading
import time

from benchkit.documents import load_tree
from benchkit.forge import Forge
from benchkit.gateway.server import Gateway
from benchkit.gitea import Client, delete_repo, provision

GIB = 1024 ** 3
BLOCK = 1024 * 1024


def rss() -> int:
    """This process's resident memory in bytes (Linux)."""
    for line in open("/proc/self/status"):
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) * 1024
    raise RuntimeError("no VmRSS in /proc/self/status")


class Peak:
    """The highest resident memory seen while the block runs (sampled every 10 ms)."""

    def __enter__(self):
        self.peak, self._done = rss(), threading.Event()
        self._thread = threading.Thread(target=self._watch, daemon=True)
        self._thread.start()
        return self

    def _watch(self):
        while not self._done.wait(0.01):
            self.peak = max(self.peak, rss())

    def __exit__(self, *exc):
        self._done.set()
        self._thread.join()


def chunked_with_curl(url: str, token: str, size: int) -> str:
    feed = subprocess.Popen(["head", "-c", str(size), "/dev/zero"], stdout=subprocess.PIPE)
    done = subprocess.run(["curl", "-sS", "-o", "/dev/null", "-w", "%{http_code} sent %{size_upload}",
                           "-X", "POST", "-H", f"Authorization: token {token}",
                           "-H", "Content-Type: application/json", "-T", "-", url],
                          stdin=feed.stdout, capture_output=True, text=True, timeout=600)
    feed.kill()
    feed.wait()
    return done.stdout.strip() or done.stderr.strip()


def declared_length(url: str, token: str, size: int) -> str:
    host, port_path = url.split("//", 1)[1].split(":", 1)
    port, path = port_path.split("/", 1)
    sent = 0
    with socket.create_connection((host, int(port)), timeout=60) as conn:
        conn.sendall(f"POST /{path} HTTP/1.1\r\nHost: x\r\nAuthorization: token {token}\r\n"
                     f"Content-Type: application/json\r\nContent-Length: {size}\r\n\r\n".encode())
        conn.setblocking(False)
        block, answer = bytes(BLOCK), b""
        while sent < size and not answer:
            try:
                sent += conn.send(block[:min(BLOCK, size - sent)])
            except BlockingIOError:
                time.sleep(0.001)
            except OSError:
                break
            try:
                answer = conn.recv(200)
            except BlockingIOError:
                pass
        conn.settimeout(30)
        while not answer:
            answer = conn.recv(200)
    return f"{answer.split(b' ')[1].decode()} sent {sent}"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--gib", type=float, default=1.0, help="upload size in GiB (default 1)")
    size = int(parser.parse_args().gib * GIB)
    tree = load_tree()
    with Forge() as forge, Client(forge.url, forge.token) as client, Gateway(forge.url) as gateway:
        repo = provision(client, tree.seeds["default"])
        try:
            grant = gateway.issue(repo.owner, repo.name, forge.token)
            url = f"{grant.api_url}/repos/{repo.owner}/{repo.name}/issues"
            print(f"limits: {gateway.limits.request_bytes} bytes a request, "
                  f"{gateway.limits.trial_bytes} a trial; upload {size} bytes")
            for name, send in (("curl -T - (chunked)", chunked_with_curl),
                               ("declared Content-Length", declared_length)):
                before = rss()
                with Peak() as peak:
                    outcome = send(url, grant.token, size)
                gateway.idle()
                after = rss()
                print(f"{name}: answer {outcome}; resident memory {before / 1e6:.1f} MB before, "
                      f"peak {peak.peak / 1e6:.1f} MB (+{(peak.peak - before) / 1e6:.1f}), "
                      f"{after / 1e6:.1f} MB after (+{(after - before) / 1e6:.1f})")
            gateway.end(grant)
        finally:
            delete_repo(client, repo.owner, repo.name)


if __name__ == "__main__":
    main()
