#!/usr/bin/env python3
"""How long the scoring side takes: loading and validating every task, computing each
expected state, checking a captured state, and diffing a large repository.

    python3 benchmarks/checker_bench.py [--runs 20] [--issues 2000]
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


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=20)
    parser.add_argument("--issues", type=int, default=2000)
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


if __name__ == "__main__":
    main()
