#!/usr/bin/env python3
"""What `benchkit validate --live` costs in wall time: every control of an arm on the
embedded forge, at a few --jobs settings, with the time each kind of control took.

    python3 benchmarks/validate_live_bench.py [--arm arms.d/raw-api.yaml] [--jobs 1 3]
                                              [--task ID ...]
"""

from __future__ import annotations

import argparse
import statistics
import time
from pathlib import Path

from benchkit.proving import selfcheck

ROOT = Path(__file__).resolve().parent.parent


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--arm", default=str(ROOT / "arms.d" / "raw-api.yaml"))
    parser.add_argument("--jobs", type=int, nargs="+", default=[1, 3])
    parser.add_argument("--task", action="append", default=[], help="limit to these tasks")
    args = parser.parse_args()
    for jobs in args.jobs:
        started = time.perf_counter()
        checks = selfcheck.validate_live([args.arm], root=ROOT, task_ids=args.task, jobs=jobs)
        wall = time.perf_counter() - started
        controls = [control for check in checks for control in check.controls.values()]
        verdicts = {v: sum(c.verdict == v for c in checks) for v in sorted({c.verdict for c in checks})}
        print(f"jobs={jobs}: {len(checks)} tasks, {len(controls)} controls in {wall:.1f}s wall "
              f"({wall / max(len(controls), 1):.2f}s a control); verdicts {verdicts}")
        for name in selfcheck.CONTROLS:
            seconds = [c.seconds for c in controls if c.name == name]
            if seconds:
                print(f"  {name:<13} {len(seconds):>3} runs: median {statistics.median(seconds):.2f}s, "
                      f"max {max(seconds):.2f}s")

if __name__ == "__main__":
    main()
