"""A loopback HTTP proxy in front of a host (the forge or a real Gitea) that holds the
requests a rule picks for a while before it forwards them (a slow host), or answers
them itself with an error status (a reverse proxy whose upstream is failing), for tests."""

import http.server
import re
import threading
from urllib.parse import urlsplit

from forwarding import fetch, relay


class HoldingProxy:
    """`with HoldingProxy(host_url, "PATCH", r"/issues/2$", hold=25) as proxy:` proxy.url
    reaches the host; each matching request (`method` "*": any) waits `hold` seconds (or
    until the proxy stops) before it is forwarded, or, given `status`, is answered with
    it by the proxy and never forwarded. `held` counts them."""

    def __init__(self, host_url: str, method: str, path_regex: str, hold: float,
                 status: int | None = None):
        target = urlsplit(host_url)
        self.host, self.port = target.hostname, target.port
        self.method, self.pattern, self.hold = method, re.compile(path_regex), hold
        self.status = status
        self.stopping = threading.Event()
        self.held = 0
        self._server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), self._handler())
        self._server.daemon_threads = True
        self.url = f"http://127.0.0.1:{self._server.server_address[1]}/"

    def __enter__(self):
        threading.Thread(target=self._server.serve_forever, daemon=True).start()
        return self

    def __exit__(self, *exc):
        self.stopping.set()
        self._server.shutdown()
        self._server.server_close()

    def _handler(self):
        proxy = self

        class Handler(http.server.BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args):
                pass

            def do_GET(self):
                if proxy.method in ("*", self.command) \
                        and proxy.pattern.search(self.path.split("?")[0]):
                    proxy.held += 1
                    proxy.stopping.wait(proxy.hold)
                    if proxy.status is not None:
                        self.rfile.read(int(self.headers.get("Content-Length") or 0))
                        self.send_error(proxy.status)
                        return
                relay(self, *fetch(self, proxy.host, proxy.port, timeout=120))

            do_POST = do_PUT = do_PATCH = do_DELETE = do_HEAD = do_GET

        return Handler
