"""benchkit's report against the TypeScript harness's, on the same samples.

The harness benchkit's design came from is gitea-axi's bench/ (its report command,
bench/report.ts: aggregate.ts over a store of `<arm>/<task>.jsonl` ResultRecords). Its
sources come from the pinned archive (tools/versions: GITEA_AXI_ARCHIVE, checked
against its sha256) in $BENCHKIT_TOOL_ARCHIVES (default: shared/tools beside the
checkout), unpacked into an ignored cache directory (.cache/ts-harness/ in the
checkout, or --cache) with its npm dependencies installed from its lock (`npm ci`; tsx
at the pinned TSX), once: later runs find it there.

The same samples (the report benchmark's: tests/synthetic.py, over every cell of the
shipped tree) are written in both stores' formats, each sample mapped to the harness's
ResultRecord field by field (ts_record). Then three commands run in interleaved rounds,
the order reversed every round, after one untimed run of each (each keeps what it
caches of what did not change: benchkit its tree's matrix, its compiled templates and
its bytecode, tsx its compiled modules):

    benchkit         `benchkit report --format md` (to a file), the store unchanged since
                     its last report: every file's summary kept (benchkit.report.kept)
    benchkit cold    the same with the store's summaries forgotten before each run: every
                     sample read and decoded, as in a report after a run touched every file
    harness          `node --import tsx bench/report.ts --store DIR` (node with tsx's
                     loader, no npx)

Printed: each run's wall time and CPU time (user + system of the process and the
children it waited for: os.wait4), the medians, each benchkit side's ratios to the
harness's against the targets, and the load average before and after; CPU time is what
a loaded machine inflates least. The harness's output is checked: its gitea-axi
cost-equivalent mean must be the one its records give, so it read every sample.

Without npm or the archive the harness's side is skipped, the reason printed on a line
starting "skipped:". Asserts nothing else.

    python3 benchmarks/report_vs_ts_bench.py [--samples N] [--pairs P] [--taskset CPUS]
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import shutil
import statistics
import subprocess
import sys
import tarfile
import tempfile
import time
from collections import defaultdict
from pathlib import Path

from report_bench import make_samples

from benchkit.gitea.tools import ToolUnavailable, read_versions
from benchkit.report import current_matrix, kept

CHECKOUT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(CHECKOUT / "tests"))
from synthetic import write_store  # noqa: E402 (the tests' fixtures)

ARCHIVES = Path(os.environ.get("BENCHKIT_TOOL_ARCHIVES") or CHECKOUT.parent / "shared" / "tools")
CACHE = CHECKOUT / ".cache" / "ts-harness"
TSX = "4.23.1"  # what the harness's lock pins; installed at this version whatever it pins
CPU_TARGET, WALL_TARGET = 0.5, 0.4  # benchkit's median against the harness's, at most
COMMAND = "from benchkit.cli import main; main()"
# The harness's failure tags (result.ts: FailureTag); every other outcome that did not
# pass (failed, crashed, and the ones benchkit keeps apart) is a wrong end state to it.
FAILURES = {"confused": "confused", "hung": "hung"}
WEIGHTS = {"freshInput": 1, "cacheCreation": 1.25, "cacheRead": 0.1, "output": 5}  # aggregate.ts


class Unavailable(Exception):
    """The harness's side cannot run here; the message says why."""


def ts_record(sample: dict, trial: int) -> dict:
    """A benchkit sample as the harness's ResultRecord (bench/result.ts). `trial`: its
    1-based place in its cell. The harness keeps the agent's report for read tasks and
    a transcript of tool calls; benchkit's synthetic samples record no transcript."""
    usage = sample["usage"]
    passed = sample["outcome"] == "passed"
    record = {
        "arm": sample["arm"], "taskId": sample["task"], "tier": sample["tier"], "trial": trial,
        "timestamp": sample["started_at"],
        "tokens": {"freshInput": usage["input"], "cacheCreation": usage["cache_write"],
                   "cacheRead": usage["cache_read"], "output": usage["output"]},
        "turns": sample["turns"], "durationMs": sample["duration_s"] * 1000,
        "imputedCostUsd": sample["cost_usd"] or 0,
        "outcome": {"pass": True} if passed else
                   {"pass": False, "failure": FAILURES.get(sample["outcome"], "incorrect")},
    }
    if sample["tier"] == "read" and sample.get("answer") is not None:
        record["report"] = sample["answer"]
    return record


def write_ts_store(directory: Path, samples: list[dict]) -> list[dict]:
    """The samples as the harness's store (store.ts: <root>/<arm>/<taskId>.jsonl, one
    JSON.stringify line each); the records written."""
    cells: dict[tuple[str, str], list[dict]] = defaultdict(list)
    for item in samples:
        cell = cells[(item["arm"], item["task"])]
        cell.append(ts_record(item, len(cell) + 1))
    for (arm, task), records in cells.items():
        path = directory / arm / f"{task}.jsonl"
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text("".join(json.dumps(r, separators=(",", ":")) + "\n" for r in records),
                        encoding="utf-8")
    return [record for records in cells.values() for record in records]


def harness(cache: Path, archives: Path) -> Path:
    """The harness's source directory, unpacked and installed under `cache` (once)."""
    try:
        pins = read_versions()
    except ToolUnavailable as error:
        raise Unavailable(str(error)) from None
    archive, sha256 = archives / pins["GITEA_AXI_ARCHIVE"], pins["GITEA_AXI_SHA256"]
    place = cache / sha256[:16]
    source = place / "gitea-axi"
    for tool in ("node", "npm"):
        if shutil.which(tool) is None:
            raise Unavailable(f"no `{tool}` on PATH (Debian: apt-get install nodejs npm)")
    if _tsx_version(source) == TSX:
        return source
    if not archive.is_file():
        raise Unavailable(f"no source archive {archive} (set BENCHKIT_TOOL_ARCHIVES to its directory)")
    actual = hashlib.sha256(archive.read_bytes()).hexdigest()
    if actual != sha256:
        raise Unavailable(f"{archive} has sha256 {actual}, tools/versions pins {sha256}")
    building = Path(tempfile.mkdtemp(prefix=f"{place.name}.", dir=_made(cache)))
    try:
        with tarfile.open(archive) as tar:
            tar.extractall(building, filter="data")
        # npm's and tsx's temporary files stay in the cache, out of the caller's TMPDIR.
        env = {**os.environ, "TMPDIR": str(_made(cache / "tmp")),
               "npm_config_update_notifier": "false"}
        _npm(["ci"], building / "gitea-axi", env)
        if _tsx_version(building / "gitea-axi") != TSX:
            _npm(["install", "--no-save", f"tsx@{TSX}"], building / "gitea-axi", env)
        shutil.rmtree(place, ignore_errors=True)
        building.rename(place)
    finally:
        shutil.rmtree(building, ignore_errors=True)
    return source


def _npm(args: list[str], cwd: Path, env: dict) -> None:
    done = subprocess.run(["npm", *args, "--no-audit", "--no-fund"], cwd=cwd, env=env,
                          capture_output=True, text=True, timeout=900)
    if done.returncode != 0:
        raise Unavailable(f"`npm {' '.join(args)}` failed in the harness: "
                          + " ".join(done.stderr.strip().splitlines()[-3:]))


def _tsx_version(source: Path) -> str | None:
    try:
        return json.loads((source / "node_modules" / "tsx" / "package.json").read_text())["version"]
    except (OSError, ValueError, KeyError):
        return None


def _made(directory: Path) -> Path:
    directory.mkdir(parents=True, exist_ok=True)
    return directory


def timed(argv: list[str], output: Path, **options) -> tuple[float, float]:
    """(wall, CPU) seconds of one run of argv, its standard output to `output`: CPU is
    user + system of the process and every child it waited for (os.wait4)."""
    with open(output, "wb") as out, open(output.with_suffix(".err"), "w+b") as err:
        started = time.perf_counter()
        child = subprocess.Popen(argv, stdout=out, stderr=err, **options)
        _, status, usage = os.wait4(child.pid, 0)
        wall = time.perf_counter() - started
        child.returncode = os.waitstatus_to_exitcode(status)
        if child.returncode != 0:
            err.seek(0)
            raise SystemExit(f"{' '.join(argv)} failed ({child.returncode}): "
                             f"{err.read().decode(errors='replace')[-2000:]}")
    return wall, usage.ru_utime + usage.ru_stime


def benchkit_side(store: Path, cache: Path, pin: list[str]) -> tuple[list[str], dict]:
    """`benchkit report --format md` of the store, with a cache directory of its own;
    Python writes its bytecode as by default (a first run compiles, as the harness's
    tsx keeps what it compiled)."""
    env = {key: value for key, value in os.environ.items() if key != "PYTHONDONTWRITEBYTECODE"}
    return ([*pin, sys.executable, "-c", COMMAND, "report", "--store", str(store), "--format",
             "md"], {"env": {**env, "BENCHKIT_CACHE_DIR": str(cache)}})


def check_ts_output(text: str, records: list[dict]) -> None:
    """The harness read every sample: its gitea-axi cost-equivalent mean is its records'."""
    own = [r for r in records if r["arm"] == "gitea-axi"]
    mean = sum(sum(r["tokens"][k] * w for k, w in WEIGHTS.items()) for r in own) / len(own)
    row = next((line.split() for line in text.splitlines() if line.startswith("gitea-axi ")), [])
    if row[1:2] != [str(round(mean))]:
        raise SystemExit(f"the harness's report does not show its samples' gitea-axi mean "
                         f"{round(mean)}: {row}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--samples", type=int, default=100_000)
    parser.add_argument("--pairs", type=int, default=5, help="timed pairs (medians count)")
    parser.add_argument("--cache", type=Path, default=CACHE,
                        help="where the harness is unpacked and installed (kept)")
    parser.add_argument("--taskset", metavar="CPUS",
                        help="run both sides on these CPUs only (taskset -c CPUS)")
    args = parser.parse_args()
    print(f"load average before: {' '.join(f'{v:.2f}' for v in os.getloadavg())}")
    try:
        source: Path | None = harness(args.cache, ARCHIVES)
    except Unavailable as why:
        source = None
        print(f"skipped: the TypeScript harness's side: {why}")
    pin = ["taskset", "-c", args.taskset] if args.taskset else []
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        started = time.perf_counter()
        samples = make_samples(current_matrix(), args.samples)
        write_store(work / "results", samples)
        records = write_ts_store(work / "ts-results", samples)
        sizes = [sum(p.stat().st_size for p in (work / d).glob("*/*.jsonl"))
                 for d in ("results", "ts-results")]
        print(f"stores: {args.samples:,} samples, benchkit's {sizes[0] / 1e6:.1f} MB, the "
              f"harness's {sizes[1] / 1e6:.1f} MB ({time.perf_counter() - started:.1f} s to write)")
        written = time.time() - 60  # written before the report runs, as a run's store is
        for path in (work / "results").glob("*/*.jsonl"):
            os.utime(path, (written, written))
        sides = {name: benchkit_side(work / "results", work / f"cache-{kind}", pin)
                 for name, kind in (("benchkit", "kept"), ("benchkit cold", "cold"))}
        if source is not None:
            tsx = (source / "node_modules" / "tsx" / "dist" / "loader.mjs").as_uri()
            node = subprocess.run(["node", "--version"], capture_output=True, text=True).stdout
            print(f"harness: {source} (node {node.strip()}, tsx {TSX})")
            sides["harness"] = (
                [*pin, "node", "--import", tsx, "bench/report.ts", "--store",
                 str(work / "ts-results")],
                {"cwd": source, "env": {**os.environ, "TMPDIR": str(_made(args.cache / "tmp"))}})
        for name, (argv, options) in sides.items():
            wall, cpu = timed(argv, work / "first.out", **options)
            print(f"{'first ' + name:>20}: {wall:6.3f} s wall, {cpu:6.3f} s CPU (untimed: caches)")
        if source is not None:
            check_ts_output((work / "first.out").read_text(encoding="utf-8"), records)
        runs: dict[str, list[tuple[float, float]]] = {name: [] for name in sides}
        for pair in range(args.pairs):
            order = list(sides) if pair % 2 == 0 else list(reversed(sides))
            for name in order:
                argv, options = sides[name]
                if name == "benchkit cold":  # its store's summaries forgotten
                    shutil.rmtree(work / "cache-cold" / kept.DIRECTORY, ignore_errors=True)
                runs[name].append(timed(argv, work / "run.out", **options))
            print(f"round {pair + 1}: " + "; ".join(
                f"{name} {runs[name][-1][0]:.3f} s wall, {runs[name][-1][1]:.3f} s CPU"
                for name in sides) + f" (load {os.getloadavg()[0]:.2f})")
        medians = {name: (statistics.median(w for w, _ in each),
                          statistics.median(c for _, c in each)) for name, each in runs.items()}
        for name, (wall, cpu) in medians.items():
            print(f"{'median ' + name:>20}: {wall:6.3f} s wall, {cpu:6.3f} s CPU")
        if source is not None:
            for name in ("benchkit", "benchkit cold"):
                cpu_ratio = medians[name][1] / medians["harness"][1]
                wall_ratio = medians[name][0] / medians["harness"][0]
                print(f"{name + ' / harness':>20}: CPU {cpu_ratio:.2f}x (target <= {CPU_TARGET}x: "
                      f"{'met' if cpu_ratio <= CPU_TARGET else 'MISSED'}), wall {wall_ratio:.2f}x "
                      f"(target <= {WALL_TARGET}x: "
                      f"{'met' if wall_ratio <= WALL_TARGET else 'MISSED'})")
    print(f"load average after: {' '.join(f'{v:.2f}' for v in os.getloadavg())}")


if __name__ == "__main__":
    main()
