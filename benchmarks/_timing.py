"""The one timing helper the benchmark scripts share (each is run as
`python3 benchmarks/<name>.py`, so this directory is on sys.path)."""

import statistics
import time


def timed(runs: int, action) -> float:
    """Median wall-clock milliseconds of `action()` over `runs` runs."""
    samples = []
    for _ in range(runs):
        start = time.perf_counter()
        action()
        samples.append((time.perf_counter() - start) * 1000)
    return statistics.median(samples)
