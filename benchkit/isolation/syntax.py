"""What the parser's passes share: Bash's characters, the sentinels the pre-pass leaves
for the grammar, and the parse tree (simple commands, their redirections and
assignments) that `benchkit.isolation.shell.parse` returns."""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from benchkit.errors import BenchkitError

from .words import Word

# Sentinels, from Unicode's private use area (input holding them is refused):
EXP_OPEN, EXP_CLOSE = "\ue000", "\ue001"  # EXP_OPEN <index into the expansion table> EXP_CLOSE
PATTERN = "\ue002"  # precedes an unquoted * ? [ { ~ : the word may expand to other text
QUOTED = "\ue003"   # precedes quoted text: the word is never an operator or keyword
ARITH = "\ue004"    # a whole (( ... )) arithmetic command
# Refused in input: the sentinels, NUL (no shell word holds one) and lone surrogates
# (undecodable bytes, which no reason could print).
REFUSED = re.compile("[\ue000-\ue004\x00\ud800-\udfff]")

BLANKS = " \t\r"
PUNCTUATION = ";&|()<>\n"
METACHARACTERS = frozenset(PUNCTUATION + BLANKS)  # what ends an unquoted word
NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
ASSIGNMENT = re.compile(r"[A-Za-z_][A-Za-z0-9_]*(\[[^\]]*\])?\+?=")
MAX_NESTING = 40  # deeper than any real command line; keeps recursion bounded


class ParseError(ValueError, BenchkitError):
    """The line cannot be parsed statically; the guard denies it."""


@dataclass(frozen=True)
class Redirect:
    op: str
    target: Word
    fd: str | None = None


@dataclass(frozen=True)
class Command:
    words: tuple[Word, ...]
    redirects: tuple[Redirect, ...] = ()
    assignments: tuple[Word, ...] = ()
    via: str | None = None    # the wrapper that runs it (env, xargs, find -exec, ...)
    open_ended: bool = False  # xargs appends arguments only known at run time

    @property
    def name(self) -> Word | None:
        return self.words[0] if self.words else None

    @property
    def text(self) -> str:
        return " ".join(w.text for w in self.words)


@dataclass(frozen=True)
class Script:
    commands: tuple[Command, ...]
    functions: frozenset[str] = field(default_factory=frozenset)
    expansions: tuple[str, ...] = ()  # the source of every expansion and arithmetic command
