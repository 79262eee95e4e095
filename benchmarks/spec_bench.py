#!/usr/bin/env python3
"""How fast the documents side answers: `benchkit validate` as a fresh process (what a user
or an editor hook waits for), loading the shipped tree in-process, a large seed, and a
tree grown to many tasks.

    python3 benchmarks/spec_bench.py [--runs 10] [--tasks 500] [--issues 2000]
"""

from __future__ import annotations

import argparse
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import yaml
from _timing import timed

from benchkit.documents import load_seed, load_tree

ROOT = Path(__file__).resolve().parent.parent


def grown_tree(directory: Path, tasks: int, issues: int) -> Path:
    """A copy of the shipped tree with `tasks` more tasks and `issues` more seed issues."""
    root = directory / f"tree-{tasks}-{issues}"
    root.mkdir()
    for name in ("suite.yaml", "seeds", "tasks.d", "arms.d"):
        source = ROOT / name
        (shutil.copytree if source.is_dir() else shutil.copy2)(source, root / name)
    seed = yaml.safe_load((root / "seeds" / "default.yaml").read_text())
    seed["issues"] += [{"title": f"Extra issue {n}", "body": "Filler.", "labels": ["bug"]}
                       for n in range(issues)]
    (root / "seeds" / "default.yaml").write_text(yaml.safe_dump(seed, sort_keys=False))
    for n in range(tasks):
        (root / "tasks.d" / f"extra-{n}.yaml").write_text(
            f"id: extra-{n}\ntier: single-mutation\n"
            f"intent: Label issue {n} a bug.\n"
            f"edits:\n  - issue: {{title: Add CSV export option}}\n"
            "    add_labels: [bug]\n")
    return root


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=10)
    parser.add_argument("--tasks", type=int, default=500)
    parser.add_argument("--issues", type=int, default=2000)
    args = parser.parse_args()

    command = [sys.executable, "-c", "from benchkit.cli import main; main()", "validate"]
    cold = timed(args.runs, lambda: subprocess.run(command, cwd=ROOT, check=True, capture_output=True))
    report("benchkit validate, shipped tree, fresh process", cold)
    report("load_tree, shipped tree, in-process", timed(args.runs, lambda: load_tree(ROOT)))
    with tempfile.TemporaryDirectory() as directory:
        big_seed = grown_tree(Path(directory), 0, args.issues) / "seeds" / "default.yaml"
        report(f"load_seed, {args.issues + 8} issues", timed(args.runs, lambda: load_seed(big_seed)))
        many = grown_tree(Path(directory), args.tasks, 0)
        report(f"load_tree, {args.tasks} more tasks on the shipped seed",
               timed(max(1, args.runs // 5), lambda: load_tree(many)))


def report(label: str, milliseconds: float):
    print(f"{label + ':':<55}{milliseconds:9.1f} ms")


if __name__ == "__main__":
    main()
