#!/usr/bin/env python3
"""How long the scoring side takes: loading and validating every task, computing each
expected state, checking a captured state, diffing a large repository, and scoring
adversarial read answers of --answer-kib KiB (1 MiB by default) against their keys.

    python3 benchmarks/checker_bench.py [--runs 20] [--issues 2000] [--answer-kib 1024]
"""

from __future__ import annotations

import argparse
import copy
from pathlib import Path

from _timing import timed

from benchkit.documents import load_seed
from benchkit.documents.expectation import expected_state, ground_truth
from benchkit.documents.task import load_task
from benchkit.scoring import check, diff

ROOT = Path(__file__).resolve().parent.parent


def large_state(issues: int) -> dict:
    """A repository with `issues` issues, each with labels, an assignee and comments."""
    labels = [{"name": f"label-{i}", "color": f"{i:06x}", "description": ""} for i in range(50)]
    return {"labels": labels, "pull_requests": [], "issues": [
        {"number": n, "title": f"Issue {n}", "body": "x" * 200, "state": "open",
         "labels": [f"label-{n % 50}", f"label-{(n * 7) % 50}"], "assignees": ["bench"],
         "comments": [{"author": "bench", "body": f"comment {c}"} for c in range(5)]}
        for n in range(1, issues + 1)]}


# Answers built to make a backtracking matcher work hard: numbers, number words and
# hedge words everywhere with nothing claimed until the end; titles cut one letter short;
# long runs of letters and of spaces after a number; a count's own words stuffed,
# negated, hedged after it and listed.
ADVERSARIAL = {
    "read-open-issue-count": {
        "near claims": "5 or maybe 6 issues, nine issues opened, pull request 7 is, #5 open, ",
        "long words": "5 " + "a" * 4000 + " ",
        "long spaces": "5" + " " * 4000 + "x ",
        "claims": "6 open, six issues are open, open: 7, ",
        "negated claims": "not 6 open, 5 or more open, 1, 2 and 3 of the 8 issues are open, ",
    },
    "read-bug-issue-titles": {
        "near titles": "Add CSV export optio Typo in installation doc Fix crash on startu ",
        "titles": "Add CSV export option, Typo in error message, ",
    },
}


def adversarial(kib: int, piece: str) -> str:
    """`piece` repeated to `kib` KiB, then the truth, so the whole answer is read."""
    return (piece * (kib * 1024 // len(piece) + 1))[:kib * 1024] + ". 5 open. Fix crash on startup"


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=20)
    parser.add_argument("--issues", type=int, default=2000)
    parser.add_argument("--answer-kib", type=int, default=1024)
    args = parser.parse_args()

    seed = load_seed(ROOT / "seeds" / "default.yaml")
    paths = sorted((ROOT / "tasks.d").glob("*.yaml"))
    tasks = [load_task(path, seed) for path in paths]
    scored = [task for task in tasks if task.edits]
    states = {task.id: expected_state(task, seed, "bench") for task in scored}

    print(f"load + validate {len(paths)} tasks: "
          f"{timed(args.runs, lambda: [load_task(p, seed) for p in paths]):.1f} ms")
    print(f"expected state of {len(scored)} edit tasks: "
          f"{timed(args.runs, lambda: [expected_state(t, seed, 'bench') for t in scored]):.2f} ms")
    print(f"check {len(scored)} captured states: "
          f"{timed(args.runs, lambda: [check(t, state=states[t.id], seed=seed, user='bench') for t in scored]):.2f} ms")
    print(f"ground truth of the seed: {timed(args.runs, lambda: ground_truth(seed, 'bench')):.3f} ms")

    big = large_state(args.issues)
    changed = copy.deepcopy(big)
    changed["issues"][-1]["comments"].append({"author": "bench", "body": "extra"})
    print(f"diff of a {args.issues}-issue repository (one difference): "
          f"{timed(max(3, args.runs // 4), lambda: diff(big, changed, big)):.1f} ms")

    by_id = {task.id: task for task in tasks}
    for task_id, answers in ADVERSARIAL.items():
        for name, piece in answers.items():
            answer = adversarial(args.answer_kib, piece)
            ms = timed(max(1, args.runs // 10), lambda task=by_id[task_id], answer=answer:
                       check(task, answer=answer, seed=seed, user="bench"))
            print(f"{task_id}: a {args.answer_kib} KiB answer of {name}: {ms:.0f} ms")


if __name__ == "__main__":
    main()
