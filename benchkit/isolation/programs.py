"""The permitted utilities whose arguments decide what they run or write: sed and awk
(their programs read by program_text.py), curl's write options, sort, env, and the
files each one writes.

Each writer returns the (word, what) pairs of the files a command writes (a word of
None: a missing value, which the program refuses itself), or why it may not run.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence

from .options import (
    AWK,
    CURL,
    ENV,
    MKDIR,
    MKTEMP,
    SED,
    SORT,
    TEE,
    TIME,
    UNIQ,
    UNREADABLE,
    getopt,
)
from .program_text import awk_code, awk_runs_commands, awk_writes, sed_effects
from .syntax import Command
from .words import Word, literal_word

# The files a command writes, each (its word, what writes it), or why it may not run.
Writes = list[tuple[Word | None, str]] | str

_UNREADABLE = ("`{}` options only known at run time (`{}`) could make it write files or run "
               "programs: write its options literally.")


def literal_arguments(cmd: Command) -> str | None:
    """For utilities whose options can run programs, every argument must be literal."""
    for word in cmd.words[1:]:
        if word.value is None:
            return (f"`{cmd.words[0].literal}` arguments must be literal here (`{word.text}` is only "
                    "known at run time, and could be an option that runs a program).")
    return None


def below(path: str) -> bool:
    """Whether a literal path stays below the working directory."""
    return not path.startswith("/") and ".." not in path.split("/")


def stays(word: Word) -> bool:
    return word.literal is not None and below(word.literal)


def find_start_points(words: Sequence[Word]) -> list[Word]:
    """find's starting points: after its -H/-L/-P/-D/-O options, before the expression."""
    i = 1
    while i < len(words) and (words[i].literal or "").startswith(("-H", "-L", "-P", "-D", "-O")):
        i += 2 if words[i].literal == "-D" else 1
    points = []
    for word in words[i:]:
        text = word.literal or ""
        if text.startswith("-") or text in ("(", "!", ")", ","):
            break
        points.append(word)
    return points or [literal_word(".")]


# --- sed ------------------------------------------------------------------------------

_SED_IN_PLACE = ("`sed -i` (in-place editing) is not allowed in this session: write the output "
                 "with `>` to a new file instead.")
_SED_FILE = ("`sed -f` reads a program the guard cannot check: give the program inline "
             "(`sed -e '...'`).")


def sed_programs(cmd: Command) -> list[str] | str:
    """The sed program pieces of the command line, or why they cannot be read."""
    reason = literal_arguments(cmd)
    if reason:
        return reason
    parsed = getopt(cmd.words, SED)
    if parsed.has("-i", "--in-place"):
        return _SED_IN_PLACE
    if parsed.has("-f", "--file"):
        return _SED_FILE
    pieces = [v for v in parsed.values("-e", "--expression") if v is not None]
    pieces = pieces or parsed.operands[:1]
    return [w.value for w in pieces if w.value is not None]  # all are (literal_arguments)


def _sed_effects(cmd: Command) -> tuple[bool, list[str]] | str:
    """(whether the program runs commands, the files it writes), or why it cannot tell."""
    programs = sed_programs(cmd)
    if isinstance(programs, str):
        return programs
    try:  # sed joins its -e pieces with newlines into one program
        return sed_effects("\n".join(programs))
    except ValueError as error:
        return f"The guard could not read this sed program ({error}): simplify it."


def check_sed(cmd: Command) -> str | None:
    effects = _sed_effects(cmd)
    if isinstance(effects, str):
        return effects
    if effects[0]:
        return ("sed's `e` command and `s///e` flag run shell commands and are not allowed "
                "in this session.")
    return None


# --- awk ------------------------------------------------------------------------------

def check_awk(cmd: Command) -> str | None:
    parsed = getopt(cmd.words, AWK)
    if parsed.has(UNREADABLE):
        return _UNREADABLE.format("awk", cmd.text)
    # -W exec (mawk; gawk's -E) reads the program from a file too.
    if any(flag in ("-f", "--file", "-E", "--exec", "-i", "--include", "-l", "--load") or (
            flag == "-W" and (value is None or value.text not in ("version", "usage", "help")))
           for flag, value in parsed.options):
        return ("awk programs from files or extensions cannot be checked: give the program "
                "inline.")
    programs = parsed.values("-e", "--source")
    if not programs and parsed.operands:
        programs = [parsed.operands[0]]
    for program in programs:
        if program is None:
            continue
        if program.value is None:
            return (f"The awk program `{program.text}` is only known at run time: write it "
                    "literally.")
        try:
            code = awk_code(program.value)
        except ValueError as error:
            return f"The guard could not read this awk program ({error}): simplify it."
        if awk_runs_commands(code):
            return ("awk programs that run commands (system(), pipes to or from commands, "
                    "`| getline`) are not allowed in this session.")
        if awk_writes(code):
            return ("awk's `print > file` writes a file the guard does not place: redirect "
                    "awk's output with the shell's `>` to a relative path instead.")
    return None



# --- sort, env ------------------------------------------------------------------------

def check_sort(cmd: Command) -> str | None:
    reason = literal_arguments(cmd)
    if reason:
        return reason
    if getopt(cmd.words, SORT).has("--compress-program"):
        return "`sort --compress-program` runs a program and is not allowed in this session."
    return None


def check_env(cmd: Command) -> str | None:
    if getopt(cmd.words, ENV).has("-S", "--split-string"):
        return "`env -S` builds a command the guard cannot check: write the command directly."
    return None


# --- the files programs write ---------------------------------------------------------

def _tee_writes(cmd: Command) -> Writes:
    return [(word, "`tee`") for word in getopt(cmd.words, TEE).operands]


def _uniq_writes(cmd: Command) -> Writes:
    return [(word, "`uniq`") for word in getopt(cmd.words, UNIQ).operands[1:2]]  # IN OUT


def _sort_writes(cmd: Command) -> Writes:
    parsed = getopt(cmd.words, SORT)
    return ([(v, "`sort -o`") for v in parsed.values("-o", "--output")]
            + [(v, "`sort -T`") for v in parsed.values("-T", "--temporary-directory")])


def _time_writes(cmd: Command) -> Writes:
    return [(v, "`time -o`") for v in getopt(cmd.words, TIME).values("-o", "--output")]


def _mktemp_writes(cmd: Command) -> Writes:
    parsed = getopt(cmd.words, MKTEMP)
    found: list[tuple[Word | None, str]] = [
        (v, "`mktemp -p`") for v in parsed.values("-p", "--tmpdir") if v is not None]
    # A bare template or -t makes a fresh name in the trial's own temporary directory.
    return found + [(w, "`mktemp`") for w in parsed.operands
                    if w.literal is None or "/" in w.literal]


def _mkdir_writes(cmd: Command) -> Writes:
    return [(w, "`mkdir`") for w in getopt(cmd.words, MKDIR).operands]


def _find_writes(cmd: Command) -> Writes:
    words = cmd.words
    found: list[tuple[Word | None, str]] = []
    for i, word in enumerate(words):
        if word.literal in ("-fprint", "-fprint0", "-fprintf", "-fls"):
            found.append((words[i + 1] if i + 1 < len(words) else None, f"`find {word.literal}`"))
        elif word.literal == "-delete":
            outside = [w.text for w in find_start_points(words) if not stays(w)]
            if outside:
                return (f"`find -delete` from `{outside[0]}` removes files outside the working "
                        "directory: delete only below it (a relative path without `..`).")
    return found


def _sed_writes(cmd: Command) -> Writes:
    effects = _sed_effects(cmd)
    return [] if isinstance(effects, str) else [(literal_word(f), "sed's `w`") for f in effects[1]]


def _awk_writes(cmd: Command) -> Writes:
    return [(value, "awk's output file") for flag, value in getopt(cmd.words, AWK).options
            if value is not None and flag in ("-d", "-o", "-p", "--dump-variables",
                                               "--pretty-print", "--profile")]


_CURL_WRITES = ("-o", "--output", "-D", "--dump-header", "-c", "--cookie-jar", "--output-dir",
                "--trace", "--trace-ascii", "--libcurl", "--stderr", "--etag-save", "--hsts",
                "--alt-svc")
_GLOB_NAME = re.compile(r"#[0-9]")


def _curl_writes(cmd: Command) -> Writes:
    parsed = getopt(cmd.words, CURL)
    if parsed.has(UNREADABLE):
        return _UNREADABLE.format("curl", cmd.text)
    if parsed.has("-K", "--config"):
        return ("`curl -K` reads options from a file the guard cannot check: give them on the "
                "command line.")
    for value in parsed.values("-w", "--write-out"):
        text = value.literal if value is not None else ""
        if text is None or "%output{" in text or text.startswith("@"):
            return ("`curl -w` with `%output{...}`, `@file` (or a format only known at run time) "
                    "writes a file the guard does not place: redirect curl's output with `>` "
                    "instead.")
    urls = [*parsed.operands, *parsed.values("--url")]
    if parsed.has("-T", "--upload-file") and (parsed.has("--proto-default") or any(
            w is not None and "file:" in w.text.lower() for w in urls)):
        return "`curl -T` to a file: URL writes a local file: upload to the Gitea host only."
    found = [(value, f"`curl {flag}`") for flag, value in parsed.options if flag in _CURL_WRITES]
    if not parsed.has("-g", "--globoff") and any(
            value is not None and _GLOB_NAME.search(value.text) for value, _ in found):
        return ("`curl -o` with `#1` names the file after a part of the URL's glob, which the "
                "guard does not place: name the output file literally (or pass --globoff).")
    return found


def declared_writes(cmd: Command, options: Sequence[str]) -> Writes:
    """The files an arm's own binary writes through the options its arm declares
    (`tool.writes`): `-o FILE`, `-oFILE`, `--output FILE`, `--output=FILE`, up to `--`.
    A value only known at run time (`-o"$F"`) is the caller's to place; an option whose
    name is only known then (`-"$X"`) cannot be read. Residual: a short option inside a
    cluster (`-vo FILE`) is not read as one; the OS sandbox still bounds the write."""
    found: list[tuple[Word | None, str]] = []
    words = cmd.words
    for i, word in enumerate(words[1:], 1):
        literal = word.literal
        text = literal if literal is not None else word.prefix
        if literal == "--":
            break
        for option in options:
            attached = option + "=" if option.startswith("--") else option
            shown = f"`{words[0].text} {option}`"
            if literal == option:
                found.append((words[i + 1] if i + 1 < len(words) else None, shown))
            elif text.startswith(attached) and (len(text) > len(option) or literal is None):
                rest = len(attached)
                value = (literal_word(literal[rest:]) if literal is not None
                         else Word(word.text[rest:], None, prefix=word.prefix[rest:]))
                found.append((value, shown))
            elif literal is None and text.startswith("-") and option.startswith(text):
                return (f"`{words[0].text}` options only known at run time (`{word.text}`) "
                        "could make it write files: write its options literally.")
    return found


WRITERS: dict[str, Callable[[Command], Writes]] = {
    "tee": _tee_writes,
    "uniq": _uniq_writes,
    "sort": _sort_writes,
    "time": _time_writes,
    "mktemp": _mktemp_writes,
    "mkdir": _mkdir_writes,
    "find": _find_writes,
    "sed": _sed_writes,
    "awk": _awk_writes,
    "curl": _curl_writes,
}

CHECKS: dict[str, Callable[[Command], str | None]] = {
    "sed": check_sed,
    "awk": check_awk,
    "sort": check_sort,
    "find": literal_arguments,
    "env": check_env,
}
