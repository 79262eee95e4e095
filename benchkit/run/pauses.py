"""The harness's own stops: a run stopped (SIGSTOP, a terminal's Ctrl-Z) or a machine
suspended stops the harness with everything it times, so that afterwards a cap has run
out and every answer in flight looks slow. Such a trial is no one's doing: not the arm's,
not the host's (benchkit.run.outcome makes it a harness error, `stopped`).

A heartbeat thread wakes every TICK seconds. A stop shows as a beat GAP seconds or more
late while the process used next to no CPU time (its threads were stopped, not busy: a
thread holding the interpreter's lock burns CPU time) and the heartbeat's thread did not
wait for a CPU (/proc/thread-self/schedstat: a machine starved by the agent's processes
queues it instead); a suspended machine as CLOCK_BOOTTIME, which counts the sleep, pulling
ahead of CLOCK_MONOTONIC, which does not. Neither can an agent in its sandbox produce.

    PAUSES.start()                        # once a process, idempotent
    PAUSES.within(started, ended)         # [(at, seconds), ...] in time.monotonic() terms
"""

from __future__ import annotations

import threading
import time
from pathlib import Path

TICK = 0.25
GAP = 3.0          # a beat this late (seconds), or a suspend this long: a stop
BUSY_SHARE = 0.2   # of the gap, the CPU time (or run-queue wait) that says "not stopped"
SCHEDSTAT = Path("/proc/thread-self/schedstat")


def _queued() -> float:
    """Seconds this thread has waited on a run queue (0 where the kernel does not say)."""
    try:
        return int(SCHEDSTAT.read_text().split()[1]) / 1e9
    except (OSError, ValueError, IndexError):
        return 0.0


def _suspended() -> float:
    """CLOCK_BOOTTIME ahead of CLOCK_MONOTONIC: the seconds the machine has slept."""
    return time.clock_gettime(time.CLOCK_BOOTTIME) - time.monotonic()


class Pauses:
    """The stops this process has seen (see the module's docstring)."""

    def __init__(self) -> None:
        self._seen: list[tuple[float, float]] = []  # (monotonic start, seconds)
        self._beats = 0
        self._beaten = threading.Condition()
        self._lock = threading.Lock()
        self._thread: threading.Thread | None = None

    def start(self) -> None:
        with self._lock:
            if self._thread is None:
                self._thread = threading.Thread(target=self._beat, daemon=True,
                                                name="benchkit-pauses")
                self._thread.start()

    def within(self, started: float, ended: float) -> list[tuple[float, float]]:
        """The stops that overlap [started, ended] (time.monotonic() readings), once the
        heartbeat has beaten again (a stop just ended is seen by its next beat)."""
        self.start()
        with self._beaten:
            beats = self._beats
            self._beaten.wait_for(lambda: self._beats > beats, timeout=4 * TICK)
        with self._lock:
            return [(at, seconds) for at, seconds in self._seen
                    if at < ended and at + seconds > started]

    def _beat(self) -> None:
        last, cpu, queued, slept = time.monotonic(), time.process_time(), _queued(), _suspended()
        while True:
            time.sleep(TICK)
            now, cpu_now, queued_now, slept_now = (time.monotonic(), time.process_time(),
                                                   _queued(), _suspended())
            gap = now - last - TICK
            if slept_now - slept >= GAP:  # the machine slept between two beats
                self._note(last, slept_now - slept)
            elif gap >= GAP and cpu_now - cpu < BUSY_SHARE * gap \
                    and queued_now - queued < BUSY_SHARE * gap:
                self._note(last, now - last)
            last, cpu, queued, slept = now, cpu_now, queued_now, slept_now
            with self._beaten:
                self._beats += 1
                self._beaten.notify_all()

    def _note(self, at: float, seconds: float) -> None:
        with self._lock:
            self._seen.append((at, seconds))


PAUSES = Pauses()
