"""Pass 3 of the parser: wrappers that run their arguments (env, command, exec, nice,
nohup, time, timeout, xargs, find -exec, sudo, ...) unwrapped into the commands they run."""

from __future__ import annotations

from collections.abc import Callable, Sequence

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

Words = Sequence[Word]


def unwrap(command: Command, depth: int = 0) -> list[Command]:
    """The command and, recursively, the commands its wrapper runs."""
    if depth > MAX_NESTING:
        raise ParseError("wrappers nested too deeply")
    name = command.name.literal if command.name else None
    found = [command]
    for inner in _WRAPPERS[name](command.words) if name in _WRAPPERS else ():
        found += unwrap(inner, depth + 1)
    return found


def _runs(words: Words, start: int, via: str) -> list[Command]:
    rest = tuple(words[start:])
    return [Command(rest, via=via)] if rest else []


def _placeholder(words: Words, placeholder: str) -> tuple[Word, ...]:
    """Words holding `placeholder` (xargs -I, find's {}) are only known at run time."""
    return tuple(Word(w.text, None, w.pattern, w.text.split(placeholder)[0])
                 if placeholder in w.text else w for w in words)


def _unknown(words: Words, via: str) -> list[Command]:
    """What a wrapper runs when its own options are only known at run time."""
    shown = " ".join(w.text for w in words)
    return [Command((Word(shown, None, prefix=""),), via=via)]


def _wrapper(options: Options, positionals: int = 0) -> Callable[[Words], list[Command]]:
    """A wrapper that runs its first operand (after `positionals` more) as a command."""
    def inner(words: Words) -> list[Command]:
        parsed = getopt(words, options)
        if parsed.has(UNREADABLE):
            return _unknown(words, words[0].text)
        return _runs(words, parsed.end + positionals, words[0].text)
    return inner


def _env(words: Words) -> list[Command]:
    parsed = getopt(words, ENV)
    if parsed.has(UNREADABLE):
        return _unknown(words, "env")
    start = parsed.end
    assignments: list[Word] = []
    while start < len(words):  # `-` and NAME=value words before the command
        literal = words[start].literal
        if literal != "-" and not ASSIGNMENT.match(
                words[start].prefix if literal is None else literal):
            break
        if literal != "-":
            assignments.append(words[start])
        start += 1
    rest = tuple(words[start:])
    return [Command(rest, assignments=tuple(assignments), via="env")] if rest else []


def _command(words: Words) -> list[Command]:
    parsed = getopt(words, COMMAND)
    if parsed.has("-v", "-V"):
        return []  # a look-up, nothing runs
    return _runs(words, parsed.end, "command")


def _xargs(words: Words) -> list[Command]:
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


def _find(words: Words) -> list[Command]:
    found: list[Command] = []
    i = 1
    while i < len(words):
        action = words[i].literal
        if action in ("-exec", "-execdir", "-ok", "-okdir"):
            end = i + 1
            while end < len(words) and words[end].literal not in (";", "+"):
                end += 1
            if end > i + 1:
                found.append(Command(_placeholder(words[i + 1:end], "{}"),
                                     via=f"find {action}"))
            i = end
        i += 1
    return found


_WRAPPERS: dict[str, Callable[[Words], list[Command]]] = {
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
