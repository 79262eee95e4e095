"""The shell parser: every command a Bash tool command line would execute.

Two passes, then unwrapping (one module each, sharing `syntax`):
1. A quote-aware pre-pass (`prepass`) rewrites the line for the word splitter. It cuts
   out comments and heredoc bodies, replaces every expansion ($var, ${...}, $(...), `...`,
   <(...), $((...)), $'...') by a sentinel that remembers its source text, marks quoted
   text so that no quoted word can pass for an operator or a keyword, and marks
   unquoted pattern characters. The body of every command or process substitution
   (and of every substitution inside an expanded heredoc) becomes a script of its own.
2. The word splitter (`lexer`, as POSIX `shlex` splits) cuts each script into words
   and operators, and a small recursive-descent grammar (`grammar`) finds the simple
   commands in pipelines, lists, subshells, groups, if/for/while/until/case/select,
   functions, [[ ]] and (( )), with their redirections and leading assignments.
3. Wrappers that run their arguments (env, command, exec, nice, nohup, time, timeout,
   xargs, find -exec, sudo, ...) are unwrapped (`wrappers`) into the commands they run.

What the grammar does not know raises ParseError: the guard denies it, never guesses.
"""

from __future__ import annotations

from .grammar import Grammar
from .lexer import tokens
from .prepass import Prepass
from .syntax import REFUSED, Command, ParseError, Script
from .wrappers import unwrap


def parse(line: str) -> Script:
    """Every simple command `line` would run, wrappers unwrapped; ParseError otherwise."""
    if not isinstance(line, str):
        raise ParseError("the command is not text")
    if REFUSED.search(line):
        raise ParseError("the command holds a NUL, undecodable or private-use character")
    table: list[str] = []
    substitutions: list[str] = []
    main = Prepass(line, table, substitutions, 0).scan()
    commands: list[Command] = []
    functions: set[str] = set()
    for text in (main, *substitutions):
        grammar = Grammar(tokens(text), table)
        grammar.script()
        commands += grammar.commands
        functions |= grammar.functions
    return Script(tuple(c for command in commands for c in unwrap(command)), frozenset(functions),
                  tuple(table))
