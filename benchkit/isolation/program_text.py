"""sed and awk programs read as text: what a program runs and which files it writes,
without running it (the command lines around them are programs.py's)."""

from __future__ import annotations

import re

_REGEX_MAY_FOLLOW = set("(,~!{};&|=:?+-*%<>^[\n")


def bracket_end(text: str, i: int) -> int:
    """The index after a POSIX bracket expression opening at text[i] (`[`): a `]` right
    after `[` or `[^` is literal, `[:...:]`, `[=...=]` and `[.....]` nest; a backslash is
    literal inside. GNU sed and awk read their regex delimiters this way."""
    n, j = len(text), i + 1
    if j < n and text[j] == "^":
        j += 1
    if j < n and text[j] == "]":
        j += 1
    while j < n and text[j] != "]":
        if text[j] == "[" and j + 1 < n and text[j + 1] in ":=.":
            close = text.find(text[j + 1] + "]", j + 2)
            if close < 0:
                raise ValueError("a bracket expression is not terminated")
            j = close + 2
            continue
        if text[j] == "\n":
            break
        j += 1
    if j >= n or text[j] != "]":
        raise ValueError("a bracket expression is not terminated")
    return j + 1


def sed_effects(program: str) -> tuple[bool, list[str]]:
    """Whether a GNU sed program runs commands (the `e` command, the `s///e` flag), and
    the files its `w` and `W` commands and `s///w` flag write; ValueError where it
    cannot be read."""
    i, n = 0, len(program)
    executes, writes = False, []

    def delimited(i: int, parts: int, regex: bool = True) -> int:
        """Skip `parts` parts delimited by program[i] (s and y; a regex part's bracket
        expressions hide the delimiter); return the index after."""
        delimiter = program[i] if i < n else ""
        if delimiter in ("", "\n", "\\"):
            raise ValueError("a delimiter is missing")
        i += 1
        for part in range(parts):
            while i < n and program[i] != delimiter:
                if program[i] == "[" and regex and part == 0:
                    i = bracket_end(program, i)
                else:
                    i += 2 if program[i] == "\\" else 1
            if i >= n:
                raise ValueError("an expression is not terminated")
            i += 1
        return i

    def address(i: int) -> int:
        if i < n and program[i] in "0123456789":
            while i < n and program[i] in "0123456789~":
                i += 1
        elif i < n and program[i] == "$":
            i += 1
        elif i < n and program[i] == "/":
            i = delimited(i, 1)
        elif i < n and program[i] == "\\":
            i = delimited(i + 1, 1)
        else:
            return i
        while i < n and program[i] in "IM":
            i += 1
        return i

    def line_end(i: int) -> int:
        end = program.find("\n", i)
        return n if end < 0 else end

    while i < n:
        c = program[i]
        if c in " \t\n;{}":
            i += 1
            continue
        i = address(i)
        if i < n and program[i] == ",":
            i += 1
            i = address(i + 1) if i < n and program[i] in "+~" else address(i)
        while i < n and program[i] in " \t!":
            i += 1
        if i >= n:
            raise ValueError("a command is missing")
        c, i = program[i], i + 1
        if c == "e":
            executes, i = True, line_end(i)  # its command runs to the end of the line
        elif c == "s":
            i = delimited(i, 2)
            flags = i
            while i < n and program[i] in "gpiImMe0123456789":
                i += 1
            executes = executes or "e" in program[flags:i]
            if i < n and program[i] == "w":
                end = line_end(i)
                writes.append(program[i + 1:end].strip())
                i = end
        elif c == "y":
            i = delimited(i, 2, regex=False)
        elif c in "aicrRwW#":
            start = i
            while True:  # text, file name, label or comment: to the end of the line
                i = line_end(i)
                if c in "aic" and program[i - 1:i] == "\\" and i < n:
                    i += 1
                    continue
                break
            if c in "wW":
                writes.append(program[start:i].strip())
        elif c in "btTv:":
            while i < n and program[i] not in ";\n}":
                i += 1
        elif c in "qQlL":
            while i < n and program[i] in " 0123456789":
                i += 1
        elif c not in "=dDgGhHnNpPxzF{}":
            raise ValueError(f"unknown command `{c}`")
    return executes, writes


def awk_runs_commands(code: str) -> bool:
    """Whether awk code (strings, regex literals and comments blanked: `awk_code`) calls
    system(), pipes (`|`, `|&`) or uses `@` (gawk's indirect calls and extensions)."""
    return bool(re.search(r"\bsystem\s*\(|\||@", code.replace("||", " ")))


def awk_code(program: str) -> str:
    """The program with strings, regex literals and comments blanked out, and its
    backslash-newline continuations joined (`system\\` then a newline is `system`)."""
    program = program.replace("\\\r\n", "").replace("\\\n", "")
    code, i, previous, before = [], 0, "\n", "\n"
    while i < len(program):
        c = program[i]
        increment = previous in "+-" and before == previous  # `a++ / 2` divides
        if c == '"' or (c == "/" and previous in _REGEX_MAY_FOLLOW and not increment):
            i += 1
            while i < len(program) and program[i] != c:
                if c == "/" and program[i] == "[":
                    i = bracket_end(program, i)
                    continue
                i += 2 if program[i] == "\\" else 1
            code.append(" ")
            before, previous = previous, "x"
        elif c == "#":
            while i < len(program) and program[i] != "\n":
                i += 1
            continue
        else:
            code.append(c)
            if not c.isspace() or c == "\n":
                before, previous = previous, c
        i += 1
    return "".join(code)


def awk_writes(code: str) -> bool:
    """Whether awk code redirects print or printf into a file (`> f`, `>> f`): a `>`
    outside parentheses in a print statement is a redirection, not a comparison."""
    for statement in re.finditer(r"\bprintf?\b", code):
        depth = 0
        for c in code[statement.end():]:
            if c in "([":
                depth += 1
            elif c in ")]":
                depth -= 1
            elif depth <= 0 and c in ";}\n":
                break
            elif depth <= 0 and c == ">":
                return True
    return False
