"""A read's final answer against its answer key (benchkit.documents.answer_key).

The answer must hold every required fact and none of the forbidden ones: no item of
the seed the task rules out (outside the texts that shelter it), no claim of another
count, no hedge of the count. Each check is one left-to-right pass of a regex without
nested repeats over the same characters, so a 1 MiB answer costs what its length does
(benchmarks/checker_bench.py times one), and each message names what it found.
"""

from __future__ import annotations

import bisect
import functools
import json
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

NO_ANSWER = "no final answer: every required fact is missing"
MOST = 10  # other counts named one by one; the rest are counted
# A word that offers another number in the count's place ("5, or maybe 6"), and one
# that makes the count itself approximate ("about 5"): both hedge it.
_HEDGE = re.compile(r"(?<!\w)(?:or|maybe|perhaps|possibly|probably|otherwise|alternatively)"
                    r"(?!\w)(?:[ ,;:()\-]{1,3}[^\W\d_]{1,20}){0,2}?[ ,;:()\-~]{1,3}"
                    + NUMBER_BEFORE + f"(?P<{COUNT_GROUP}>{NUMBER})" + NUMBER_AFTER)
_APPROXIMATE = re.compile(r"(?:about|around|approximately|roughly|nearly|almost|over|under|"
                          r"at least|at most|more than|less than|fewer than|up to|~) ?\Z")
# The next few words after a number, bounded: what it counts, if anything.
_NEXT_WORDS = re.compile(r"(?:[ \-/(]{1,3}[^\W\d_]{1,40}){1,3}")
_WORD = re.compile(r"[^\W\d_]+")


def quote(text, limit=120) -> str:
    """A text as a difference shows it: JSON-quoted, cut at `limit` characters."""
    text = str(text)
    if len(text) > limit:
        text = text[: limit - 1] + "…"
    return json.dumps(text, ensure_ascii=False)


def answer_differences(key: AnswerKey, answer) -> list[str]:
    """One difference per required fact the answer lacks, per forbidden fact it holds,
    per other count it claims and per hedge of the count."""
    if answer is None or not str(answer).strip():
        return [NO_ANSWER]
    text = normalise_answer(answer)
    missing, extra = [], []
    for required in key.required:
        if required.count is None:
            if not _present(required, text):
                missing.append(f"answer lacks required fact: {required.shown}")
            continue
        claims = list(_claims(required.count, text))
        if not any(value == required.count.value for value, _ in claims):
            missing.append(f"answer lacks required fact: {required.shown}")
        extra += _other_counts(required.count, claims, text)
    sheltered = _spans(key.sheltered, text)
    extra[:0] = [f"answer names {item.says}: {quote(found)}" for item in key.forbidden
                 if (found := _forbidden(item, text, sheltered)) is not None]
    return missing + extra


def _present(required: Required, text: str) -> bool:
    return (any(_regex(r).search(text) for r in required.renderings)
            or bool(required.pattern and re.search(required.pattern, text, re.IGNORECASE)))


@functools.lru_cache(maxsize=512)
def _regex(rendering: str) -> re.Pattern:
    return rendering_regex(rendering)


@functools.lru_cache(maxsize=256)
def _compiled(source: str) -> re.Pattern:
    return re.compile(source)


# --- counts ----------------------------------------------------------------------------

def _claims(count: Count, text: str) -> Iterator[tuple[int, re.Match]]:
    """(number, match) of every claim in the answer, each of its claim regexes in
    turn, a match about something else (another noun) left out. The next search starts
    just past the number, so a claim is never hidden inside one that was left out."""
    for source in count.claims:
        regex, position = _compiled(source), 0
        while (match := regex.search(text, position)) is not None:
            position = match.start(COUNT_GROUP) + 1
            if not _about_other(match, text, count.other_nouns):
                yield number_value(match.group(COUNT_GROUP)), match


def _about_other(match: re.Match, text: str, nouns: frozenset[str], ahead: int = 1) -> bool:
    """Whether the number counts another thing: a noun of another kind in the claim
    after the number, or in the `ahead` words that follow it."""
    inside = _WORD.findall(text, match.end(COUNT_GROUP), match.end())
    following = _NEXT_WORDS.match(text, match.end())
    after = _WORD.findall(following.group(0))[:ahead] if following else []
    return any(word in nouns for word in (*inside, *after))


def _other_counts(count: Count, claims: list[tuple[int, re.Match]], text: str) -> list[str]:
    """Another number claimed, a number offered in the count's place, the count made
    approximate: each once, the first MOST of them named."""
    found: dict[int, str] = {}
    for value, match in claims:
        if value != count.value and value not in found:
            found[value] = f"answer gives another count: {value} ({quote(match.group(0))})"
    position = 0
    while (hedge := _HEDGE.search(text, position)) is not None:
        position = hedge.start(COUNT_GROUP) + 1
        value = number_value(hedge.group(COUNT_GROUP))
        if value != count.value and value not in found and \
                not _about_other(hedge, text, count.other_nouns, ahead=3):
            found[value] = f"answer hedges the count: {quote(hedge.group(0))}"
    hedged: list[str] = []
    for value, match in claims:
        start = match.start(COUNT_GROUP)
        before = _APPROXIMATE.search(text[max(0, start - 20):start])
        if value == count.value and before and not hedged:
            hedged.append(f"answer hedges the count: {quote(before.group(0) + match.group(COUNT_GROUP))}")
    named = list(found.values())
    if len(named) > MOST:
        named = named[:MOST] + [f"answer gives {len(named) - MOST} more other counts"]
    return named + hedged


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
            if not _inside(match.start(), match.end(), sheltered):
                return item.shown or match.group(0)
            position = match.start() + 1
    return None


def _inside(start: int, end: int, spans: list[tuple[int, int]]) -> bool:
    index = bisect.bisect_right(spans, (start, float("inf"))) - 1
    return index >= 0 and spans[index][0] <= start and end <= spans[index][1]
