"""The forge: benchkit's embedded, SQLite-backed, Gitea-API-compatible host.

    with Forge() as forge:          # serves on 127.0.0.1, a free port
        forge.url, forge.api_url    # "http://127.0.0.1:PORT/", ".../api/v1"
        forge.user, forge.token     # the admin user ("bench") and its token
        forge.create_token("bench") # another, API-only: one per agent, told apart in the log

Uvicorn serves the Starlette app in a background thread; `benchkit forge` serves the
same app in the foreground.
"""

import socket
import threading
import time

import uvicorn

from .app import ForgeState, build_app
from .faults import RouteFault
from .store import ForgeStore, token_id


class Forge:
    """An embedded Gitea-compatible host on a loopback port, with its admin user and token."""
    def __init__(self, user: str = "bench", token: str | None = None, db: str = ":memory:", port: int = 0,
                 index_lag: float = 0.0, host: str = "127.0.0.1", self_review: bool = False) -> None:
        """`self_review=True` lets users approve or reject their own pull requests, which
        Gitea never allows: for testing what a harness does on a host that permits it."""
        self.store = ForgeStore(db)
        row, self.token = self.store.create_user(user, is_admin=True, token=token)
        self.user = row["login"]
        # proto IPPROTO_TCP matters: asyncio sets TCP_NODELAY on accepted sockets only then,
        # and without it every keep-alive response stalls 40 ms on Nagle and delayed ACKs.
        self._socket = socket.socket(socket.AF_INET, socket.SOCK_STREAM, socket.IPPROTO_TCP)
        try:
            self._socket.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            self._socket.bind((host, port))
            self._socket.listen(512)  # from here on clients queue until the server accepts them
        except OSError:
            self._socket.close()
            self.store.close()
            raise
        self.port = self._socket.getsockname()[1]
        self.url = f"http://{host}:{self.port}/"
        self.api_url = f"{self.url}api/v1"
        self.state = ForgeState(self.store, self.url, index_lag, self_review)
        self.app = build_app(self.state)
        self._server: uvicorn.Server | None = None
        self._thread: threading.Thread | None = None

    # -- lifecycle ----------------------------------------------------------------
    def start(self) -> "Forge":
        """Serve in a background thread; return once the server accepts requests."""
        self._server = uvicorn.Server(self._config())
        self._thread = threading.Thread(target=self._server.run, kwargs={"sockets": [self._socket]},
                                        name=f"forge:{self.port}", daemon=True)
        self._thread.start()
        deadline = time.monotonic() + 10
        while not self._server.started:
            if not self._thread.is_alive() or time.monotonic() > deadline:
                raise RuntimeError(f"the forge did not start on {self.url}")
            time.sleep(0.005)
        return self

    def stop(self) -> None:
        """Stop serving and close the database (and any git clones made)."""
        if self._server is not None and self._thread is not None:
            self._server.should_exit = True
            self._thread.join(timeout=10)
            self._server = None
        self._socket.close()
        self.state.close()

    def serve_forever(self) -> None:
        """Serve in the calling thread until interrupted (`benchkit forge`)."""
        try:
            uvicorn.Server(self._config()).run(sockets=[self._socket])
        finally:
            self._socket.close()
            self.state.close()

    def _config(self) -> uvicorn.Config:
        # Gitea sends no Server header; keep-alive matches what agents' clients expect.
        return uvicorn.Config(self.app, log_level="warning", access_log=False, lifespan="off",
                              server_header=False, timeout_keep_alive=30, backlog=512)

    def __enter__(self) -> "Forge":
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    # -- the Python API the tests and the run loop use ---------------------------------
    def create_user(self, name: str, *, admin: bool = False, token: str | None = None) -> str:
        """Create a user (or reuse one) and return a new token for it."""
        return self.store.create_user(name, is_admin=admin, token=token)[1]

    def create_token(self, user: str) -> str:
        """A new API-only token for an existing user (it never reaches /_forge routes);
        the request log names its requests by `benchkit.forge.token_id(token)`."""
        return self.store.create_token(user)

    def revoke_token(self, token: str) -> bool:
        """Revoke an API-only token; whether there was one."""
        return self.store.revoke_token(token_id(token))

    def requests(self, since: int = 0) -> list[dict]:
        """The request log: method, path, status, user_agent, token_id (the identity of
        the token a request authenticated with, or None), bytes_in, bytes_out, started,
        duration."""
        return self.state.log.entries(since)

    def inject_fault(self, method: str, path_regex: str, status: int | None = 500, delay: float = 0.0,
                     drop: bool = False, times: int = 1, after: int = 0) -> RouteFault:
        """Make the next `times` requests matching method ("*" for any) and path fail,
        once `after` matching requests have passed (a fault that spares pre-flight)."""
        return self.state.faults.inject(method, path_regex, status=status, delay=delay, drop=drop,
                                        times=times, after=after)

    def clear_faults(self) -> None:
        """Disarm every injected fault."""
        self.state.faults.clear()

    def set_index_lag(self, seconds: float) -> None:
        """Set how long a write takes to reach keyword search."""
        self.state.indexer.set_lag(seconds)

    def __repr__(self) -> str:  # never shows the token
        return f"Forge(url={self.url!r}, user={self.user!r})"
