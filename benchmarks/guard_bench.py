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
from _timing import timed

from benchkit.isolation import Guard

ROOT = Path(__file__).resolve().parent.parent


def corpus_lines() -> list[str]:
    corpus = yaml.safe_load((ROOT / "tests/data/guard_corpus.yaml").read_text())
    lines = []
    for section in corpus.values():
        lines += [line.replace("{tool}", "curl") for line in section.get("allow", [])]
        for entry in section.get("deny", []):
            lines += [entry["command"].replace("{tool}", "curl"), entry["twin"].replace("{tool}", "curl")]
    return lines


# Inputs that once took quadratic time (100,000 `[` took 51 s), each `n` units long.
PATHOLOGICAL = {
    "`[` repeated": lambda n: "echo " + "[" * n,
    "`a[$x` repeated": lambda n: "echo " + "a[$x" * n,
    "one long word": lambda n: "echo " + "a" * n,
    "a chain of copies `v1=$v2;`": lambda n: "".join(f"v{i}=$v{i + 1};" for i in range(n // 8))
                                          + "((v0))",
    "`${a[i]}` repeated": lambda n: "echo " + "${a[i]}" * (n // 7),
    "case patterns in `$( )`": lambda n: "echo $(case x in " + "x) ;; " * (n // 6) + "esac)",
    "awk `a++ / ` repeated": lambda n: "awk '" + "a++ / " * (n // 6) + "1'",
    "sed `[` repeated": lambda n: "sed 's/" + "[" * n + "/x/'",
    "curl `-s` repeated": lambda n: "curl " + "-s " * (n // 3),
}


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

    print("linear time: ms per 1,000 units of hostile input at 25,000 and 100,000 units "
          "(a ratio near 1 is linear; an agent's line is never this long)")
    for name, build in PATHOLOGICAL.items():
        small, large = (timed(1, lambda n=n, build=build: guard.decide(build(n)))
                        for n in (25_000, 100_000))
        print(f"  {name:32} {small / 25:8.2f} {large / 100:8.2f}   ratio {large / small / 4:.2f}")

    command = [sys.executable, "-c", "from benchkit.cli import main; main()", "guard",
               str(ROOT / "arms.d/raw-api.yaml"), "--", "curl -s x | jq ."]
    process = timed(args.runs, lambda: subprocess.run(command, capture_output=True, check=True))
    assert b'"allowed": true' in subprocess.run(command, capture_output=True).stdout
    print(f"`benchkit guard` as a fresh process: {process:.0f} ms")


if __name__ == "__main__":
    main()
