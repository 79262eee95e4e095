"""Pass 3 of the parser: wrappers that run their arguments (env, command, exec, nice,
nohup, time, timeout, xargs, find -exec, sudo, ...) unwrapped into the commands they run."""

from __future__ import annotations

from .options import (
    BUILTIN,
    COMMAND,
    DOAS,
    ENV,
    EXEC,
    NICE,
    NOHUP,
    SETSID,
    STDBUF,
    SUDO,
    TIME,
    TIMEOUT,
    UNREADABLE,
    XARGS,
    Options,
    getopt,
)
from .syntax import ASSIGNMENT, MAX_NESTING, Command, ParseError
from .words import Word, literal_word


def unwrap(command: Command, depth: int = 0) -> list[Command]:
    """The command and, recursively, the commands its wrapper runs."""
    if depth > MAX_NESTING:
        raise ParseError("wrappers nested too deeply")
    name = command.name.literal if command.name else None
    found = [command]
    for inner in _WRAPPERS[name](command.words) if name in _WRAPPERS else ():
        found += unwrap(inner, depth + 1)
    return found


def _runs(words, start: int, via: str, **marks) -> list[Command]:
    rest = tuple(words[start:])
    return [Command(rest, via=via, **marks)] if rest else []


def _placeholder(words, placeholder: str) -> tuple[Word, ...]:
    """Words holding `placeholder` (xargs -I, find's {}) are only known at run time."""
    return tuple(Word(w.text, None, w.pattern, w.text.split(placeholder)[0])
                 if placeholder in w.text else w for w in words)


def _unknown(words, via: str) -> list[Command]:
    """What a wrapper runs when its own options are only known at run time."""
    shown = " ".join(w.text for w in words)
    return [Command((Word(shown, None, prefix=""),), via=via)]


def _wrapper(options: Options, positionals: int = 0):
    """A wrapper that runs its first operand (after `positionals` more) as a command."""
    def inner(words):
        parsed = getopt(words, options)
        if parsed.has(UNREADABLE):
            return _unknown(words, words[0].text)
        return _runs(words, parsed.end + positionals, words[0].text)
    return inner


def _env(words):
    parsed = getopt(words, ENV)
    if parsed.has(UNREADABLE):
        return _unknown(words, "env")
    start, assignments = parsed.end, []
    while start < len(words) and (words[start].literal == "-" or ASSIGNMENT.match(
            words[start].prefix if words[start].literal is None else words[start].literal)):
        if words[start].literal != "-":
            assignments.append(words[start])
        start += 1
    rest = tuple(words[start:])
    return [Command(rest, assignments=tuple(assignments), via="env")] if rest else []


def _command(words):
    parsed = getopt(words, COMMAND)
    if parsed.has("-v", "-V"):
        return []  # a look-up, nothing runs
    return _runs(words, parsed.end, "command")


def _xargs(words):
    parsed = getopt(words, XARGS)
    if parsed.has(UNREADABLE):
        return _unknown(words, "xargs")
    replace = None
    for flag, value in parsed.options:
        if flag in ("-I", "-i", "--replace"):
            replace = value.text if value else "{}"
    rest = tuple(words[parsed.end:]) or (literal_word("echo"),)
    if replace:  # -I puts each input line in place of the placeholder, appending nothing
        return [Command(_placeholder(rest, replace), via="xargs")]
    return [Command(rest, via="xargs", open_ended=True)]


def _find(words):
    found, i = [], 1
    while i < len(words):
        if words[i].literal in ("-exec", "-execdir", "-ok", "-okdir"):
            end = i + 1
            while end < len(words) and words[end].literal not in (";", "+"):
                end += 1
            if end > i + 1:
                found.append(Command(_placeholder(words[i + 1:end], "{}"),
                                     via="find " + words[i].literal))
            i = end
        i += 1
    return found


_WRAPPERS = {
    "env": _env,
    "command": _command,
    "builtin": _wrapper(BUILTIN),
    "exec": _wrapper(EXEC),
    "nice": _wrapper(NICE),
    "nohup": _wrapper(NOHUP),
    "time": _wrapper(TIME),
    "timeout": _wrapper(TIMEOUT, positionals=1),
    "stdbuf": _wrapper(STDBUF),
    "setsid": _wrapper(SETSID),
    "sudo": _wrapper(SUDO),
    "doas": _wrapper(DOAS),
    "xargs": _xargs,
    "find": _find,
}
