"""The checker: a pure, deterministic verdict on a captured state and answer.

Mutations are scored by a full-state diff of the captured RepoState against the
expected end state; every difference names its entity and says whether an intended
change is missing (or wrong) or the agent changed something it was not asked to
(collateral). Reads are scored by their final answer against the task's answer key
(benchkit.scoring.answers: the required facts, and none of the forbidden ones); a
captured state, when given, must still equal the ground truth.
"""

from dataclasses import dataclass, field

from benchkit.documents.answer_key import answer_key
from benchkit.documents.expectation import expected_state, ground_truth
from benchkit.errors import BenchkitError
from benchkit.scoring.answers import answer_differences
from benchkit.scoring.diff import diff

__all__ = ["NotScorable", "Verdict", "check", "diff"]


class NotScorable(ValueError, BenchkitError):
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
        differences += answer_differences(answer_key(task.data, seed), answer)
    return Verdict(passed=not differences, differences=differences)
