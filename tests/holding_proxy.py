"""A loopback HTTP proxy in front of a host (the forge or a real Gitea) that holds the
requests a rule picks for a while before it forwards them: a slow host, for tests."""

import http.server
import re
import threading
from urllib.parse import urlsplit

from forwarding import fetch, relay


class HoldingProxy:
    """`with HoldingProxy(host_url, "PATCH", r"/issues/2$", hold=25) as proxy:` proxy.url
    reaches the host; each matching request waits `hold` seconds (or until the proxy
    stops) before it is forwarded. `held` counts them."""

    def __init__(self, host_url: str, method: str, path_regex: str, hold: float):
        target = urlsplit(host_url)
        self.host, self.port = target.hostname, target.port
        self.method, self.pattern, self.hold = method, re.compile(path_regex), hold
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
                if self.command == proxy.method and proxy.pattern.search(self.path.split("?")[0]):
                    proxy.held += 1
                    proxy.stopping.wait(proxy.hold)
                relay(self, *fetch(self, proxy.host, proxy.port, timeout=120))

            do_POST = do_PUT = do_PATCH = do_DELETE = do_HEAD = do_GET

        return Handler
