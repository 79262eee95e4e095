"""The harness sees its own stops (benchkit.trial.pauses): a process stopped by SIGSTOP and
continued shows a stop as long as it was held, while a process kept as busy over the
same time (a thread holding the interpreter's lock in C, as a hostile body's checks
could) shows none: only a stop charges no one."""

import json
import os
import signal
import subprocess
import sys
import threading
import time

import pytest
from conftest import CHECKOUT

from benchkit.trial import pauses

CHILD = """
import json, sys, time
from benchkit.trial.pauses import PAUSES
PAUSES.start()
started = time.monotonic()
if sys.argv[1] == "busy":  # one call in C holding the interpreter's lock for seconds
    while time.monotonic() - started < 4:
        sum(range(200_000_000))
print("ready", time.monotonic() - started, flush=True)
sys.stdin.readline()
print(json.dumps(PAUSES.within(started, time.monotonic())), flush=True)
"""


def _child(mode: str) -> subprocess.Popen:
    return subprocess.Popen([sys.executable, "-c", CHILD, mode], stdin=subprocess.PIPE,
                            stdout=subprocess.PIPE, text=True,
                            env={**os.environ, "PYTHONPATH": str(CHECKOUT)})


@pytest.mark.slow
def test_a_stop_is_seen_and_a_busy_process_is_not_a_stop():
    stopped, busy = _child("stopped"), _child("busy")
    try:
        assert stopped.stdout.readline().startswith("ready")
        stopped.send_signal(signal.SIGSTOP)
        time.sleep(5)  # the stop itself
        stopped.send_signal(signal.SIGCONT)
        stopped.stdin.write("\n")
        stopped.stdin.flush()
        (at, seconds), = json.loads(stopped.stdout.readline())
        assert 4.5 <= seconds <= 30, seconds
        said, took = busy.stdout.readline().split()
        assert said == "ready" and float(took) >= 4
        busy.stdin.write("\n")
        busy.stdin.flush()
        assert json.loads(busy.stdout.readline()) == []
    finally:
        for child in (stopped, busy):
            child.kill()
            child.wait()


def test_a_machine_sleep_covers_the_beats_around_it_not_its_length_after(monkeypatch):
    """A suspend of an hour (CLOCK_BOOTTIME an hour ahead of CLOCK_MONOTONIC, which
    stops with the machine) between two beats: a trial in flight across those beats saw
    an hour's stop; one that started after them saw none (the hour was once laid out in
    CLOCK_MONOTONIC after the beat, and every trial of the next hour was
    `harness-paused`)."""
    readings = iter([(100.0, 0.0, 0.0), (100.25, 0.0, 3600.0), (100.5, 0.01, 3600.0)])

    class Done(Exception):
        pass

    def reading():
        for taken in readings:
            return taken
        raise Done
    monkeypatch.setattr(pauses, "_reading", reading)
    monkeypatch.setattr(pauses, "TICK", 0.0)
    seen = pauses.Pauses()
    with pytest.raises(Done):
        seen._beat()
    seen._thread = threading.current_thread()  # beaten already: within() starts no beat
    assert seen.within(99.0, 100.1) == [(100.0, 3600.0)]
    assert seen.within(100.3, 200.0) == []
