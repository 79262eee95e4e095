"""What the tests know of the shipped suite, and how they derive the rest from the tree.

The reference suite (the 20 scored tasks the maintainer's published numbers were
measured on) must be PRESENT in tasks.d/; a tree may hold more tasks, so no test
assumes it is all there is. Per-task expectations come from tasks.d/ and refs.d/: a
scored task without a reference solution is skipped, with the reason validate gives.
"""

import pytest

from benchkit.documents.reference import no_reference

REFERENCE_SUITE = {  # ids of the 20 scored tasks, by tier
    "read": ["read-open-issue-count", "read-bug-issue-titles", "read-issue-labels-and-state",
             "read-review-body"],
    "single-mutation": ["close-csv-export-issue", "reopen-readme-badges", "comment-save-large-files",
                        "label-startup-crash", "assign-install-docs-typo", "create-memory-leak-issue"],
    "find-then-act": ["fta-reopen-unlabelled-closed", "fta-label-export-dialog-crash",
                      "fta-merge-startup-pull", "fta-edit-install-docs-typo", "fta-review-csv-pull",
                      "fta-review-docs-pull"],
    "multi-step": ["ms-triage-export-perf", "ms-close-open-crashes", "ms-create-and-apply-stale",
                   "ms-reopen-assign-comment-badges"],
}
REFERENCE_IDS = {task_id for ids in REFERENCE_SUITE.values() for task_id in ids}


def scored_ids(tree) -> set:
    return {task_id for task_id, task in tree.tasks.items() if task.scored}


def replay_params(tree, reference, *, bonus: bool = False) -> list:
    """A pytest param per scored task (and, with bonus, per bonus operation the reference
    plays): the ones the reference lacks skipped with validate's reason, the ones it
    declares unsupported left out."""
    params = []
    for task_id, task in sorted(tree.tasks.items()):
        entry = reference.for_task(task_id)
        if task.scored and entry is None:
            params.append(pytest.param(task_id, marks=pytest.mark.skip(
                reason=no_reference(reference.arm))))
        elif entry is not None and not entry.unsupported and (task.scored or bonus and entry.steps):
            params.append(task_id)
    return params
