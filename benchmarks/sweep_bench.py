#!/usr/bin/env python3
"""A full measured sweep on this machine: every arm x every scored task x 3 trials,
under the claude driver, against the stand-in for the model service, with a
sprinkling of the service's faults; the wall time, trials per minute, and how each
fault was classified.

The stand-in plays each arm's reference (refs.d/) as the replay driver does, but the
run is the claude driver's: each request reports fixed usage as the API does (input,
cache write 5 min and 1 h, cache read, output), so every sample is measured, not
estimated. Every NTH trial (default 4) of an arm gets one fault, in turn:

    overload-recovered    529 twice, then the turn plays
    rate-limit-recovered  429 with retry-after 0.2 s, once
    server-error          500 until the CLI gives up (CLAUDE_CODE_MAX_RETRIES=2)
    sse-error             an SSE `event: error` once (the CLI retries silently)
    reset                 a connection reset after message_start once
    stall                 a stream that stops mid-message (idle limit 3 s)
    slow-first-byte       a first byte 1 s late (within the idle limit)
    refusal               the model refuses twice (the CLI gives up)
    max-tokens            one max_tokens stop (the CLI continues)

(401/403 stop a whole run, by design: tests/agent/test_model_service.py runs them.)
It runs the real run path (pre-flight, an embedded forge, the gateway, the sandbox,
the loop with --jobs, the failure replay) on a store in a temporary directory.

    python3 benchmarks/sweep_bench.py [--trials 3] [--jobs 2] [--every 4] [--arm raw-api ...]
                                      [--task ID ...] [--keep DIR]

Its temporary directory is removed at the end; --keep DIR keeps the store there.
"""

from __future__ import annotations

import argparse
import dataclasses
import os
import shutil
import sys
import tempfile
import threading
import time
from collections import Counter, defaultdict
from pathlib import Path

from benchkit.agent import faults
from benchkit.agent.claude import ClaudeDriver
from benchkit.agent.driver import AgentRequest, AgentRun
from benchkit.agent.replay import Play, ReplayModel, context_for
from benchkit.agent.scripted import Turn
from benchkit.agent.wire import usage
from benchkit.documents.reference import Reference
from benchkit.planning.settings import RunSettings
from benchkit.preflight.checks import preflight
from benchkit.run import execution
from benchkit.run.cancel import Cancellable
from benchkit.run.invocation import Invocation
from benchkit.run.progress import Progress
from benchkit.run.status import exit_status
from benchkit.stopping import Stop
from benchkit.store import Store

ROOT = Path(__file__).resolve().parent.parent
ARMS = ["raw-api", "tea", "gitea-mcp", "gitea-axi"]
TOOLS = [ROOT / ".tools" / name for name in ("tea-0.11.1-13-g68b9620", "gitea-mcp-a5dd03c",
                                             "gitea-axi-0.1.0/bin")]
# What every main request reports (auxiliary ones a tenth of it): measured figures.
FIGURES = usage(input=40, cache_write_5m=900, cache_write_1h=100, cache_read=6000, output=120)
CHORE = usage(input=30, output=5)
IDLE_LIMIT = 3.0
# fault name -> (the fault or turn change, the turn it hits)
FAULTS: dict[str, tuple[dict, int]] = {
    "overload-recovered": ({"fault": faults.overloaded(times=2)}, 1),
    "rate-limit-recovered": ({"fault": faults.rate_limited(retry_after=0.2)}, 0),
    "server-error": ({"fault": faults.server_error(times=0)}, 1),
    "sse-error": ({"fault": faults.Fault("stream-error", 529)}, 1),
    "reset": ({"fault": faults.reset()}, 0),
    "stall": ({"fault": faults.stall_mid_stream(times=0)}, 1),
    "slow-first-byte": ({"first_byte_delay": 1.0}, 0),
    "refusal": ({"text": "I can't help with that.", "calls": (), "stop_reason": "refusal"}, 0),
    "max-tokens": ({"text": "and so on", "calls": (), "stop_reason": "max_tokens"}, 0),
}
REFUSALS = 2  # the CLI continues past one refusal and gives up at the second
# Faults of the service (not max_tokens, the model's own): never charged to an arm.
SERVICE_FAULTS = [name for name in FAULTS if name != "max-tokens"]


class FaultyPlay(ReplayModel):
    """The reference played with measured usage, one fault injected at its turn."""

    def __init__(self, play: Play, model: str, fault: str | None):
        super().__init__(play, model=model)
        self.usage, self.auxiliary_usage = FIGURES, CHORE
        self.fault = fault
        self.refused = 0

    def turn_for(self, index: int, request: dict) -> Turn:
        turn = super().turn_for(index, request)
        if self.fault is None:
            return turn
        change, at = FAULTS[self.fault]
        if self.fault == "refusal" and index >= at and self.refused < REFUSALS:
            self.refused += 1
            return dataclasses.replace(turn, **change)
        return dataclasses.replace(turn, **change) if index == at else turn


class SweepDriver(ClaudeDriver):
    """The claude driver against a stand-in that plays the arm's reference (a
    ClaudeDriver, so the run reads what it reads of one: its runtime, secrets, ...)."""

    def __init__(self, reference: Reference, every: int, log: dict):
        super().__init__(confine=True)
        self.reference, self.every, self.log = reference, every, log
        self._lock = threading.Lock()
        self._runs = 0

    def run(self, request: AgentRequest) -> AgentRun:
        given = request.assignment
        assert given is not None
        task = self.reference.for_task(given.task)
        assert task is not None and task.unsupported is None
        with self._lock:  # the arm's trials in the order they start
            self._runs += 1
            nth, faulted = divmod(self._runs, self.every)
            fault = list(FAULTS)[(nth - 1) % len(FAULTS)] if faulted == 0 else None
        play = Play(task, context_for(**given.where.names(), self_review=given.self_review,
                                      targets=task.targets))
        with FaultyPlay(play, request.model, fault) as model:
            run = ClaudeDriver(base_url=model.url, confine=self.confine).run(request)
        self.log[run.started.isoformat()] = fault  # the sample's started_at
        return run


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--trials", type=int, default=3)
    parser.add_argument("--jobs", type=int, default=2)
    parser.add_argument("--every", type=int, default=4, help="every NTH trial of an arm has a fault")
    parser.add_argument("--arm", action="append", choices=ARMS, help="default: all four")
    parser.add_argument("--task", action="append", default=[],
                        help="only these tasks (default: every scored task)")
    parser.add_argument("--keep", type=Path, help="keep the store in this directory")
    args = parser.parse_args()
    work = Path(tempfile.mkdtemp(prefix="sweep-bench-"))
    try:
        return sweep(args, work)
    finally:
        if args.keep and (work / "results").is_dir():
            shutil.copytree(work / "results", args.keep, dirs_exist_ok=True)
        shutil.rmtree(work, ignore_errors=True)


def sweep(args: argparse.Namespace, work: Path) -> int:
    os.environ["PATH"] = os.pathsep.join([*map(str, TOOLS), os.environ.get("PATH", "")])
    os.environ["CLAUDE_CODE_MAX_RETRIES"] = "2"  # a fault that outlasts them ends in seconds
    for name in ("ANTHROPIC_BASE_URL", "GITEA_URL", "GITEA_TOKEN"):
        os.environ.pop(name, None)
    arms = [str(ROOT / "arms.d" / f"{arm}.yaml") for arm in (args.arm or ARMS)]
    os.environ["BENCHKIT_CACHE_DIR"] = str(work / "cache")
    progress = Progress(json_mode=False, estimated=False)
    checked = preflight(arms, tiers=("read", "single-mutation", "find-then-act", "multi-step"),
                        task_patterns=args.task, driver="replay")  # the references, to play; the run is the claude driver's
    suite = dataclasses.replace(checked.tree.suite, model_idle_seconds=IDLE_LIMIT)
    checked = dataclasses.replace(checked, tree=dataclasses.replace(checked.tree, suite=suite))
    settings = RunSettings(driver="claude", store_dir=str(work / "results"), trials=args.trials,
                           jobs=args.jobs)
    log: dict = {}
    load_before = os.getloadavg()
    started = time.monotonic()
    class Sweep(Invocation):  # the run's own trials, each arm's driver the sweep's
        def _driver(self, arm):
            return Cancellable(SweepDriver(self.checked.references[arm.id], args.every, log),
                               self.stop)

    execution.Invocation = Sweep  # type: ignore[misc]  # the one seam: the rest is the run's
    with Stop(say=progress.note) as stop:
        status = exit_status(execution.execute(checked, progress, settings, stop, None))
    wall = time.monotonic() - started
    progress.close()
    return report(work, log, wall, status, load_before, args)


def report(work: Path, log: dict, wall: float, status: int, load_before, args) -> int:
    """Print the figures; exit 1 when a fault of the service was charged to an arm."""
    samples = list(Store(work / "results").samples())
    by_fault: dict[str, Counter] = defaultdict(Counter)
    charged = []
    for sample in samples:
        fault = log.get(sample["started_at"])  # the run that made it, by its start
        by_fault[fault or "none"][f"{sample['outcome']}/{sample['failure_class']}"] += 1
        if fault in SERVICE_FAULTS and sample["valid"] and sample["outcome"] != "passed":
            charged.append(sample["id"])
    outcomes = Counter(s["outcome"] for s in samples)
    estimated = sum(1 for s in samples if s.get("usage_estimated"))
    print(f"\nsweep: {len(args.arm or ARMS)} arm(s) x their scored tasks x {args.trials} "
          f"trial(s), --jobs {args.jobs}, a fault every {args.every}th trial of an arm")
    print(f"trials stored: {len(samples)} (run exit {status}); measured {len(samples) - estimated}, "
          f"estimated {estimated}")
    print(f"wall time: {wall:.0f} s ({wall / 60:.1f} min); "
          f"{len(samples) / (wall / 60):.1f} trials/min")
    print(f"load average (1 min): {load_before[0]:.1f} at the start, {os.getloadavg()[0]:.1f} "
          f"at the end; {os.cpu_count()} cores")
    print("outcomes: " + ", ".join(f"{k} {v}" for k, v in outcomes.most_common()))
    print(f"faults injected: {sum(1 for f in log.values() if f)}; how each was classified "
          f"(outcome/failure class: trials):")
    for fault in [*FAULTS, "none"]:
        if by_fault.get(fault):
            print(f"  {fault:21} " + ", ".join(f"{k} {v}" for k, v in by_fault[fault].most_common()))
    print(f"faults of the model service charged to an arm: {len(charged)} {charged or ''}")
    if args.keep:
        print(f"store: {args.keep}")
    return 1 if charged else 0


if __name__ == "__main__":
    sys.exit(main())
