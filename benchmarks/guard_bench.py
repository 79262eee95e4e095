#!/usr/bin/env python3
"""How fast the guard decides: the guard sits in the agent loop (every Bash call waits
for it), and `benchkit guard` is what a user or a hook runs.

Prints the median decision time over the corpus (tests/data/guard_corpus.yaml), the
slowest corpus line, a long generated multi-line script, pathological nesting, and
`benchkit guard` as a fresh process.

    python3 benchmarks/guard_bench.py [--runs 5]
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
from pathlib import Path

import yaml

from benchkit.isolation import Guard

from _timing import timed

ROOT = Path(__file__).resolve().parent.parent


def corpus_lines() -> list[str]:
    corpus = yaml.safe_load((ROOT / "tests/data/guard_corpus.yaml").read_text())
    lines = []
    for section in corpus.values():
        lines += [line.replace("{tool}", "curl") for line in section.get("allow", [])]
        for entry in section.get("deny", []):
            lines += [entry["command"].replace("{tool}", "curl"), entry["twin"].replace("{tool}", "curl")]
    return lines


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=5)
    args = parser.parse_args()
    guard = Guard("raw-api", "shell", "curl")
    lines = corpus_lines()

    each = {line: timed(args.runs, lambda line=line: guard.decide(line)) for line in lines}
    slowest = max(each, key=each.get)
    print(f"corpus: {len(lines)} lines, median {statistics.median(each.values()):.3f} ms, "
          f"slowest {each[slowest]:.3f} ms ({slowest[:50]!r}...)")

    loop = "\n".join(
        f'for n in 1 2 3; do curl -s "$API/issues/$n" | jq -r \'.title\' > "t_$n.txt"; done && echo {i}'
        for i in range(500))
    print(f"a 500-line script ({len(loop)} chars): {timed(args.runs, lambda: guard.decide(loop)):.1f} ms")

    deep = "echo " + "$(" * 35 + "curl x" + ")" * 35
    print(f"35 nested substitutions: {timed(args.runs, lambda: guard.decide(deep)):.2f} ms")
    parens = "((" * 2000 + "curl x"
    print(f"4000 unclosed parentheses (denied): {timed(args.runs, lambda: guard.decide(parens)):.1f} ms")

    command = [sys.executable, "-c", "from benchkit.cli import main; main()", "guard",
               str(ROOT / "arms.d/raw-api.yaml"), "--", "curl -s x | jq ."]
    process = timed(args.runs, lambda: subprocess.run(command, capture_output=True, check=True))
    assert b'"allowed": true' in subprocess.run(command, capture_output=True).stdout
    print(f"`benchkit guard` as a fresh process: {process:.0f} ms")


if __name__ == "__main__":
    main()
