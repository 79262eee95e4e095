"""Fault injection: make chosen routes fail (a status, a delay, a dropped connection)
a set number of times, so tests can show how the harness meets a misbehaving host.
"""

import re
import threading
from dataclasses import dataclass


@dataclass
class RouteFault:
    """One armed fault: which requests it hits, what it does, and how many more times."""
    method: str          # an HTTP method, or "*" for any
    pattern: re.Pattern  # searched in the request path
    status: int | None   # None: after the delay, answer normally
    delay: float
    drop: bool
    remaining: int
    skip: int = 0        # matching requests still to let through before it fires

    def matches(self, method: str, path: str) -> bool:
        """Whether the fault is armed and the request is one it hits."""
        return self.remaining > 0 and self.method in ("*", method) and bool(self.pattern.search(path))


class Faults:
    """The forge's armed faults, in the order they were injected."""
    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._faults: list[RouteFault] = []

    def inject(self, method: str, path_regex: str, status: int | None = 500, delay: float = 0.0,
               drop: bool = False, times: int = 1, after: int = 0) -> RouteFault:
        """Arm a fault for the next `times` matching requests, once `after` have passed."""
        fault = RouteFault(method.upper(), re.compile(path_regex), status, float(delay), bool(drop),
                           int(times), int(after))
        with self._lock:
            self._faults.append(fault)
        return fault

    def take(self, method: str, path: str) -> RouteFault | None:
        """The first armed fault for this request, spending one of its uses."""
        with self._lock:
            for fault in self._faults:
                if fault.matches(method, path):
                    if fault.skip > 0:
                        fault.skip -= 1
                        continue
                    fault.remaining -= 1
                    return fault
            self._faults = [f for f in self._faults if f.remaining > 0]
        return None

    def clear(self) -> None:
        """Disarm every fault."""
        with self._lock:
            self._faults.clear()
