"""The store: an append-only directory of samples.

`results/<arm>/<task>.jsonl` holds one complete JSON line per sample, appended under an
exclusive lock on the cell file itself and flushed to disk, never rewritten; an append
that fails (a full disk) is cut back, so it leaves no partial line, and a refused write
(full, read-only, not ours) is one plain line (`Unwritable`), never a traceback. A run holds the
store's run lock (`results/.run.lock`, inside the store) while it plans and runs, so
concurrent runs on one store take turns and `--until N` is never exceeded. A sample's
transcript sits beside it in `results/<arm>/<task>/<sample id>.json`. Secrets (the Gitea
token, the driver's credentials, the harness's secret-looking variables) are scrubbed
from every line and transcript on the way in, in every encoding benchkit.scrub knows.
A run's trials write through a GatedStore, closed once the run stopped (benchkit.stopping):
an interrupted trial leaves neither a sample nor a transcript.
"""

from __future__ import annotations

import contextlib
import errno
import fcntl
import json
import os
import tempfile
from collections.abc import Callable, Iterable, Iterator
from functools import lru_cache
from pathlib import Path
from typing import TYPE_CHECKING

import msgspec

from benchkit import SCHEMA_DIR, replays
from benchkit.errors import BenchkitError
from benchkit.evidence import Event
from benchkit.replays import FailureReplay
from benchkit.sample import ENCODER, Record, decode_record, decode_sample
from benchkit.scrub import scrub
from benchkit.stopping import Interrupted, Stop

if TYPE_CHECKING:
    import jsonschema

# The run lock sits inside the store (`results/.run.lock`), so it goes wherever the
# store goes (`--store DIR`) and the checkout's `.gitignore` of `results/` covers it.
RUN_LOCK = ".run.lock"
# The documents of the arms a run took from outside the tree (`results/.arms/<id>.yaml`):
# the report reads them beside the tree's arms.d/, so those arms' samples are counted.
ARMS = ".arms"


class StoreError(BenchkitError):
    """A sample that cannot be stored (bad shape), named by arm and task."""


class Unwritable(StoreError):
    """The file system refused a write (full, read-only, not ours): one plain line
    naming the device or the path. Bad input of the run (exit 2), never a trial's."""


# What the file system says when a store (or a reports directory) cannot take a write.
UNWRITABLE = {errno.ENOSPC: "no space left", errno.EDQUOT: "disk quota exceeded",
              errno.EROFS: "read-only file system", errno.EACCES: "permission denied",
              errno.EPERM: "not permitted"}


def unwritable(error: OSError, path: str | os.PathLike | None = None) -> Unwritable | None:
    """The plain line for a refused write (None for any other OSError): "no space left
    on DEVICE writing PATH", "read-only file system: cannot write PATH", ..."""
    if error.errno not in UNWRITABLE:
        return None
    where = Path(path if path is not None else error.filename or "?")
    if error.errno in (errno.ENOSPC, errno.EDQUOT):
        return Unwritable(f"{UNWRITABLE[error.errno]} on {device_of(where)} writing {where}")
    return Unwritable(f"{UNWRITABLE[error.errno]}: cannot write {where}")


def device_of(path: Path) -> str:
    """The device (and its mount point) holding path, as /proc/self/mountinfo names it."""
    existing = path
    while not existing.exists() and existing != existing.parent:
        existing = existing.parent
    try:
        dev = os.stat(existing).st_dev
        found = f"{os.major(dev)}:{os.minor(dev)}"
        with open("/proc/self/mountinfo", encoding="utf-8") as mounts:
            for line in mounts:
                fields, _, tail = line.partition(" - ")
                parts = fields.split()
                if parts[2] == found:
                    source = tail.split()[1]
                    return f"{source} ({parts[4]})"
    except (OSError, IndexError):
        pass
    return f"the device of {existing}"


@contextlib.contextmanager
def writing(path: str | os.PathLike) -> Iterator[None]:
    """Turn a refused write under path into Unwritable (its plain line)."""
    try:
        yield
    except OSError as error:
        refused = unwritable(error, path)
        if refused is None:
            raise
        raise refused from None


def check_writable(directory: str | os.PathLike) -> None:
    """Raise Unwritable when nothing can be written in `directory`, or made where it
    would be made (read-only, not ours, under a file, in /proc). It leaves nothing: a
    file is made and removed there, or in the nearest directory above that exists."""
    root = Path(directory)
    existing = root
    while not existing.exists() and existing != existing.parent:
        existing = existing.parent
    try:
        with writing(root):
            fd, probe = tempfile.mkstemp(prefix=".benchkit-write-check-", dir=existing)
            os.close(fd)
            os.unlink(probe)
    except Unwritable:
        raise
    except OSError as error:  # not a refusal the table names: still no place to write
        raise Unwritable(f"cannot write {root}: {(error.strerror or str(error)).lower()}") from None


@lru_cache(maxsize=1)
def _validator() -> jsonschema.Draft202012Validator:
    # Imported here, measured: jsonschema was half the start of `benchkit show` (~0.05 s
    # of ~0.1 s), which reads samples and validates none.
    import jsonschema
    schema = json.loads((SCHEMA_DIR / "sample.schema.json").read_text())
    return jsonschema.Draft202012Validator(schema)


def validate_sample(sample: dict) -> None:
    errors = sorted(_validator().iter_errors(sample), key=lambda e: list(e.absolute_path))
    if errors:
        where = "/".join(map(str, errors[0].absolute_path)) or "(top)"
        raise StoreError(f"sample for {sample.get('arm')}/{sample.get('task')} does not match "
                         f"sample.schema.json at {where}: {errors[0].message}")


class Store:
    def __init__(self, root: str | os.PathLike, secrets: Iterable[str] = ()):
        self.root = Path(root)
        self.secrets = tuple(s for s in secrets if s)
        self.problems: list[str] = []  # unreadable lines met by samples(), as FILE:LINE: why
        self.refused: Unwritable | None = None  # the first write the file system refused

    def cell_path(self, arm: str, task: str) -> Path:
        return self.root / _safe(arm) / f"{_safe(task)}.jsonl"

    def transcript_path(self, arm: str, task: str, sample_id: str) -> Path:
        return self.root / _safe(arm) / _safe(task) / f"{_safe(sample_id)}.json"

    def write_transcript(self, arm: str, task: str, sample_id: str, events: list[Event],
                         secrets: Iterable[str] = ()) -> str:
        """Write a transcript (scrubbed); return its path relative to the store."""
        path = self.transcript_path(arm, task, sample_id)
        text = scrub(json.dumps(events, indent=1, ensure_ascii=False, default=str),
                     (*self.secrets, *secrets))
        tmp = path.with_suffix(".tmp")
        with self._writing(path):
            path.parent.mkdir(parents=True, exist_ok=True)
            try:
                with open(tmp, "w", encoding="utf-8") as f:
                    f.write(text + "\n")
                    f.flush()
                    os.fsync(f.fileno())
                os.replace(tmp, path)
            except BaseException:
                tmp.unlink(missing_ok=True)  # whole or absent
                raise
        return path.relative_to(self.root).as_posix()

    def append(self, record: Record, secrets: Iterable[str] = ()) -> Record:
        """Validate, scrub and append one sample as one line; return what was stored."""
        validate_sample(msgspec.to_builtins(record))
        line = scrub(ENCODER.encode(record).decode(), (*self.secrets, *secrets))
        stored = decode_record(line)
        path = self.cell_path(record.arm, record.task)
        with self._writing(path):
            self._append_line(path, line)
        return stored

    def append_line(self, path: Path, line: str) -> None:
        """Append one line another store holds as it is there (`benchkit merge`: it was
        checked and scrubbed when it was first stored) to the file `path` of this store."""
        with self._writing(path):
            self._append_line(path, line)

    @contextlib.contextmanager
    def _writing(self, path: Path) -> Iterator[None]:
        """writing(path), remembering the refusal: a run ends on it with exit 2."""
        try:
            with writing(path):
                yield
        except Unwritable as refused:
            self.refused = self.refused or refused
            raise

    @staticmethod
    def _append_line(path: Path, line: str) -> None:
        path.parent.mkdir(parents=True, exist_ok=True)
        with open(path, "ab", buffering=0) as f:
            fcntl.flock(f, fcntl.LOCK_EX)  # other processes' appends wait; released on close
            try:
                size = f.seek(0, os.SEEK_END)
                data = line.encode() + b"\n"
                if size and not _ends_with_newline(path):
                    data = b"\n" + data  # a torn line left by a crash stays alone on its line
                try:
                    _write_all(f.fileno(), data)
                    os.fsync(f.fileno())
                except OSError:
                    os.ftruncate(f.fileno(), size)  # no partial line: the store as it was
                    raise
            finally:
                fcntl.flock(f, fcntl.LOCK_UN)

    @property
    def failure_replays_path(self) -> Path:
        """Failure replays' verdicts, one JSON line each, keyed by the trial's id: beside
        the arms' directories, so no reader takes them for samples."""
        return self.root / FAILURE_REPLAYS

    def append_failure_replay(self, entry: FailureReplay, secrets: Iterable[str] = ()) -> None:
        """Append a failure replay's verdict (scrubbed); samples are never rewritten."""
        line = scrub(replays.encode(entry), (*self.secrets, *secrets))
        with self._writing(self.failure_replays_path):
            self._append_line(self.failure_replays_path, line)

    def failure_replays(self) -> dict[str, FailureReplay]:
        """trial id -> its failure replay's verdict (the last, if replayed twice);
        lines that are no verdict are skipped."""
        found: dict[str, FailureReplay] = {}
        try:
            lines = self.failure_replays_path.read_text(encoding="utf-8").splitlines()
        except FileNotFoundError:
            return found
        for line in lines:
            entry = replays.decode(line)
            if entry is not None:
                found[entry.trial] = entry
        return found

    def check_writable(self) -> None:
        """Raise Unwritable when the store cannot take a sample (a read-only or foreign
        directory): what a run checks before it starts a host."""
        check_writable(self.root)

    @contextlib.contextmanager
    def run_lock(self, waiting: Callable[[str], None] | None = None):
        """Hold the store's run lock: another run on this store waits until this one
        is over (told through `waiting`), then plans from what this one stored."""
        with writing(self.root / RUN_LOCK):
            self.root.mkdir(parents=True, exist_ok=True)
        # Where earlier versions kept it, beside the store: honoured while it is there
        # (a run of one of them may hold it), then removed.
        old = self.root.parent / f".{self.root.name}{RUN_LOCK}"
        paths = [self.root / RUN_LOCK, *([old] if old.exists() else [])]
        told = False
        # Imported here, measured: filelock was ~10 ms of the start of `benchkit show`
        # (~0.1 s of imports), which reads the store and takes no lock.
        import filelock
        with contextlib.ExitStack() as held:
            for path in paths:
                lock = filelock.FileLock(path)
                try:
                    lock.acquire(timeout=0)
                except filelock.Timeout:
                    if waiting and not told:
                        waiting(f"another run is using the store {self.root}: "
                                "waiting for it to end")
                        told = True
                    lock.acquire()
                held.callback(lock.release)
            old.unlink(missing_ok=True)
            yield

    def keep_arm(self, arm_id: str, document: str | os.PathLike) -> None:
        """Keep the arm document a run took from outside the tree, as `.arms/<id>.yaml`
        (a newer one of the same id replaces it, as an edit of arms.d/ would)."""
        path = self.root / ARMS / f"{_safe(arm_id)}.yaml"
        with self._writing(path):
            path.parent.mkdir(parents=True, exist_ok=True)
            tmp = path.with_suffix(".tmp")
            tmp.write_bytes(Path(document).read_bytes())
            os.replace(tmp, path)

    def kept_arms(self) -> list[Path]:
        """The arm documents runs took from outside the tree (keep_arm), by id."""
        return sorted((self.root / ARMS).glob("*.yaml"))

    def files(self, arm: str | None = None, task: str | None = None) -> list[Path]:
        """The cell files, optionally of one arm and/or task, in name order."""
        arms = [self.root / _safe(arm)] if arm else sorted(p for p in self.root.glob("*") if p.is_dir())
        return [path for arm_dir in arms
                for path in ([arm_dir / f"{_safe(task)}.jsonl"] if task
                             else sorted(arm_dir.glob("*.jsonl")))
                if path.is_file()]

    def samples(self, arm: str | None = None, task: str | None = None) -> Iterator[dict]:
        """Every stored sample, optionally of one arm and/or task, file by file in
        name order, lines in append order. Unparsable lines are skipped and noted in
        `problems`."""
        for path in self.files(arm, task):
            yield from self._read(path)

    def _read(self, path: Path) -> Iterator[dict]:
        # Decoded twice (the Sample view decides, then the whole line): `show` and the
        # trial pages read whole samples, and only the one rule says what is a sample.
        with open(path, "rb") as f:
            for number, line in enumerate(f, 1):
                if not line.strip():
                    continue
                _, problem = decode_sample(line)  # the one rule of what is a sample
                if problem:
                    self.problems.append(f"{path}:{number}: not a sample: {problem}")
                    continue
                yield json.loads(line)


FAILURE_REPLAYS = "failure-replays.jsonl"


class GatedStore(Store):
    """The store, closed to a trial once the run stopped."""

    def __init__(self, root: str | os.PathLike, secrets: Iterable[str] = (), *, stop: Stop):
        super().__init__(root, secrets)
        self.stop = stop

    def append(self, record: Record, secrets: Iterable[str] = ()) -> Record:
        if self.stop.is_set():
            raise Interrupted()
        return super().append(record, secrets)

    def write_transcript(self, arm: str, task: str, sample_id: str, events: list[Event],
                         secrets: Iterable[str] = ()) -> str:
        if self.stop.is_set():
            raise Interrupted()
        return super().write_transcript(arm, task, sample_id, events, secrets)


def _write_all(fd: int, data: bytes) -> None:
    """os.write until every byte is written (a write may take only part of them)."""
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view):]


def _ends_with_newline(path: Path) -> bool:
    with open(path, "rb") as f:
        f.seek(-1, os.SEEK_END)
        return f.read(1) == b"\n"


def _safe(name: str) -> str:
    """A path component: arm, task and sample ids never climb out of the store."""
    if not name or name in (".", "..") or "/" in name or "\\" in name or "\0" in name:
        raise StoreError(f"not usable as a store name: {name!r}")
    return name
