"""The checker: a pure, deterministic verdict on a captured state and answer.

Mutations are scored by a full-state diff of the captured RepoState against the
expected end state; every difference names its entity and says whether an intended
change is missing (or wrong) or the agent changed something it was not asked to
(collateral). Reads are scored by required facts in the final answer; a captured
state, when given, must still equal the ground truth.
"""

import re
from dataclasses import dataclass, field

from benchkit.documents.expectation import expected_state, ground_truth
from benchkit.scoring.diff import diff
from benchkit.state.records import quote as _quote

__all__ = ["NotScorable", "Verdict", "check", "diff", "match_facts"]


class NotScorable(ValueError):
    """A task (an unscored bonus operation) with no scoring spec, or input it cannot score."""


@dataclass(frozen=True)
class Verdict:
    passed: bool
    differences: list = field(default_factory=list)

    def to_dict(self) -> dict:
        return {"passed": self.passed, "differences": list(self.differences)}


def check(task, *, state=None, answer=None, seed, user, self_review=False,
          seeded=None) -> Verdict:
    """Score `state` (a RepoState dict) and/or `answer` (the final message) against `task`.
    `seeded`: the repository's settings as captured once it was seeded (the host's
    defaults are not the seed's to say); without it they are not compared."""
    if not task.edits and not task.facts:
        raise NotScorable(f"task {task.id} has no scoring spec (unscored bonus operation)")
    baseline = ground_truth(seed, user, seeded=seeded)
    differences = []
    if task.edits:
        if state is None:
            raise NotScorable(f"task {task.id} is scored on the repository state: give a state")
        expected = expected_state(task, seed, user, self_review=self_review, seeded=seeded)
        differences += diff(expected, state, baseline)
    elif state is not None:
        differences += diff(baseline, state, baseline)  # a read must change nothing
    if task.facts:
        differences += match_facts(task.facts, answer)
    return Verdict(passed=not differences, differences=differences)


# ---- required facts --------------------------------------------------------------

_QUOTES = str.maketrans({"\u2018": "'", "\u2019": "'", "\u201a": "'", "\u201b": "'",
                         "\u201c": '"', "\u201d": '"', "\u201e": '"', "\u201f": '"'})
# Markdown emphasis and code marks around words: every `*` and backtick, and a run of
# `_` that does not sit inside a word (`__5__` and `_5_` are emphasis, as markdown reads
# them; `snake_case` and `fix_csv_export` keep theirs). Possessive, so a run inside a
# word is never taken in part.
_MARKUP = re.compile(r"[*`]+|(?<!\w)_++|_++(?!\w)")


def normalise_answer(text) -> str:
    """Case-fold, straighten curly quotes, drop markdown emphasis, collapse whitespace.
    Facts are normalised the same way, so a fact naming `__init__.py` still matches."""
    text = _MARKUP.sub("", str(text or "").translate(_QUOTES).casefold())
    return " ".join(text.split())


def fact_matches(fact, answer) -> bool:
    """A rendering matches as a whole-word substring; the pattern as a regex search."""
    normal = normalise_answer(answer)
    for rendering in fact.get("any_of", []):
        if _rendering_regex(rendering).search(normal):
            return True
    pattern = fact.get("pattern")
    return bool(pattern and re.search(pattern, normal, re.IGNORECASE))


def match_facts(facts, answer) -> list:
    """One difference per required fact the answer lacks."""
    if answer is None or not str(answer).strip():
        return ["no final answer: every required fact is missing"]
    return [f"answer lacks required fact: {describe_fact(fact)}"
            for fact in facts if not fact_matches(fact, answer)]


def describe_fact(fact) -> str:
    renderings = [_quote(r) for r in fact.get("any_of", [])]
    if fact.get("pattern"):
        renderings.append(f"pattern /{fact['pattern']}/")
    return renderings[0] if len(renderings) == 1 else "any of " + ", ".join(renderings)


def _rendering_regex(rendering):
    """`5 open` must not match inside `15 open`: word characters at a rendering's ends
    must not continue into the answer's neighbouring characters."""
    normal = normalise_answer(rendering)
    start = r"(?<!\w)" if normal[:1].isalnum() or normal[:1] == "_" else ""
    end = r"(?!\w)" if normal[-1:].isalnum() or normal[-1:] == "_" else ""
    return re.compile(start + re.escape(normal) + end)
