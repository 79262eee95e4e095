"""The host's CPU time, where the host is a process of this machine this user can read
(a Gitea benchkit or its tests started, a local one the maintainer runs): the process
listening on the host URL's loopback port, found once through /proc/net/tcp and the
processes' open sockets; its CPU time from /proc/PID/stat (its own and its reaped
children's: git). A host elsewhere, or in this very process (the embedded forge, a
test's proxy), has none: its trials' CPU is not counted.

    clock = HostCpu("http://127.0.0.1:3000/")
    clock.seconds()      # float, or None where the host's CPU cannot be read
    clock.pid            # its process, or None
"""

from __future__ import annotations

import os
from pathlib import Path
from urllib.parse import urlsplit

LOOPBACK = ("127.0.0.1", "localhost", "::1")
LISTEN = "0A"  # a socket's state in /proc/net/tcp: listening
_TICKS = os.sysconf("SC_CLK_TCK")


def listener(port: int) -> int | None:
    """The pid of a process of this user listening on `port`, other than this one."""
    inodes = set()
    for table in ("/proc/net/tcp", "/proc/net/tcp6"):
        try:
            lines = Path(table).read_text().splitlines()[1:]
        except OSError:
            continue
        for line in lines:
            fields = line.split()
            if len(fields) > 9 and fields[3] == LISTEN \
                    and int(fields[1].rsplit(":", 1)[1], 16) == port:
                inodes.add(f"socket:[{fields[9]}]")
    if not inodes:
        return None
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit() or int(entry.name) == os.getpid():
            continue
        try:
            if any(os.readlink(fd) in inodes for fd in (entry / "fd").iterdir()):
                return int(entry.name)
        except OSError:
            continue  # another user's, or gone
    return None


def cpu_seconds(pid: int) -> float | None:
    """A process's CPU time and its reaped children's, in seconds; None once it is gone."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    fields = stat[stat.rindex(")") + 2:].split()  # past the command's name, which may hold spaces
    return sum(int(value) for value in fields[11:15]) / _TICKS  # utime stime cutime cstime


class HostCpu:
    """The CPU clock of the host behind a URL (see the module's docstring)."""

    def __init__(self, host_url: str):
        parts = urlsplit(host_url)
        self._pid: int | None = None
        self._looked = parts.hostname not in LOOPBACK
        self._port = parts.port or (443 if parts.scheme == "https" else 80)

    @property
    def pid(self) -> int | None:
        """The host's process, found on first use; None where there is none to read."""
        if not self._looked:
            self._looked = True
            self._pid = listener(self._port)
        return self._pid

    def seconds(self) -> float | None:
        pid = self.pid
        return cpu_seconds(pid) if pid is not None else None
