"""The trial gateway: the one door between the agent's tools and the Gitea host.

    gateway = Gateway(host_url)          # started on a loopback port for the run
    grant = gateway.issue(owner, repo, upstream_token)
    ... the tools get gateway.url and grant.token ...
    gateway.end(grant)                   # the throwaway token dies with the trial
    grant.requests                       # what the trial's tools asked, and the answers

Each trial holds a throwaway token valid only here and only while its trial runs; the
gateway swaps it for the harness's token (on the forge, a token minted for the trial)
on the way to the host, so the real token never reaches the agent. It forwards only
what benchkit.gateway.scope lets through (an operation of its list, re-written), and
takes bodies up to its limits (benchkit.gateway.framing); a request scope answers
itself (an index that is not a number, on the trial's repository) gets Gitea's 404; everything else
gets a Gitea-shaped 403 (a 413 for a body too large), and the host is reached through
benchkit.gateway.upstream. Each
request is recorded for the trial (time, method, path, status, User-Agent, bytes;
never a query, body or token): the audit reads that record on every host.

Transparent: the host's root URL becomes the gateway's in text bodies and in the
Location and Link headers; the host is asked for identity encoding (a gzip answer is
decoded); other bodies (git's packs) stream through. An HTTPS host is reached with certificate
checks. A host that cannot be reached is a 502 in the record: a harness error, never the arm's.
"""

from __future__ import annotations

import gzip
import http.client
import json
import re
import secrets
import socket
import threading
import time
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import urlsplit

from benchkit.gateway.authorization import find_token
from benchkit.gateway.framing import BadBody, Limits, TooLarge, read_body
from benchkit.gateway.scope import decide
from benchkit.gateway.upstream import Upstream

# Of an answer: hop by hop, or the host's session.
HOP_BY_HOP = frozenset({"connection", "keep-alive", "proxy-authenticate", "proxy-authorization",
                        "te", "trailer", "transfer-encoding", "upgrade", "content-length", "host",
                        "authorization", "accept-encoding", "expect", "cookie", "set-cookie"})
# Of a request, the headers the host is sent (the gateway sets the rest: Host,
# Authorization, Content-Type, Content-Length, Accept-Encoding); no other header reaches it.
FORWARDED = ("User-Agent", "Accept", "Git-Protocol")
DRAIN_SECONDS = 2.0  # after a 413, how long the rest of the body is read and dropped
TEXT_TYPES = ("application/json", "text/", "application/javascript", "application/xml")
CHUNK = 64 * 1024
END_WAIT = 30.0  # how long end() waits for the trial's requests still in flight


@dataclass
class Grant:
    """One trial's pass: its throwaway token, its repository, what it asked."""

    token: str = field(repr=False)
    owner: str
    repo: str
    upstream_token: str = field(repr=False)
    user: str = ""             # the host user behind the token (the issue search's filters)
    uploaded: int = 0          # bytes of request bodies taken so far
    requests: list[dict] = field(default_factory=list)
    live: bool = True
    inflight: int = 0          # requests being answered; end() waits for them


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
        root = self.host_url[:-1].encode()
        self._root = re.compile(re.escape(root) + rb"(?![0-9])")  # not a longer port
        self.strays: list[dict] = []  # requests no live trial's token came with
        self._server = ThreadingHTTPServer(("127.0.0.1", 0), _handler(self))
        self._server.daemon_threads = True
        self.url = f"http://127.0.0.1:{self._server.server_address[1]}/"
        self._own = self.url[:-1].encode()
        self._thread = threading.Thread(target=self._server.serve_forever,
                                        name="benchkit-gateway", daemon=True)
        self._thread.start()

    def __enter__(self) -> Gateway:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    api_url = property(lambda self: self.url + "api/v1")
    alive = property(lambda self: self._thread.is_alive())

    def close(self) -> None:
        if self._thread.is_alive():
            self._server.shutdown()
        self._server.server_close()

    def issue(self, owner: str, repo: str, upstream_token: str, user: str = "") -> Grant:
        grant = Grant("bk_" + secrets.token_hex(20), owner, repo, upstream_token, user)
        with self._lock:
            self._grants[grant.token] = grant
        return grant

    def end(self, grant: Grant) -> None:
        """The trial is over: its token is refused from now on, and the requests it has
        in flight, and the strays (which may be its own), are waited for (bounded) so that
        its record is whole."""
        with self._lock:
            grant.live = False
            self._grants.pop(grant.token, None)
            self._ending.append(grant)
            self.changed.notify_all()
            self.changed.wait_for(lambda: grant.inflight == 0 and self._strays_busy == 0,
                                  timeout=END_WAIT)
            self._ending.remove(grant)

    def idle(self, timeout: float = END_WAIT) -> bool:
        """Wait (bounded) until no request is being answered: an answer reaches its client
        just before its record is kept, so a reader of records that ends no trial waits."""
        with self._lock:
            return self.changed.wait_for(lambda: self.busy == 0, timeout=timeout)

    def claim(self, tokens: tuple[str, ...]) -> Grant | None:
        """The live grant one of `tokens` belongs to; the request is counted in flight."""
        with self._lock:
            grant = next((self._grants[t] for t in tokens if t in self._grants), None)
            self.busy += 1
            if grant is not None:
                grant.inflight += 1
            else:
                self._strays_busy += 1
            self.changed.notify_all()
            return grant

    def is_upstream(self, tokens: tuple[str, ...]) -> bool:
        """Whether a request carries a host token the gateway holds for a trial."""
        with self._lock:
            return any(t == g.upstream_token for g in self._grants.values() for t in tokens)

    def charge(self, grant: Grant, size: int) -> None:
        """Count `size` bytes of body against the trial's upload cap."""
        with self._lock:
            grant.uploaded += size

    def record(self, grant: Grant | None, entry: dict) -> None:
        """A trial's request goes to its record. A stray whose credentials were refused
        (not merely absent or unknown) goes to every live trial's record as refused too:
        the gateway cannot tell whose tool sent it, so none of them stays valid."""
        with self._lock:
            self.busy -= 1
            self.changed.notify_all()
            if grant is not None:
                grant.requests.append(entry)
                grant.inflight -= 1
                return
            self._strays_busy -= 1
            self.strays.append(entry)
            if entry.get("problem"):
                for live in (*self._grants.values(), *self._ending):
                    live.requests.append({**entry, "scope": "refused", "reason":
                                          f"a stray request while this trial ran: {entry['problem']}"})

    def to_gateway(self, data: bytes) -> bytes:
        """The host's root URL (with or without its slash) made the gateway's."""
        return self._root.sub(self._own, data)


def _handler(gateway: Gateway) -> type[BaseHTTPRequestHandler]:
    return type("Handler", (_Handler,), {"gateway": gateway})


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    gateway: Gateway
    host_s: float | None = None  # the relayed request's wait for the host's answer

    def setup(self) -> None:
        super().setup()
        # Headers and body go out as separate writes: without this, Nagle's algorithm and
        # the client's delayed ACK hold a kept-alive answer back ~40 ms (measured).
        self.connection.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)

    def log_message(self, format: str, *args) -> None:
        pass  # the record is the log; a request line could carry a token in its query

    def do_GET(self) -> None:  # CONNECT and TRACE too: refused and recorded like any
        self._handle()         # request out of scope

    do_HEAD = do_POST = do_PUT = do_PATCH = do_DELETE = do_OPTIONS = do_CONNECT = do_TRACE = do_GET

    def _handle(self) -> None:
        started, clock, target = time.time(), time.perf_counter(), urlsplit(self.path)
        found = find_token(self.headers, target.query)
        upstream = self.gateway.is_upstream(found.tokens)
        problem = found.problem or ("the harness's own token" if upstream else None)
        grant = self.gateway.claim(found.tokens)
        entry = {"started": round(started, 6), "method": self.command, "path": target.path,
                 "user_agent": self.headers.get("User-Agent", "")}
        try:
            self._serve(target, found, problem, grant, entry)
        finally:
            entry.update(duration=round(time.perf_counter() - clock, 6))
            self.gateway.record(grant, entry)

    def _serve(self, target, found, problem: str | None, grant: Grant | None, entry: dict):
        limits = self.gateway.limits
        limit = limits.request_bytes if grant is None else \
            max(0, min(limits.request_bytes, limits.trial_bytes - grant.uploaded))
        try:
            body = read_body(self.headers, self.rfile, limit)
        except TooLarge as error:
            status, sent = self._too_large(str(error))
            return entry.update(scope="refused", reason=str(error), bytes_in=0, status=status,
                                bytes_out=sent)
        except BadBody as error:
            self.close_connection = True  # where the next request starts is unknown
            status, sent = self._json(400, {"message": f"benchkit gateway: {error}",
                                            "url": self.gateway.url + "api/swagger"})
            return entry.update(scope="refused", reason=str(error), bytes_in=0, status=status,
                                bytes_out=sent)
        entry["bytes_in"] = len(body)
        if problem or grant is None:
            status, sent = self._refuse_auth(found, problem)
            if problem:  # a credential refused is a leak, for the trial it came with
                entry.update(scope="refused", reason=problem, problem=problem)
            else:
                entry.update(scope="unauthorized")
        else:
            self.gateway.charge(grant, len(body))
            decision = decide(self.command, target.path, found.query, grant.owner, grant.repo,
                              body, grant.user, self.headers.get("Content-Type") or "")
            entry["scope"] = decision.scope
            if decision.reason:
                entry["reason"] = decision.reason
            if not decision.allowed:
                status, sent = self._json(403, {"message": f"benchkit gateway: {decision.reason}",
                                                "url": self.gateway.url + "api/swagger"})
            elif decision.status:  # Gitea's own answer when it finds no such object
                status, sent = self._json(decision.status, {
                    "errors": None, "message": "not found", "url": self.gateway.url + "api/swagger"})
            elif decision.empty:  # a search filter no issue of the repository passes
                status, sent = self._json(200, [], {"X-Total-Count": "0"})
            else:
                self.host_s = None
                status, sent = self._relay(grant, decision, found)
                if self.host_s is not None:
                    entry["host_s"] = self.host_s
                if status >= 500:  # the host's own fault, or the agent's doing?
                    entry["health"] = self.gateway.upstream.health()
        entry.update(status=status, bytes_out=sent)

    def _too_large(self, reason: str) -> tuple[int, int]:
        """A 413 before the body is read; then the rest of it is read and dropped for a
        moment (bounded), so that the client sees the answer rather than a reset."""
        self.close_connection = True
        answer = self._json(413, {"message": f"benchkit gateway: {reason}",
                                  "url": self.gateway.url + "api/swagger"},
                            {"Connection": "close"})
        self.wfile.flush()
        try:
            self.connection.shutdown(socket.SHUT_WR)
            self.connection.settimeout(DRAIN_SECONDS)
            deadline = time.monotonic() + DRAIN_SECONDS
            while time.monotonic() < deadline and self.rfile.read1(CHUNK):
                pass
        except OSError:
            pass  # the client went away: what it sent is moot
        return answer

    def _refuse_auth(self, found, problem: str | None) -> tuple[int, int]:
        message = problem or ("invalid username, password or token" if found.token
                              else "token is required")
        return self._json(401, {"message": message, "url": self.gateway.url + "api/swagger"},
                          {"WWW-Authenticate": 'Basic realm="Gitea"'})

    def _json(self, status: int, payload: dict | list, extra: dict | None = None) -> tuple[int, int]:
        data = json.dumps(payload, separators=(",", ":")).encode() + b"\n"  # as Gitea writes it
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
        asked = time.perf_counter()
        try:
            conn, answer = self.gateway.upstream.forward(self.command, target, headers,
                                                         decision.body)
        except (OSError, http.client.HTTPException) as error:
            self.host_s = round(time.perf_counter() - asked, 6)
            self.close_connection = True
            return self._json(502, {"message": "benchkit gateway: the host could not be "
                                               f"reached ({type(error).__name__})",
                                    "url": self.gateway.url + "api/swagger"})
        self.host_s = round(time.perf_counter() - asked, 6)  # the host's time to its head
        whole = False
        try:
            sent = self._answer(answer)
            whole = True
            return sent
        except (OSError, http.client.HTTPException):
            self.close_connection = True  # the tool went away, or the host mid-answer
            return answer.status, 0
        finally:
            self.gateway.upstream.release(conn, answer, whole)

    def _answer(self, answer: http.client.HTTPResponse) -> tuple[int, int]:
        kind = (answer.getheader("Content-Type") or "").lower()
        encoding = (answer.getheader("Content-Encoding") or "").lower()
        textual = kind.startswith(TEXT_TYPES) and encoding in ("", "identity", "gzip")
        self.send_response_only(answer.status, answer.reason)
        for name, value in answer.getheaders():
            lower = name.lower()
            if lower in HOP_BY_HOP or (textual and lower == "content-encoding"):
                continue
            if lower in ("location", "link", "content-location"):
                value = self.gateway.to_gateway(value.encode("latin-1")).decode("latin-1")
            self.send_header(name, value)
        bodiless = self.command == "HEAD" or answer.status in (204, 304)
        if textual or bodiless:
            data = b"" if bodiless else answer.read()
            if data and encoding == "gzip":
                data = gzip.decompress(data)
            data = self.gateway.to_gateway(data)
            if not bodiless or answer.getheader("Content-Length") is None:
                self.send_header("Content-Length", str(len(data)))
            else:
                self.send_header("Content-Length", answer.getheader("Content-Length") or "0")
            self.end_headers()
            if not bodiless:
                self.wfile.write(data)
            return answer.status, len(data)
        return answer.status, self._stream(answer)

    def _stream(self, answer: http.client.HTTPResponse) -> int:
        """A body that is not rewritten (git's packs): chunk by chunk, as it comes."""
        length = answer.getheader("Content-Length")
        if length is not None:
            self.send_header("Content-Length", length)
        else:
            self.send_header("Transfer-Encoding", "chunked")
        self.end_headers()
        sent = 0
        while chunk := answer.read1(CHUNK):
            sent += len(chunk)
            if length is not None:
                self.wfile.write(chunk)
            else:
                self.wfile.write(b"%x\r\n%s\r\n" % (len(chunk), chunk))
            self.wfile.flush()
        answer.read()  # the end of a chunked body (its last chunk and trailers)
        if length is None:
            self.wfile.write(b"0\r\n\r\n")
        return sent


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
