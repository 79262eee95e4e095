"""The checker: a pure, deterministic verdict on a captured state and answer.

Mutations are scored by a full-state diff of the captured RepoState against the
expected end state; every difference names its entity and says whether an intended
change is missing (or wrong) or the agent changed something it was not asked to
(collateral). Reads are scored by their final answer against the task's answer key
(benchkit.scoring.answers: the required facts, and none of the forbidden ones); a
captured state, when given, must still equal the ground truth.
"""

from collections import Counter
from dataclasses import dataclass, field

from benchkit.documents.answer_key import answer_key
from benchkit.documents.expectation import expected_state, ground_truth
from benchkit.scoring.answers import answer_differences
from benchkit.scoring.answers import quote as _quote
from benchkit.state import comment_key, normalise, review_key


class NotScorable(ValueError):
    """A task (an unscored bonus operation) with no scoring spec, or input it cannot score."""


@dataclass(frozen=True)
class Verdict:
    passed: bool
    differences: list = field(default_factory=list)

    def to_dict(self) -> dict:
        return {"passed": self.passed, "differences": list(self.differences)}


def check(task, *, state=None, answer=None, seed, user, self_review=False) -> Verdict:
    """Score `state` (a RepoState dict) and/or `answer` (the final message) against `task`."""
    if not task.edits and not task.facts:
        raise NotScorable(f"task {task.id} has no scoring spec (unscored bonus operation)")
    baseline = ground_truth(seed, user)
    differences = []
    if task.edits:
        if state is None:
            raise NotScorable(f"task {task.id} is scored on the repository state: give a state")
        expected = expected_state(task, seed, user, self_review=self_review)
        differences += diff(expected, state, baseline)
    elif state is not None:
        differences += diff(baseline, state, baseline)  # a read must change nothing
    if task.facts:
        differences += answer_differences(answer_key(task.data, seed), answer)
    return Verdict(passed=not differences, differences=differences)


# ---- full-state diff -------------------------------------------------------------

def diff(expected, actual, baseline=None) -> list:
    """Every difference between two RepoStates, after normalisation.

    With `baseline` (the ground truth) each difference is classified: a value the task
    meant to change is "(intended change missing)" or "(intended change wrong)", any
    other is "(collateral)".
    """
    expected, actual = normalise(expected), normalise(actual)
    baseline = normalise(baseline) if baseline is not None else None
    differences = []
    for section, noun, key, fields in _SECTIONS:
        differences += _diff_section(
            noun, key, fields, expected[section], actual[section],
            None if baseline is None else baseline[section])
    return differences


_ISSUE_FIELDS = (("title", "scalar"), ("body", "scalar"), ("state", "scalar"),
                 ("labels", "set"), ("assignees", "set"), ("comments", "multiset"))
_TEXT_FIELDS = ("title", "body", "description")
_SECTIONS = (
    ("labels", "label", "name", (("color", "scalar"), ("description", "scalar"))),
    ("issues", "issue", "number", _ISSUE_FIELDS),
    ("pull_requests", "pull request", "number", _ISSUE_FIELDS + (("reviews", "multiset"),)),
)


def _diff_section(noun, key, fields, expected, actual, baseline):
    exp = {item[key]: item for item in expected}
    act = {item[key]: item for item in actual}
    base = {} if baseline is None else {item[key]: item for item in baseline}
    known = baseline is not None
    differences = []
    for k in sorted(exp.keys() | act.keys()):
        e, a, b = exp.get(k), act.get(k), base.get(k)
        name = _entity_name(noun, e or a)
        if a is None:
            was = "deleted" if b else "missing"
            differences.append(f"{name}: {was}{_tag(True, b is not None, False, known)}")
        elif e is None:
            was = "still present" if b else f"unexpected {noun}"
            differences.append(f"{name}: {was}{_tag(False, b is not None, True, known)}")
        else:
            for field_name, kind in fields:
                base_value = None if b is None else b[field_name]
                differences += [f"{name}: {text}" for text in _COMPARERS[kind](
                    field_name, e[field_name], a[field_name], base_value, known)]
    return differences


def _diff_scalar(field_name, expected, actual, baseline, known):
    if expected == actual:
        return []
    tag = _tag(expected, baseline, actual, known)
    show = _quote if field_name in _TEXT_FIELDS else str  # states and colours read bare
    return [f"{field_name} is {show(actual)}, expected {show(expected)}{tag}"]


def _diff_set(field_name, expected, actual, baseline, known):
    noun = field_name[:-1]  # labels -> label, assignees -> assignee
    return _diff_counts(Counter(set(expected)), Counter(set(actual)), Counter(set(baseline or [])),
                        known, lambda name: f"{noun} {_quote(name)}")


def _diff_multiset(field_name, expected, actual, baseline, known):
    key, describe = _MULTISET_ITEMS[field_name]
    items = {key(item): item for item in [*expected, *actual]}
    return _diff_counts(Counter(map(key, expected)), Counter(map(key, actual)),
                        Counter(map(key, baseline or [])), known, lambda k: describe(items[k]))


def _diff_counts(exp, act, base, known, describe):
    """Differences of two multisets (a set is one with counts of 1), classified by how
    the expected count departs from the ground truth's."""
    differences = []
    for k in sorted(exp.keys() | act.keys()):
        if exp[k] == act[k]:
            continue
        times = "" if abs(exp[k] - act[k]) == 1 else f" (x{abs(exp[k] - act[k])})"
        if exp[k] > act[k] and not known:
            text = f"{describe(k)} missing{times}"
        elif exp[k] > act[k] and exp[k] > base[k]:  # meant to add it
            text = f"{describe(k)} missing{times} (intended change missing)"
        elif exp[k] > act[k]:
            text = f"{describe(k)} removed{times} (collateral)"
        elif not known:
            text = f"unexpected {describe(k)}{times}"
        elif base[k] > exp[k]:  # meant to remove it
            text = f"{describe(k)} still present{times} (intended change missing)"
        else:
            text = f"unexpected {describe(k)}{times} (collateral)"
        differences.append(text)
    return differences


def _describe_comment(comment):
    return f"comment by {comment['author']}: {_quote(comment['body'])}"


def _describe_review(review):
    inline = f" with {len(review['comments'])} inline comments" if review["comments"] else ""
    return f"{review['kind']} review by {review['author']}{inline}: {_quote(review['body'])}"


_MULTISET_ITEMS = {
    "comments": (comment_key, _describe_comment),
    "reviews": (review_key, _describe_review),
}
_COMPARERS = {"scalar": _diff_scalar, "set": _diff_set, "multiset": _diff_multiset}


def _tag(expected, baseline, actual, known):
    """Classify one difference by comparing expected and actual with the ground truth."""
    if not known:
        return ""
    if expected == baseline:
        return " (collateral)"
    if actual == baseline:
        return " (intended change missing)"
    return " (intended change wrong)"


def _entity_name(noun, item):
    if noun == "label":
        return f"label {_quote(item['name'])}"
    return f"{noun} #{item['number']} {_quote(item['title'])}"
