#!/usr/bin/env python3
"""What one cell costs the harness, apart from the model: a raw-api cell on the embedded
forge with the scripted model (one curl, one answer), timed by stage; and the store's
append rate (each append takes the file lock and fsyncs).

    python3 benchmarks/cell_bench.py [--runs 5] [--appends 500]
"""

from __future__ import annotations

import argparse
import statistics
import tempfile
import time
import uuid
from pathlib import Path

import msgspec

from benchkit.agent.claude import ClaudeDriver
from benchkit.agent.runtime import OnTheCli
from benchkit.agent.scripted import ScriptedModel, bash, say
from benchkit.documents import load_arm, load_tree
from benchkit.forge import Forge
from benchkit.gitea import Client
from benchkit.planning.plan import Trial
from benchkit.preflight.host import probe_host
from benchkit.sample import Record
from benchkit.store import Store
from benchkit.trial.cell import run_trial
from benchkit.trial.prepare import RunContext, prepare_trial

ROOT = Path(__file__).resolve().parent.parent


class Timed(OnTheCli):
    """The Claude driver on a scripted model whose one step closes issue #2."""

    name = "claude"

    def __init__(self):
        self.seconds = 0.0
        self.script = []

    def run(self, request):
        started = time.perf_counter()
        with ScriptedModel(self.script, model=request.model) as model:
            run = ClaudeDriver(base_url=model.url).run(request)
        self.seconds = time.perf_counter() - started
        return run


def one_cell(forge, tree, store) -> dict:
    driver = Timed()
    client = Client(forge.url, forge.token)
    ctx = RunContext(suite=tree.suite, seeds=tree.seeds, client=client, store=store,
                     driver=driver, root=ROOT, host=probe_host(client, tree.suite.repo_prefix))
    trial = Trial(load_arm(ROOT / "arms.d/raw-api.yaml"), tree.tasks["close-csv-export-issue"])
    started = time.perf_counter()
    prepared = prepare_trial(trial, ctx)
    prepare = time.perf_counter() - started
    repo = prepared.repo
    driver.script = [bash(f"curl -s -X PATCH -H 'Authorization: token {prepared.agent_token}' "
                          f"-H 'Content-Type: application/json' -d '{{\"state\":\"closed\"}}' "
                          f"{prepared.grant.api_url}/repos/{repo.owner}/{repo.name}/issues/2"),
                     say("Closed issue #2.")]
    started = time.perf_counter()
    sample = run_trial(trial, ctx, prepared).sample
    total = time.perf_counter() - started
    assert sample.outcome == "passed", sample
    return {"prepare": prepare, "agent": driver.seconds, "rest": total - driver.seconds,
            "cell": prepare + total}


def append_rate(count: int) -> float:
    with tempfile.TemporaryDirectory() as root:
        store = Store(root)
        sample = _sample()
        started = time.perf_counter()
        for _ in range(count):
            store.append(msgspec.convert({**sample, "id": uuid.uuid4().hex}, Record))
        return count / (time.perf_counter() - started)


def _sample() -> dict:
    usage = {"input": 1, "cache_write": 0, "cache_write_5m": None, "cache_write_1h": None,
             "cache_read": 0, "output": 1}
    return {"schema_version": 1, "id": "", "arm": "raw-api", "task": "bench", "tier": "read",
            "scored": True, "started_at": "2025-01-01T00:00:00+00:00", "duration_s": 1.0,
            "driver": "claude", "model": "m", "temperature": None, "outcome": "passed",
            "failure_class": None, "valid": True, "differences": [], "usage": usage,
            "usage_by_model": {}, "usage_estimated": False, "turns": 1, "cost_usd": None,
            "blocked_calls": 0, "tool_calls": 0,
            "fingerprints": {k: "0" * 16 for k in ("task", "arm", "seed", "prompt", "model")},
            "self_review": False, "host": {"kind": "forge", "version": "x"}, "answer": "",
            "error": None, "transcript": None}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--appends", type=int, default=500)
    args = parser.parse_args()
    tree = load_tree(ROOT)
    with tempfile.TemporaryDirectory() as results, Forge() as forge:
        store = Store(results)
        runs = [one_cell(forge, tree, store) for _ in range(args.runs)]
    print(f"raw-api cell, scripted model, embedded forge ({args.runs} runs, seconds):")
    for stage, label in (("prepare", "provision + seed + gate"),
                         ("agent", "agent run (CLI start, 2 turns, 1 curl)"),
                         ("rest", "set-up, audit, snapshot, check, append, delete"),
                         ("cell", "whole cell")):
        values = [run[stage] for run in runs]
        print(f"  {label:48s} median {statistics.median(values):6.3f}  max {max(values):6.3f}")
    print(f"store: {append_rate(args.appends):,.0f} appends/s (file lock + fsync each)")


if __name__ == "__main__":
    main()
