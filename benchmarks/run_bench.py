#!/usr/bin/env python3
"""Wall time of `benchkit run` over 8 cells (--cells), one trial each: sequential (--jobs 1)
against parallel (--jobs 4), on a forge this script starts.

Two agents:
  thinking  the claude driver against a scripted model that takes --latency seconds
            per turn, as a real model does; every trial is one turn ("Done.").
            Waiting dominates, as in a real run: what --jobs is for.
  replay    refs.d/raw-api.yaml replayed (no latency; the CLI's own CPU dominates,
            so on a machine with few cores parallel gains little). --no-replay skips.

For each: wall seconds, samples stored, the sum of the trials' agent time, and the
harness's overhead per trial ((wall - agent time) / trials in the sequential run:
what provisioning ahead of the agent leaves unhidden).

    python3 benchmarks/run_bench.py [--latency 5] [--jobs 4] [--no-replay] [--cells 8]
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from benchkit.agent.scripted import ScriptedModel, say
from benchkit.forge import Forge
from benchkit.store import Store

ROOT = Path(__file__).resolve().parent.parent
TASKS = ["read-bug-issue-titles", "read-issue-labels-and-state", "read-open-issue-count",
         "read-review-body", "close-csv-export-issue", "label-startup-crash",
         "reopen-readme-badges", "comment-save-large-files"]


class ThinkingModel(ScriptedModel):
    """The scripted model, taking `latency` seconds over each agent turn."""

    def __init__(self, script, latency: float):
        super().__init__(script)
        self.latency = latency

    def turn_for(self, index, request):
        time.sleep(self.latency)
        return super().turn_for(index, request)


def run(forge: Forge, store: Path, jobs: int, driver: str, env: dict, tasks: list[str]) -> dict:
    command = [sys.executable, "-c", "from benchkit.cli import main; main()", "run",
               str(ROOT / "arms.d/raw-api.yaml"), *[a for t in tasks for a in ("--task", t)],
               "--driver", driver, "--jobs", str(jobs), "--json", "--no-report",
               "--host", forge.url, "--token", forge.token, "--store", str(store)]
    store.parent.mkdir(parents=True)
    started = time.perf_counter()
    done = subprocess.run(command, env=env, capture_output=True, text=True, cwd=store.parent)
    wall = time.perf_counter() - started
    if done.returncode != 0:
        sys.exit(f"benchkit run --jobs {jobs} failed ({done.returncode}):\n{done.stderr[-2000:]}")
    summary = json.loads(done.stdout.splitlines()[-1])
    samples = list(Store(store).samples())
    return {"wall": wall, "samples": len(samples), "outcomes": summary["outcomes"],
            "agent": sum(s["duration_s"] for s in samples)}


def compare(name: str, forge: Forge, scratch: Path, jobs: int, driver: str, env: dict,
            tasks: list[str]) -> None:
    sequential = run(forge, scratch / f"{driver}-1" / "results", 1, driver, env, tasks)
    parallel = run(forge, scratch / f"{driver}-{jobs}" / "results", jobs, driver, env, tasks)
    overhead = (sequential["wall"] - sequential["agent"]) / len(tasks)
    print(f"{name}: {len(tasks)} cells, one trial each")
    for label, result in (("--jobs 1", sequential), (f"--jobs {jobs}", parallel)):
        print(f"  {label:9} {result['wall']:6.1f} s wall, {result['samples']} samples "
              f"{result['outcomes']}, agent time {result['agent']:.1f} s")
    print(f"  parallel/sequential: {parallel['wall'] / sequential['wall']:.2f}; "
          f"harness overhead per sequential trial: {overhead:.2f} s "
          f"(process start, probe, the first seed, snapshot, delete)")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--latency", type=float, default=5.0, help="seconds per model turn")
    parser.add_argument("--jobs", type=int, default=4)
    parser.add_argument("--no-replay", action="store_true")
    parser.add_argument("--cells", type=int, default=len(TASKS), choices=range(1, len(TASKS) + 1),
                        metavar=f"1..{len(TASKS)}", help="how many of the cells")
    args = parser.parse_args()
    tasks = TASKS[:args.cells]
    print(f"{os.cpu_count()} CPU(s), load average {os.getloadavg()[0]:.1f}")
    script = [say("Done.")] * (2 * len(tasks))  # one turn a trial, two runs
    with tempfile.TemporaryDirectory(prefix="benchkit-run-bench-") as scratch, \
            Forge() as forge, ThinkingModel(script, args.latency) as model:
        scratch = Path(scratch)
        (scratch / "claude").mkdir()
        env = {**os.environ, "ANTHROPIC_BASE_URL": model.url, "ANTHROPIC_API_KEY": "sk-bench",
               "CLAUDE_CONFIG_DIR": str(scratch / "claude"), "BENCHKIT_ROOT": str(ROOT),
               "BENCHKIT_CACHE_DIR": str(scratch / "cache")}
        for name in ("GITEA_URL", "GITEA_TOKEN"):
            env.pop(name, None)
        compare(f"thinking model ({args.latency:g} s a turn)", forge, scratch, args.jobs,
                "claude", env, tasks)
        if not args.no_replay:
            compare("replay", forge, scratch, args.jobs, "replay", env, tasks)


if __name__ == "__main__":
    main()
