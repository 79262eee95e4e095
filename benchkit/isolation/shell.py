"""The shell parser: every command a Bash tool command line would execute.

Two passes, then unwrapping:
1. A quote-aware pre-pass (`_Prepass`) rewrites the line for `shlex`. It cuts out
   comments and heredoc bodies, replaces every expansion ($var, ${...}, $(...), `...`,
   <(...), $((...)), $'...') by a sentinel that remembers its source text, marks quoted
   text so that no quoted word can pass for an operator or a keyword, and marks
   unquoted pattern characters. The body of every command or process substitution
   (and of every substitution inside an expanded heredoc) becomes a script of its own.
2. `shlex` splits each script into words and operators, and a small recursive-descent
   grammar (`_Grammar`) finds the simple commands in pipelines, lists, subshells,
   groups, if/for/while/until/case/select, functions, [[ ]] and (( )), with their
   redirections and leading assignments.
3. Wrappers that run their arguments (env, command, exec, nice, nohup, time, timeout,
   xargs, find -exec, sudo, ...) are unwrapped into the commands they run.

What the grammar does not know raises ParseError: the guard denies it, never guesses.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

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
from .words import Word, literal_word

# Sentinels, from Unicode's private use area (input holding them is refused):
EXP_OPEN, EXP_CLOSE = "\ue000", "\ue001"  # EXP_OPEN <index into the expansion table> EXP_CLOSE
PATTERN = "\ue002"  # precedes an unquoted * ? [ { ~ : the word may expand to other text
QUOTED = "\ue003"   # precedes quoted text: the word is never an operator or keyword
ARITH = "\ue004"    # a whole (( ... )) arithmetic command
# Refused in input: the sentinels, NUL (no shell word holds one) and lone surrogates
# (undecodable bytes, which no reason could print).
_REFUSED = re.compile("[\ue000-\ue004\x00\ud800-\udfff]")

_BLANKS = " \t\r"
_METACHARACTERS = set(";&|()<>\n" + _BLANKS)  # what ends an unquoted word
_PUNCTUATION = ";&|()<>\n"
_WORD_ENDS = frozenset(_BLANKS + _PUNCTUATION + "\\'\"")
_OPERATORS = sorted([";;&", "<<<", "<<-", "&>>", ";;", ";&", "&&", "||", "|&", "<<", ">>",
                     "<&", ">&", "<>", ">|", "&>", "(", ")", ";", "&", "|", "<", ">", "\n"],
                    key=len, reverse=True)
REDIRECTIONS = frozenset({"<", ">", ">>", "<>", ">|", "<&", ">&", "&>", "&>>", "<<", "<<-", "<<<"})
_LIST_ENDS = frozenset({"then", "elif", "else", "fi", "do", "done", "esac", "}"})
_ASSIGNMENT = re.compile(r"[A-Za-z_][A-Za-z0-9_]*(\[[^\]]*\])?\+?=")
_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
_FD = re.compile(r"[0-9]+|\{[A-Za-z_][A-Za-z0-9_]*\}")
MAX_NESTING = 40  # deeper than any real command line; keeps recursion bounded


class ParseError(ValueError):
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


def parse(line: str) -> Script:
    """Every simple command `line` would run, wrappers unwrapped; ParseError otherwise."""
    if not isinstance(line, str):
        raise ParseError("the command is not text")
    if _REFUSED.search(line):
        raise ParseError("the command holds a NUL, undecodable or private-use character")
    table: list[str] = []
    substitutions: list[str] = []
    main = _Prepass(line, table, substitutions, 0).scan()
    commands, functions = [], set()
    for text in (main, *substitutions):
        grammar = _Grammar(_tokens(text), table)
        grammar.script()
        commands += grammar.commands
        functions |= grammar.functions
    return Script(tuple(c for command in commands for c in unwrap(command)), frozenset(functions),
                  tuple(table))


# --- pass 1: the pre-pass ------------------------------------------------------------

class _Prepass:
    """Rewrites one source text; substitution bodies go to `scripts`, sources to `table`."""

    def __init__(self, src: str, table: list, scripts: list, nesting: int):
        if nesting > MAX_NESTING:
            raise ParseError("substitutions nested too deeply")
        self.src, self.pos, self.table, self.scripts = src, 0, table, scripts
        self.nesting, self.unclosed = nesting, 0
        self.pending: list[tuple[str, bool, bool]] = []  # heredocs: delimiter, strip tabs, quoted

    def peek(self, k: int = 0) -> str:
        i = self.pos + k
        return self.src[i] if i < len(self.src) else ""

    def at(self, text: str) -> bool:
        return self.src.startswith(text, self.pos)

    def word_start(self) -> bool:
        return self.pos == 0 or self.src[self.pos - 1] in _METACHARACTERS

    def command_position(self) -> bool:
        """Whether a word starting here is in command position (roughly: after an
        operator, a case pattern's `)`, a keyword, or at the start)."""
        before = self.src[:self.pos].rstrip(_BLANKS)
        if not before or before[-1] in ";&|()\n":
            return True
        return re.search(r"(^|[\s;&|(])(then|do|else|elif|if|while|until|!|\{)$", before) is not None

    def sentinel(self, start: int) -> str:
        self.table.append(self.src[start:self.pos])
        return f"{EXP_OPEN}{len(self.table) - 1}{EXP_CLOSE}"

    def nested(self, close: str) -> str:
        self.nesting += 1
        if self.nesting > MAX_NESTING:
            raise ParseError("the command is nested too deeply")
        try:
            return self.scan(close)
        finally:
            self.nesting -= 1

    def scan(self, close: str | None = None) -> str:
        """Unquoted text up to `close` (consumed; nesting of its opener counted) or the end."""
        out, depth, cases = [], 0, 0
        opener = {")": "(", "}": "{", "]": "["}.get(close)
        while self.pos < len(self.src):
            c, start_of_arith = self.peek(), self.pos
            if close == ")" and self.word_start():
                # A `case` inside $( ... ): its patterns' `)` do not close the substitution.
                keyword = re.match(r"(case|esac)(?=[\s;&|()<>]|$)", self.src[self.pos:self.pos + 5])
                if keyword and keyword.group(1) == "case" and self.command_position():
                    cases += 1
                elif keyword and cases:
                    cases -= 1
            if c == "\\":
                following = self.peek(1)
                if following == "":
                    raise ParseError("the command ends with a backslash")
                if following != "\n":  # a backslash-newline joins lines
                    out.append("\\" + following + QUOTED)
                self.pos += 2
            elif c == "'":
                out.append(QUOTED + self.single())
            elif c == '"':
                out.append(QUOTED + '"' + self.double('"') + '"')
            elif c == "$":
                out.append(self.dollar())
            elif c == "`":
                out.append(self.backtick())
            elif c == "#" and self.word_start():
                end = self.src.find("\n", self.pos)
                self.pos = len(self.src) if end < 0 else end
            elif c == "\n":
                out.append("\n")
                self.pos += 1
                self.heredoc_bodies()
            elif self.at("<<<"):
                out.append("<<<")
                self.pos += 3
            elif self.at("<<"):
                out.append(self.heredoc_operator())
            elif c in "<>" and self.peek(1) == "(":
                start = self.pos
                self.pos += 2
                self.scripts.append(self.nested(")"))
                out.append(self.sentinel(start))
            elif self.at("((") and self.word_start() and self.arithmetic(2):
                self.table.append(self.src[start_of_arith:self.pos])
                out.append(f" {ARITH} ")
            elif c == close and depth == 0 and not cases:
                self.pos += 1
                return "".join(out)
            else:
                if close and c == opener:
                    depth += 1
                elif close and c == close and depth:  # (at depth 0: a case pattern's `)`)
                    depth -= 1
                out.append(self.plain(c))
                self.pos += 1
        if close:
            raise ParseError(f"a `{close}` is missing")
        return "".join(out)

    def plain(self, c: str) -> str:
        """An unquoted character, marked when bash may expand it (glob, brace, tilde)."""
        following = self.peek(1)
        if c in "*?":
            return PATTERN + c
        if c == "[":
            # `[` and `[[` as command names are the test builtins, not patterns.
            if self.word_start() and following in _BLANKS + "\n":
                return c
            if self.word_start() and following == "[" and self.peek(2) in _BLANKS + "\n":
                self.pos += 1
                return "[["
            return PATTERN + c
        if c == "{" and following not in _BLANKS + "\n":
            return PATTERN + c
        if c == "~" and self.word_start():
            return PATTERN + c
        return c

    def single(self) -> str:
        end = self.src.find("'", self.pos + 1)
        if end < 0:
            raise ParseError("a closing ' is missing")
        text = self.src[self.pos:end + 1]
        self.pos = end + 1
        return text

    def double(self, terminator: str | None) -> str:
        """Double-quoted text (or an expanded heredoc body when terminator is None)."""
        if terminator:
            self.pos += 1
        out = []
        while self.pos < len(self.src):
            c = self.peek()
            if c == terminator:
                self.pos += 1
                return "".join(out)
            if c == "\\":
                following = self.peek(1)
                if following in "$`":
                    out.append(following)
                elif following != "\n":
                    out.append("\\" + following)
                self.pos += 2
            elif c == "$":
                out.append(self.dollar(quoted=True))
            elif c == "`":
                out.append(self.backtick())
            else:
                out.append(c)
                self.pos += 1
        if terminator:
            raise ParseError('a closing " is missing')
        return "".join(out)

    def dollar(self, quoted: bool = False) -> str:
        start, following = self.pos, self.peek(1)
        if self.at("$((") and self.arithmetic(3):
            return self.sentinel(start)
        if following == "[":  # $[ ... ]: bash's old arithmetic expansion
            self.pos += 2
            self.nested("]")
            return self.sentinel(start)
        if following == "(":
            self.pos += 2
            self.scripts.append(self.nested(")"))
        elif following == "{":
            self.pos += 2
            self.nested("}")
            if self.src.endswith("@P}", 0, self.pos):
                raise ParseError("`${...@P}` expands a value as a prompt, running the commands in "
                                 "it, which cannot be known beforehand")
        elif following == "'" and not quoted:  # $'...': a literal, escapes decoded
            self.pos += 2
            while self.peek() not in ("'", ""):
                self.pos += 2 if self.peek() == "\\" else 1
            if self.peek() != "'":
                raise ParseError("a closing ' is missing")
            self.pos += 1
            text = _ansi_c(self.src[start + 2:self.pos - 1])
            return QUOTED + "'" + text.replace("'", "'\"'\"'") + "'"
        elif following == '"' and not quoted:  # $"..." is a (translated) double-quoted string
            self.pos += 1
            return QUOTED + '"' + self.double('"') + '"'
        elif _NAME.match(self.src, self.pos + 1):
            self.pos = _NAME.match(self.src, self.pos + 1).end()
        elif following and following in "0123456789*@#?-$!":
            self.pos += 2
        else:
            self.pos += 1
            return "$"
        return self.sentinel(start)

    def backtick(self) -> str:
        start = self.pos
        self.pos += 1
        body = []
        while self.peek() != "`":
            c = self.peek()
            if c == "":
                raise ParseError("a closing ` is missing")
            if c == "\\" and self.peek(1) in "$`\\":
                body.append(self.peek(1))
                self.pos += 2
            else:
                body.append(c)
                self.pos += 1
        self.pos += 1
        self.scripts.append(_Prepass("".join(body), self.table, self.scripts, self.nesting + 1).scan())
        return self.sentinel(start)

    def arithmetic(self, opening: int) -> bool:
        """Consume `(( ... ))` or `$(( ... ))` (`opening` characters long) when bash reads
        it as arithmetic, closed by `))`; only its substitutions matter. Otherwise leave
        the position unchanged: it is nested subshells, `$( (...) )`. Failed trials are
        bounded: each may rescan the rest of the line, and no real command has many."""
        saved = (self.pos, len(self.table), len(self.scripts), list(self.pending))
        self.pos += opening
        try:
            self.nested(")")
            if self.peek() == ")":
                self.pos += 1
                return True
        except ParseError:
            pass
        self.pos, self.pending[:] = saved[0], saved[3]
        del self.table[saved[1]:], self.scripts[saved[2]:]
        self.unclosed += 1
        if self.unclosed > MAX_NESTING:
            raise ParseError("too many unclosed `((`")
        return False

    def heredoc_operator(self) -> str:
        self.pos += 2
        strip = self.peek() == "-"
        self.pos += strip
        while self.peek() and self.peek() in _BLANKS:
            self.pos += 1
        delimiter, quoted = [], False
        while self.peek() and self.peek() not in _METACHARACTERS:
            c = self.peek()
            if c in "'\"":
                end = self.src.find(c, self.pos + 1)
                if end < 0:
                    raise ParseError(f"a closing {c} is missing")
                delimiter.append(self.src[self.pos + 1:end])
                quoted, self.pos = True, end + 1
            elif c == "\\":
                delimiter.append(self.peek(1))
                quoted, self.pos = True, self.pos + 2
            else:
                delimiter.append(c)
                self.pos += 1
        if not delimiter:
            raise ParseError("a heredoc (<<) has no delimiter")
        self.pending.append(("".join(delimiter), strip, quoted))
        return f"<< {QUOTED}heredoc "

    def heredoc_bodies(self) -> None:
        """Read the bodies of the heredocs opened on the line that just ended."""
        for delimiter, strip, quoted in self.pending:
            lines = []
            while self.pos < len(self.src):
                end = self.src.find("\n", self.pos)
                end = len(self.src) if end < 0 else end
                line = self.src[self.pos:end]
                self.pos = min(end + 1, len(self.src))
                if (line.lstrip("\t") if strip else line) == delimiter:
                    break
                lines.append(line)
            if not quoted:  # an unquoted delimiter: the body's substitutions run
                _Prepass("\n".join(lines), self.table, self.scripts, self.nesting + 1).double(None)
        self.pending.clear()


_ANSI_C = re.compile(r"\\(?:([abeEfnrtv\\'\"?])|([0-7]{1,3})|x([0-9A-Fa-f]{1,2})"
                     r"|u([0-9A-Fa-f]{1,4})|U([0-9A-Fa-f]{1,8})|c(.))", re.DOTALL)
_ANSI_C_LETTERS = {"a": "\a", "b": "\b", "e": "\x1b", "E": "\x1b", "f": "\f", "n": "\n",
                   "r": "\r", "t": "\t", "v": "\v"}


def _ansi_c(body: str) -> str:
    """The value of bash's $'...' quoting."""
    def one(match):
        letter, octal, hex2, hex4, hex8, control = match.groups()
        if letter:
            return _ANSI_C_LETTERS.get(letter, letter)
        if control:
            return chr(ord(control.upper()) ^ 0x40)
        code = int(octal, 8) if octal else int(hex2 or hex4 or hex8, 16)
        return chr(code) if code < 0x110000 else ""
    text = _ANSI_C.sub(one, body)
    if _REFUSED.search(text):
        raise ParseError("$'...' decodes to a NUL, surrogate or private-use character")
    return text


# --- pass 2: tokens and grammar ------------------------------------------------------

def _tokens(text: str) -> list[tuple[bool, str]]:
    """(is_operator, text) pairs: the words, quotes removed, and the operator runs."""
    tokens = []
    for token, operator in split_words(text):
        if operator:
            tokens += [(True, op) for op in _split_operators(token)]
        else:
            tokens.append((False, token))
    return tokens


def split_words(text: str) -> list[tuple[str, bool]]:
    """(token, is an operator run) pairs as POSIX `shlex` (punctuation_chars, split on
    blanks only) splits them, in one pass: shlex grows each token a character at a
    time, quadratic in a long word."""
    found, word, quoted, i, n = [], [], False, 0, len(text)

    def end():
        nonlocal word, quoted
        if word or quoted:
            found.append(("".join(word), False))
        word, quoted = [], False

    while i < n:
        c = text[i]
        if c in _BLANKS:
            end()
            i += 1
        elif c in _PUNCTUATION:
            end()
            start = i
            while i < n and text[i] in _PUNCTUATION:
                i += 1
            found.append((text[start:i], True))
        elif c == "\\":
            if i + 1 >= n:
                raise ParseError("No escaped character")
            word.append(text[i + 1])
            i += 2
        elif c == "'":
            close = text.find("'", i + 1)
            if close < 0:
                raise ParseError("No closing quotation")
            word.append(text[i + 1:close])
            quoted, i = True, close + 1
        elif c == '"':
            i += 1
            while i < n and text[i] != '"':
                if text[i] == "\\" and i + 1 < n and text[i + 1] in '"\\':
                    i += 1
                word.append(text[i])
                i += 1
            if i >= n:
                raise ParseError("No closing quotation")
            quoted, i = True, i + 1
        else:
            start = i
            while i < n and text[i] not in _WORD_ENDS:
                i += 1
            word.append(text[start:i])
    end()
    return found


def _split_operators(run: str) -> list[str]:
    """shlex joins adjacent punctuation (`;;`, `)|`): split it into bash's operators."""
    ops, i = [], 0
    while i < len(run):
        op = next(op for op in _OPERATORS if run.startswith(op, i))
        ops.append(op)
        i += len(op)
    return ops


def make_word(raw: str, table: list[str]) -> Word:
    text, prefix, dynamic, pattern, i = [], None, False, False, 0
    while i < len(raw):
        c = raw[i]
        if c == EXP_OPEN:
            end = raw.index(EXP_CLOSE, i)
            prefix = "".join(text) if prefix is None else prefix
            text.append(table[int(raw[i + 1:end])])
            dynamic, i = True, end + 1
            continue
        if c == PATTERN:
            prefix = "".join(text) if prefix is None else prefix
            pattern = True
        elif c != QUOTED:
            text.append(c)
        i += 1
    joined = "".join(text)
    return Word(joined, None if dynamic else joined, pattern, joined if prefix is None else prefix)


class _Grammar:
    """Recursive descent over the tokens; collects simple commands and function names."""

    def __init__(self, tokens: list[tuple[bool, str]], table: list[str]):
        self.tokens, self.table, self.i, self.depth = tokens, table, 0, 0
        self.commands: list[Command] = []
        self.functions: set[str] = set()

    # token helpers
    def peek(self, k: int = 0):
        return self.tokens[self.i + k] if self.i + k < len(self.tokens) else None

    def is_op(self, *ops: str, k: int = 0) -> bool:
        token = self.peek(k)
        return token is not None and token[0] and token[1] in ops

    def is_word(self, *words: str) -> bool:
        token = self.peek()
        return token is not None and not token[0] and (not words or token[1] in words)

    def expect_op(self, op: str) -> None:
        if not self.is_op(op):
            raise ParseError(f"expected `{op}` {self.where()}")
        self.i += 1

    def expect_word(self, *words: str) -> str:
        if not self.is_word(*words):
            wanted = f"`{words[0]}`" if words else "a word"
            raise ParseError(f"expected {wanted} {self.where()}")
        self.i += 1
        return self.tokens[self.i - 1][1]

    def where(self) -> str:
        token = self.peek()
        if token is None:
            return "at the end"
        if token[1] == "\n":
            return "before a newline"
        return f"before `{make_word(token[1], self.table).text}`"

    def word(self) -> Word:
        return make_word(self.expect_word(), self.table)

    def skip_newlines(self) -> None:
        while self.is_op("\n"):
            self.i += 1

    # grammar
    def script(self) -> None:
        self.list_()
        if self.peek() is not None:
            raise ParseError(f"unexpected token {self.where()}")

    def list_(self) -> None:
        while True:
            while self.is_op(";", "&", "\n"):
                self.i += 1
            if self.peek() is None or self.at_list_end():
                return
            self.and_or()
            if not self.is_op(";", "&", "\n"):
                return

    def at_list_end(self) -> bool:
        return self.is_op(")", ";;", ";&", ";;&") or self.is_word(*_LIST_ENDS)

    def and_or(self) -> None:
        self.pipeline()
        while self.is_op("&&", "||"):
            self.i += 1
            self.skip_newlines()
            self.pipeline()

    def pipeline(self) -> None:
        timed = False
        while self.is_word("!", "time"):
            timed |= self.expect_word() == "time"
            if timed and self.is_word("-p"):
                self.i += 1
        if timed and (self.peek() is None or self.is_op(";", "&", "\n")):
            return  # a bare `time`
        self.command()
        while self.is_op("|", "|&"):
            self.i += 1
            self.skip_newlines()
            self.command()

    def command(self) -> None:
        self.depth += 1
        if self.depth > MAX_NESTING:
            raise ParseError("the command is nested too deeply")
        try:
            self.compound_or_simple()
        finally:
            self.depth -= 1

    # A compound command's first word -> the method parsing the rest of it.
    COMPOUNDS = {"{": "group", "if": "if_", "for": "for_", "select": "for_", "while": "while_",
                 "until": "while_", "case": "case", "function": "function", "[[": "test",
                 ARITH: "trailing_redirects"}

    def compound_or_simple(self) -> None:
        token = self.peek()
        if token is None:
            raise ParseError("a command is missing at the end")
        if self.is_op("("):
            self.i += 1
            self.list_()
            self.expect_op(")")
            return self.trailing_redirects()
        if token[0] and not self.is_redirect():
            raise ParseError(f"a command is missing {self.where()}")
        keyword = token[1] if not token[0] else None
        if keyword in self.COMPOUNDS:
            self.i += 1
            getattr(self, self.COMPOUNDS[keyword])()
        elif keyword in _LIST_ENDS:
            raise ParseError(f"unexpected `{keyword}`")
        elif keyword is not None and self.is_op("(", k=1) and self.is_op(")", k=2):
            self.i += 3
            self.define(make_word(keyword, self.table))
        else:
            self.simple()

    def group(self) -> None:
        self.list_()
        self.expect_word("}")
        self.trailing_redirects()

    def if_(self) -> None:
        self.list_()
        self.expect_word("then")
        self.list_()
        while self.is_word("elif"):
            self.i += 1
            self.list_()
            self.expect_word("then")
            self.list_()
        if self.is_word("else"):
            self.i += 1
            self.list_()
        self.expect_word("fi")
        self.trailing_redirects()

    def for_(self) -> None:
        if self.is_word(ARITH):
            self.i += 1
        else:
            name = self.word()
            if name.value is None or not _NAME.fullmatch(name.value):
                raise ParseError(f"`{name.text}` is not a loop variable name")
            # The loop variable is assigned each word like `NAME=word`: the guard checks its
            # name, and what it may hold (the positional parameters without `in`).
            values = [Word("$@", None)]
            self.skip_newlines()
            if self.is_word("in"):
                self.i += 1
                values = []
                while self.is_word():
                    values.append(self.word())
            assigned = tuple(Word(f"{name.value}={w.text}", None if w.value is None
                                  else f"{name.value}={w.value}", w.pattern,
                                  f"{name.value}={w.prefix}") for w in values)
            self.commands.append(Command((), assignments=assigned or (
                literal_word(name.value + "="),)))
        if self.is_op(";", "\n"):
            self.i += 1
            self.skip_newlines()
        self.do_done()

    def while_(self) -> None:
        self.list_()
        self.do_done()

    def do_done(self) -> None:
        self.expect_word("do")
        self.list_()
        self.expect_word("done")
        self.trailing_redirects()

    def case(self) -> None:
        self.word()
        self.skip_newlines()
        self.expect_word("in")
        self.skip_newlines()
        while not self.is_word("esac"):
            if self.is_op("("):
                self.i += 1
            self.word()
            while self.is_op("|"):
                self.i += 1
                self.word()
            self.expect_op(")")
            self.list_()
            if not self.is_op(";;", ";&", ";;&"):
                break
            self.i += 1
            self.skip_newlines()
        self.expect_word("esac")
        self.trailing_redirects()

    def function(self) -> None:
        name = self.word()
        if self.is_op("(") and self.is_op(")", k=1):
            self.i += 2
        self.define(name)

    def define(self, name: Word) -> None:
        if name.literal is None:
            raise ParseError(f"the function name `{name.text}` is only known at run time")
        self.functions.add(name.literal)
        self.skip_newlines()
        self.command()

    def test(self) -> None:
        words = [literal_word("[[")]
        while not self.is_word("]]"):
            token = self.peek()
            if token is None:
                raise ParseError("a `]]` is missing")
            if not token[0]:
                words.append(make_word(token[1], self.table))
            self.i += 1
        self.i += 1
        self.commands.append(Command(tuple(words)))
        self.trailing_redirects()

    def is_redirect(self) -> bool:
        if self.is_op(*REDIRECTIONS):
            return True
        return (self.is_word() and self.is_op(*REDIRECTIONS, k=1)
                and _FD.fullmatch(self.peek()[1].replace(PATTERN, "")) is not None)

    def redirect(self) -> Redirect:
        fd = None
        if self.is_word():
            fd = self.expect_word().replace(PATTERN, "")
        op = self.peek()[1]
        self.i += 1
        if not self.is_word():
            raise ParseError(f"`{op}` needs a file name {self.where()}")
        return Redirect(op, self.word(), fd)

    def trailing_redirects(self) -> None:
        redirects = []
        while self.is_redirect():
            redirects.append(self.redirect())
        if redirects:
            self.commands.append(Command((), tuple(redirects)))

    def simple(self) -> None:
        words, assignments, redirects = [], [], []
        while self.peek() is not None:
            if self.is_redirect():
                redirects.append(self.redirect())
                continue
            if not self.is_word():
                break
            raw = self.expect_word()
            if not words and _ASSIGNMENT.match(raw.replace(PATTERN, "")):
                assignments.append(make_word(raw, self.table))
                if raw.endswith("=") and self.is_op("("):  # an array: NAME=(a b c)
                    self.i += 1
                    while not self.is_op(")"):
                        if self.is_op("\n"):
                            self.i += 1
                        else:
                            self.word()
                    self.i += 1
                continue
            words.append(make_word(raw, self.table))
        if not (words or assignments or redirects):
            raise ParseError(f"a command is missing {self.where()}")
        self.commands.append(Command(tuple(words), tuple(redirects), tuple(assignments)))


# --- pass 3: wrappers ----------------------------------------------------------------

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
    while start < len(words) and (words[start].literal == "-" or _ASSIGNMENT.match(
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
