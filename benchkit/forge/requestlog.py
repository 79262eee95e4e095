"""The request log: one entry per HTTP request the forge answered.

It feeds the independent leak audit (which clients, by User-Agent, reached the host
with which token) and the performance figures. Bodies, query strings and tokens are
never recorded: a token appears only as its identity (benchkit.forge.store.token_id).
"""

import threading


class RequestLog:
    """The newest `limit` requests, each with a sequence number a reader resumes from."""
    def __init__(self, limit: int = 100_000) -> None:
        self._lock = threading.Lock()
        self._entries: list[dict] = []
        self._seq = 0
        self._limit = limit

    def record(self, *, method: str, path: str, status: int, user_agent: str, bytes_in: int,
               bytes_out: int, started: float, duration: float, token_id: str | None = None) -> None:
        """Add one request's entry, dropping the oldest beyond the limit."""
        with self._lock:
            self._seq += 1
            self._entries.append({"seq": self._seq, "method": method, "path": path, "status": status,
                                  "user_agent": user_agent, "token_id": token_id,
                                  "bytes_in": bytes_in, "bytes_out": bytes_out,
                                  "started": round(started, 6), "duration": round(duration, 6)})
            if len(self._entries) > self._limit:
                del self._entries[: len(self._entries) - self._limit]

    def entries(self, since: int = 0) -> list[dict]:
        """Copies of the entries whose sequence number is above `since`."""
        with self._lock:
            return [dict(e) for e in self._entries if e["seq"] > since]
