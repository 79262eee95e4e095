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
certificate checks. A host that cannot be reached is a 502 in the record: a harness
error, never the arm's. A trial's end aborts what it still has in flight (at once on a
stop, after END_WAIT otherwise): a held host answer never holds the run.
"""

from __future__ import annotations

import contextlib
import http.client
import io
import json
import secrets
import socket
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler
from urllib.parse import urlsplit

from benchkit.gateway.answers import Rewriter, relay
from benchkit.gateway.authorization import find_token
from benchkit.gateway.doors import Arrival, Door, Doors
from benchkit.gateway.framing import BadBody, Limits, TooLarge, read_body
from benchkit.gateway.scope import decide
from benchkit.gateway.upstream import Upstream

# Of a request, the headers the host is sent (the gateway sets the rest: Host,
# Authorization, Content-Type, Content-Length, Accept-Encoding); no other header reaches it.
FORWARDED = ("User-Agent", "Accept", "Git-Protocol")
DRAIN_SECONDS = 2.0  # after a 413, how long the rest of the body is read and dropped
CHUNK = 64 * 1024
END_WAIT = 30.0    # how long end() waits for the trial's requests still in flight
ABORT_WAIT = 2.0   # then, how long for the aborted ones to be recorded
ABORTED = 499      # the status recorded for a request the trial's end cut off
KEPT_TURNED_AWAY = 100  # connections refused for the limit, recorded per trial (then counted)


@dataclass
class Grant:
    """One trial's pass: its throwaway token, its repository, its door, what it asked."""

    token: str = field(repr=False)
    owner: str
    repo: str
    upstream_token: str = field(repr=False)
    user: str = ""             # the host user behind the token (the issue search's filters)
    uploaded: int = 0          # bytes of request bodies reserved so far
    requests: list[dict] = field(default_factory=list)
    live: bool = True
    inflight: int = 0          # requests being answered; end() waits for them
    url: str = ""              # the trial's own door: what its tools are given
    door: Door | None = field(default=None, repr=False)
    active: set = field(default_factory=set, repr=False)  # handlers serving it now

    @property
    def api_url(self) -> str:
        return self.url + "api/v1"


class Gateway:
    """A threaded HTTP server on 127.0.0.1 in front of one host (see the module doc)."""

    def __init__(self, host_url: str, *, cafile: str | None = None,
                 limits: Limits | None = None):
        self.upstream = Upstream(host_url, cafile=cafile)
        self.host_url = host_url.rstrip("/") + "/"
        self.limits = limits or Limits()
        self._grants: dict[str, Grant] = {}
        self._lock = threading.Lock()
        self.changed = threading.Condition(self._lock)  # liveness or an in-flight count moved
        self.busy = self._strays_busy = 0  # requests being answered: all, and strays
        self._ending: list[Grant] = []  # trials whose end() waits for what is in flight
        self.strays: list[dict] = []  # requests of the shared door no live trial's token came with
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

    def issue(self, owner: str, repo: str, upstream_token: str, user: str = "") -> Grant:
        grant = Grant("bk_" + secrets.token_hex(20), owner, repo, upstream_token, user)
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

    def claim(self, door: Door, tokens: tuple[str, ...], handler) -> tuple[Grant | None, bool]:
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

    def record(self, grant: Grant | None, entry: dict, handler=None) -> None:
        """A trial's request goes to its record. A stray of the shared door whose
        credentials were refused (not merely absent or unknown) goes to every live
        trial's record as refused too: the gateway cannot tell whose tool sent it, so
        none of them stays valid."""
        with self._lock:
            self.busy -= 1
            self.changed.notify_all()
            if grant is not None:
                grant.requests.append(entry)
                grant.inflight -= 1
                grant.active.discard(handler)
                return
            self._strays_busy -= 1
            self.strays.append(entry)
            if entry.get("problem"):
                for live in (*self._grants.values(), *self._ending):
                    live.requests.append({**entry, "scope": "refused", "reason":
                                          f"a stray request while this trial ran: {entry['problem']}"})

    def note(self, door: Door, entry: dict) -> None:
        """What happened on a connection outside any request (refused for the limit,
        timed out before its request was whole): the door's trial's record, else the
        strays."""
        with self._lock:
            (door.owner.requests if door.owner is not None else self.strays).append(entry)

    def _turned_away(self, door: Door) -> None:
        if door.turned_away <= KEPT_TURNED_AWAY:
            self.note(door, {"started": round(time.time(), 6), "method": "", "path": "",
                             "user_agent": "", "scope": "refused", "status": 429,
                             "reason": f"more than {self.limits.connections} connections at "
                                       "once", "bytes_in": 0, "bytes_out": 0, "duration": 0.0})

    def _serve(self, conn: socket.socket, door: Door, accepted: float) -> None:
        _Handler(conn, door, self, accepted)

    def rewriter(self, door: Door) -> Rewriter:
        """The host's root URL (with or without its slash) made the door's."""
        return Rewriter(self.host_url[:-1].encode(), door.url[:-1].encode())

    def to_gateway(self, data: bytes) -> bytes:
        return self.rewriter(self._shared).whole(data)


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def __init__(self, conn: socket.socket, door: Door, gateway: Gateway, accepted: float):
        self.door, self.gateway, self.accepted = door, gateway, accepted
        self.aborted = False
        self._upstream_sock: socket.socket | None = None
        super().__init__(conn, conn.getpeername(), gateway)  # type: ignore[arg-type]

    def setup(self) -> None:
        self.connection = self.request
        # Headers and body go out as separate writes: without this, Nagle's algorithm and
        # the client's delayed ACK hold a kept-alive answer back ~40 ms (measured).
        self.connection.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        self.arrival = Arrival(self.connection, self.gateway.limits.arrival_seconds)
        self.reader = io.BufferedReader(self.arrival, CHUNK)
        self.rfile = self.reader
        self.wfile = self.connection.makefile("wb", 0)

    def log_message(self, format: str, *args) -> None:
        pass  # the record is the log; a request line could carry a token in its query

    def abort(self) -> None:
        """The trial ended (or the run stops): cut the host's answer and the tool off."""
        self.aborted = True
        for sock in (self._upstream_sock, self.connection):
            if sock is not None:
                with contextlib.suppress(OSError):
                    sock.shutdown(socket.SHUT_RDWR)

    def handle_one_request(self) -> None:
        """BaseHTTPRequestHandler's, with the time a request may take to arrive bounded
        and its waiting timed from its first byte."""
        self.arrival.wait()
        try:
            if not self.reader.peek(1):
                self.close_connection = True
                return
        except OSError:  # idle past KEEPALIVE_SECONDS, or gone
            self.close_connection = True
            return
        first, self.accepted = self.accepted or time.perf_counter(), 0.0
        self.first = (time.time() - (time.perf_counter() - first), first)
        self.arrival.begin()
        # What a 408 is written with when the request line never comes whole.
        self.command, self.requestline, self.request_version = "", "", "HTTP/1.1"
        try:
            self.raw_requestline = self.rfile.readline(65537)
            if len(self.raw_requestline) > 65536:
                self.send_error(414)
                return
            if not self.raw_requestline:
                self.close_connection = True
                return
            if not self.parse_request():
                return
            if not hasattr(self, "do_" + self.command):
                self.send_error(501, f"Unsupported method ({self.command!r})")
                return
            self._handle()
        except TimeoutError:  # the request line or headers never came whole
            self.close_connection = True
            self._late()

    def do_GET(self) -> None:  # CONNECT and TRACE too: refused and recorded like any
        pass                   # request out of scope (handle_one_request serves them)

    do_HEAD = do_POST = do_PUT = do_PATCH = do_DELETE = do_OPTIONS = do_CONNECT = do_TRACE = do_GET

    def _late(self) -> None:
        seconds = self.gateway.limits.arrival_seconds
        entry = {"started": round(self.first[0], 6), "method": "", "path": "",
                 "user_agent": "", "scope": "refused", "status": 408, "bytes_in": 0,
                 "reason": f"a request that did not arrive within {seconds:g} s", "bytes_out": 0}
        with contextlib.suppress(OSError):
            entry["bytes_out"] = self._json(408, {"message": f"benchkit gateway: {entry['reason']}"},
                                            {"Connection": "close"})[1]
        entry["duration"] = round(time.perf_counter() - self.first[1], 6)
        self.gateway.note(self.door, entry)

    def _handle(self) -> None:
        started, clock = self.first
        target = urlsplit(self.path)
        found = find_token(self.headers, target.query)
        grant, authorized = self.gateway.claim(self.door, found.tokens, self)
        problem = found.problem or self.gateway.foreign(grant, found.tokens)
        entry = {"started": round(started, 6), "method": self.command, "path": target.path,
                 "user_agent": self.headers.get("User-Agent", "")}
        try:
            self._serve(target, found, problem, grant, authorized and not problem, entry)
        except (OSError, http.client.HTTPException):
            self.close_connection = True  # the tool went away before its answer was out
            entry["status"] = ABORTED
        finally:
            if self.aborted:
                entry.update(status=ABORTED, reason="the trial ended before it was answered")
            entry.setdefault("scope", "aborted")  # the tool went away mid-request
            entry.setdefault("bytes_in", 0)
            entry.setdefault("bytes_out", 0)
            entry.update(duration=round(time.perf_counter() - clock, 6))
            self.gateway.record(grant, entry, self)

    def _serve(self, target, found, problem: str | None, grant: Grant | None,
               authorized: bool, entry: dict) -> None:
        gateway = self.gateway
        try:
            body = read_body(self.headers, self.rfile, gateway.limits.request_bytes,
                             lambda size: gateway.reserve(grant, size),
                             lambda size: gateway.release(grant, size))
        except TooLarge as error:
            status, sent = self._too_large(str(error))
            return entry.update(scope="refused", reason=str(error), status=status, bytes_out=sent)
        except (BadBody, TimeoutError) as error:
            if self.aborted:
                raise OSError("aborted") from error
            self.close_connection = True  # where the next request starts is unknown
            late = isinstance(error, TimeoutError)
            reason = (f"a body that did not arrive within {gateway.limits.arrival_seconds:g} s"
                      if late else str(error))
            status, sent = self._json(408 if late else 400, {"message": f"benchkit gateway: {reason}"})
            return entry.update(scope="refused", reason=reason, status=status, bytes_out=sent)
        entry["bytes_in"] = len(body)
        if problem or not authorized:
            status, sent = self._refuse_auth(found, problem)
            if problem:  # a credential refused is a leak, for the trial it came with
                entry.update(scope="refused", reason=problem, problem=problem)
            else:
                entry.update(scope="unauthorized")
        else:
            assert grant is not None
            decision = decide(self.command, target.path, found.query, grant.owner, grant.repo,
                              body, grant.user, self.headers.get("Content-Type") or "")
            entry["scope"] = decision.scope
            if decision.reason:
                entry["reason"] = decision.reason
            if not decision.allowed:
                status, sent = self._json(403, {"message": f"benchkit gateway: {decision.reason}"})
            elif decision.status:  # Gitea's own answer when it finds no such object
                status, sent = self._json(decision.status, {"errors": None, "message": "not found"})
            elif decision.empty:  # a search filter no issue of the repository passes
                status, sent = self._json(200, [], {"X-Total-Count": "0"})
            else:
                status, sent = self._relay(grant, decision, found)
        entry.update(status=status, bytes_out=sent)

    def _too_large(self, reason: str) -> tuple[int, int]:
        """A 413 before the body is read; then the rest of it is read and dropped for a
        moment (bounded), so that the client sees the answer rather than a reset."""
        self.close_connection = True
        answer = self._json(413, {"message": f"benchkit gateway: {reason}"}, {"Connection": "close"})
        try:
            self.connection.shutdown(socket.SHUT_WR)
            self.connection.settimeout(DRAIN_SECONDS)
            deadline = time.monotonic() + DRAIN_SECONDS
            while time.monotonic() < deadline and self.connection.recv(CHUNK):
                pass
        except OSError:
            pass  # the client went away: what it sent is moot
        return answer

    def _refuse_auth(self, found, problem: str | None) -> tuple[int, int]:
        message = problem or ("invalid username, password or token" if found.token
                              else "token is required")
        return self._json(401, {"message": message}, {"WWW-Authenticate": 'Basic realm="Gitea"'})

    def _json(self, status: int, payload: dict | list, extra: dict | None = None) -> tuple[int, int]:
        if isinstance(payload, dict):  # as Gitea writes it, with the API's documentation
            payload = {**payload, "url": self.door.url + "api/swagger"}
        data = json.dumps(payload, separators=(",", ":")).encode() + b"\n"
        self.send_response(status)
        for name, value in {"Content-Type": "application/json;charset=utf-8",
                            "Content-Length": str(len(data)), **(extra or {})}.items():
            self.send_header(name, value)
        self.end_headers()
        if self.command != "HEAD":
            self.wfile.write(data)
        return status, len(data)

    def _relay(self, grant: Grant, decision, found) -> tuple[int, int]:
        """The request as the gateway writes it: the operation's canonical path, query
        and body, the headers it forwards, and the host token."""
        headers = {name: value for name in FORWARDED
                   if (value := self.headers.get(name)) is not None}
        headers["Authorization"] = found.upstream_authorization(grant.upstream_token)
        if decision.content_type:
            headers["Content-Type"] = decision.content_type
        if decision.scope == "git" and self.headers.get("Content-Encoding"):
            headers["Content-Encoding"] = self.headers["Content-Encoding"]  # git's gzip
        if decision.body or self.command in ("POST", "PUT", "PATCH"):
            headers["Content-Length"] = str(len(decision.body))
        target = decision.path + ("?" + decision.query if decision.query else "")
        try:
            conn, answer = self.gateway.upstream.forward(
                self.command, target, headers, decision.body, self._watch)
        except (OSError, http.client.HTTPException) as error:
            self.close_connection = True
            if self.aborted:
                raise
            return self._json(502, {"message": "benchkit gateway: the host could not be "
                                               f"reached ({type(error).__name__})"})
        whole = False
        try:
            sent = relay(self, answer, self.gateway.rewriter(self.door))
            whole = True
            return answer.status, sent
        except (OSError, http.client.HTTPException):
            self.close_connection = True  # the tool went away, or the host mid-answer
            return (ABORTED if self.aborted else answer.status), 0
        finally:
            self._upstream_sock = None
            self.gateway.upstream.release(conn, answer, whole)

    def _watch(self, sock: socket.socket | None) -> None:
        """The host connection of the request being forwarded: what abort() cuts."""
        self._upstream_sock = sock
        if self.aborted and sock is not None:
            with contextlib.suppress(OSError):
                sock.shutdown(socket.SHUT_RDWR)


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
