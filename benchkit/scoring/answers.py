"""A read's final answer against its answer key (benchkit.documents.answer_key).

The answer must hold every required fact and none of the forbidden ones: no item of
the seed the task rules out (outside the texts that shelter it), no claim of another
count, no hedge of the count. A mention a negation directly precedes ("not closed",
"hasn't been closed", "no enhancement label", "not 8 open") says the answer does not hold it: it
neither holds a fact nor breaks one, so an answer passes as it would with it deleted.
Each check is one left-to-right pass of a regex without nested repeats over the same
characters, so a 1 MiB answer costs what its length does (benchmarks/checker_bench.py
times one), and each message names what it found.
"""

from __future__ import annotations

import bisect
import functools
import re
from collections.abc import Iterator

from benchkit.documents.answer_key import COUNT_GROUP, AnswerKey, Count, Forbidden, Required
from benchkit.documents.answer_text import (
    NUMBER,
    NUMBER_AFTER,
    NUMBER_BEFORE,
    normalise_answer,
    number_value,
    rendering_regex,
)
from benchkit.state.records import quote

NO_ANSWER = "no final answer: every required fact is missing"
MOST = 10  # other counts named one by one; the rest are counted
# A word that offers another number in the count's place ("5, or maybe 6"), and one
# that makes the count itself approximate ("about 5"): both hedge it.
_HEDGE = re.compile(r"(?<!\w)(?:or|maybe|perhaps|possibly|probably|otherwise|alternatively)"
                    r"(?!\w)(?:[ ,;:()\-]{1,3}[^\W\d_]{1,20}){0,2}?[ ,;:()\-~]{1,3}"
                    + NUMBER_BEFORE + f"(?P<{COUNT_GROUP}>{NUMBER})" + NUMBER_AFTER)
_APPROXIMATE = re.compile(r"(?:about|around|approximately|approx\.?|roughly|nearly|almost|"
                          r"over|under|at least|at most|more than|less than|fewer than|up to|"
                          r"circa|estimated|~|\u2248) ?$")
# A range the count leaves open after it ("5 or more", "5 open issues, possibly more"),
# a few words on, before the sentence or another number.
_OPEN_ENDED = re.compile(r"[^.;:!?\n\d]{0,30}?(?:\bor (?:more|so|fewer|less)\b|\bgive or take\b|"
                         r"-ish\b|\b(?:maybe|possibly|perhaps|probably) (?:more|fewer|less)\b)")
# The next few words after a number, bounded: what it counts, if anything.
_NEXT_WORDS = re.compile(r"(?:[ \-/(]{1,3}[^\W\d_]{1,40}){1,3}")
_WORD = re.compile(r"[^\W\d_]+")
# A negation right before a mention, searched in the few characters before it.
_NEGATION = re.compile(r"(?:\b(?:not|no|never|no longer)|n't)(?: (?:yet|been|ever|be))? $")
_NEGATION_REACH = 20


def answer_differences(key: AnswerKey, answer) -> list[str]:
    """One difference per required fact the answer lacks, per forbidden fact it holds,
    per other count it claims and per hedge of the count."""
    if answer is None or not str(answer).strip():
        return [NO_ANSWER]
    text = normalise_answer(answer)
    missing, extra = [], []
    for required in key.required:
        if required.count is None:
            claimed = _present(required, text)
        else:
            claimed, others = _count_differences(required.count, text)
            extra += others
        if not claimed:
            missing.append(f"answer lacks required fact: {required.shown}")
    sheltered = _spans(key.sheltered, text)
    extra[:0] = [f"answer names {item.says}: {quote(found)}" for item in key.forbidden
                 if (found := _forbidden(item, text, sheltered)) is not None]
    return missing + extra


def _present(required: Required, text: str) -> bool:
    regexes = [_regex(r) for r in required.renderings]
    if required.pattern:
        regexes.append(re.compile(required.pattern, re.IGNORECASE))
    return any(not _negated(text, match.start()) for regex in regexes
               for match in regex.finditer(text))


def _negated(text: str, start: int) -> bool:
    return _NEGATION.search(text, max(0, start - _NEGATION_REACH), start) is not None


@functools.lru_cache(maxsize=512)
def _regex(rendering: str) -> re.Pattern:
    return rendering_regex(rendering)


@functools.lru_cache(maxsize=256)
def _compiled(source: str) -> re.Pattern:
    return re.compile(source)


# --- counts ----------------------------------------------------------------------------

def _count_differences(count: Count, text: str) -> tuple[bool, list[str]]:
    """(whether the answer claims the count, the differences of its other numbers):
    another number claimed, a number offered in the count's place, the count made
    approximate; each once, the first MOST of them named."""
    claimed = False
    hedged: list[str] = []
    found: dict[int, str] = {}  # another number -> its difference
    for value, match in _claims(count, text):
        if _negated(text, match.start()):  # "not 8 open": no claim, of either side
            continue
        if value != count.value:
            if value not in found:
                found[value] = f"answer gives another count: {value} ({quote(match.group(0))})"
            continue
        claimed, start = True, match.start(COUNT_GROUP)
        if hedged:
            continue
        if before := _APPROXIMATE.search(text, max(0, start - 20), start):
            hedged.append(f"answer hedges the count: {quote(before.group(0) + match.group(COUNT_GROUP))}")
        elif after := _OPEN_ENDED.match(text, match.end(COUNT_GROUP)):
            hedged.append(f"answer hedges the count: {quote(text[start:after.end()])}")
    for hedge in _HEDGE.finditer(text):
        value = _value(hedge.group(COUNT_GROUP))
        if value != count.value and value not in found and \
                not _about_other(hedge, text, count.other_nouns, ahead=3):
            found[value] = f"answer hedges the count: {quote(hedge.group(0))}"
    named = list(found.values())
    if len(named) > MOST:
        named = named[:MOST] + [f"answer gives {len(named) - MOST} more other counts"]
    return claimed, named + hedged


def _claims(count: Count, text: str) -> Iterator[tuple[int, re.Match]]:
    """(number, match) of every claim in the answer: the renderings' claims, then the
    pattern's, a match holding another kind's noun among its words left out."""
    for source in count.claims:
        for match in _compiled(source).finditer(text):
            yield _value(match.group(COUNT_GROUP)), match
    if count.pattern_claim:
        for match in _matches(_compiled(count.pattern_claim), text,
                              lambda m: _about_other(m, text, count.other_nouns, ahead=0)):
            yield _value(match.group(COUNT_GROUP)), match


def _matches(regex: re.Pattern, text: str, left_out) -> Iterator[re.Match]:
    """regex's matches in text but those `left_out` says to skip; after one of those the
    search goes on just past its number, so no match is hidden inside one left out."""
    position = 0
    while position <= len(text):
        for match in regex.finditer(text, position):
            if left_out(match):
                position = match.start(COUNT_GROUP) + 1
                break
            yield match
        else:
            return


def _about_other(match: re.Match, text: str, nouns: frozenset[str], ahead: int = 1) -> bool:
    """Whether the number counts another thing: a noun of another kind in the claim
    after the number, or in the `ahead` words that follow it."""
    if any(word in nouns for word in _WORD.findall(text, match.end(COUNT_GROUP), match.end())):
        return True
    following = _NEXT_WORDS.match(text, match.end()) if ahead else None
    return following is not None and any(
        word in nouns for word in _WORD.findall(following.group(0))[:ahead])


@functools.lru_cache(maxsize=1024)
def _value(number: str) -> int:
    return number_value(number)


# --- forbidden facts -------------------------------------------------------------------

def _spans(texts: tuple[str, ...], text: str) -> list[tuple[int, int]]:
    """Where the sheltering texts occur in the answer, merged, in order."""
    spans = sorted((m.start(), m.end()) for t in texts for m in _regex(t).finditer(text))
    merged: list[tuple[int, int]] = []
    for start, end in spans:
        if merged and start <= merged[-1][1]:
            merged[-1] = (merged[-1][0], max(end, merged[-1][1]))
        else:
            merged.append((start, end))
    return merged


def _forbidden(item: Forbidden, text: str, sheltered: list[tuple[int, int]]) -> str | None:
    """What the answer says of the forbidden fact outside every shelter, or None."""
    regexes = [_regex(r) for r in item.renderings]
    if item.pattern:
        regexes.append(re.compile(item.pattern, re.IGNORECASE))
    for regex in regexes:
        position = 0
        while (match := regex.search(text, position)) is not None:
            if not _inside(match.start(), match.end(), sheltered) and \
                    not _negated(text, match.start()):
                return item.shown or match.group(0)
            position = match.start() + 1
    return None


def _inside(start: int, end: int, spans: list[tuple[int, int]]) -> bool:
    index = bisect.bisect_right(spans, (start, float("inf"))) - 1
    return index >= 0 and spans[index][0] <= start and end <= spans[index][1]
