"""The trial gateway: the one door between the agent's tools and the Gitea host.

    gateway = Gateway(host_url)          # started for the run
    grant = gateway.issue(owner, repo, upstream_token)
    ... the tools get grant.url (the trial's own loopback port) and grant.token ...
    gateway.end(grant)                   # the throwaway token and the port die with the trial
    grant.requests                       # what the trial's tools asked, and the answers

Each trial holds a throwaway token valid only here and only while its trial runs; the
gateway swaps it for the harness's token (on the forge, a token minted for the trial)
on the way to the host, so the real token never reaches the agent. Each trial has its
own door (benchkit.gateway.doors), which its sandbox's bridge leads to: whatever comes
through it is that trial's, so a request without the trial's token, or with a refused
one, is recorded on the trial that sent it and no other. The gateway's shared door
(`gateway.url`) knows a request by its token alone; a refused credential there, whose
sender is unknown, goes to every live trial's record.

It forwards only what benchkit.gateway.scope lets through (an operation of its list,
re-written), and takes bodies up to its limits (benchkit.gateway.framing), reserving a
body's bytes from the trial's budget before reading them; a request scope answers
itself (an index that is not a number, on the trial's repository) gets Gitea's 404;
everything else gets a Gitea-shaped 403 (a 413 for a body too large, a 408 for one too
slow), and the host is reached through benchkit.gateway.upstream. Each request is
recorded for the trial (time, method, path, status, User-Agent, bytes, and how long the
tool waited, from the request's first byte to its answer's last; never a query, body or
token): the audit reads that record on every host.

Transparent: the host's root URL becomes the door's in text bodies and in the Location
and Link headers, as the answer streams (benchkit.gateway.answers); the host is asked
for identity encoding (a gzip answer is inflated). An HTTPS host is reached with
certificate checks. A host that cannot be reached, or whose answer cannot be read, is a
502 in the record; an agent's request that fails or waits long gets a control request
(benchkit.gateway.control), whose figures the record keeps: the host is charged only
when its control fails too. A trial's end aborts what it still has in flight (at once on a
stop, after END_WAIT otherwise): a held host answer never holds the run.
"""

from __future__ import annotations

import secrets
import socket
import threading
import time
from collections.abc import Callable

from benchkit.evidence import GatewayRequest
from benchkit.gateway.answers import Rewriter
from benchkit.gateway.control import ControlObject, Controls
from benchkit.gateway.doors import Door, Doors
from benchkit.gateway.exchange import Exchange
from benchkit.gateway.framing import Limits
from benchkit.gateway.grant import KEPT, Grant
from benchkit.gateway.hostcpu import HostCpu
from benchkit.gateway.upstream import Upstream

END_WAIT = 30.0    # how long end() waits for the trial's requests still in flight
ABORT_WAIT = 2.0   # then, how long for the aborted ones to be recorded
KEPT_TURNED_AWAY = 100  # connections refused for the limit, recorded per trial (then counted)


class Gateway:
    """A threaded HTTP server on 127.0.0.1 in front of one host (see the module doc)."""

    def __init__(self, host_url: str, *, cafile: str | None = None,
                 limits: Limits | None = None):
        self.upstream = Upstream(host_url, cafile=cafile)
        self.host_cpu = HostCpu(host_url)
        self.host_url = host_url.rstrip("/") + "/"
        self.limits = limits or Limits()
        self._grants: dict[str, Grant] = {}
        self._lock = threading.Lock()
        self.changed = threading.Condition(self._lock)  # liveness or an in-flight count moved
        self.busy = self._strays_busy = 0  # requests being answered: all, and strays
        self._ending: list[Grant] = []  # trials whose end() waits for what is in flight
        self.strays: list[GatewayRequest] = []  # requests of the shared door no live trial's token came with
        self._doors = Doors(self._serve, self._turned_away, lambda: self.limits.connections)
        self._shared = self._doors.open(None)
        self.url = self._shared.url

    def __enter__(self) -> Gateway:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    api_url = property(lambda self: self.url + "api/v1")
    alive = property(lambda self: self._doors.alive)

    def close(self) -> None:
        with self._lock:
            doors = [self._shared, *(g.door for g in self._grants.values() if g.door)]
        self._doors.close(doors)

    def issue(self, owner: str, repo: str, upstream_token: str, user: str = "", *,
              control: ControlObject | None = None, email: str = "") -> Grant:
        """A trial's pass: its throwaway token and door, for `owner/repo`, forwarded with
        `upstream_token` (the host user `user`, whose e-mail address is `email`); its
        controls read and write `control` (benchkit.gateway.control)."""
        grant = Grant("bk_" + secrets.token_hex(20), owner, repo, upstream_token, user,
                      email=email, cpu_start=self.host_cpu.seconds())
        grant.controls = Controls(self.upstream, control)
        grant.door = self._doors.open(grant)
        grant.url = grant.door.url
        with self._lock:
            self._grants[grant.token] = grant
        return grant

    def end(self, grant: Grant, abort: Callable[[], bool] = lambda: False) -> None:
        """The trial is over: its token is refused and its door shut from now on; the
        requests it has in flight (and the shared door's strays, which may be its own)
        are waited for, bounded, so that its record is whole, then aborted. `abort()`
        true (a stop) aborts them at once."""
        if grant.door is not None:
            self._doors.shut(grant.door, connections=False)
        with self._lock:
            grant.live = False
            self._grants.pop(grant.token, None)
            self._ending.append(grant)
            self.changed.notify_all()
            deadline = time.monotonic() + END_WAIT
            while not abort() and time.monotonic() < deadline and not self.changed.wait_for(
                    lambda: grant.inflight == 0 and self._strays_busy == 0, timeout=0.2):
                pass
            cut = list(grant.active)
        for handler in cut:
            handler.abort()
        if grant.door is not None:
            self._doors.shut(grant.door)  # its kept-alive connections too
        with self._lock:
            self.changed.wait_for(lambda: grant.inflight == 0, timeout=ABORT_WAIT)
            self._ending.remove(grant)

    def idle(self, timeout: float = END_WAIT) -> bool:
        """Wait (bounded) until no request is being answered: an answer reaches its client
        just before its record is kept, so a reader of records that ends no trial waits."""
        with self._lock:
            return self.changed.wait_for(lambda: self.busy == 0, timeout=timeout)

    def claim(self, door: Door, tokens: tuple[str, ...],
              handler: Exchange) -> tuple[Grant | None, bool]:
        """(whose request this is, whether its token is that trial's, live): the door's
        trial, or on the shared door the live trial one of `tokens` belongs to. The
        request is counted in flight."""
        with self._lock:
            grant = door.owner if door.owner is not None else next(
                (self._grants[t] for t in tokens if t in self._grants), None)
            self.busy += 1
            if grant is None:
                self._strays_busy += 1
            else:
                grant.inflight += 1
                grant.active.add(handler)
            self.changed.notify_all()
            return grant, grant is not None and grant.live and grant.token in tokens

    def foreign(self, grant: Grant | None, tokens: tuple[str, ...]) -> str | None:
        """Why a request's credentials are refused beyond their form: the harness's own
        host token, or another trial's token through this trial's door."""
        with self._lock:
            if any(t == g.upstream_token for g in self._grants.values() for t in tokens):
                return "the harness's own token"
            if grant is not None and any(t in self._grants and self._grants[t] is not grant
                                         for t in tokens):
                return "another trial's token"
        return None

    def reserve(self, grant: Grant | None, size: int) -> bool:
        """Take `size` bytes from the trial's upload budget before they are read; False
        (and nothing taken) when it has not that much left."""
        if grant is None:
            return True  # no trial's: one request's limit alone holds
        with self._lock:
            if grant.uploaded + size > self.limits.trial_bytes:
                return False
            grant.uploaded += size
            return True

    def release(self, grant: Grant | None, size: int) -> None:
        if grant is not None and size:
            with self._lock:
                grant.uploaded -= size

    def spend(self, grant: Grant, size: int) -> bool:
        """Count `size` bytes of an answer against the trial's downloads; False once
        they pass their limit."""
        with self._lock:
            grant.downloaded += size
            return grant.downloaded <= self.limits.download_bytes

    def spent(self, grant: Grant) -> str:
        """Why the trial may not ask the host for more ("" while it may): its downloads
        or the host's CPU time since it began have passed their limit."""
        if grant.downloaded >= self.limits.download_bytes:
            return f"the trial's downloads passed their limit ({self.limits.download_bytes} bytes)"
        now = self.host_cpu.seconds()
        if now is not None and grant.cpu_start is not None \
                and now - grant.cpu_start > self.limits.host_cpu_seconds:
            return (f"the host's CPU time while the trial ran passed its limit "
                    f"({now - grant.cpu_start:.2f} s of {self.limits.host_cpu_seconds:g} s)")
        return ""

    def record(self, grant: Grant | None, entry: GatewayRequest, handler: Exchange | None = None) -> None:
        """A trial's request goes to its record. A stray of the shared door whose
        credentials were refused (not merely absent or unknown) goes to every live
        trial's record as refused too: the gateway cannot tell whose tool sent it, so
        none of them stays valid."""
        with self._lock:
            self.busy -= 1
            self.changed.notify_all()
            if grant is not None:
                grant.keep(entry)
                grant.inflight -= 1
                grant.active.discard(handler)
                return
            self._strays_busy -= 1
            self.strays.append(entry)
            if entry.get("problem"):
                for live in (*self._grants.values(), *self._ending):
                    live.keep({**entry, "scope": "refused", "stray": True, "reason":
                               f"a stray request while this trial ran: {entry['problem']}"})

    def note(self, door: Door, entry: GatewayRequest) -> None:
        """What happened on a connection outside any request (refused for the limit,
        timed out before its request was whole): the door's trial's record, else the
        strays."""
        with self._lock:
            if door.owner is not None:
                door.owner.keep(entry)
            elif len(self.strays) < KEPT:
                self.strays.append(entry)

    def _turned_away(self, door: Door) -> None:
        if door.turned_away <= KEPT_TURNED_AWAY:
            self.note(door, {"started": round(time.time(), 6), "method": "", "path": "",
                             "user_agent": "", "scope": "refused", "status": 429,
                             "reason": f"more than {self.limits.connections} connections at "
                                       "once", "bytes_in": 0, "bytes_out": 0, "duration": 0.0})

    def _serve(self, conn: socket.socket, door: Door, accepted: float) -> None:
        Exchange(conn, door, self, accepted)

    def rewriter(self, door: Door) -> Rewriter:
        """The host's root URL (with or without its slash) made the door's."""
        return Rewriter(self.host_url[:-1].encode(), door.url[:-1].encode())

    def to_gateway(self, data: bytes) -> bytes:
        return self.rewriter(self._shared).whole(data)


_RUNNING: dict[str, Gateway] = {}
_RUNNING_LOCK = threading.Lock()


def gateway_for(host_url: str, limits: Limits | None = None) -> Gateway:
    """The process's gateway in front of `host_url`, started on first use: one per host
    for the length of the run (a `benchkit` process is one run). A gateway that died is
    replaced for the trials after it; the trial it died under is a harness error.
    `limits` (the suite's) hold from now on."""
    key = host_url.rstrip("/") + "/"
    with _RUNNING_LOCK:
        running = _RUNNING.get(key)
        if running is None or not running.alive:
            running = _RUNNING[key] = Gateway(key)
        if limits is not None:
            running.limits = limits
        return running
