"""Pass 1 of the parser, the pre-pass: a quote-aware rewrite of a line for the word
splitter (`benchkit.isolation.shell` has the whole picture)."""

from __future__ import annotations

import re

from .syntax import (
    ARITH,
    BLANKS,
    EXP_CLOSE,
    EXP_OPEN,
    MAX_NESTING,
    METACHARACTERS,
    NAME,
    PATTERN,
    QUOTED,
    REFUSED,
    ParseError,
)


class Prepass:
    """Rewrites one source text; substitution bodies go to `scripts`, sources to `table`."""

    def __init__(self, src: str, table: list[str], scripts: list[str], nesting: int):
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
        return self.pos == 0 or self.src[self.pos - 1] in METACHARACTERS

    def command_position(self) -> bool:
        """Whether a word starting here is in command position (roughly: after an
        operator, a case pattern's `)`, a keyword, or at the start)."""
        before = self.src[:self.pos].rstrip(BLANKS)
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
        opener = {")": "(", "}": "{", "]": "["}.get(close or "")
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
            if self.word_start() and following in BLANKS + "\n":
                return c
            if self.word_start() and following == "[" and self.peek(2) in BLANKS + "\n":
                self.pos += 1
                return "[["
            return PATTERN + c
        if c == "{" and following not in BLANKS + "\n":
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
        out: list[str] = []
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
        elif name := NAME.match(self.src, self.pos + 1):
            self.pos = name.end()
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
        self.scripts.append(Prepass("".join(body), self.table, self.scripts, self.nesting + 1).scan())
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
        while self.peek() and self.peek() in BLANKS:
            self.pos += 1
        delimiter, quoted = [], False
        while self.peek() and self.peek() not in METACHARACTERS:
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
                Prepass("\n".join(lines), self.table, self.scripts, self.nesting + 1).double(None)
        self.pending.clear()


_ANSI_C = re.compile(r"\\(?:([abeEfnrtv\\'\"?])|([0-7]{1,3})|x([0-9A-Fa-f]{1,2})"
                     r"|u([0-9A-Fa-f]{1,4})|U([0-9A-Fa-f]{1,8})|c(.))", re.DOTALL)
_ANSI_C_LETTERS = {"a": "\a", "b": "\b", "e": "\x1b", "E": "\x1b", "f": "\f", "n": "\n",
                   "r": "\r", "t": "\t", "v": "\v"}


def _ansi_c(body: str) -> str:
    """The value of bash's $'...' quoting."""
    def one(match: re.Match[str]) -> str:
        letter, octal, hex2, hex4, hex8, control = match.groups()
        if letter:
            return _ANSI_C_LETTERS.get(letter, letter)
        if control:
            return chr(ord(control.upper()) ^ 0x40)
        code = int(octal, 8) if octal else int(hex2 or hex4 or hex8, 16)
        return chr(code) if code < 0x110000 else ""
    text = _ANSI_C.sub(one, body)
    if REFUSED.search(text):
        raise ParseError("$'...' decodes to a NUL, surrogate or private-use character")
    return text
