"""The differential for the real clients: every task's reference of an arm played with
the arm's real tool (tea, gitea-axi in a shell; the gitea-mcp server through an MCP
session) on a freshly seeded repository of a host, through a recording proxy in front
of it; what is compared is the sequence of
(method, route, status) of the tool's requests. The same proxy stands in front of the
forge and of the real Gitea, so neither side is observed differently.

    sequences = play_arm(arm, host, tree)   # {task: [(method, route, status), ...]}

Differences the forge may keep are listed, with their reasons, in
tests/data/differential-clients-accepted.yaml.
"""

from __future__ import annotations

import asyncio
import fnmatch
import http.server
import os
import re
import shutil
import subprocess
import tempfile
import threading
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import urlsplit

import yaml
from forwarding import fetch, relay

from benchkit.agent.replay import context_for
from benchkit.documents.reference import reference_for, render_step
from benchkit.gitea import Client, provision
from benchkit.gitea.repos import discard
from benchkit.isolation import assemble

ACCEPTED = Path(__file__).resolve().parent / "data" / "differential-clients-accepted.yaml"
STEP_TIMEOUT = 60
SHA = re.compile(r"\b[0-9a-f]{40}\b")
HOST_ID = re.compile(r"/(reviews|comments|labels|milestones|releases)/\d+")

Request = tuple[str, str, int]  # (method, route, status)


class RecordingProxy:
    """A reverse proxy on loopback in front of `target` (a host's base URL): it forwards
    every request as it came and records (method, path, status)."""

    def __init__(self, target: str):
        parts = urlsplit(target)
        self.seen: list[Request] = []
        self._lock = threading.Lock()
        proxy = self

        class Handler(http.server.BaseHTTPRequestHandler):
            def _forward(self):
                answer, data = fetch(self, parts.hostname, parts.port, timeout=60)
                with proxy._lock:  # before the client can see the answer
                    proxy.seen.append((self.command, self.path, answer.status))
                relay(self, answer, data)

            do_GET = do_POST = do_PATCH = do_PUT = do_DELETE = do_HEAD = _forward

            def log_message(self, *args):
                pass

        self._server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self._server.server_address[1]}/"
        threading.Thread(target=self._server.serve_forever, daemon=True).start()

    def take(self) -> list[Request]:
        with self._lock:
            seen, self.seen = self.seen, []
        return seen

    def close(self) -> None:
        self._server.shutdown()
        self._server.server_close()


def route(path: str, owner: str, repo: str) -> str:
    """A request's path without its query, the repository's name as {repo}, a commit
    hash as {sha} (the hosts' commits differ in their times), and a host-wide id (of a
    review, comment or label, numbered across every repository) as {id}."""
    path = path.split("?", 1)[0].replace(f"/{owner}/{repo}", "/{repo}")
    return HOST_ID.sub(r"/\1/{id}", SHA.sub("{sha}", path))


def in_order(requests: list[Request]) -> list[Request]:
    """The sequence with each run of consecutive reads sorted: a client may send reads
    at once (gitea-axi's Promise.all), and their order of arrival is the scheduler's."""
    ordered: list[Request] = []
    run: list[Request] = []
    for request in requests:
        if request[0] == "GET":
            run.append(request)
            continue
        ordered += sorted(run) + [request]
        run = []
    return ordered + sorted(run)


def play_arm(arm, host, tree, raw: list[Request] | None = None) -> dict[str, list[Request]]:
    """Each task's reference (the scored and bonus tasks it supports) played with the
    real tool on a fresh repository of `host` seeded as the task says. `raw` gets every
    request as it was sent (query included), its repository written `o/r`."""
    reference = reference_for(arm, tree.root)
    proxy = RecordingProxy(host.url)
    played = {}
    try:
        with Client(host.url, host.token) as client:
            for task_id, task in sorted(tree.tasks.items()):
                entry = reference.for_task(task_id)
                if entry is None or entry.unsupported or not entry.steps:
                    continue
                repo = provision(client, tree.seeds[task.seed], prefix=tree.suite.repo_prefix)
                try:
                    proxy.take()  # the seeding's own requests went around the proxy
                    _play(arm, tree, entry, proxy, host, repo)
                    seen = proxy.take()
                    played[task_id] = in_order([(m, route(p, repo.owner, repo.name), s)
                                                for m, p, s in seen])
                    if raw is not None:
                        raw += [(m, p.replace(f"/{repo.owner}/{repo.name}", "/o/r"), s)
                                for m, p, s in seen]
                finally:
                    discard(client, repo)
    finally:
        proxy.close()
    return played


def _play(arm, tree, entry, proxy: RecordingProxy, host, repo) -> None:
    with tempfile.TemporaryDirectory(prefix="benchkit-clientdiff-") as workdir:
        assembly = assemble(arm, tree.suite, host_url=proxy.url, api_url=proxy.url + "api/v1",
                            token=host.token, owner=repo.owner, repo=repo.name, user=host.user,
                            workdir=Path(workdir), root=tree.root)
        context = context_for(host_url=proxy.url, api_url=proxy.url + "api/v1",
                              token=host.token, owner=repo.owner, repo=repo.name,
                              user=host.user, targets=entry.targets)
        with assembly:
            if arm.tool.kind == "mcp":
                (server,) = assembly.mcp_servers.values()
                asyncio.run(asyncio.wait_for(_mcp_steps(server, workdir, entry, context),
                                             STEP_TIMEOUT * len(entry.steps)))
                return
            env = assembly.agent_env()
            shell = env.get("SHELL") or shutil.which("bash") or "/bin/bash"
            for step in entry.steps:
                command = render_step(step, context).run or ""
                done = subprocess.run([shell, "-c", command], env=env, cwd=workdir,
                                      stdin=subprocess.DEVNULL, capture_output=True, text=True,
                                      timeout=STEP_TIMEOUT)
                context["outputs"].append(done.stdout)


async def _mcp_steps(server: dict, workdir: str, entry, context: dict) -> None:
    """The steps as calls of the arm's MCP server (its log goes to a HOME of its own)."""
    from mcp import ClientSession, StdioServerParameters
    from mcp.client.stdio import stdio_client
    env = {"PATH": os.environ.get("PATH", os.defpath), "HOME": workdir, **server["env"]}
    params = StdioServerParameters(command=server["command"], args=server["args"], env=env)
    async with stdio_client(params) as (read, write), ClientSession(read, write) as session:
        await session.initialize()
        for step in entry.steps:
            rendered = render_step(step, context)
            name = (rendered.tool or "").split("__")[-1]
            result = await session.call_tool(name, rendered.input or {})
            context["outputs"].append("\n".join(getattr(part, "text", "") for part in result.content))


# --- judging -------------------------------------------------------------------------

@dataclass(frozen=True)
class Difference:
    arm: str
    task: str
    forge: list[Request]
    gitea: list[Request]

    def __str__(self):
        return f"{self.arm} {self.task}: forge {self.forge} / gitea {self.gitea}"


def differences(arm_id: str, forge: dict, gitea: dict) -> list[Difference]:
    return [Difference(arm_id, task, forge.get(task, []), gitea.get(task, []))
            for task in sorted(set(forge) | set(gitea)) if forge.get(task) != gitea.get(task)]


def load_accepted() -> list[dict]:
    return yaml.safe_load(ACCEPTED.read_text()) or []


def judge(arm_id: str, found: list[Difference], accepted: list[dict]
          ) -> tuple[list[Difference], list[dict]]:
    """(differences no entry accepts, entries for this arm that no longer match one)."""
    def matches(entry, difference):
        return (fnmatch.fnmatchcase(difference.arm, entry["arm"])
                and fnmatch.fnmatchcase(difference.task, entry["task"]))
    unlisted = [d for d in found if not any(matches(e, d) for e in accepted)]
    stale = [e for e in accepted if fnmatch.fnmatchcase(arm_id, e["arm"])
             and not any(matches(e, d) for d in found)]
    return unlisted, stale
