"""How a command stops on Ctrl-C, SIGTERM or SIGHUP: one mechanism for every phase.

    with Stop(note=progress.interrupted) as stop:   # installed once, around everything
        ...                                         # a signal interrupts this thread's work
        with stop.shielded():                       # ... but not this: workers watching
            ...                                     # stop.is_set(), or a set of renames
        kill_marked(RUN_TAG, stop.tag)              # the processes of the run

Every process carrying the tag dies with the command even when nothing of it can run
again (SIGKILL, the OOM killer): the stop's watchdog (benchkit.lifetime) ends them.

On the first signal the stop is set, the note is said, and every process that carries
the run's tag (RUN_TAG=<tag> in its environment) is killed; then the main thread's
work is interrupted by `Interrupted` (a KeyboardInterrupt: asyncio and `subprocess.run`
meet it as Ctrl-C, ending their tasks and children), so each phase's `finally` and
`with` blocks delete what it made: repositories, tokens, temporary directories. Inside
a shielded block the interrupt waits for the block's end. Its exit status is 128 + the
signal (130, 143, 129).

A signal within SAME_INTERRUPT seconds of the first is the same interrupt: `timeout -s
INT` signals the command and then its process group, and a terminal's Ctrl-C reaches
every process of the group. One later leaves at once, without the clean-up.
"""

from __future__ import annotations

import contextlib
import os
import signal
import sys
import threading
import time
from collections.abc import Callable, Iterator
from types import FrameType

from benchkit.lifetime import Watchdog
from benchkit.lifetime import kill_marked as kill_marked  # the drivers' and tests' seam

# What stops a command as Ctrl-C does: an interactive Ctrl-C, a `kill` or a service
# manager, a closed terminal or SSH session.
STOP_SIGNALS = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)
# Every process a stoppable command starts for its work carries RUN_TAG=<its stop's tag>
# in its environment, so a stop can find and end them all, even those that left the
# process group.
RUN_TAG = "BENCHKIT_LOOP"
SAME_INTERRUPT = 1.0  # seconds
GC_HINT = ("the next `benchkit run` on the store, or `benchkit gc --yes --store STORE`, "
           "deletes what it leaves (its journal lists it)")

_active: Stop | None = None


class Interrupted(KeyboardInterrupt):
    """A stop signal ended this work: it leaves no sample. A KeyboardInterrupt, so no
    `except Exception` on the way records it as an error, and asyncio and subprocess
    clean up after it as after Ctrl-C."""


class Stop:
    """A command's stop: set by the first stop signal (`signum` says which); `tag` marks
    the command's processes. `note(text)` is told of the stop when it comes."""

    def __init__(self, note: Callable[[], None] | None = None,
                 say: Callable[[str], None] | None = None):
        self.event = threading.Event()
        self.signum: int | None = None
        self.tag = os.urandom(16).hex()
        self.note = note
        self.say = say or (lambda text: print(text, file=sys.stderr, flush=True))
        self._first = 0.0
        self._shields = 0
        self._raised = False  # Interrupted was raised once: clean-up is under way
        self._previous: dict[int, object] = {}
        self._watchdog: Watchdog | None = None

    def __enter__(self) -> Stop:
        global _active
        # Before any process is marked: none may outlive the command, however it ends.
        self._watchdog = Watchdog(RUN_TAG, self.tag).start()
        if threading.current_thread() is threading.main_thread():
            self._previous = {signum: signal.signal(signum, self._on_signal)
                              for signum in STOP_SIGNALS}
        _active = self
        return self

    def __exit__(self, *exc: object) -> None:
        global _active
        for signum, handler in self._previous.items():
            signal.signal(signum, handler)  # type: ignore[arg-type]
        self._previous = {}
        _active = None
        watchdog, self._watchdog = self._watchdog, None
        if watchdog is not None:
            watchdog.close()  # a stray of the command ends with it

    def is_set(self) -> bool:
        return self.event.is_set()

    @property
    def status(self) -> int:
        """The exit status of a stopped command: 128 + the signal (130 for Ctrl-C)."""
        return 128 + (self.signum or signal.SIGINT)

    def kill(self) -> int:
        """End every process of the command (those that carry its tag)."""
        return kill_marked(RUN_TAG, self.tag)

    def check(self) -> None:
        """Raise Interrupted if the stop is set and nobody was told yet."""
        if self.event.is_set() and not self._raised and self._shields == 0:
            self._raised = True
            raise Interrupted()

    @contextlib.contextmanager
    def shielded(self) -> Iterator[None]:
        """A block a signal does not interrupt: it sets the stop, and the interrupt is
        raised when the block ends (unless one already was)."""
        if threading.current_thread() is not threading.main_thread():
            yield  # a signal interrupts the main thread alone
            return
        self._shields += 1
        try:
            yield
        finally:
            self._shields -= 1
        self.check()

    def stop(self, signum: int) -> None:
        """What a stop signal does (a test may call it)."""
        self._on_signal(signum, None)

    def _on_signal(self, signum: int, frame: FrameType | None) -> None:
        now = time.monotonic()
        if self.event.is_set():
            if now - self._first < SAME_INTERRUPT:
                return  # the same interrupt, delivered twice
            self.say(f"interrupted again: leaving now; {GC_HINT}")
            os._exit(128 + signum)
        self.signum, self._first = signum, now
        self.event.set()
        if self.note is not None:
            self.note()
        self.kill()
        self.check()


def shielded() -> contextlib.AbstractContextManager[None]:
    """The active stop's shield (nothing without one): for a few steps that must be
    done together or not at all."""
    return _active.shielded() if _active is not None else contextlib.nullcontext()


def removed_with_command(path: str | os.PathLike) -> None:
    """The active stop's watchdog removes the directory `path` once the command is gone,
    however it ends (nothing without a stop)."""
    if _active is not None and _active._watchdog is not None:
        _active._watchdog.remove_after(path)


def removed_already(path: str | os.PathLike) -> None:
    """`path` is gone: the watchdog need not remove it."""
    if _active is not None and _active._watchdog is not None:
        _active._watchdog.forget(path)


def marked(env: dict[str, str]) -> dict[str, str]:
    """`env` with the active stop's tag (none without one): a process started with it
    is the command's, which the stop ends however it was started."""
    return {**env, RUN_TAG: _active.tag} if _active is not None else dict(env)


def stopping(within: float = 0.0) -> bool:
    """Whether a stop is under way in this process, or comes `within` seconds (a
    stopped command's noise is no news)."""
    return _active is not None and _active.event.wait(within)
