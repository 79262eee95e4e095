"""How long the command line takes to start and answer: `benchkit --help`, bare
`benchkit list`, `benchkit list tasks` (every task loaded and validated), `benchkit
show` and `benchkit report` on a small store (the shipped tree's cells, one sample
each, from the tests' fixtures), each a fresh process as a
user starts it. Prints the best of --repeat runs per command, as timeit counts it (other
load on the machine only ever adds), with that run's CPU time, the interpreter's own start (`python -c pass`:
site, .pth files) for scale, and the load average before and after. Targets: --help,
list and show under 0.15 s; `list tasks`, its rows kept from the run before (an
unchanged tree: benchkit.cache), under 0.1 s. Asserts nothing.

    python3 benchmarks/startup_bench.py [--repeat R]
"""

from __future__ import annotations

import argparse
import os
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

CHECKOUT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(CHECKOUT / "tests"))
from synthetic import sample, write_store  # noqa: E402 (the tests' fixtures)

from benchkit.report import current_matrix  # noqa: E402

TARGETS_S = {"--help": 0.15, "list": 0.15, "show": 0.15, "list tasks": 0.1}
COMMAND = "from benchkit.cli import main; main()"


def best_of(repeat: int, argv: list[str], env: dict) -> tuple[float, float]:
    """The fastest of `repeat` runs of `argv`: (wall seconds, CPU seconds of that run's
    process, user and system, which a loaded machine inflates less); a run that fails
    stops here."""
    runs = []
    for _ in range(repeat):
        before = resource.getrusage(resource.RUSAGE_CHILDREN)
        start = time.perf_counter()
        done = subprocess.run(argv, env=env, capture_output=True, text=True)
        wall = time.perf_counter() - start
        after = resource.getrusage(resource.RUSAGE_CHILDREN)
        if done.returncode != 0:
            raise SystemExit(f"{' '.join(argv[3:])} failed ({done.returncode}): {done.stderr}")
        runs.append((wall, after.ru_utime - before.ru_utime + after.ru_stime - before.ru_stime))
    return min(runs)


def small_store(directory: Path) -> Path:
    matrix = current_matrix()
    samples = [sample(arm.id, task.id, task.tier,
                      fingerprints={"task": task.fingerprint, "arm": arm.fingerprint,
                                    "seed": task.seed_fingerprint,
                                    "model": matrix.model_fingerprint})
               for arm in matrix.arms for task in matrix.tasks]
    store = directory / "results"
    write_store(store, samples)
    written = time.time() - 60  # written before the report, as a run's store is
    for path in store.glob("*/*.jsonl"):
        os.utime(path, (written, written))
    return store


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--repeat", type=int, default=5)
    options = parser.parse_args()
    with tempfile.TemporaryDirectory() as temporary:
        place = Path(temporary)
        store = small_store(place)
        env = {**os.environ, "BENCHKIT_ROOT": str(CHECKOUT),
               "BENCHKIT_CACHE_DIR": str(place / "cache"),
               "PYTHONPATH": os.pathsep.join([str(CHECKOUT), os.environ.get("PYTHONPATH", "")])}
        benchkit = [sys.executable, "-c", COMMAND]
        commands = {
            "--help": ["--help"],
            "list": ["list"],
            "list tasks": ["list", "tasks"],
            "show": ["show", "--store", str(store)],
            "report": ["report", "--store", str(store), "--reports", str(place / "reports"),
                       "--format", "md"],
        }
        for cached in ("report", "list tasks"):  # what each keeps of an unchanged tree
            subprocess.run([*benchkit, *commands[cached]], env=env, capture_output=True)
        print(f"load average before: {os.getloadavg()[0]:.2f}")
        wall, cpu = best_of(options.repeat, [sys.executable, "-c", "pass"], env)
        print(f"{'python -c pass':<20} {wall:6.3f} s  (CPU {cpu:.3f} s; the interpreter alone)")
        for name, args in commands.items():
            wall, cpu = best_of(options.repeat, [*benchkit, *args], env)
            target = f"; target < {TARGETS_S[name]} s" if name in TARGETS_S else ""
            print(f"{'benchkit ' + name:<20} {wall:6.3f} s  (CPU {cpu:.3f} s{target})")
        print(f"best of {options.repeat}; load average after: {os.getloadavg()[0]:.2f}")


if __name__ == "__main__":
    main()
