"""The harness's own stops: a run stopped (SIGSTOP, a terminal's Ctrl-Z) or a machine
suspended stops the harness with everything it times, so that afterwards a cap has run
out and every answer in flight looks slow. Such a trial is no one's doing: not the arm's,
not the host's (benchkit.trial.outcome makes it a harness error, `stopped`).

A heartbeat thread wakes every TICK seconds. A stop shows as a beat GAP seconds or more
late while the process neither ran nor waited to run: its CPU time (all its threads'),
and the time its threads waited on a run queue (/proc/self/task/*/schedstat), grew by
next to nothing. A process merely busy (a thread holding the interpreter's lock in C) or
starved (a machine loaded by the agent's processes) shows that time as CPU or as
waiting; a stopped one has none. A suspended machine shows as CLOCK_BOOTTIME, which
counts the sleep, pulling ahead of CLOCK_MONOTONIC, which does not. Neither can an agent
in its sandbox produce.

    PAUSES.start()                        # once a process, idempotent
    PAUSES.within(started, ended)         # [(at, seconds), ...] in time.monotonic() terms
"""

from __future__ import annotations

import threading
import time
from pathlib import Path

TICK = 0.25
GAP = 3.0          # a beat this late (seconds), or a suspend this long: a stop
BUSY_SHARE = 0.2   # of the gap, the CPU time and run-queue wait that say "not stopped"
TASKS = Path("/proc/self/task")


def _demand() -> float:
    """Seconds this process has run (all its threads, gone ones too) and its live
    threads have waited on a run queue: what it wanted of the CPUs so far."""
    queued = 0
    for task in TASKS.iterdir():
        try:
            queued += int((task / "schedstat").read_text().split()[1])
        except (OSError, ValueError, IndexError):
            continue  # a thread that ended meanwhile
    return time.process_time() + queued / 1e9


def _reading() -> tuple[float, float, float]:
    """(now, what the process wanted of the CPUs so far, the seconds the machine has
    slept: CLOCK_BOOTTIME ahead of CLOCK_MONOTONIC), read together: another thread may
    hold the interpreter between any two reads, so a reading that took long is taken
    again."""
    while True:
        before = time.monotonic()
        wanted, boot = _demand(), time.clock_gettime(time.CLOCK_BOOTTIME)
        now = time.monotonic()
        if now - before < 0.05:
            return now, wanted, boot - now


class Pauses:
    """The stops this process has seen (see the module's docstring)."""

    def __init__(self) -> None:
        self._seen: list[tuple[float, float, float]] = []  # (beat before, beat after, seconds)
        self._beats = 0
        self._beaten = threading.Condition()
        self._lock = threading.Lock()
        self._thread: threading.Thread | None = None

    def start(self) -> None:
        with self._lock:
            if self._thread is None:  # the first reading now: a stop from here is seen
                self._thread = threading.Thread(target=self._beat, args=(_reading(),),
                                                daemon=True, name="benchkit-pauses")
                self._thread.start()

    def within(self, started: float, ended: float) -> list[tuple[float, float]]:
        """The stops between two beats that overlap [started, ended] (time.monotonic()
        readings), as (the beat before, seconds stopped), once the heartbeat has beaten
        again (a stop just ended is seen by its next beat)."""
        self.start()
        with self._beaten:
            beats = self._beats
            self._beaten.wait_for(lambda: self._beats > beats, timeout=4 * TICK)
        with self._lock:
            return [(at, seconds) for at, until, seconds in self._seen
                    if at < ended and until > started]

    def _beat(self, first: tuple[float, float, float] | None = None) -> None:
        last, wanted, slept = first or _reading()
        while True:
            time.sleep(TICK)
            now, wanted_now, slept_now = _reading()
            gap = now - last - TICK
            # Between the two beats either way: a machine's sleep stops CLOCK_MONOTONIC
            # too, so its seconds lie between `last` and `now` however many they were.
            if slept_now - slept >= GAP:  # the machine slept between two beats
                self._note(last, now, slept_now - slept)
            elif gap >= GAP and wanted_now - wanted < BUSY_SHARE * gap:
                self._note(last, now, now - last)
            last, wanted, slept = now, wanted_now, slept_now
            with self._beaten:
                self._beats += 1
                self._beaten.notify_all()

    def _note(self, at: float, until: float, seconds: float) -> None:
        with self._lock:
            self._seen.append((at, until, seconds))


PAUSES = Pauses()
