"""Where a line may write: every file a redirection or a permitted program would write
must stay in the trial's own places (the guard's module docstring says which), and a
line that leaves the working directory may write no relative path at all."""

from __future__ import annotations

import functools
import re
from dataclasses import dataclass

from .options import CD, ENV, UNREADABLE, getopt
from .programs import WRITERS, below, declared_writes, find_start_points, stays
from .syntax import Command, Redirect
from .values import Values
from .words import Word

_NETWORK = re.compile(r"/dev/+(tcp|udp)(/|$)")
_NETWORK_DEVICES = ("/dev/tcp/", "/dev/udp/")
# Redirections that open their target for writing (`>&` too, when it names a file).
_WRITING = frozenset({">", ">>", ">|", "&>", "&>>", "<>", ">&"})
_DEVICES = re.compile(r"/dev/(null|stdout|stderr|fd/[0-9]+)")
# The trial's scratch space: a private tmpfs inside the sandbox.
_SCRATCH = ("/tmp/", "/var/tmp/")
_WHERE = ("files may be written only inside the working directory (a relative path without "
          "`..`), below /tmp, or to /dev/null, /dev/stdout or /dev/stderr")


@dataclass(frozen=True)
class Where:
    """Where a line may write: `moved` is the command that leaves the working directory
    (then no file), `values` what its variables may hold (for names built of them)."""

    moved: str | None
    values: Values | None = None


def redirect_violation(redirect: Redirect, where: Where) -> str | None:
    target = redirect.target
    if redirect.op in ("<<", "<<-", "<<<"):
        return None  # heredoc and here-string bodies are data
    if redirect.op in ("<&", ">&") and re.fullmatch(r"[0-9]*-?", target.literal or "x"):
        return None  # duplicating or closing a descriptor
    if _NETWORK.search(target.text):
        return ("Network redirections (/dev/tcp, /dev/udp) are not allowed: reach the host with "
                "this session's tool.")
    if redirect.op in _WRITING:
        return target_violation(target, "The redirection", where)
    if target.literal is None and not _process_substitution(target):
        # (A word opening with a process substitution is a /dev/fd/ path, never a device.)
        prefix = re.sub("/+", "/", target.prefix)
        if any(device.startswith(prefix) or prefix.startswith(device)
               for device in _NETWORK_DEVICES):
            return (f"The redirection target `{target.text}` is only known at run time: name "
                    "the file literally.")
    return None


def _process_substitution(word: Word) -> bool:
    """A word that is one <(...) or >(...): bash passes a /dev/fd/ path for it."""
    return word.prefix == "" and word.text[:2] in ("<(", ">(") and word.text.endswith(")")


def writable(path: str) -> bool:
    """Whether a path stays in the trial's own places: below the working directory, or
    below /tmp (without `..` either way)."""
    scratch = re.sub("/+", "/", path).startswith(_SCRATCH)
    return (below(path) or scratch) and ".." not in path.split("/")


def target_violation(word: Word, what: str, where: Where) -> str | None:
    """Why `what` (e.g. "The redirection", "`tee`") may not write to the file `word`."""
    if _process_substitution(word):
        return None
    path = word.literal
    if path is None:
        built = (where.values is not None and not word.prefix.startswith("~")
                 and where.values.path_safe(word))
        if not built:
            return (f"{what} writes to `{word.text}`, which is only known at run time: name the "
                    "file literally (a relative path), or build it from variables that hold no "
                    "`/` (loop numbers, literal words).")
        path = word.prefix + "x"
    if _DEVICES.fullmatch(re.sub("/+", "/", path)):
        return None
    if not writable(path):
        return f"{what} writes to `{word.text}`, outside the working directory: {_WHERE}."
    if where.moved and not path.startswith("/"):
        return (f"{what} writes to `{word.text}` after `{where.moved}` has left the working "
                f"directory: {_WHERE}, in a line that stays there.")
    return None


def directory_change(cmd: Command) -> str | None:
    """The command's text when it leaves the working directory (or may: `cd` alone goes
    home, `cd -` back, `popd` wherever the stack says), else None."""
    name = cmd.name.literal if cmd.name else None
    if name in ("cd", "pushd"):
        operands = getopt(cmd.words, CD).operands
        target = operands[0].literal if operands else None
        if target is None or not below(target) or target.startswith(("-", "+")):
            return cmd.text
    elif name == "popd":
        return cmd.text
    elif name == "env":
        parsed = getopt(cmd.words, ENV)
        if parsed.has(UNREADABLE) or any(value is None or not stays(value)
                                         for value in parsed.values("-C", "--chdir")):
            return cmd.text
    elif name == "find" and any(w.literal in ("-execdir", "-okdir") for w in cmd.words):
        if not all(stays(w) for w in find_start_points(cmd.words)):
            return cmd.text  # -execdir runs in each found file's directory
    return None


# Programs whose arguments decide what they run or write: under xargs, which appends
# arguments only known at run time, none may run (xargs -I puts them in place instead).
_ARGUMENTS_MATTER = frozenset({"curl", "tee", "uniq", "sort", "sed", "awk", "find", "mktemp",
                               "env", "nice", "nohup", "timeout", "time", "xargs", "mkdir"})


def writes_violation(cmd: Command, name: str, where: Where,
                     declared: tuple[str, ...] = ()) -> str | None:
    """Why the program `name` may not write the files its arguments name; `declared`:
    the options an arm's own binary writes files through (its `tool.writes`)."""
    if cmd.open_ended and (name in _ARGUMENTS_MATTER or declared):
        return (f"`xargs` appends arguments only known at run time, and they could make `{name}` "
                f"write files or run programs: put them in place with "
                f"`xargs -I{{}} {name} ... {{}}`.")
    found: list[tuple[Word | None, str]] = []
    for writer in (WRITERS.get(name), functools.partial(declared_writes, options=declared)
                   if declared else None):
        written = writer(cmd) if writer is not None else []
        if isinstance(written, str):
            return written
        found += written
    for word, what in found:
        reason = target_violation(word, what, where) if word is not None else None
        if reason:
            return reason
    return None
