#!/usr/bin/env python3
"""What the gateway's text checks cost on hostile text: the whole decision on a comment
whose body is N characters of each worst case (references: benchkit.gateway.crossrefs,
mentions: benchkit.gateway.mentions, the JSON read and the value checks), for N from
10k to 1M. Linear: ten times the text, about ten times the time, and 1M well under a
second (tests/gateway/test_gateway_values.py holds that). With --old, the reference pattern the
gateway had before (quadratic on a run of name characters) for comparison, up to 40k.

    python3 benchmarks/text_checks_bench.py [--old]
"""

from __future__ import annotations

import argparse
import json
import re

from _timing import timed

from benchkit.gateway.scope import decide

SIZES = (10_000, 100_000, 1_000_000)
WORST = {  # a unit repeated to N characters
    "letters": "a", "name characters": "a.b-c_9", "slashes": "/", "hashes": "#",
    "digits": "1", "brackets": "[", "at signs": "@", "a/": "a/", "/a": "/a",
    "runs and slashes": "x" * 999 + "/", "links": "/o/r/issues/", "signed refs": "o/r#+",
    "@a": "@a", "e-mails": "a@b.c ", "www": "www.",
}
OLD = re.compile(r"([0-9a-zA-Z_.-]+)/([0-9a-zA-Z_.-]+)[#!][0-9]+")


def decision_ms(text: str) -> float:
    body = json.dumps({"body": text}).encode()
    return timed(3, lambda: decide("POST", "/api/v1/repos/o/r/issues/1/comments", "", "o",
                                   "r", body, "o", "application/json"))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--old", action="store_true", help="also time the old pattern")
    args = parser.parse_args()
    print(f"{'worst case':18}" + "".join(f"{size:>12,}" for size in SIZES) + "   (ms)")
    for name, unit in WORST.items():
        cells = [decision_ms((unit * (size // len(unit) + 1))[:size]) for size in SIZES]
        print(f"{name:18}" + "".join(f"{ms:12.1f}" for ms in cells))
    if args.old:
        for size in (10_000, 20_000, 40_000):
            text = "a" * size
            ms = timed(1, lambda text=text: list(OLD.finditer(text)))
            print(f"old pattern, {size:,} letters: {ms:.0f} ms")


if __name__ == "__main__":
    main()
