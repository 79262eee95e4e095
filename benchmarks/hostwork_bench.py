#!/usr/bin/env python3
"""What a request's content costs a real Gitea 1.26.0, sent straight to it (no gateway):
the superlinear paths benchkit.gateway.hostwork bounds, at growing sizes (doubling
sizes that take four times as long are quadratic), and the worst text of each kind the
bounds let through. Each figure is Gitea's own CPU time for one request (its process,
read from /proc) and the request's wall time.

    python3 benchmarks/hostwork_bench.py [--largest BYTES]
"""

from __future__ import annotations

import argparse
import time
import uuid

import requests

from benchkit.gateway.hostcpu import HostCpu
from benchkit.gateway.hostwork import MARKUP_CHARS, REFERENCE_WORK, TEXT_BYTES, text_too_costly
from benchkit.gitea import Client, delete_repo
from benchkit.gitea.server import Gitea


def fill(unit: str, size: int) -> str:
    return (unit * (size // len(unit) + 1))[:size]


class Timed:
    """Requests to one repository of a real Gitea, each timed by Gitea's CPU and the wall."""

    def __init__(self, gitea: Gitea, client: Client, name: str):
        self.clock, self.name = HostCpu(gitea.url), name
        self.issues = f"{gitea.api_url}/repos/{client.user}/{name}/issues"
        self.auth = {"Authorization": f"token {gitea.token}"}

    def __call__(self, method: str, path: str, **kwargs) -> tuple[float, float, int]:
        cpu, wall = self.clock.seconds() or 0.0, time.perf_counter()
        answer = requests.request(method, self.issues + path, headers=self.auth, timeout=600,
                                  **kwargs)
        return (self.clock.seconds() or 0.0) - cpu, time.perf_counter() - wall, answer.status_code

    def say(self, what: str, method: str, path: str, **kwargs) -> None:
        cpu, wall, status = self(method, path, **kwargs)
        print(f"  {what}: HTTP {status}, Gitea's CPU {cpu:.2f} s, {wall:.2f} s")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--largest", type=int, default=64 * 1024,
                        help="the largest text sent past the bounds (default 65536 bytes)")
    args = parser.parse_args()
    with Gitea() as gitea, Client(gitea.url, gitea.token) as client:
        name = f"hostwork-{uuid.uuid4().hex[:6]}"
        client.post("/user/repos", json={"name": name, "auto_init": True})
        client.post(f"/repos/{client.user}/{name}/issues", json={"title": "talk here"})
        timed = Timed(gitea, client, name)
        try:
            sizes = [size for size in (4096, 8192, 16384, 32768, 65536, 131072)
                     if size <= args.largest]
            print("past the bounds (refused by the gateway), straight to Gitea:")
            for unit in ("*a_", "[a](", "1. ", "#1\n"):
                for size in sizes if unit != "#1\n" else [s // 4 for s in sizes]:
                    timed.say(f"a comment of {unit!r} x {size} bytes", "POST", "/1/comments",
                              json={"body": fill(unit, size)})
            for items in (1000, 4000, 16000):
                if items * 2 <= args.largest:
                    timed.say(f"a list of {items} milestones", "GET", "",
                              params={"milestones": ",".join(["1"] * items)})
            print("within the bounds (the worst text of each kind the gateway forwards):")
            worst = {"references at the end": fill("a ", TEXT_BYTES - 3 * (REFERENCE_WORK // TEXT_BYTES))
                     + "#1\n" * (REFERENCE_WORK // TEXT_BYTES)}
            for unit in ("*a_", "_*a", "[a](", "~a", "`a", "1. ", "* ", "+ ", "> "):
                size = len(unit) * (MARKUP_CHARS // sum(c in "*_~`[]()<>!+.|\\" for c in unit))
                text = fill(unit, size) + fill("a ", TEXT_BYTES - size)
                assert not text_too_costly(text, "x"), unit
                worst[f"{unit!r} to the bound"] = text
            for what, text in worst.items():
                timed.say(what, "POST", "/1/comments", json={"body": text})
        finally:
            delete_repo(client, client.user, name)


if __name__ == "__main__":
    main()
