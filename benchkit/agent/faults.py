"""The model service's faults, as the scripted model serves them on demand.

Shapes follow the Messages API's documented behaviour: an HTTP error carries
`{"type": "error", "error": {"type": ..., "message": ...}}` and a `request-id` header
(429 a `retry-after` too); an error inside a stream is an SSE `event: error` with the
same body. The rest are the ways a stream breaks: a connection reset after
`message_start`, a stall mid-stream (events stop, the connection stays open), a stall
that keeps the stream alive (keep-alive pings, or a trickle of empty text deltas: a
sign the connection lives, no progress), bytes that are not SSE, and the stop reasons
`max_tokens` and `refusal`.

A fault is attached to a scripted turn (`Turn.fault`): it answers that turn's next
`times` requests (the CLI's retries included), then the turn plays as scripted.
A slow first byte is not a fault but a turn's `first_byte_delay`.

The service's accounting faults are a turn's usage (`Turn.usage`, checked where it
enters: benchkit.agent.accounting): figures sent as text (`as_text`), an output above
the request's own `max_tokens` (`beyond_max_tokens`); another model's answer is a
turn's `answered_by`, a stream without usage its `usage_missing`.
"""

from __future__ import annotations

import socket
import struct
from collections.abc import Callable
from dataclasses import dataclass
from io import BufferedIOBase
from typing import Any, Protocol


class Responder(Protocol):
    """What a fault needs of the scripted model's request handler."""

    wfile: BufferedIOBase
    connection: socket.socket
    close_connection: bool

    def send_json(self, status: int, payload: dict, headers: dict | None = None) -> None: ...
    def start_stream(self) -> None: ...
    def start_json(self) -> None: ...
    def write_event(self, event: str, data: dict) -> None: ...
    def hold(self) -> None: ...
    def linger(self, seconds: float) -> bool: ...

# HTTP status -> the API's error type (https://docs.anthropic.com/en/api/errors).
API_ERRORS = {400: "invalid_request_error", 401: "authentication_error",
              403: "permission_error", 404: "not_found_error", 413: "request_too_large",
              429: "rate_limit_error", 500: "api_error", 529: "overloaded_error"}
KINDS = ("status", "stream-error", "reset", "stall", "pings", "trickle", "malformed")
# A stall that keeps the stream alive: how often it says so (the CLI sees each event).
KEEP_ALIVE_EVERY = 0.5  # seconds


@dataclass(frozen=True)
class Fault:
    """One way the service fails a request.

    status        an HTTP error (`status`, its API error body; 429 with retry_after)
    stream-error  200, message_start, then `event: error` (type from `status`)
    reset         200, message_start, then the connection is reset (TCP RST)
    stall         200, message_start and one content delta, then nothing, the
                  connection held open until the client leaves or the server stops
    pings         a stall mid-stream that sends `event: ping` every KEEP_ALIVE_EVERY s
    trickle       a stall mid-stream that sends an empty text delta as often
    malformed     200, message_start, then a line that is not SSE, then close
    """

    kind: str
    status: int = 529
    retry_after: float | None = None
    times: int = 1  # requests it answers before the turn plays; 0: every request

    def __post_init__(self) -> None:
        if self.kind not in KINDS:
            raise ValueError(f"fault kind {self.kind!r}: expected one of {', '.join(KINDS)}")

    @property
    def error_type(self) -> str:
        return API_ERRORS.get(self.status, "api_error")


def overloaded(times: int = 1) -> Fault:
    return Fault("status", 529, times=times)


def rate_limited(retry_after: float = 1, times: int = 1) -> Fault:
    return Fault("status", 429, retry_after=retry_after, times=times)


def server_error(times: int = 1) -> Fault:
    return Fault("status", 500, times=times)


def unauthorized(status: int = 401) -> Fault:
    return Fault("status", status, times=0)


def reset(times: int = 1) -> Fault:
    return Fault("reset", times=times)


def stall_mid_stream(times: int = 1) -> Fault:
    return Fault("stall", times=times)


def pings(times: int = 1) -> Fault:
    return Fault("pings", times=times)


def trickle(times: int = 1) -> Fault:
    return Fault("trickle", times=times)


def malformed(times: int = 1) -> Fault:
    return Fault("malformed", times=times)


def as_text(figures: dict, *names: str) -> dict:
    """`figures` (the API's snake_case usage) with the named ones (every one when none
    is named) sent as strings: "cache_creation_input_tokens": "4000"."""
    return {key: str(value) if not names or key in names else value
            for key, value in figures.items()}


def beyond_max_tokens(figures: dict, over: int = 1
                      ) -> Callable[[dict, int, Any], dict]:
    """A turn's usage whose output is `over` tokens above what its request asked for
    at most (the request's own `max_tokens`, read as it arrives)."""
    def usage(request: dict, response_bytes: int, previous: Any) -> dict:
        return {**figures, "output_tokens": int(request.get("max_tokens") or 0) + over}
    return usage


STALLS = ("stall", "pings", "trickle")
_KEEP_ALIVE: dict[str, tuple[str, dict]] = {
    "pings": ("ping", {"type": "ping"}),
    "trickle": ("content_block_delta", {"type": "content_block_delta", "index": 0,
                                        "delta": {"type": "text_delta", "text": ""}})}


def error_body(fault: Fault) -> dict:
    return {"type": "error", "error": {"type": fault.error_type,
                                       "message": f"scripted {fault.error_type}"}}


def serve(handler: Responder, fault: Fault, start: dict, stream: bool = True) -> None:
    """Answer the handler's request with `fault`; `start` is the message_start event
    the turn would have begun with. The CLI falls back to a request without streaming
    after a broken stream: that one breaks the same way, as a whole response can."""
    if fault.kind == "status" or (fault.kind == "stream-error" and not stream):
        headers = {"retry-after": f"{fault.retry_after:g}"} if fault.retry_after is not None else {}
        handler.send_json(fault.status, error_body(fault), headers)
        return
    if not stream and fault.kind in STALLS:
        handler.hold()
        return
    handler.start_stream() if stream else handler.start_json()
    handler.close_connection = True
    try:
        if not stream:
            handler.wfile.write(b"{\"type\": \"message\", " if fault.kind == "malformed" else b"")
        elif fault.kind in ("stream-error", "malformed", "reset", *STALLS):
            handler.write_event("message_start", start)
        if stream and fault.kind == "stream-error":
            handler.write_event("error", error_body(fault))
        elif stream and fault.kind == "malformed":
            handler.wfile.write(b"this is not an event stream\n{\"type\": \n\n")
        elif fault.kind in STALLS:
            handler.write_event("content_block_start", {
                "type": "content_block_start", "index": 0,
                "content_block": {"type": "text", "text": ""}})
            handler.wfile.flush()
            if fault.kind == "stall":
                handler.hold()
                return
            alive = _KEEP_ALIVE[fault.kind]
            while handler.linger(KEEP_ALIVE_EVERY):
                handler.write_event(*alive)
                handler.wfile.flush()
            return
        handler.wfile.flush()
        if fault.kind == "reset":
            _reset(handler.connection)
    except OSError:
        pass  # the client left first


def _reset(connection: socket.socket) -> None:
    """Close with a TCP RST, not a FIN: SO_LINGER on, zero seconds."""
    connection.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
    connection.close()
