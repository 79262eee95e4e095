"""benchkit.scoring: the checker.

    from benchkit.scoring import check, diff, Verdict, NotScorable

`check(task, *, state=None, answer=None, seed, user, self_review=False) -> Verdict`
scores a captured RepoState (mutations; reads must leave it unchanged) and a final
answer (reads) against a task loaded by `benchkit.documents.task.load_task`. The expected
state comes from `benchkit.documents.expectation` (`ground_truth`, `expected_state`); both
sides are normalised RepoStates (`benchkit.state`, shared by every stage).
"""

from benchkit.scoring.checker import NotScorable, Verdict, check, diff

__all__ = ["NotScorable", "Verdict", "check", "diff"]
