"""A run's journal beside its store: what the run made that must not outlive it.

    journal = Journal.open(store_dir)        # <store>/.journal/<pid>-<start>.journal, locked
    journal.add("user", login=...)           # written (and fsynced) before the user is made
    journal.remove("user", login=...)        # once it is deleted
    journal.close()                          # the file goes when nothing is left in it

The run holds an exclusive lock on its journal file while it lives; the kernel drops
it when the process dies, even on SIGKILL. A journal whose lock is free and whose process (pid and
start time, from /proc: a reused pid is another process) is gone is a dead run's: `benchkit gc` and the next `benchkit run` on the store read what it still lists
(`pending`) and remove it. A pid says something only on the machine that wrote it (the
same kernel boot and process namespace: `machine()`, on the journal's first line): a
journal copied from elsewhere is `foreign`, and the run's lease on the host
(benchkit.gitea.lease) tells whether it lives. Lines are JSON, appended, each with a
checksum of itself (`crc`): a line a crash or a power cut tore or zeroed is skipped and
counted (`Pending.damaged`), and whoever appends after it starts a line of its own.

Kinds: `tempdir` (path), `user` (login; deleting it purges its repositories), `repo`
(owner, name), `host` (url, embedded: where the users and repositories live).
The process-wide `current()` journal is the one the run opened: the modules that make
things (temp directories, users, repositories) write to it when there is one.
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
import secrets
import shutil
import tempfile
import zlib
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

from benchkit.fingerprint import fingerprint
from benchkit.store import unwritable, writing

DIRECTORY = ".journal"  # under the store directory
SUFFIX = ".journal"
# Every open journal is also linked from one directory of the machine's user, so that
# `benchkit gc` with another --store (or none) still sees every live run's users.
REGISTRY_ENV = "BENCHKIT_STATE_DIR"
_current: Journal | None = None


def registry() -> Path:
    base = os.environ.get(REGISTRY_ENV) or os.environ.get("XDG_STATE_HOME")
    root = Path(base) if base else Path.home() / ".local" / "state"
    return (root if os.environ.get(REGISTRY_ENV) else root / "benchkit") / "runs"


def process_start(pid: int) -> str | None:
    """The process's start time in clock ticks since boot (/proc/PID/stat field 22):
    with the pid, it names one process, never a later one that reuses the pid."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    return stat.rpartition(")")[2].split()[19]  # the fields after the command's name


def machine() -> str:
    """This machine as a pid names a process on it: the kernel's boot and this process's
    pid namespace (two containers on one kernel are two machines)."""
    parts = []
    with contextlib.suppress(OSError):
        parts.append(Path("/proc/sys/kernel/random/boot_id").read_text().strip())
    with contextlib.suppress(OSError):
        parts.append(os.readlink("/proc/self/ns/pid"))
    return fingerprint(parts)[:12]


def line(entry: dict) -> bytes:
    """One journal line: the entry with a checksum of itself (`crc`), and a newline."""
    return (json.dumps({**entry, "crc": _crc(entry)}, sort_keys=True) + "\n").encode()


def _crc(entry: dict) -> str:
    return f"{zlib.crc32(json.dumps(entry, sort_keys=True, separators=(',', ':')).encode()):08x}"


def _entry(raw: bytes, checked: bool) -> dict | None:
    """The entry a line holds, None when it is damaged: not JSON, not an object, or (in
    a journal whose lines carry checksums) a checksum missing or wrong."""
    try:
        entry = json.loads(raw)
    except ValueError:
        return None
    if not isinstance(entry, dict) or (checked and "crc" not in entry):
        return None
    crc = entry.pop("crc", None)
    return entry if crc is None or crc == _crc(entry) else None


def current() -> Journal | None:
    return _current


def add(kind: str, **what: str | bool) -> None:
    """Note in the current journal (if any) a thing about to be made."""
    if _current is not None:
        _current.add(kind, **what)


def remove(kind: str, **what: str | bool) -> None:
    """Note in the current journal (if any) that a thing is gone."""
    if _current is not None:
        _current.remove(kind, **what)


def mkdtemp(prefix: str, dir: str | os.PathLike | None = None) -> str:
    """tempfile.mkdtemp, journalled first: a kill cannot leave it unlisted."""
    parent = os.fspath(dir) if dir is not None else tempfile.gettempdir()
    while True:
        path = os.path.join(parent, f"{prefix}{secrets.token_hex(5)}")
        add("tempdir", path=path)
        try:
            os.mkdir(path, 0o700)
            return path
        except FileExistsError:
            remove("tempdir", path=path)


@contextlib.contextmanager
def tempdir(prefix: str, dir: str | os.PathLike | None = None) -> Iterator[str]:
    """tempfile.TemporaryDirectory, journalled: removed (and its entry with it) at the end."""
    path = mkdtemp(prefix, dir)
    try:
        yield path
    finally:
        shutil.rmtree(path, ignore_errors=True)
        remove("tempdir", path=path)


@dataclass
class Pending:
    """What a journal still lists, and whose run it was."""

    path: Path
    pid: int = 0
    start: str | None = None
    machine: str | None = None  # None: written before journals named their machine
    host: str | None = None
    embedded: bool = False
    tempdirs: list[str] = field(default_factory=list)
    users: list[str] = field(default_factory=list)
    repos: list[tuple[str, str]] = field(default_factory=list)
    damaged: int = 0  # lines a crash tore or zeroed, skipped
    ragged: bool = False  # the last line has no newline: a crash cut it short

    @property
    def empty(self) -> bool:
        return not (self.tempdirs or self.users or self.repos)

    @property
    def foreign(self) -> bool:
        """Written on another machine: its pid names no process here."""
        return self.machine is not None and self.machine != machine()


def _key(entry: dict) -> tuple:
    return tuple(sorted((k, v) for k, v in entry.items() if k not in ("add", "remove")))


def read(path: Path) -> Pending:
    """What the journal at `path` still lists; damaged lines are skipped and counted
    (a kill may tear the last, a power cut zero the tail)."""
    pending, live, order = Pending(path), {}, []  # live: (kind, key) -> entry
    try:
        data = path.read_bytes()
    except OSError:
        return pending
    lines, pending.ragged = data.split(b"\n"), not data.endswith(b"\n") and bool(data)
    checked = b'"crc"' in lines[0]  # a journal of checksummed lines: every line has one
    for raw in lines:
        if not raw.strip(b" \t\r"):  # a trailing newline's empty rest
            continue
        entry = _entry(raw, checked)
        if entry is None:
            pending.damaged += 1
            continue
        if "run" in entry:
            run = entry["run"] if isinstance(entry["run"], dict) else {}
            pending.pid, pending.start = int(run.get("pid") or 0), run.get("start")
            pending.machine = run.get("machine")
        elif entry.get("add") == "host":
            pending.host, pending.embedded = entry.get("url"), bool(entry.get("embedded"))
        elif "add" in entry:
            key = (entry["add"], _key(entry))
            live[key] = entry
            order.append(key)
        elif "remove" in entry:
            live.pop((entry["remove"], _key(entry)), None)
    for key in dict.fromkeys(order):
        entry = live.get(key)
        if entry is None:
            continue
        kind = entry["add"]
        if kind == "tempdir":
            pending.tempdirs.append(str(entry.get("path")))
        elif kind == "user":
            pending.users.append(str(entry.get("login")))
        elif kind == "repo":
            pending.repos.append((str(entry.get("owner")), str(entry.get("name"))))
    # A removed user took its repositories with it (deleted with purge).
    gone_users = {dict(k[1]).get("login") for k in order
                  if k[0] == "user" and k not in live}
    pending.repos = [r for r in pending.repos if r[0] not in gone_users]
    return pending


class Journal:
    """One run's journal, locked for as long as it is open."""

    def __init__(self, path: Path, fd: int, *, made_store: bool = False):
        self.path, self._fd = path, fd
        self._made_store = made_store  # a run that stores nothing leaves no directory

    @classmethod
    def open(cls, store_dir: str | os.PathLike) -> Journal:
        """Open this process's journal under the store (made if need be) and make it the
        current one."""
        global _current
        directory = Path(store_dir) / DIRECTORY
        made_store = not Path(store_dir).exists()
        directory.mkdir(parents=True, exist_ok=True)
        pid = os.getpid()
        start = process_start(pid) or "0"
        path = directory / f"{pid}-{start}-{secrets.token_hex(3)}{SUFFIX}"
        with writing(path):  # a full or read-only disk: one plain line (Unwritable)
            fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_APPEND | os.O_CLOEXEC, 0o600)
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            journal = cls(path, fd, made_store=made_store)
            try:
                journal._write({"run": {"pid": pid, "start": start, "machine": machine()}})
            except BaseException:  # a journal that cannot say whose it is: none at all
                os.close(fd)
                path.unlink()
                raise
        with contextlib.suppress(OSError):  # a convenience for gc: the journal is the truth
            registry().mkdir(parents=True, exist_ok=True)
            journal._link().symlink_to(path.resolve())
        _current = journal
        return journal

    def _link(self) -> Path:
        return registry() / self.path.name

    def _write(self, entry: dict) -> None:
        with writing(self.path):
            os.write(self._fd, line(entry))
            os.fsync(self._fd)

    def add(self, kind: str, **what: str | bool) -> None:
        self._write({"add": kind, **what})

    def remove(self, kind: str, **what: str | bool) -> None:
        self._write({"remove": kind, **what})

    def pending(self) -> Pending:
        return read(self.path)

    def close(self, *, embedded: bool = False) -> Pending:
        """Stop being the current journal and release the lock. The run is over: a temp
        directory it still lists goes now; `embedded`: its users and repositories went
        with its forge. The file goes when it lists nothing; else it stays for
        `benchkit gc` (what is left is returned)."""
        global _current
        if _current is self:
            _current = None
        left = read(self.path)
        for directory in left.tempdirs:
            remove_tempdir(directory)
            self.remove("tempdir", path=directory)
        if embedded:
            for login in left.users:
                self.remove("user", login=login)
            for owner, name in left.repos:
                self.remove("repo", owner=owner, name=name)
        left = read(self.path)
        if left.empty:
            self._link().unlink(missing_ok=True)
            self.path.unlink(missing_ok=True)
            with contextlib.suppress(OSError):
                self.path.parent.rmdir()  # only when no other journal is there
                if self._made_store:
                    self.path.parent.parent.rmdir()  # only when nothing was stored
        os.close(self._fd)
        return left


def journals(store_dir: str | os.PathLike) -> list[Path]:
    directory = Path(store_dir) / DIRECTORY
    return sorted(directory.glob(f"*{SUFFIX}")) if directory.is_dir() else []


def every_journal(store_dirs: list[str | os.PathLike]) -> list[Path]:
    """The journals of these stores and every one the registry links (links to
    journals that are gone are dropped)."""
    found = {path.resolve(): None for store in store_dirs for path in journals(store)}
    links = registry()
    for link in sorted(links.glob(f"*{SUFFIX}")) if links.is_dir() else []:
        target = link.resolve()
        if target.is_file():
            found.setdefault(target)
        else:
            with contextlib.suppress(OSError):  # a registry that takes no write keeps it
                link.unlink(missing_ok=True)
    return list(found)


@contextlib.contextmanager
def claim(path: Path) -> Iterator[Claim | None]:
    """A Claim on the journal unless a process of this machine holds it (its lock was
    free; held now, so that no other sweeper takes it too); None while its run lives
    here. A foreign journal (`pending.foreign`) is claimed too: whether its run lives is
    its lease's to tell, on the host. One on a file system that takes no write is
    claimed read-only (`writable` False): it can be read, not swept."""
    writable = True
    try:
        try:
            fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CLOEXEC)
        except OSError as error:
            if isinstance(error, FileNotFoundError) or unwritable(error, path) is None:
                raise
            fd, writable = os.open(path, os.O_RDONLY | os.O_CLOEXEC), False
    except FileNotFoundError:
        yield None
        return
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            yield None
            return
        pending = read(path)
        # A process of that pid and start time still there, not this one: a run between
        # opening its journal and locking it (or one whose lock the file system lost).
        if (not pending.foreign and pending.pid != os.getpid()
                and process_start(pending.pid) == (pending.start or "")):
            yield None
            return
        yield Claim(pending, fd, writable)
    finally:
        os.close(fd)


@dataclass
class Claim:
    """A dead run's journal, held: what it lists, and a way to note what a sweep removed."""

    pending: Pending
    fd: int
    writable: bool = True

    def removed(self, kind: str, **what: str | bool) -> None:
        # Never glued onto a line a crash left unfinished: that one ends here.
        ragged, self.pending.ragged = self.pending.ragged, False
        os.write(self.fd, b"\n" * ragged + line({"remove": kind, **what}))
        os.fsync(self.fd)

    def finish(self) -> bool:
        """Remove the journal when it lists nothing more; whether it went."""
        if not read(self.pending.path).empty:
            return False
        (registry() / self.pending.path.name).unlink(missing_ok=True)
        self.pending.path.unlink(missing_ok=True)
        with contextlib.suppress(OSError):
            self.pending.path.parent.rmdir()
        return True


def live_users(store_dirs: list[str | os.PathLike]) -> set[str]:
    """The users that live runs' journals list (these stores' and the registry's), and
    foreign journals (copied from another machine): never collected by name, whatever
    any clock says."""
    found: set[str] = set()
    for path in every_journal(store_dirs):
        with claim(path) as dead:
            if dead is None or dead.pending.foreign:  # a foreign one: its lease decides
                found.update(read(path).users)
    return found


def remove_tempdir(path: str) -> bool:
    """Remove a dead run's temp directory; whether it was there."""
    if not os.path.lexists(path):
        return False
    shutil.rmtree(path, ignore_errors=True)
    return True
