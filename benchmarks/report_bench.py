"""How long `benchkit report` takes on a large store: 100,000 samples over the shipped
tree's cells, loaded, aggregated (with every bootstrap interval) and rendered as
markdown and HTML. Target: under 2 s (the best of --repeat runs, as timeit counts, since
other load on the machine only ever adds). Prints figures; asserts nothing.

    python3 benchmarks/report_bench.py [--samples N] [--repeat R]
"""

from __future__ import annotations

import argparse
import random
import tempfile
import time
from pathlib import Path

from benchkit.report import build_report, current_matrix, load_store, render
from benchkit.report.render import _TEMPLATES
from benchkit.report.synthetic import sample, write_store

OUTCOMES = ["passed"] * 17 + ["failed", "confused", "invalid", "harness-error"]


def make_store(directory: Path, matrix, count: int, seed: int = 7):
    """count samples spread over every (arm, task) cell, current fingerprints."""
    rng = random.Random(seed)
    cells = [(arm, task) for arm in matrix.arms for task in matrix.tasks]
    samples = []
    for index in range(count):
        arm, task = cells[index % len(cells)]
        samples.append(sample(
            arm.id, task.id, task.tier, outcome=rng.choice(OUTCOMES),
            tokens={"input": rng.randint(200, 4000), "cache_write": rng.randint(5000, 20000),
                    "cache_read": rng.randint(20000, 90000), "output": rng.randint(200, 1500)},
            turns=rng.randint(2, 12), duration_s=rng.uniform(5, 60),
            cost_usd=rng.uniform(0.05, 0.2), blocked_calls=rng.choice([0, 0, 0, 1]),
            fingerprints={"task": task.fingerprint, "arm": arm.fingerprint,
                          "seed": task.seed_fingerprint, "model": matrix.model_fingerprint}))
    write_store(directory, samples)


def cold_report(store: Path, matrix) -> tuple[dict, dict]:
    """Seconds per stage of one cold report (templates compiled anew, as a fresh
    `benchkit report` does): load, aggregate, render md and HTML; and the report."""
    _TEMPLATES.clear()
    times, started = {}, time.perf_counter()
    contents = load_store(store)
    times["load"] = time.perf_counter() - started
    mark = time.perf_counter()
    report = build_report(contents, matrix)
    times["aggregate + bootstrap"] = time.perf_counter() - mark
    for format_ in ("md", "html"):
        mark = time.perf_counter()
        render(report, format_)
        times[f"render {format_}"] = time.perf_counter() - mark
    times["total"] = time.perf_counter() - started
    return times, report


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--samples", type=int, default=100_000)
    parser.add_argument("--repeat", type=int, default=3, help="timed runs (best counts)")
    args = parser.parse_args()
    matrix = current_matrix()
    with tempfile.TemporaryDirectory() as tmp:
        store = Path(tmp) / "results"
        started = time.perf_counter()
        make_store(store, matrix, args.samples)
        size = sum(p.stat().st_size for p in store.glob("*/*.jsonl"))
        print(f"store: {args.samples:,} samples, {len(matrix.arms) * len(matrix.tasks)} cells, "
              f"{size / 1e6:.1f} MB (written in {time.perf_counter() - started:.1f} s)")

        runs, report = [], None
        for _ in range(args.repeat):
            times, report = cold_report(store, matrix)
            runs.append(times)
        for stage in runs[0]:
            print(f"{stage:>22}: " + "  ".join(f"{run[stage]:6.3f}" for run in runs) + " s")
        best = min(run["total"] for run in runs)
        print(f"{'best total':>22}: {best:6.3f} s  (target < 2 s: {'met' if best < 2 else 'MISSED'})")
        for format_ in ("json", "csv"):
            mark = time.perf_counter()
            render(report, format_)
            print(f"{'render ' + format_:>22}: {time.perf_counter() - mark:6.3f} s (extra)")


if __name__ == "__main__":
    main()
