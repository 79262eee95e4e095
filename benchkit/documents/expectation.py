"""The expectation interpreter: seed + a task's edits -> the expected RepoState.

`ground_truth` realises a seed as the RepoState a freshly seeded repository has:
issues numbered 1..n in seed order, then pull requests, everything authored by the
user, `assigned: true` meaning the user (benchkit.documents.seeded). A task's edits are
applied to it in order (benchkit.documents.interpreter); each selects entities of the
state as it stands after the edits before it. The same walk, run by `edit_problems` at
load time, reports what makes a task unsound: a selector matching nothing, a
one-entity selector matching several, an undefined label, an edit that changes
nothing, a task whose edits leave the ground truth as it was (it could never fail).
"""

from __future__ import annotations

from benchkit.documents.interpreter import ACTIONS, TARGETS, Interpreter, resolve_variant
from benchkit.documents.repo_edits import merge_bases
from benchkit.documents.seeded import ground_truth, seed_data, seed_plan
from benchkit.errors import BenchkitError
from benchkit.state import normalise

__all__ = ["ACTIONS", "TARGETS", "ExpectationError", "edit_problems", "expected_state",
           "ground_truth", "resolve_variant", "seed_data", "seed_plan"]


class ExpectationError(ValueError, BenchkitError):
    """Edits that cannot be applied to the seed (found by load_task as Problems)."""

    def __init__(self, issues):
        self.issues = issues  # [(json path, message)]
        super().__init__("; ".join(message for _, message in issues))


def expected_state(task, seed, user, self_review=False, seeded=None) -> dict:
    """The RepoState a perfect run of `task` leaves; the ground truth for a read.
    `seeded`: as for `ground_truth`."""
    edits = getattr(task, "edits", None) or []
    interpreter = _interpreter(ground_truth(seed, user, seeded), seed, user, self_review)
    interpreter.apply_all(edits)
    if interpreter.issues:
        raise ExpectationError(interpreter.issues)
    return normalise(interpreter.state)


def edit_problems(edits, seed, user="bench") -> list:
    """[(json path, message)] for everything unsound in `edits`, under both self-review
    variants (a review kind may differ between them)."""
    found = []
    baseline = ground_truth(seed, user)
    for self_review in (False, True):
        # normalise() is a fresh copy (of a state already normal), cheaper than a deep one.
        interpreter = _interpreter(normalise(baseline), seed, user, self_review)
        interpreter.apply_all(edits, check_noop=True)
        issues = list(interpreter.issues)
        if not issues and normalise(interpreter.state) == baseline:
            issues.append((("edits",), "the edits leave the ground truth unchanged, "
                                       "so this task could never fail"))
        found += [issue for issue in issues if issue not in found]
    return found


def _interpreter(state, seed, user, self_review) -> Interpreter:
    return Interpreter(state, user, self_review, merge_bases(seed))
