"""How a final answer is read: its normal form, and the numbers in it.

An answer, a task's renderings and the seed's texts go through the same
`normalise_answer`, so a fact matches however the agent dressed it (case, curly
quotes, markdown emphasis, code marks, spacing, full-width or invisible characters)
and a forbidden fact is seen in every dress a required one would be. Numbers are read
as digits or English words ("5", "five", "twenty-one", "none"), the same on both sides.
Every pattern here is linear in the answer: literals, fixed alternations and bounded
repeats, no nested quantifier over the same characters.
"""

from __future__ import annotations

import re
import unicodedata

_QUOTES = str.maketrans({"\u2018": "'", "\u2019": "'", "\u201a": "'", "\u201b": "'",
                         "\u201c": '"', "\u201d": '"', "\u201e": '"', "\u201f": '"'})
# Invisible format characters (Unicode's Cf: soft hyphen, zero-width spaces and joiners,
# direction marks, the byte-order mark, tag characters): a word split by one still
# reads as the word, so it must match as one.
_INVISIBLE = re.compile("[\u00ad\u061c\u180e\u200b-\u200f\u202a-\u202e\u2060-\u2064"
                        "\u2066-\u206f\ufeff\ufff9-\ufffb\U000e0001\U000e0020-\U000e007f]")
# Markdown emphasis and code marks around words: every `*` and backtick, and a run of
# `_` that does not sit inside a word (`__5__` and `_5_` are emphasis, as markdown reads
# them; `snake_case` and `fix_csv_export` keep theirs). Possessive, so a run inside a
# word is never taken in part.
_MARKUP = re.compile(r"[*`]+|(?<!\w)_++|_++(?!\w)")
# A numbered list's marker at the start of a line ("1. ", "2) "): numbering, not a count
# (the lines are joined before numbers are read).
_LIST_MARKER = re.compile(r"^([ \t>]*)\d{1,9}[.)](?=[ \t])", re.M)

UNITS = ("zero", "one", "two", "three", "four", "five", "six", "seven", "eight", "nine",
         "ten", "eleven", "twelve", "thirteen", "fourteen", "fifteen", "sixteen",
         "seventeen", "eighteen", "nineteen")
TENS = ("twenty", "thirty", "forty", "fifty", "sixty", "seventy", "eighty", "ninety")
_WORDS = {**{word: value for value, word in enumerate(UNITS)},
          **{word: 20 + 10 * index for index, word in enumerate(TENS)}, "none": 0}
# A number as an answer may write it: up to nine digits (a longer run is no count, and
# never converted), or English words up to ninety-nine (a compound with a hyphen or a
# space), longest alternatives first.
_LONGEST = sorted(UNITS[1:10], key=len, reverse=True)
NUMBER = (r"(?:\d{1,9}|(?:" + "|".join(TENS) + r")(?:[- ](?:" + "|".join(_LONGEST) + r"))?|"
          + "|".join(sorted([*UNITS, "none"], key=len, reverse=True)) + ")")
# Where a number is a count, not part of something else: not glued to a word, a decimal
# point or `#` (an issue's number, a version, a time), nor an identifier's number
# ("pull request 9", "PR 4", "number 2"), nor a later item of a list of numbers ("issues
# 1, 2, 3, 4 and 7 are open"), nor the whole a count is taken from ("5 of the 8 issues
# are open"), and not followed by more digits of a decimal. The first character is
# checked first: a number starts with a digit or one of these letters, and most of an
# answer's characters start none.
NUMBER_BEFORE = (r"(?=[\dzotfsen])(?<![\w.#])(?<!issue )(?<!issues )(?<!pull )(?<!request )(?<!pr )"
                 r"(?<!number )(?<!no\. )(?<!id )(?<!index )(?<!\d of )(?<!\d of the )"
                 r"(?<!\d out of )(?<!\d out of the )(?<!\d, )(?<!\d and )(?<!\d, and )")
NUMBER_AFTER = r"(?!\w)(?![.,:]\d)"
_ONE_NUMBER = re.compile(NUMBER_BEFORE + "(" + NUMBER + ")" + NUMBER_AFTER)


def normalise_answer(text) -> str:
    """Compatibility-normalise (NFKC), mark a numbered list's markers as "-", drop
    invisible characters, straighten curly quotes, case-fold, drop markdown emphasis,
    collapse whitespace. Facts are
    normalised the same way, so a fact naming `__init__.py` still matches."""
    text = _LIST_MARKER.sub(r"\1-", unicodedata.normalize("NFKC", str(text or "")))
    text = _MARKUP.sub("", _INVISIBLE.sub("", text).translate(_QUOTES).casefold())
    return " ".join(text.split())


def number_value(text: str) -> int:
    """The value of a number as NUMBER matches it ("6", "six", "twenty-one")."""
    if text[:1].isdigit():
        return int(text)
    head, _, tail = text.replace("-", " ").partition(" ")
    return _WORDS[head] + (_WORDS[tail] if tail else 0)


def numbers_in(text: str) -> list[tuple[int, int, int]]:
    """(value, start, end) of every number in a normalised text that reads as a count."""
    return [(number_value(m.group(1)), m.start(1), m.end(1)) for m in _ONE_NUMBER.finditer(text)]


def rendering_regex(rendering: str) -> re.Pattern:
    """`5 open` must not match inside `15 open`: word characters at a rendering's ends
    must not continue into the answer's neighbouring characters."""
    return re.compile(_edge(rendering[:1], before=True) + re.escape(rendering)
                      + _edge(rendering[-1:], before=False))


def _edge(char: str, *, before: bool) -> str:
    if not (char.isalnum() or char == "_"):
        return ""
    return r"(?<!\w)" if before else r"(?!\w)"
