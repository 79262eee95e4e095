"""The gateway's listening side: doors, one loopback port each, a trial's own door and
the gateway's shared one, all accepted by one thread, each connection served by a
thread of its own, at most `limit` at once per door (the rest are answered 429 at
once and closed), so a flood of connections costs a bounded number of threads.

A door knows whose it is: a request that comes through a trial's door is that trial's,
whatever token it carries or lacks (the sandbox's bridge leads to its trial's door
alone). Closing a door shuts the connections still open through it.

Reading is bounded in time (`Arrival`): an idle kept-alive connection is closed after
KEEPALIVE_SECONDS; once a request's first byte is in, the rest must follow within
`grace` seconds plus one second per MIN_RATE bytes, so a client that sends half a
request line and waits (slowloris) is cut off after `grace` seconds.
"""

from __future__ import annotations

import contextlib
import io
import selectors
import socket
import threading
import time
from collections.abc import Callable
from typing import Any

KEEPALIVE_SECONDS = 60.0  # a kept-alive connection with no request started
MIN_RATE = 64 * 1024      # bytes a second a started request must keep arriving at
_REFUSAL = b'{"message":"benchkit gateway: too many connections at once"}\n'
TOO_MANY = (b"HTTP/1.1 429 Too Many Requests\r\nContent-Type: application/json;charset=utf-8\r\n"
            b"Connection: close\r\nContent-Length: %d\r\n\r\n%s" % (len(_REFUSAL), _REFUSAL))


class Door:
    """One listening port; `owner` is the trial's grant (None: the shared door)."""

    def __init__(self, owner: Any):
        self.owner = owner
        self.sock = socket.create_server(("127.0.0.1", 0), backlog=128)
        self.sock.setblocking(False)
        self.port = self.sock.getsockname()[1]
        self.url = f"http://127.0.0.1:{self.port}/"
        self.connections: set[socket.socket] = set()
        self.turned_away = 0  # connections refused for the limit
        self.closed = False


class Arrival(io.RawIOBase):
    """A socket's bytes, each read bounded by the time left to the request being read
    (`begin`), or by KEEPALIVE_SECONDS while no request has started (`wait`)."""

    def __init__(self, sock: socket.socket, grace: float):
        self.sock, self.grace = sock, grace
        self.start: float | None = None
        self.count = 0

    def readable(self) -> bool:
        return True

    def wait(self) -> None:
        self.start = None

    def begin(self) -> None:
        self.start, self.count = time.monotonic(), 0

    def readinto(self, buffer) -> int:
        if self.start is None:
            left = KEEPALIVE_SECONDS
        else:
            left = self.start + self.grace + self.count / MIN_RATE - time.monotonic()
            if left <= 0:
                raise TimeoutError("the request did not arrive in time")
        self.sock.settimeout(left)
        got = self.sock.recv_into(buffer)
        self.count += got
        return got


class Doors:
    """Every door of one gateway, and the thread that accepts on all of them. `serve`
    runs in a new thread per connection; `turned_away` is told of each connection
    refused for the limit (`limit()`: connections per door)."""

    def __init__(self, serve: Callable[[socket.socket, Door, float], None],
                 turned_away: Callable[[Door], None], limit: Callable[[], int]):
        self._serve, self._turned_away, self._limit = serve, turned_away, limit
        self._selector = selectors.DefaultSelector()
        self._lock = threading.Lock()
        self._wake, self._waker = socket.socketpair()
        self._wake.setblocking(False)
        self._selector.register(self._wake, selectors.EVENT_READ, None)
        self._closed = False
        self._thread = threading.Thread(target=self._loop, name="benchkit-gateway", daemon=True)
        self._thread.start()

    @property
    def alive(self) -> bool:
        return self._thread.is_alive()

    def open(self, owner: Any) -> Door:
        door = Door(owner)
        with self._lock:
            self._selector.register(door.sock, selectors.EVENT_READ, door)
        return door

    def shut(self, door: Door, connections: bool = True) -> None:
        """No new connection through the door; with `connections`, the open ones are
        shut too (their threads end at their next read or write)."""
        with self._lock:
            if not door.closed:
                door.closed = True
                with contextlib.suppress(KeyError, ValueError):
                    self._selector.unregister(door.sock)
                door.sock.close()
            open_ = list(door.connections) if connections else []
        for conn in open_:
            with contextlib.suppress(OSError):
                conn.shutdown(socket.SHUT_RDWR)

    def close(self, doors: list[Door]) -> None:
        for door in doors:
            self.shut(door)
        self._closed = True
        with contextlib.suppress(OSError):
            self._waker.send(b"x")
        if self._thread is not threading.current_thread():
            self._thread.join(timeout=5)
        self._selector.close()
        self._wake.close()
        self._waker.close()

    def _loop(self) -> None:
        while not self._closed:
            for key, _ in self._selector.select():
                if key.data is None:
                    with contextlib.suppress(OSError):
                        self._wake.recv(64)
                    continue
                self._accept(key.data)

    def _accept(self, door: Door) -> None:
        try:
            conn, _ = door.sock.accept()
        except OSError:
            return  # shut meanwhile, or the client gave up
        accepted = time.perf_counter()
        with self._lock:
            room = not door.closed and len(door.connections) < self._limit()
            if room:
                door.connections.add(conn)
            else:
                door.turned_away += 1
        if not room:
            with contextlib.suppress(OSError):
                conn.setblocking(False)
                conn.send(TOO_MANY)
                conn.shutdown(socket.SHUT_WR)
                conn.recv(65536)  # what the client sent already: unread, the close is a reset
            conn.close()
            self._turned_away(door)
            return
        try:
            threading.Thread(target=self._run, args=(conn, door, accepted), daemon=True,
                             name="benchkit-gateway-conn").start()
        except RuntimeError:  # no thread to be had: this connection goes, the door stays
            with self._lock:
                door.connections.discard(conn)
            conn.close()

    def _run(self, conn: socket.socket, door: Door, accepted: float) -> None:
        try:
            self._serve(conn, door, accepted)
        except Exception:
            pass  # a connection's failure is its own: the next one is served
        finally:
            with self._lock:
                door.connections.discard(conn)
            with contextlib.suppress(OSError):
                conn.close()
