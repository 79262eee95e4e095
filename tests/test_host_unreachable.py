"""A host that gives no answer at all is the host's fault: the gateway's own 502 says
why on the trial's record, and the attribution never charges it to the arm, whatever
the health request finds a moment later. A write goes to the host on a new connection,
so a kept-alive one the host closed meanwhile is never a 502 for nothing."""

import http.server
import threading

import requests

from benchkit.gateway.server import Gateway
from benchkit.run.attribution import host_failing


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
    assert host_failing(grant.requests) == [
        "PATCH /api/v1/repos/owner/repo/issues/2: the host could not be reached "
        "(ConnectionRefusedError)"]


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
