"""Pass 2b of the parser: a small recursive-descent grammar over the tokens that finds
the simple commands in pipelines, lists, subshells, groups, if/for/while/until/case/
select, functions, [[ ]] and (( )), with their redirections and leading assignments."""

from __future__ import annotations

import re
from collections.abc import Callable

from .lexer import make_word
from .syntax import ARITH, ASSIGNMENT, MAX_NESTING, NAME, PATTERN, Command, ParseError, Redirect
from .words import Word, literal_word

REDIRECTIONS = frozenset({"<", ">", ">>", "<>", ">|", "<&", ">&", "&>", "&>>", "<<", "<<-", "<<<"})
_LIST_ENDS = frozenset({"then", "elif", "else", "fi", "do", "done", "esac", "}"})
_FD = re.compile(r"[0-9]+|\{[A-Za-z_][A-Za-z0-9_]*\}")


class Grammar:
    """Recursive descent over the tokens; collects simple commands and function names."""

    def __init__(self, tokens: list[tuple[bool, str]], table: list[str]):
        self.tokens, self.table, self.i, self.depth = tokens, table, 0, 0
        self.commands: list[Command] = []
        self.functions: set[str] = set()

    # token helpers
    def peek(self, k: int = 0) -> tuple[bool, str] | None:
        return self.tokens[self.i + k] if self.i + k < len(self.tokens) else None

    def text(self, k: int = 0) -> str:
        """The text of a token known to be there (is_op or is_word said so)."""
        return self.tokens[self.i + k][1]

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

    def joined(self, part: Callable[[], None], *ops: str) -> None:
        """`part`, again after each of `ops` (a newline may follow the operator)."""
        part()
        while self.is_op(*ops):
            self.i += 1
            self.skip_newlines()
            part()

    def and_or(self) -> None:
        self.joined(self.pipeline, "&&", "||")

    def pipeline(self) -> None:
        timed = False
        while self.is_word("!", "time"):
            timed |= self.expect_word() == "time"
            if timed and self.is_word("-p"):
                self.i += 1
        if timed and (self.peek() is None or self.is_op(";", "&", "\n")):
            return  # a bare `time`
        self.joined(self.command, "|", "|&")

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
        while True:  # after `if`, then after each `elif`: a condition and its branch
            self.list_()
            self.expect_word("then")
            self.list_()
            if not self.is_word("elif"):
                break
            self.i += 1
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
            if name.value is None or not NAME.fullmatch(name.value):
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
                and _FD.fullmatch(self.text().replace(PATTERN, "")) is not None)

    def redirect(self) -> Redirect:
        fd = None
        if self.is_word():
            fd = self.expect_word().replace(PATTERN, "")
        op = self.text()
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
        words: list[Word] = []
        assignments: list[Word] = []
        redirects: list[Redirect] = []
        while self.peek() is not None:
            if self.is_redirect():
                redirects.append(self.redirect())
                continue
            if not self.is_word():
                break
            raw = self.expect_word()
            if not words and ASSIGNMENT.match(raw.replace(PATTERN, "")):
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
