"""The curated bin directory: an arm's one binary, what that binary needs to start, and
the permitted utilities, as symlinks to the real programs found on the harness's PATH
(their real files, every link on the way resolved: the sandbox then shows only those
files, or an npm package's directory, of a directory it hides).
The agent's PATH is this directory alone: defence in depth behind the guard, which
stays the authority (a program linked here only so the binary can start, such as the
`node` of a `#!/usr/bin/env node` script, is still denied to the agent by the guard).
"""

from __future__ import annotations

import os
import shutil
from pathlib import Path

from benchkit.tool import ToolSpec

from .errors import IsolationError
from .guard import UTILITIES

# How deep the kernel follows a script whose interpreter is itself a script.
INTERPRETER_DEPTH = 4
SHEBANG_BYTES = 256


def make_bin_dir(arm_id: str, tool: ToolSpec, dest: Path, search_path: str | None = None
                 ) -> Path:
    """Fill `dest` with links to the arm's binary, the programs its start needs on PATH
    and the utilities found on `search_path` (default: this process's PATH). The MCP
    arm gets an empty directory. A missing arm binary, or a missing program its start
    needs, is an IsolationError; a missing utility is left out."""
    dest = Path(dest)
    search_path = _without(os.environ.get("PATH", os.defpath) if search_path is None
                           else search_path, dest)
    dest.mkdir(parents=True, exist_ok=True)
    for entry in dest.iterdir():
        if not entry.is_symlink():
            raise IsolationError(f"{dest} holds {entry.name}, which is not a link: "
                                 "not a bin directory benchkit made")
        entry.unlink()
    if tool.kind != "shell":
        return dest
    binary = tool.executable
    found = find_binary(arm_id, binary, search_path)
    (dest / binary).symlink_to(os.path.realpath(found))
    needed = start_needs(found, search_path, what=f"arm {arm_id}: its binary `{binary}`")
    for name, target in needed.items():
        if name != binary:
            (dest / name).symlink_to(os.path.realpath(target))
    for name in UTILITIES:
        utility = shutil.which(name, path=search_path)
        if utility and name != binary and name not in needed:
            (dest / name).symlink_to(os.path.realpath(utility))
    return dest


def find_binary(arm_id: str, binary: str, search_path: str) -> str:
    """The arm's binary on `search_path`, or an IsolationError saying it is missing."""
    found = shutil.which(binary, path=search_path)
    if found is None:
        raise IsolationError(f"arm {arm_id}: its binary `{binary}` is not installed "
                             f"(not found on PATH={search_path})")
    return found


def start_needs(program: str, search_path: str, *, what: str) -> dict[str, str]:
    """name -> path of every program the kernel must find on PATH to start `program`:
    following symlinks to the real file, a `#!` script's interpreter is run by its path,
    and `#!/usr/bin/env NAME` (or `env -S NAME ...`) looks NAME up on PATH; an
    interpreter that is itself a script is followed in turn. IsolationError when an
    interpreter is missing."""
    needed: dict[str, str] = {}
    current = program
    for _ in range(INTERPRETER_DEPTH):
        line = _shebang(os.path.realpath(current))
        if line is None:
            return needed
        interpreter, argument = line
        if not os.access(interpreter, os.X_OK):
            raise IsolationError(f"{what} starts with `#!{interpreter}`, which is not an "
                                 "executable file here")
        current = interpreter
        name = _env_lookup(interpreter, argument)
        if name is not None:
            target = shutil.which(name, path=search_path)
            if target is None:
                raise IsolationError(f"{what} starts with `#!{interpreter} {argument}`, and "
                                     f"`{name}` is not on PATH={search_path}")
            needed[name] = current = os.path.abspath(target)
    raise IsolationError(f"{what}: its interpreters nest deeper than {INTERPRETER_DEPTH}")


def _shebang(path: str) -> tuple[str, str] | None:
    """(interpreter, optional argument) of a `#!` file, None for any other file. As the
    kernel reads it: the interpreter up to the first blank, the rest as one argument."""
    try:
        with open(path, "rb") as file:
            head = file.read(SHEBANG_BYTES)
    except OSError:
        return None
    if not head.startswith(b"#!"):
        return None
    line = head[2:].split(b"\n", 1)[0].decode("utf-8", "replace").strip()
    interpreter, _, argument = line.partition(" ")
    return (interpreter, argument.strip()) if interpreter else None


def _env_lookup(interpreter: str, argument: str) -> str | None:
    """The program `env` will look up on PATH, when the interpreter is env."""
    if os.path.basename(interpreter) != "env" or not argument:
        return None
    words = argument.split()
    if words[0] in ("-S", "--split-string"):
        words = words[1:]
    elif words[0].startswith("-S"):
        words = [words[0][2:], *words[1:]]
    words = [w for w in words if "=" not in w]  # env's NAME=VALUE assignments
    return words[0] if words and not words[0].startswith("-") else None


def virtual_env(program: str | None) -> str | None:
    """The Python virtual environment a program is run from (`VENV/bin/NAME`, with
    `VENV/pyvenv.cfg`), as found on PATH, its links not followed: Python activates the
    environment only when started by that path, so the agent's PATH must name `VENV/bin`
    itself. None for any other program."""
    if program is None:
        return None
    bin_dir = os.path.dirname(os.path.abspath(program))
    venv = os.path.dirname(bin_dir)
    if os.path.basename(bin_dir) == "bin" and os.path.isfile(os.path.join(venv, "pyvenv.cfg")):
        return venv
    return None


def _without(search_path: str, dest: Path) -> str:
    """The search path without our own bin directory: never resolve a name to one of
    our links."""
    return os.pathsep.join(d for d in search_path.split(os.pathsep)
                           if d and _resolved(d) != _resolved(dest))


def _resolved(path: str | Path) -> str:
    return os.path.realpath(os.path.abspath(path))
