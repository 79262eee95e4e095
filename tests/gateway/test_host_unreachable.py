"""A host that gives no answer, or one the gateway cannot read, is at fault only when the
control request the gateway sends at once fails too (benchkit.gateway.control): the
gateway's own 502 says why on the trial's record, with the control's figures. An answer
Gitea sends in good order is read whatever its head's size (Gitea copies a list's query
into its Link header: once past http.client's 64 KiB a line, a "host failure" on
demand). A write goes to the host on a new connection, so a kept-alive one the host
closed meanwhile is never a 502 for nothing."""

import http.server
import socket
import threading

import pytest
import requests

from benchkit.gateway.server import Gateway
from benchkit.trial.attribution import host_failing


def test_a_host_that_cannot_be_reached_is_the_hosts_fault(dead_url):
    with Gateway(dead_url) as gateway:
        grant = gateway.issue("owner", "repo", "host-token")
        answer = requests.patch(f"{grant.api_url}/repos/owner/repo/issues/2",
                                json={"state": "closed"}, timeout=30,
                                headers={"Authorization": f"token {grant.token}"})
        assert answer.status_code == 502
        gateway.end(grant)
    [entry] = grant.requests
    assert entry["status"] == 502 and entry["unreachable"] == "ConnectionRefusedError"
    assert entry["control"]["kind"] == "write"
    assert entry["control"]["status"] == "ConnectionRefusedError"
    assert host_failing(grant.requests) == [
        "PATCH /api/v1/repos/owner/repo/issues/2: no answer (ConnectionRefusedError), and "
        "the harness's own control write right after: no answer (ConnectionRefusedError)"]


class StandIn(http.server.BaseHTTPRequestHandler):
    """A host of known answers: `/issues/N` as its test says (`answer`), anything
    else (the controls) 200."""

    protocol_version = "HTTP/1.1"
    answer = "plain"

    def _answer(self) -> None:
        self.rfile.read(int(self.headers.get("Content-Length") or 0))
        if "/issues/" in self.path and self.answer == "garbage":
            self.wfile.write(b"NOT HTTP AT ALL\r\n\r\n")
            self.close_connection = True
            return
        if "/issues/" in self.path and self.answer == "drop":
            self.close_connection = True
            return
        self.send_response(200)
        if "/issues/" in self.path and self.answer == "long head":  # as Gitea's Link header
            self.send_header("Link", "<http://h/?labels=" + "x" * 100_000 + '>; rel="next"')
            for n in range(150):
                self.send_header(f"X-Many-{n}", "y")
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", "2")
        self.end_headers()
        self.wfile.write(b"{}")

    do_GET = do_PATCH = _answer

    def log_message(self, *args) -> None:
        pass


@pytest.mark.parametrize("answer", ["long head", "garbage", "drop"])
def test_an_answer_the_host_sends_is_read_and_one_it_fails_is_charged_if_its_control_passes(
        answer):
    handler = type("Answering", (StandIn,), {"answer": answer})
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        with Gateway(f"http://127.0.0.1:{server.server_address[1]}/") as gateway:
            grant = gateway.issue("owner", "repo", "host-token")
            port = int(grant.url.rstrip("/").rsplit(":", 1)[1])
            with socket.create_connection(("127.0.0.1", port), timeout=30) as conn:
                conn.sendall(f"GET /api/v1/repos/owner/repo/issues/2 HTTP/1.1\r\nHost: x\r\n"
                             f"Authorization: token {grant.token}\r\nConnection: close\r\n\r\n"
                             .encode())
                got = b"".join(iter(lambda: conn.recv(65536), b""))
            gateway.end(grant)
    finally:
        server.shutdown()
    [entry] = grant.requests
    head = got.split(b"\r\n\r\n")[0].split(b"\r\n")
    if answer == "long head":  # read whole and relayed, not a host failure on demand
        assert head[0] == b"HTTP/1.1 200 OK" and len(head) > 150
        assert max(map(len, head)) > 100_000 and got.endswith(b"{}")
        assert "unreadable" not in entry and "control" not in entry
        return
    assert head[0].startswith(b"HTTP/1.1 502") and entry["status"] == 502
    assert entry.get("unreadable" if answer == "garbage" else "unreachable"), entry
    assert entry["control"]["kind"] == "read" and entry["control"]["status"] == 200
    assert host_failing(grant.requests) == []  # its control answered: the agent's, charged


def test_a_write_never_rides_a_connection_the_host_may_have_closed():
    """A host that closes every kept-alive connection once it has answered on it, as a
    busy host may: a read then a write, both answered."""
    seen: list[tuple[str, int]] = []

    class Closing(http.server.BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def _answer(self) -> None:
            self.rfile.read(int(self.headers.get("Content-Length") or 0))
            seen.append((self.command, id(self.connection)))
            body = b"{}"
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()  # keep-alive promised, then broken below
            self.wfile.write(body)
            self.wfile.flush()
            self.close_connection = True

        do_GET = do_PATCH = _answer

        def log_message(self, *args) -> None:
            pass

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Closing)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        with Gateway(f"http://127.0.0.1:{server.server_address[1]}/") as gateway:
            grant = gateway.issue("owner", "repo", "host-token")
            auth = {"Authorization": f"token {grant.token}"}
            read = requests.get(f"{grant.api_url}/repos/owner/repo/issues/2", headers=auth,
                                timeout=30)
            write = requests.patch(f"{grant.api_url}/repos/owner/repo/issues/2", headers=auth,
                                   json={"state": "closed"}, timeout=30)
            gateway.end(grant)
    finally:
        server.shutdown()
    assert (read.status_code, write.status_code) == (200, 200)
    assert [entry.get("unreachable") for entry in grant.requests] == [None, None]
    assert [command for command, _ in seen] == ["GET", "PATCH"]
