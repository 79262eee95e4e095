"""What every part of a snapshot shares: the repository it reads, the kinds its host
does not model, and the calls it makes side by side.

The calls are many small ones (per issue, per commit), so a few run at once, each
worker on its own connection (a `requests.Session` is not to be shared between
threads): the sections side by side (`together`), and within each the calls per item
(`each`), in a pool of their own, so that a section never waits on a worker it holds.
The answers keep the order of the items, whatever order they come back in. A host says which kinds it does not model in a header of its
`/version` answer (the forge does; Gitea sends none): those are not asked for, and
the state leaves them out, which the checker reads as "not compared".
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import TypeVar

from benchkit.gitea.client import Client, repo_path
from benchkit.state import UNMODELLED_HEADER

T = TypeVar("T")
R = TypeVar("R")

SECTION_WORKERS, ITEM_WORKERS = 4, 8


def unmodelled_by(client: Client) -> frozenset[str]:
    """The kinds the host says it does not model (none for a real Gitea)."""
    response = client.request("GET", "/version")
    declared = response.headers.get(UNMODELLED_HEADER, "")
    return frozenset(kind.strip() for kind in declared.split(",") if kind.strip())


@dataclass
class Fetch:
    """One snapshot's reading of OWNER/NAME. `client` is the calling thread's own: the
    one given, or a worker's."""

    given: Client
    owner: str
    name: str
    unmodelled: frozenset[str] = frozenset()
    _local: threading.local = field(default_factory=threading.local)
    _made: list[Client] = field(default_factory=list)
    _lock: threading.Lock = field(default_factory=threading.Lock)
    _pools: dict[str, ThreadPoolExecutor] = field(default_factory=dict)

    @property
    def client(self) -> Client:
        return getattr(self._local, "client", None) or self.given

    @property
    def path(self) -> str:
        return repo_path(self.owner, self.name)

    def issue_ref(self, issue: dict) -> str:
        """`#N` for an issue of this repository, `owner/name#N` for another's."""
        repository = issue.get("repository") or {}
        full = repository.get("full_name") or f"{repository.get('owner')}/{repository.get('name')}"
        mine = full.lower() == f"{self.owner}/{self.name}".lower()
        return f"#{issue['number']}" if mine else f"{full}#{issue['number']}"

    def each(self, items: Iterable[T], call: Callable[[Client, T], R]) -> list[R]:
        """`call(client, item)` for every item, a few at once; the results in order.
        `call` itself must not call `each` (its pool could be full of its callers)."""
        return self._map("items", ITEM_WORKERS, items, call)

    def together(self, calls: dict[str, Callable[[], R]]) -> dict[str, R]:
        """Every section's reading, a few at once."""
        names = list(calls)
        found = self._map("sections", SECTION_WORKERS, names, lambda _, name: calls[name]())
        return dict(zip(names, found, strict=True))

    def _map(self, pool: str, workers: int, items: Iterable[T],
             call: Callable[[Client, T], R]) -> list[R]:
        items = list(items)
        if len(items) <= 1:  # in the calling thread, with its own client
            return [call(self.client, item) for item in items]
        with self._lock:
            if pool not in self._pools:
                self._pools[pool] = ThreadPoolExecutor(workers, thread_name_prefix=f"snapshot-{pool}")
        return list(self._pools[pool].map(lambda item: call(self._worker(), item), items))

    def _worker(self) -> Client:
        client = getattr(self._local, "client", None)
        if client is None:
            client = Client(self.given.url, self.given.token, retries=self.given.retries,
                            timeout=self.given.timeout)
            self._local.client = client
            with self._lock:
                self._made.append(client)
        return client

    def close(self) -> None:
        """The sections' workers first (one may still start the items' pool), then the
        items'; what has not started yet never will."""
        for name in ("sections", "items"):
            with self._lock:
                pool = self._pools.pop(name, None)
            if pool is not None:
                pool.shutdown(wait=True, cancel_futures=True)
        for client in self._made:
            client.close()
        self._made.clear()
