"""The scripted model: a local server that speaks the Anthropic Messages API.

It plays a fixed script to the real Claude Code CLI, so tests (and the replay driver)
drive the real agent loop, guard and tools without spending a token. A script is a
list of turns, each answered to one turn of the agent (a request of the main model that
offers tools): tool call(s), a final text, or a stall (the response never comes), and
any of the model service's faults before it (benchkit.agent.faults). The
runtime's auxiliary requests (another model, or no tools offered: a session title,
...) get a short reply (JSON where a schema is asked for) and still report usage, so
usage summing over every request and model the run touched is exercised.

Usage per response is configurable: fixed figures per turn, a default, or
`estimate_usage` (figures from the bytes received and sent, labelled as estimates).
Every request received is recorded for tests.
"""

from __future__ import annotations

import json
import select
import socket
import threading
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from benchkit.agent.api_view import prompt_parts

from .faults import Fault, serve
from .wire import message as _message
from .wire import message_start, request_id, sse, stream_events

# Usage figures one response reports, in the API's own snake_case names.
USAGE_KEYS = ("input_tokens", "cache_creation_input_tokens", "cache_read_input_tokens",
              "output_tokens")

DEFAULT_USAGE = {"input_tokens": 100, "cache_creation_input_tokens": 0,
                 "cache_read_input_tokens": 0, "output_tokens": 20}
AUXILIARY_USAGE = {"input_tokens": 30, "cache_creation_input_tokens": 0,
                   "cache_read_input_tokens": 0, "output_tokens": 5}
END_OF_SCRIPT = "The script has ended."
# Figures for a response: a dict, or (request, response_bytes, previous request of that
# thread) -> dict.
UsageSource = dict | Callable[[dict, int, dict | None], dict] | None


@dataclass(frozen=True)
class ToolCall:
    name: str
    input: dict


@dataclass(frozen=True)
class Turn:
    """One response of the main model. `usage` overrides the server's usage: figures,
    or a callable of the request as ScriptedModel's `usage` takes (faults.py's)."""

    text: str | None = None
    calls: tuple[ToolCall, ...] = ()
    stall: bool = False
    usage: UsageSource = None
    fault: Fault | None = None  # served to the turn's first requests (faults.py)
    first_byte_delay: float = 0.0  # seconds before the response's first byte
    stop_reason: str | None = None  # e.g. "max_tokens", "refusal"; default by content
    # The service's accounting faults: a response naming another model than the one
    # asked for, a stream that reports no usage at all (benchkit.agent.accounting).
    answered_by: str | None = None
    usage_missing: bool = False


def tool(name: str, usage: dict | None = None, text: str | None = None, **input) -> Turn:
    """A turn that calls one tool, e.g. tool("Bash", command="echo hi")."""
    return Turn(text=text, calls=(ToolCall(name, input),), usage=usage)


def bash(command: str, usage: dict | None = None) -> Turn:
    return tool("Bash", usage=usage, command=command)


def say(text: str, usage: dict | None = None) -> Turn:
    """A final answer: a text-only turn ends the agent loop."""
    return Turn(text=text, usage=usage)


def fail(status: int) -> Turn:
    """A turn the API refuses, every time: 529 overloaded, 429 rate limit, 401 bad key."""
    return Turn(fault=Fault("status", status, times=0))


def stall() -> Turn:
    """A turn whose response never comes (until the client goes away)."""
    return Turn(stall=True)


def estimate_usage(request: dict, response_bytes: int, previous: dict | None) -> dict:
    """Usage estimated from bytes (about four bytes a token), as a replay reports it.

    The part of the request it shares with `previous` is counted as a cache read, the
    rest as a cache write, the way the CLI's prompt caching behaves; the response's
    bytes are output. ScriptedModel passes the previous request of the same thread: same
    model, and agent turn or chore alike (a session title names the main model too, but
    shares no prefix with the agent's turns).
    """
    body = _canonical(request)
    shared = _common_prefix(body, _canonical(previous)) if previous else 0
    return {
        "input_tokens": 0,
        "cache_creation_input_tokens": _tokens(len(body) - shared),
        "cache_read_input_tokens": _tokens(shared),
        "output_tokens": _tokens(response_bytes),
    }


def _canonical(request: dict) -> bytes:
    """The prompt in the order the API caches it: tools, system, messages (a deferred
    tool where a tool search loaded it: benchkit.agent.api_view)."""
    parts = prompt_parts(request)
    return b"".join(json.dumps(part, sort_keys=True, separators=(",", ":")).encode()
                    for part in parts)


def _common_prefix(a: bytes, b: bytes) -> int:
    n = min(len(a), len(b))
    i = 0
    while i < n and a[i] == b[i]:
        i += 1
    return i


def _tokens(n_bytes: int) -> int:
    return (n_bytes + 3) // 4


@dataclass
class Received:
    """One request the server received."""

    method: str
    path: str
    headers: dict
    body: Any
    model: str | None
    auxiliary: bool
    turn: int | None  # index into the script, for main-model requests
    usage: dict | None = None
    at: float = field(default_factory=time.time)


class ScriptedModel:
    """Serve `script` on 127.0.0.1 (a free port) until stopped; a context manager.

    `model` is the main model's name: requests naming another model, or offering no
    tools, are auxiliary. With model=None the first agent turn's model is the main one.
    `usage`: a dict for every response without its own, or a callable
    (request, response_bytes, previous_request_of_that_thread) -> dict.
    Subclasses compute turns as requests arrive by overriding `turn_for`.
    """

    def __init__(self, script: list[Turn], *, model: str | None = None,
                 usage: UsageSource = None, auxiliary_usage: UsageSource = None):
        self.script = list(script)
        self.model = model
        self.usage = usage if usage is not None else DEFAULT_USAGE
        self.auxiliary_usage = auxiliary_usage if auxiliary_usage is not None else AUXILIARY_USAGE
        self.received: list[Received] = []
        self._lock = threading.Lock()
        self._next_turn = 0
        self._faults_served: dict[int, int] = {}  # turn index -> faulted requests
        self._previous: dict[tuple, dict] = {}
        self._stopped = threading.Event()
        self.stalled = threading.Event()  # set once a stalled turn holds its request
        self._server = _Server(("127.0.0.1", 0), _Handler)
        self._server.model = self
        self._thread = threading.Thread(target=self._server.serve_forever, args=(0.05,),
                                        name="scripted-model", daemon=True)

    @property
    def url(self) -> str:
        host, port = self._server.server_address[:2]
        return f"http://{host!s}:{port}"

    def start(self) -> ScriptedModel:
        self._thread.start()
        return self

    def stop(self) -> None:
        self._stopped.set()
        self._server.shutdown()
        self._server.server_close()

    def __enter__(self) -> ScriptedModel:
        return self.start()

    def __exit__(self, *exc) -> None:
        self.stop()

    # --- what tests read -------------------------------------------------
    def messages(self, auxiliary: bool | None = None) -> list[Received]:
        """Messages API requests received, optionally only main or auxiliary ones."""
        with self._lock:
            found = [r for r in self.received if r.path.startswith("/v1/messages")
                     and r.body is not None and "messages" in r.body]
        return [r for r in found if auxiliary is None or r.auxiliary == auxiliary]

    # --- what the handler calls ------------------------------------------
    def _admit(self, method: str, path: str, headers: dict, body: Any) -> tuple[Received, Turn | None]:
        """Record a request and pick its turn (None for an auxiliary request)."""
        model = body.get("model") if isinstance(body, dict) else None
        with self._lock:
            # The agent's own turns always offer its tools; the runtime's chores (a
            # session title, ...) offer none, whichever model they name.
            agent_turn = model is not None and bool(body.get("tools"))
            if self.model is None and agent_turn:
                self.model = model
            auxiliary = model is not None and (model != self.model or not agent_turn)
            turn_index = None
            if model is not None and not auxiliary:
                turn_index = self._next_turn
            record = Received(method, path, headers, body, model, auxiliary, turn_index)
            self.received.append(record)
        if turn_index is None:
            return record, None
        turn = self.turn_for(turn_index, body)
        with self._lock:
            served = self._faults_served.get(turn_index, 0)
            if turn.fault is not None and (turn.fault.times == 0 or served < turn.fault.times):
                self._faults_served[turn_index] = served + 1  # the turn waits for a retry
            else:
                turn = replace(turn, fault=None)
                self._next_turn += 1
        return record, turn

    def turn_for(self, index: int, request: dict) -> Turn:
        """The answer to the agent's turn `index` (0-based), whose Messages API request
        is `request`: the script's turn, then END_OF_SCRIPT. Override to compute turns
        from what the request carries (the replay does), or to slow them down."""
        return self.script[index] if index < len(self.script) else say(END_OF_SCRIPT)

    def _usage_for(self, record: Received, turn: Turn | None, response_bytes: int) -> dict:
        source = turn.usage if turn is not None and turn.usage is not None else (
            self.auxiliary_usage if record.auxiliary else self.usage)
        if callable(source):
            thread = (record.model, record.auxiliary)  # the agent's turns and chores apart
            with self._lock:
                previous = self._previous.get(thread)
                self._previous[thread] = record.body
            figures = source(record.body, response_bytes, previous)
        else:
            figures = source
        # As given: a script may serve figures that are not counts (faults.py).
        usage: dict[str, Any] = {key: figures.get(key, 0) for key in USAGE_KEYS}
        if "cache_creation" in figures:  # the lifetime split, where a script gives it
            usage["cache_creation"] = dict(figures["cache_creation"])
        record.usage = usage
        return usage


class _Server(ThreadingHTTPServer):
    daemon_threads = True
    allow_reuse_address = True
    model: ScriptedModel


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server: _Server

    def log_message(self, format, *args):  # keep test output quiet
        pass

    def do_GET(self):
        self.server.model._admit("GET", self.path, dict(self.headers), None)
        self.send_json(404, {"type": "error", "error": {"type": "not_found_error",
                                                          "message": "not scripted"}})

    def do_POST(self):
        length = int(self.headers.get("Content-Length") or 0)
        raw = self.rfile.read(length) if length else b""
        try:
            body = json.loads(raw) if raw else {}
        except ValueError:
            body = None
        model = self.server.model
        if not self.path.startswith("/v1/messages") or not isinstance(body, dict) \
                or "messages" not in body:
            model._admit("POST", self.path, dict(self.headers), body)
            self.send_json(404, {"type": "error", "error": {"type": "not_found_error",
                                                              "message": "not scripted"}})
            return
        record, turn = model._admit("POST", self.path, dict(self.headers), body)
        if turn is not None and turn.stall:
            self.hold()
            return
        if turn is not None and turn.first_byte_delay and \
                model._stopped.wait(turn.first_byte_delay):
            return
        blocks = _blocks(turn) if turn is not None else [{"type": "text", "text": _chore_reply(body)}]
        # A refused request is not billed: only a stream that began reports usage.
        billed = turn is None or turn.fault is None or turn.fault.kind != "status"
        usage: dict | None = model._usage_for(record, turn, len(json.dumps(blocks))) \
            if billed else {}
        if turn is not None and turn.usage_missing:
            usage = None
        message = _message((turn.answered_by if turn is not None else None)
                           or body.get("model", "scripted"), blocks, usage,
                           turn.stop_reason if turn is not None else None)
        if turn is not None and turn.fault is not None:
            serve(self, turn.fault, message_start(message) if billed else {},
                  bool(body.get("stream")))
        elif body.get("stream"):
            self._send_stream(message)
        else:
            self.send_json(200, message)

    def hold(self) -> None:
        """Hold the request open until the server stops or the client goes away."""
        self.server.model.stalled.set()
        stopped = self.server.model._stopped
        while not stopped.wait(0.2):
            ready, _, _ = select.select([self.connection], [], [], 0)
            if ready and not self.connection.recv(1, socket.MSG_PEEK):
                break
        self.close_connection = True

    def linger(self, seconds: float) -> bool:
        """Wait `seconds` (a stall that keeps the stream alive); False once the server
        stops or the client went away."""
        self.server.model.stalled.set()
        if self.server.model._stopped.wait(seconds):
            return False
        ready, _, _ = select.select([self.connection], [], [], 0)
        return not (ready and not self.connection.recv(1, socket.MSG_PEEK))

    def send_json(self, status: int, payload: dict, headers: dict | None = None) -> None:
        data = json.dumps(payload).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.send_header("request-id", request_id())
        for name, value in (headers or {}).items():
            self.send_header(name, value)
        self.end_headers()
        self.wfile.write(data)

    def start_stream(self) -> None:
        self.send_response(200)
        self.send_header("Content-Type", "text/event-stream")
        self.send_header("Cache-Control", "no-cache")
        self.send_header("request-id", request_id())
        self.send_header("Connection", "close")
        self.end_headers()

    def start_json(self) -> None:  # a whole response of unknown length: closed at its end
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("request-id", request_id())
        self.send_header("Connection", "close")
        self.end_headers()

    def write_event(self, event: str, data: dict) -> None:
        self.wfile.write(sse(event, data))

    def _send_stream(self, message: dict) -> None:
        self.start_stream()
        self.close_connection = True
        try:
            for event, data in stream_events(message):
                self.write_event(event, data)
            self.wfile.flush()
        except (BrokenPipeError, ConnectionResetError):
            pass


def _chore_reply(body: dict) -> str:
    """An auxiliary reply: JSON when the request asks for a JSON schema (the CLI's
    session title does), with every string property filled."""
    schema = ((body.get("output_config") or {}).get("format") or {}).get("schema")
    if isinstance(schema, dict) and schema.get("type") == "object":
        return json.dumps({name: "benchkit" for name, spec in schema.get("properties", {}).items()
                           if isinstance(spec, dict) and spec.get("type") == "string"})
    return "benchkit"


def _blocks(turn: Turn) -> list[dict]:
    blocks: list[dict[str, Any]] = []
    if turn.text is not None:
        blocks.append({"type": "text", "text": turn.text})
    for call in turn.calls:
        blocks.append({"type": "tool_use", "id": f"toolu_{uuid.uuid4().hex[:24]}",
                       "name": call.name, "input": call.input})
    return blocks or [{"type": "text", "text": ""}]
