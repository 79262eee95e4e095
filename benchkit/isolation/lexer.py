"""Pass 2a of the parser: the pre-pass's text split into words and operators, and a
word's raw text turned into a Word (its sentinels resolved)."""

from __future__ import annotations

from .syntax import BLANKS, EXP_CLOSE, EXP_OPEN, PATTERN, PUNCTUATION, QUOTED, ParseError
from .words import Word

_WORD_ENDS = frozenset(BLANKS + PUNCTUATION + "\\'\"")
_OPERATORS = sorted([";;&", "<<<", "<<-", "&>>", ";;", ";&", "&&", "||", "|&", "<<", ">>",
                     "<&", ">&", "<>", ">|", "&>", "(", ")", ";", "&", "|", "<", ">", "\n"],
                    key=len, reverse=True)


def tokens(text: str) -> list[tuple[bool, str]]:
    """(is_operator, text) pairs: the words, quotes removed, and the operator runs."""
    found: list[tuple[bool, str]] = []
    for token, operator in split_words(text):
        if operator:
            found += [(True, op) for op in _split_operators(token)]
        else:
            found.append((False, token))
    return found


def split_words(text: str) -> list[tuple[str, bool]]:
    """(token, is an operator run) pairs as POSIX `shlex` (punctuation_chars, split on
    blanks only) splits them, in one pass: shlex grows each token a character at a
    time, quadratic in a long word."""
    found: list[tuple[str, bool]] = []
    word: list[str] = []
    quoted, i, n = False, 0, len(text)

    def end() -> None:
        nonlocal word, quoted
        if word or quoted:
            found.append(("".join(word), False))
        word, quoted = [], False

    while i < n:
        c = text[i]
        if c in BLANKS:
            end()
            i += 1
        elif c in PUNCTUATION:
            end()
            start = i
            while i < n and text[i] in PUNCTUATION:
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
    text: list[str] = []
    prefix: str | None = None
    dynamic, pattern, i = False, False, 0
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
