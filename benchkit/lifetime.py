"""Nothing a command starts outlives it, even a SIGKILL: a watchdog process ends them.

    with Watchdog(RUN_TAG, tag):        # benchkit.stopping.Stop starts one per command
        ...                             # every process marked RUN_TAG=<tag> is the command's

A SIGKILL runs no `finally`, and the kernel hands a dead command's children to init:
the Claude CLI, the socat bridge, the MCP servers would live on (an orphaned CLI was
seen sending model requests for a minute after its run was gone). The watchdog is a
small process in a session of its own holding the read end of a pipe whose one write
end the command holds: when the command ends, however it ends, the pipe closes, and the
watchdog kills every process whose environment carries the command's marker, round
after round until a round finds none (one may fork while it looks), then exits. It
ignores the stop signals: a terminal's Ctrl-C reaches the whole group, and the
command's own stop does the clean-up first.

A directory a command makes for a process of its (a throwaway Gitea's work directory)
goes the same way: `watchdog.remove_after(path)` tells the watchdog, which removes it
once the marked processes are ended, unless `watchdog.forget(path)` came first.

`dies_with_thread(argv)` starts a program under a parent-death signal (`setpriv
--pdeathsig KILL`): the kernel kills it the instant the thread that started it is
gone, before the watchdog can look. The Claude CLI runs so: no model request leaves
it once its run is dead. The signal follows the starting *thread*, not the process:
only for a program started by a thread that lives as long as the program must.

Run as a script (`python -I -S lifetime.py VARIABLE VALUE`), this file is the
watchdog: it imports the standard library alone.
"""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import time

STOP_SIGNALS = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)
SWEEP_ROUNDS = 100
ROUND_PAUSE = 0.02  # seconds between rounds that still found a process
CLOSE_WAIT = 10.0   # seconds a command waits for its watchdog's last sweep


def kill_marked(variable: str, value: str) -> int:
    """SIGKILL every process whose environment carries `variable=value`. Every process
    of an agent run inherits the marker, so even ones that left the process group are
    found; the number killed."""
    needle = f"\0{variable}={value}\0".encode()
    killed = 0
    for entry in os.listdir("/proc"):
        if not entry.isdigit() or int(entry) == os.getpid():
            continue
        try:
            with open(f"/proc/{entry}/environ", "rb") as f:
                if needle not in b"\0" + f.read() + b"\0":
                    continue
            os.kill(int(entry), signal.SIGKILL)
            killed += 1
        except OSError:
            continue  # gone already, or not ours to read
    return killed


def sweep(variable: str, value: str) -> int:
    """Kill the marked processes until a round finds none; how many were killed."""
    total = 0
    for _ in range(SWEEP_ROUNDS):
        killed = kill_marked(variable, value)
        if not killed:
            break
        total += killed
        time.sleep(ROUND_PAUSE)
    return total


class Watchdog:
    """The process that ends the processes marked `variable=value` once this one is
    gone (or the watchdog is closed)."""

    def __init__(self, variable: str, value: str):
        self.variable, self.value = variable, value
        self._pipe: int | None = None
        self._process: subprocess.Popen[bytes] | None = None

    def start(self) -> Watchdog:
        read, write = os.pipe()  # neither end is inherited by a process this one starts
        try:
            self._process = subprocess.Popen(
                [sys.executable, "-I", "-S", __file__, self.variable, self.value],
                stdin=read, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                env={"PATH": os.defpath}, start_new_session=True)
        except BaseException:
            os.close(write)
            raise
        finally:
            os.close(read)
        self._pipe = write
        return self

    def remove_after(self, path: str | os.PathLike) -> None:
        """Have the watchdog remove the directory `path` when the command is gone (after
        its processes: they may hold files in it)."""
        self._tell(f"+{os.fspath(path)}\n")

    def forget(self, path: str | os.PathLike) -> None:
        """The command removed `path` itself: the watchdog leaves it be."""
        self._tell(f"-{os.fspath(path)}\n")

    def _tell(self, line: str) -> None:
        if self._pipe is not None:
            os.write(self._pipe, line.encode())

    def close(self) -> None:
        """End the marked processes now and let the watchdog go."""
        pipe, self._pipe = self._pipe, None
        if pipe is not None:
            os.close(pipe)
        process, self._process = self._process, None
        if process is not None:
            try:
                process.wait(CLOSE_WAIT)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait()

    def __enter__(self) -> Watchdog:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.close()


def dies_with_thread(argv: list[str]) -> list[str]:
    """`argv` started under a parent-death signal (SIGKILL when the starting thread
    ends); `argv` as it is where setpriv is missing (the watchdog still ends it)."""
    setpriv = shutil.which("setpriv")
    return [setpriv, "--pdeathsig", "KILL", "--", *argv] if setpriv else list(argv)


def _watch(variable: str, value: str) -> None:
    for signum in STOP_SIGNALS:
        signal.signal(signum, signal.SIG_IGN)
    told = b""
    while chunk := os.read(0, 4096):  # the directories to remove; EOF once it is gone
        told += chunk
    sweep(variable, value)
    paths: dict[str, None] = {}
    for line in told.decode(errors="replace").splitlines():
        if line.startswith("+"):
            paths[line[1:]] = None
        elif line.startswith("-"):
            paths.pop(line[1:], None)
    for path in paths:
        shutil.rmtree(path, ignore_errors=True)


if __name__ == "__main__":
    _watch(sys.argv[1], sys.argv[2])
