"""Control requests: the harness's own requests to the host, shaped by no agent, that say
whether a failing or slow answer to an agent's request was the host's doing or the
agent's. When the host answers an agent's request 5xx, sends no answer, or an answer the
gateway cannot read, the gateway sends a control of the same kind at once (a read for a
read, a write for a write); when an agent's request has waited CONTROL_AFTER_S for its
answer, it sends one while it still waits. A control reads or writes a control object
of the run's own that no agent reaches (benchkit.trial.prepare: a private repository of
the run's user, with one label), with the run's token, on a connection of its own. The
host is at fault only when its control fails too, and it owes of a slow answer at most
what its control took (benchkit.trial.attribution): an agent's own costly request leaves
the host's control fast.

    controls = Controls(upstream, ControlObject(read, write, token))
    probe = controls.probe("write", since=time.monotonic())
    probe.figures(wait=CONTROL_TIMEOUT_S)   # {"kind", "status", "s"}: what the sample keeps

A probe of each kind is in flight at most once a trial, shared by every request that
needs one meanwhile: an agent's flood of slow requests costs the host one control of a
kind at a time. A gateway with no control object (a bare one, in a test or a benchmark)
asks for the host's version instead, for either kind.
"""

from __future__ import annotations

import heapq
import itertools
import json
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Literal, Protocol

from benchkit.evidence import ControlFigures

Kind = Literal["read", "write"]
CONTROL_AFTER_S = 1.0     # a request waiting this long for its answer gets a control
CONTROL_TIMEOUT_S = 20.0  # a control unanswered this long: the host is not answering
PENDING = "pending"       # a control still unanswered when its request's record was kept
VERSION = "/api/v1/version"


@dataclass(frozen=True)
class ControlObject:
    """What a trial's controls ask of the host: `read` is GET, `write` a PATCH of a
    label's description (a write to the host's database that no page shows), both with
    `token` (the run's, never a trial's)."""

    read: str
    write: str
    token: str = field(repr=False)


class Sender(Protocol):
    """What sends a control (benchkit.gateway.upstream.Upstream)."""

    def control(self, method: str, path: str, body: bytes, token: str | None,
                timeout: float) -> int | str: ...


class ControlProbe:
    """One control request: its kind, when it was sent, and once answered its status
    (or the error that kept it from one) and seconds to the answer's head."""

    def __init__(self, kind: Kind):
        self.kind, self.sent = kind, time.monotonic()
        self.status: int | str = PENDING
        self.seconds: float | None = None
        self.done = threading.Event()

    def finish(self, status: int | str) -> None:
        self.seconds = time.monotonic() - self.sent
        self.status = status
        self.done.set()

    def figures(self, wait: float = 0.0, stop: Callable[[], bool] = lambda: False) -> ControlFigures:
        """What the sample keeps: {"kind", "status", "s"}; a probe unanswered after
        `wait` more seconds (or once `stop()` says so) is `pending`, its seconds those it
        has waited so far."""
        until = time.monotonic() + wait
        while not self.done.wait(min(0.1, max(0.0, until - time.monotonic()))) \
                and time.monotonic() < until and not stop():
            pass
        seconds = self.seconds if self.done.is_set() else time.monotonic() - self.sent
        return {"kind": self.kind, "status": self.status, "s": round(seconds or 0.0, 6)}


class Controls:
    """One trial's controls (see the module's docstring)."""

    def __init__(self, sender: Sender, control: ControlObject | None):
        self._sender, self._control = sender, control
        self._lock = threading.Lock()
        self._last: dict[str, ControlProbe] = {}
        self._writes = itertools.count(1)

    def probe(self, kind: Kind, since: float) -> ControlProbe:
        """A probe of `kind` sent at `since` (time.monotonic()) or later: the one in
        flight or last sent when it was, else one sent now."""
        with self._lock:
            last = self._last.get(kind)
            if last is not None and last.sent >= since:
                return last
            probe = self._last[kind] = ControlProbe(kind)
        threading.Thread(target=self._send, args=(probe,), daemon=True,
                         name="benchkit-control").start()
        return probe

    def _send(self, probe: ControlProbe) -> None:
        control = self._control
        if control is None:
            status = self._sender.control("GET", VERSION, b"", None, CONTROL_TIMEOUT_S)
        elif probe.kind == "read":
            status = self._sender.control("GET", control.read, b"", control.token,
                                          CONTROL_TIMEOUT_S)
        else:
            body = json.dumps({"description": f"benchkit control {next(self._writes)}"})
            status = self._sender.control("PATCH", control.write, body.encode(), control.token,
                                          CONTROL_TIMEOUT_S)
        probe.finish(status)


def failed(figures: ControlFigures | None) -> bool:
    """Whether a control's figures show the host failing: a 5xx, no answer at all, an
    answer that could not be read, or none within CONTROL_TIMEOUT_S. (A control still
    pending when its request was kept shows only that the host was slow.)"""
    if not figures:
        return False
    status = figures.get("status")
    if isinstance(status, int):
        return not 200 <= status < 300
    return status != PENDING


class Alarm:
    """One thread that calls each callback at its time, unless it is cancelled first:
    what sends a control while an agent's request still waits for its answer."""

    def __init__(self) -> None:
        self._heap: list[list] = []
        self._ready = threading.Condition()
        self._order = itertools.count()
        self._thread: threading.Thread | None = None

    def set(self, delay: float, callback: Callable[[], None]) -> list:
        """Call `callback` in `delay` seconds; the entry cancel() takes."""
        entry = [time.monotonic() + delay, next(self._order), callback]
        with self._ready:
            heapq.heappush(self._heap, entry)
            if self._thread is None:
                self._thread = threading.Thread(target=self._run, daemon=True,
                                                name="benchkit-control-alarm")
                self._thread.start()
            self._ready.notify()
        return entry

    @staticmethod
    def cancel(entry: list) -> None:
        entry[2] = None

    def _run(self) -> None:
        while True:
            with self._ready:
                while not self._heap or self._heap[0][0] > time.monotonic():
                    self._ready.wait(self._heap[0][0] - time.monotonic() if self._heap else None)
                callback = heapq.heappop(self._heap)[2]
            if callback is not None:
                callback()


ALARM = Alarm()
