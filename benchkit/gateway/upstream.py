"""The trial gateway's side towards the host: connections to it, kept alive and shared
by every client connection (curl opens one a call), and one request sent on one of them;
and the harness's own control requests (benchkit.gateway.control), each on a connection
of its own. An answer's head is read within one budget (benchkit.gateway.head), so any
answer Gitea sends is read. An HTTPS host is reached with certificate checks; a host
under a sub-path keeps it."""

from __future__ import annotations

import http.client
import socket
import ssl
import threading
from collections.abc import Callable
from urllib.parse import urlsplit

from benchkit.gateway.head import Answer

UPSTREAM_TIMEOUT = 300.0
IDLE = 16  # kept-alive connections to the host, at most
IDEMPOTENT = frozenset({"GET", "HEAD", "OPTIONS", "PUT", "DELETE"})


class Upstream:
    def __init__(self, host_url: str, *, cafile: str | None = None):
        parts = urlsplit(host_url)
        if parts.scheme not in ("http", "https") or not parts.hostname:
            raise ValueError(f"not an http(s) host URL: {host_url}")
        self._netloc, self._host, self._port = parts.netloc, parts.hostname, parts.port
        self._base = parts.path.rstrip("/")  # a host under a sub-path
        self._tls = ssl.create_default_context(cafile=cafile) if parts.scheme == "https" else None
        self._lock = threading.Lock()
        self._idle: list[http.client.HTTPConnection] = []

    def _connection(self, reuse: bool) -> tuple[http.client.HTTPConnection, bool]:
        """(a connection to the host, whether it was kept alive from an earlier request)."""
        if reuse:
            with self._lock:
                if self._idle:
                    return self._idle.pop(), True
        return self._new(UPSTREAM_TIMEOUT), False

    def _new(self, timeout: float) -> http.client.HTTPConnection:
        conn = (http.client.HTTPSConnection(self._host, self._port, context=self._tls,
                                            timeout=timeout) if self._tls is not None
                else http.client.HTTPConnection(self._host, self._port, timeout=timeout))
        conn.response_class = Answer
        return conn

    def release(self, conn: http.client.HTTPConnection, answer: http.client.HTTPResponse,
                whole: bool) -> None:
        """Keep a connection whose answer was read to its end for the next request."""
        answer.close()
        if whole and not answer.will_close:
            with self._lock:
                if len(self._idle) < IDLE:
                    self._idle.append(conn)
                    return
        conn.close()

    def forward(self, method: str, target: str, headers: dict[str, str], body: bytes,
                watch: Callable[[socket.socket | None], None] = lambda sock: None,
                ) -> tuple[http.client.HTTPConnection, http.client.HTTPResponse]:
        """Send one request to the host: an idempotent one on a kept-alive connection
        (retried once on a new one if the host closed it meanwhile), a write on a new
        one. `watch` is given the connection's socket before anything is sent on it (to
        cut it off)."""
        target = self._base + target
        headers = {**headers, "Host": self._netloc, "Accept-Encoding": "identity"}
        # A write goes on a new connection: one the host closed meanwhile could not be
        # retried (the write may have been applied), and would be a 502 for nothing.
        reuse = method in IDEMPOTENT
        while True:
            conn, kept = self._connection(reuse)
            try:
                if conn.sock is None:
                    conn.connect()
                watch(conn.sock)
                conn.request(method, target, body=body, headers=headers)
                return conn, conn.getresponse()
            except (http.client.RemoteDisconnected, ConnectionResetError, BrokenPipeError):
                conn.close()
                if not kept:  # only a read rides a kept connection: it may try again
                    raise
                reuse = False
            except BaseException:
                conn.close()
                raise

    def control(self, method: str, path: str, body: bytes, token: str | None,
                timeout: float) -> int | str:
        """The harness's own control request (benchkit.gateway.control), on a connection
        of its own: the status of its answer, or the name of the error that kept it
        from one (TimeoutError past `timeout`)."""
        conn = self._new(timeout)
        headers = {"Host": self._netloc, "User-Agent": "benchkit-control",
                   "Accept-Encoding": "identity"}
        if token:
            headers["Authorization"] = f"token {token}"
        if body:
            headers["Content-Type"] = "application/json"
        try:
            conn.request(method, self._base + path, body=body or None, headers=headers)
            answer = conn.getresponse()
            answer.read()
            return answer.status
        except (OSError, http.client.HTTPException) as error:
            return type(error).__name__
        finally:
            conn.close()
