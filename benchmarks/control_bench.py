#!/usr/bin/env python3
"""What the gateway's control requests cost (benchkit.gateway.control): a trial's
control repository made and deleted (benchkit.trial.control), and per failing request the
control's own round trip to the host and how long it holds the request's connection
after the tool already has its answer. The failures: a 500 the host answers the agent's
write with (on the forge, an injected fault; on a real Gitea, one dependency posted
twice, a 500 an agent can provoke), each followed by a control write; and a read the
host holds past a second (a proxy), whose control read is sent while it waits.

    python3 benchmarks/control_bench.py [--failures N] [--gitea]
"""

from __future__ import annotations

import argparse
import http.server
import statistics
import threading
import time
from urllib.parse import urlsplit

import requests

from benchkit.documents import load_tree
from benchkit.forge import Forge
from benchkit.gateway.server import Gateway
from benchkit.gitea import Client, delete_repo, provision
from benchkit.gitea.server import Gitea
from benchkit.trial.control import open_control


def _ms(values: list[float]) -> str:
    return f"median {statistics.median(values) * 1000:.0f} ms, max {max(values) * 1000:.0f} ms"


def failing(host, client: Client, failures: int, forge: bool) -> None:
    tree = load_tree()
    repo = provision(client, tree.seeds["default"])
    started = time.perf_counter()
    control_repo, control = open_control(client, tree.suite.repo_prefix)
    made = time.perf_counter() - started
    try:
        with Gateway(host.url) as gateway:
            grant = gateway.issue(repo.owner, repo.name, host.token, control=control)
            auth = {"Authorization": f"token {grant.token}"}
            own = f"{grant.api_url}/repos/{repo.full_name}"
            if forge:
                host.inject_fault("PATCH", r"/issues/1$", status=500, times=failures)
            else:  # the first post makes the dependency; each one after it answers 500
                requests.post(f"{own}/issues/1/dependencies", headers=auth, timeout=60,
                              json={"owner": repo.owner, "repo": repo.name, "index": 2})
            for _ in range(failures):
                if forge:
                    requests.patch(f"{own}/issues/1", json={"title": "x"}, headers=auth, timeout=60)
                else:
                    requests.post(f"{own}/issues/1/dependencies", headers=auth, timeout=60,
                                  json={"owner": repo.owner, "repo": repo.name, "index": 2})
            gateway.idle()
            gateway.end(grant)
        failed = [e for e in grant.requests if e["status"] >= 500]
        assert len(failed) == failures and all(e["control"]["status"] == 200 for e in failed)
        kind = "the forge, in this process" if forge else "a real Gitea"
        print(f"control ({kind}): its repository made in {made * 1000:.0f} ms; "
              f"{failures} failing writes, each with a control write: the control's round "
              f"trip {_ms([e['control']['s'] for e in failed])}; the failing requests' own "
              f"host time {_ms([e['host_s'] for e in failed])}; one more request of the "
              f"host's a failing request")
    finally:
        if forge:
            host.clear_faults()
        delete_repo(client, control_repo.owner, control_repo.name)
        delete_repo(client, repo.owner, repo.name)


class _Holding(http.server.ThreadingHTTPServer):
    """A proxy that holds each issue read 1.5 s before it forwards it: a slow answer."""

    def __init__(self, target: str):
        parts = urlsplit(target)
        host, port = parts.hostname, parts.port

        class Handler(http.server.BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args) -> None:
                pass

            def do_GET(self) -> None:
                if "/issues/" in self.path:
                    time.sleep(1.5)
                answer = requests.get(f"http://{host}:{port}{self.path}", timeout=60,
                                      headers={k: v for k, v in self.headers.items()
                                               if k.lower() != "host"})
                self.send_response(answer.status_code)
                self.send_header("Content-Type", answer.headers.get("Content-Type", ""))
                self.send_header("Content-Length", str(len(answer.content)))
                self.end_headers()
                self.wfile.write(answer.content)
        super().__init__(("127.0.0.1", 0), Handler)
        self.daemon_threads = True
        self.url = f"http://127.0.0.1:{self.server_address[1]}/"


def slow(host, client: Client, failures: int) -> None:
    tree = load_tree()
    repo = provision(client, tree.seeds["default"])
    control_repo, control = open_control(client, tree.suite.repo_prefix)
    proxy = _Holding(host.url)
    threading.Thread(target=proxy.serve_forever, daemon=True).start()
    try:
        with Gateway(proxy.url) as gateway:
            grant = gateway.issue(repo.owner, repo.name, host.token, control=control)
            auth = {"Authorization": f"token {grant.token}"}
            for _ in range(failures):
                requests.get(f"{grant.api_url}/repos/{repo.full_name}/issues/1", headers=auth,
                             timeout=60)
            gateway.idle()
            gateway.end(grant)
        held = [e for e in grant.requests if "control" in e]
        print(f"control (slow reads): {len(held)} of {failures} reads held 1.5 s each got a "
              f"control read while they waited: its round trip {_ms([e['control']['s'] for e in held])} "
              f"(the host owes that much of each)")
    finally:
        proxy.shutdown()
        proxy.server_close()
        delete_repo(client, control_repo.owner, control_repo.name)
        delete_repo(client, repo.owner, repo.name)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--failures", type=int, default=20, help="failing requests (default 20)")
    parser.add_argument("--gitea", action="store_true",
                        help="also on a real Gitea (scripts/test-setup builds it)")
    args = parser.parse_args()
    with Forge() as forge, Client(forge.url, forge.token) as client:
        failing(forge, client, args.failures, forge=True)
        slow(forge, client, max(2, args.failures // 5))
    if args.gitea:
        with Gitea() as gitea, Client(gitea.url, gitea.token) as client:
            failing(gitea, client, args.failures, forge=False)


if __name__ == "__main__":
    main()
