"""A stand-in HTTP host on a loopback port that answers every GET with one body: for
tests (and the sandbox benchmark) that need something to reach, not a Gitea."""

import http.server
import threading


def serve(body: bytes) -> http.server.ThreadingHTTPServer:
    """Started in a daemon thread; shut it down with .shutdown()."""
    class Handler(http.server.BaseHTTPRequestHandler):
        def do_GET(self):
            self.send_response(200)
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *args):
            pass
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return server
