"""A real client's requests on both hosts: every task's reference for an MCP arm played
through the real server against a freshly seeded repository, with a recording proxy
between the server and the host, so the sequence of (method, route, status) can be
compared between the forge and a real Gitea.

Routes are normalised so that what legitimately differs between two hosts does not:
the throwaway repository's name, and the ids the host allots (labels, reviews,
comments); issue and pull request numbers are the seed's on both.
"""

from __future__ import annotations

import asyncio
import http.client
import http.server
import re
import threading
import urllib.parse
from dataclasses import dataclass

from benchkit.agent.replay import context_for
from benchkit.gitea import Client, provision
from benchkit.gitea.repos import discard
from benchkit.spec.reference import render_step

HOP_BY_HOP = {"connection", "keep-alive", "transfer-encoding", "te", "trailer", "upgrade",
              "proxy-authorization", "proxy-authenticate", "host", "content-length"}
ALLOTTED = re.compile(r"/(labels|reviews|comments|releases|milestones)/\d+")


@dataclass(frozen=True)
class Seen:
    method: str
    route: str
    status: int

    def __str__(self) -> str:
        return f"{self.method} {self.route} -> {self.status}"


class RecordingProxy:
    """Forwards every request to `upstream` as it came and records what it saw."""

    def __init__(self, upstream: str):
        target = urllib.parse.urlsplit(upstream)
        seen = self.seen = []

        class Handler(http.server.BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def forward(self):
                length = int(self.headers.get("Content-Length") or 0)
                body = self.rfile.read(length) if length else None
                headers = {k: v for k, v in self.headers.items() if k.lower() not in HOP_BY_HOP}
                connection = http.client.HTTPConnection(target.hostname, target.port, timeout=60)
                try:
                    connection.request(self.command, self.path, body=body, headers=headers)
                    answer = connection.getresponse()
                    data = answer.read()
                finally:
                    connection.close()
                seen.append((self.command, self.path, answer.status))
                self.send_response(answer.status)
                for key, value in answer.getheaders():
                    if key.lower() not in HOP_BY_HOP:
                        self.send_header(key, value)
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            do_GET = do_POST = do_PATCH = do_PUT = do_DELETE = forward  # the http.server API's names

            def log_message(self, *args):
                pass

        self.server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def close(self):
        self.server.shutdown()
        self.server.server_close()


def route(path: str, full_name: str) -> str:
    """The path without its query, the repository as {repo}, allotted ids as {id}."""
    path = urllib.parse.urlsplit(path).path.replace(f"/{full_name}", "/{repo}")
    return ALLOTTED.sub(lambda m: f"/{m[1]}/{{id}}", path)


def play(host, seed, reference, command: str, prefix: str) -> list[Seen]:
    """The reference's steps through the MCP server at `command`, on a fresh repository
    of `host`; the requests the server made, in order."""
    with Client(host.url, host.token) as client:
        repo = provision(client, seed, prefix=prefix)
        proxy = RecordingProxy(host.url)
        try:
            context = context_for(host_url=host.url, api_url=host.api_url, token=host.token,
                                  owner=repo.owner, repo=repo.name, user=client.user,
                                  targets=reference.targets)
            env = {"GITEA_HOST": proxy.url, "GITEA_ACCESS_TOKEN": host.token}
            asyncio.run(asyncio.wait_for(_steps(command, env, reference, context), 120))
        finally:
            proxy.close()
            discard(client, repo)
    return [Seen(method, route(path, repo.full_name), status)
            for method, path, status in proxy.seen]


async def _steps(command: str, env: dict, reference, context: dict) -> None:
    from mcp import ClientSession, StdioServerParameters
    from mcp.client.stdio import stdio_client
    params = StdioServerParameters(command=command, args=["-t", "stdio"], env=env)
    async with stdio_client(params) as (read, write), ClientSession(read, write) as session:
        await session.initialize()
        for step in reference.steps:
            rendered = render_step(step, context)
            name = (rendered.tool or "").removeprefix("mcp__gitea__")
            result = await session.call_tool(name, rendered.input or {})
            text = "\n".join(getattr(part, "text", "") for part in result.content)
            context = {**context, "outputs": [*context["outputs"], text]}
