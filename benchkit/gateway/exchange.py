"""One connection of an agent's tool at the gateway, request by request: the request
read within its time (benchkit.gateway.doors.Arrival) and its body within the trial's
budget (benchkit.gateway.framing), its credentials found (benchkit.gateway.authorization),
decided (benchkit.gateway.scope), forwarded to the host (benchkit.gateway.upstream) and
its answer streamed back (benchkit.gateway.answers); everything else answered in
Gitea's shape (401, 403, 404, 408, 413, 400). The gateway (benchkit.gateway.server)
says whose the request is and keeps its record: its duration runs from the request's
first byte to its answer's last; a request the host failed or kept waiting carries the
figures of its control request (benchkit.gateway.control).
"""

from __future__ import annotations

import contextlib
import http.client
import io
import json
import socket
import time
from dataclasses import replace
from http.server import BaseHTTPRequestHandler
from typing import Protocol
from urllib.parse import urlsplit

from benchkit.evidence import GatewayRequest
from benchkit.gateway.answers import Rewriter, Sending, Spent, relay
from benchkit.gateway.authorization import find_token
from benchkit.gateway.control import (
    ALARM,
    CONTROL_AFTER_S,
    CONTROL_TIMEOUT_S,
    ControlProbe,
    Controls,
    Kind,
)
from benchkit.gateway.doors import Arrival, Door
from benchkit.gateway.framing import BadBody, Limits, TooLarge, inflate, read_body
from benchkit.gateway.grant import Grant
from benchkit.gateway.scope import ScopeDecision, decide, refuse
from benchkit.gateway.upstream import Upstream

# Of a request, the headers the host is sent (the gateway sets the rest: Host,
# Authorization, Content-Type, Content-Length, Accept-Encoding); no other header reaches it.
FORWARDED = ("User-Agent", "Accept", "Git-Protocol")
DRAIN_SECONDS = 2.0  # after a 413, how long the rest of the body is read and dropped
CHUNK = 64 * 1024
ABORTED = 499      # the status recorded for a request cut off before its answer was out


class Keeper(Protocol):
    """What an exchange asks of the gateway."""

    limits: Limits
    upstream: Upstream

    def claim(self, door: Door, tokens: tuple[str, ...],
              handler: Exchange) -> tuple[Grant | None, bool]: ...
    def foreign(self, grant: Grant | None, tokens: tuple[str, ...]) -> str | None: ...
    def reserve(self, grant: Grant | None, size: int) -> bool: ...
    def release(self, grant: Grant | None, size: int) -> None: ...
    def spend(self, grant: Grant, size: int) -> bool: ...
    def spent(self, grant: Grant) -> str: ...
    def record(self, grant: Grant | None, entry: GatewayRequest, handler: Exchange) -> None: ...
    def note(self, door: Door, entry: GatewayRequest) -> None: ...
    def rewriter(self, door: Door) -> Rewriter: ...


class Exchange(BaseHTTPRequestHandler):
    """One connection of a tool's: its requests read (bounded in time), decided, forwarded
    and answered, each recorded by the gateway (`keeper`)."""

    protocol_version = "HTTP/1.1"
    host_s: float | None = None  # the relayed request's wait for the host's answer
    unreachable: str | None = None  # why the host gave it no answer at all (a 502 of ours)
    unreadable: str | None = None  # why its answer could not be read (a 502 of ours)
    spent: str | None = None  # why its answer was cut off: the trial's downloads ran out
    probe: ControlProbe | None = None  # the request's control request, when it needed one
    _ticket: object | None = None  # the request being forwarded, for its alarm

    def __init__(self, conn: socket.socket, door: Door, gateway: Keeper, accepted: float):
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
        self.wfile = Sending(self.connection)  # type: ignore[assignment]

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
                self._refused_unread(414, "a request line of more than 65536 bytes")
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
        self._refused_unread(408, f"a request that did not arrive within {seconds:g} s")

    def _refused_unread(self, status: int, reason: str) -> None:
        """A request refused before it was read whole: answered, closed, on the record."""
        self.close_connection = True
        entry: GatewayRequest = {
            "started": round(self.first[0], 6), "method": "", "path": "", "user_agent": "",
            "scope": "refused", "status": status, "bytes_in": 0, "reason": reason, "bytes_out": 0}
        with contextlib.suppress(OSError):
            entry["bytes_out"] = self._json(status, {"message": f"benchkit gateway: {reason}"},
                                            {"Connection": "close"})[1]
        entry["duration"] = round(time.perf_counter() - self.first[1], 6)
        self.gateway.note(self.door, entry)

    def _handle(self) -> None:
        started, clock = self.first
        target = urlsplit(self.path)
        found = find_token(self.headers, target.query)
        grant, authorized = self.gateway.claim(self.door, found.tokens, self)
        problem = found.problem or self.gateway.foreign(grant, found.tokens)
        entry: GatewayRequest = {"started": round(started, 6), "method": self.command,
                                 "path": target.path,
                                 "user_agent": self.headers.get("User-Agent", "")}
        self.probe = self._ticket = None
        try:
            self._serve(target, found, problem, grant, authorized and not problem, entry)
        except (OSError, http.client.HTTPException):
            self.close_connection = True  # the tool went away before its answer was out
            entry["status"] = ABORTED
        finally:
            if self.aborted:
                entry.update({"status": ABORTED,
                              "reason": "the trial ended before it was answered"})
            entry.setdefault("scope", "aborted")  # the tool went away mid-request
            entry.setdefault("bytes_in", 0)
            entry.setdefault("bytes_out", 0)
            entry.update({"duration": round(time.perf_counter() - clock, 6)})
            if self.probe is not None:  # the trial's end does not wait for it
                entry["control"] = self.probe.figures(CONTROL_TIMEOUT_S, lambda: self.aborted)
            self.gateway.record(grant, entry, self)

    def _serve(self, target, found, problem: str | None, grant: Grant | None,
               authorized: bool, entry: GatewayRequest) -> None:
        gateway = self.gateway
        try:
            body = read_body(self.headers, self.rfile, gateway.limits.request_bytes,
                             lambda size: gateway.reserve(grant, size),
                             lambda size: gateway.release(grant, size))
        except TooLarge as error:
            status, sent = self._too_large(str(error))
            return entry.update({"scope": "refused", "reason": str(error), "status": status,
                                 "bytes_out": sent})
        except (BadBody, TimeoutError) as error:
            if self.aborted:
                raise OSError("aborted") from error
            self.close_connection = True  # where the next request starts is unknown
            late = isinstance(error, TimeoutError)
            reason = (f"a body that did not arrive within {gateway.limits.arrival_seconds:g} s"
                      if late else str(error))
            status, sent = self._json(408 if late else 400, {"message": f"benchkit gateway: {reason}"})
            return entry.update({"scope": "refused", "reason": reason, "status": status,
                                 "bytes_out": sent})
        entry["bytes_in"] = len(body)
        if problem or not authorized:
            status, sent = self._refuse_auth(found, problem)
            if problem:  # a credential refused is a leak, for the trial it came with
                entry.update({"scope": "refused", "reason": problem, "problem": problem})
            else:
                entry.update({"scope": "unauthorized"})
        else:
            assert grant is not None
            decision = decide(self.command, target.path, found.query, grant.owner, grant.repo,
                              body, grant.user, self.headers.get("Content-Type") or "",
                              grant.email)
            del body  # what is forwarded is the decision's own body: the tool's goes now
            if decision.scope == "git" and decision.body:
                decision = self._inflated(grant, decision)
            if decision.allowed and not (decision.status or decision.empty) \
                    and (spent := gateway.spent(grant)):
                decision = refuse(spent)
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
                self.host_s = self.unreachable = self.unreadable = self.spent = None
                status, sent = self._relay(grant, decision, found)
                for name in ("host_s", "unreachable", "unreadable"):
                    if (value := getattr(self, name)) is not None:
                        entry[name] = value
                if self.spent:  # cut off mid-answer: refused like any request past a limit
                    entry.update({"scope": "refused", "reason": self.spent})
        entry.update({"status": status, "bytes_out": sent})

    def _inflated(self, grant: Grant, decision: ScopeDecision) -> ScopeDecision:
        """A git body sent plain: inflated within one request's limit, the bytes it
        gained taken from the trial's budget (benchkit.gateway.framing.inflate)."""
        limit = self.gateway.limits.request_bytes
        try:
            plain = inflate(decision.body, self.headers.get("Content-Encoding", ""), limit)
        except (TooLarge, BadBody) as error:
            return refuse(str(error))
        if len(plain) > len(decision.body) \
                and not self.gateway.reserve(grant, len(plain) - len(decision.body)):
            return refuse("a gzip body whose inflated bytes would pass the trial's limit")
        return replace(decision, body=plain)

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
        if decision.body or self.command in ("POST", "PUT", "PATCH"):
            headers["Content-Length"] = str(len(decision.body))
        target = decision.path + ("?" + decision.query if decision.query else "")
        kind: Kind = "read" if self.command in ("GET", "HEAD") or decision.scope == "git" \
            else "write"
        asked, since = time.perf_counter(), time.monotonic()
        ticket = self._ticket = object()  # a late alarm never lands on the next request

        def waiting() -> None:  # still no answer: a control while the request waits
            if self._ticket is ticket:
                self._control(grant.controls, kind, since)
        alarm = ALARM.set(CONTROL_AFTER_S, waiting)
        try:
            conn, answer = self.gateway.upstream.forward(
                self.command, target, headers, decision.body, self._watch)
        except (OSError, http.client.HTTPException) as error:
            ALARM.cancel(alarm)
            self.host_s = round(time.perf_counter() - asked, 6)
            # No connection, or one dropped: `unreachable`; an answer the gateway could
            # not read: `unreadable`. Either is the host's only if its control fails too.
            name = type(error).__name__
            if isinstance(error, OSError):
                self.unreachable = name
            else:
                self.unreadable = name
            self.close_connection = True
            if self.aborted:
                raise
            self._control(grant.controls, kind, time.monotonic())
            said = "reached" if self.unreachable else "read"
            return self._json(502, {"message": f"benchkit gateway: the host's answer could not "
                                               f"be {said} ({name})"})
        ALARM.cancel(alarm)
        self.host_s = round(time.perf_counter() - asked, 6)  # the host's time to its head
        if answer.status >= 500:  # the host's own fault, or the agent's doing?
            self._control(grant.controls, kind, time.monotonic())
        whole = False
        written = [0]

        def meter(size: int) -> bool:
            allowed = self.gateway.spend(grant, size)
            written[0] += size if allowed else 0
            return allowed
        self.wfile.meter = meter  # type: ignore[attr-defined]
        try:
            sent = relay(self, answer, self.gateway.rewriter(self.door))
            whole = True
            return answer.status, sent
        except Spent as error:  # cut off: the tool has what fit in the trial's budget
            self.close_connection, self.spent = True, str(error)
            return answer.status, written[0]
        except (OSError, http.client.HTTPException):
            self.close_connection = True  # the tool went away, or the host mid-answer
            return (ABORTED if self.aborted else answer.status), 0
        finally:
            self.wfile.meter = None  # type: ignore[attr-defined]
            self._upstream_sock = None
            self.gateway.upstream.release(conn, answer, whole)

    def _control(self, controls: Controls | None, kind: Kind, since: float) -> None:
        """The request's control: one of its kind sent at `since` or later."""
        if controls is not None:
            self.probe = controls.probe(kind, since)

    def _watch(self, sock: socket.socket | None) -> None:
        """The host connection of the request being forwarded: what abort() cuts."""
        self._upstream_sock = sock
        if self.aborted and sock is not None:
            with contextlib.suppress(OSError):
                sock.shutdown(socket.SHUT_RDWR)
