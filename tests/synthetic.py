"""Synthetic samples and stores: fixtures for the report's tests and benchmark.

`sample()` builds a complete, schema-valid sample (benchkit/schemas/sample.schema.json)
with the given figures; `write_store()` appends samples where the runner would, one
JSON line each under <store>/<arm>/<task>.jsonl.
"""

from __future__ import annotations

import json
import uuid
from pathlib import Path

ZERO_FINGERPRINTS = {name: "0" * 16 for name in ("task", "arm", "seed", "prompt", "model")}


def usage(input=1000, cache_write=10000, cache_read=40000, output=500,
          cache_write_5m=None, cache_write_1h=None) -> dict:
    return {"input": input, "cache_write": cache_write, "cache_write_5m": cache_write_5m,
            "cache_write_1h": cache_write_1h, "cache_read": cache_read, "output": output}


def sample(arm: str, task: str, tier: str = "read", *, outcome: str = "passed",
           tokens: dict | None = None, turns: int = 4, duration_s: float = 20.0,
           cost_usd: float | None = 0.1, blocked_calls: int = 0, driver: str = "claude",
           fingerprints: dict | None = None, failure_class: str | None = None,
           self_review: bool = False, model: str = "claude-sonnet-4-5",
           started_at: str = "2026-07-17T12:00:00+00:00", tool_version: str | None = None,
           **extra) -> dict:
    """`extra`: optional fields of the sample (tool_surface, ambient_size, ...)."""
    valid = outcome not in ("invalid", "unaudited", "harness-error")
    if failure_class is None and outcome != "passed":
        failure_class = {"failed": "checker", "confused": "turn-cap", "hung": "backstop",
                         "crashed": "agent-crash", "invalid": "leak", "unaudited": "audit",
                         "harness-error": "host"}[outcome]
    spent = usage(**(tokens or {}))
    return {
        "schema_version": 1, "id": uuid.uuid4().hex, "arm": arm, "task": task, "tier": tier,
        "scored": tier != "bonus", "started_at": started_at, "duration_s": duration_s,
        "driver": driver, "model": model, "temperature": None, "outcome": outcome,
        "failure_class": failure_class, "valid": valid,
        "differences": [] if outcome == "passed" else ["issue #2: state open != closed"],
        "usage": spent, "usage_by_model": {model: spent}, "usage_estimated": driver == "replay",
        "turns": turns, "cost_usd": cost_usd, "blocked_calls": blocked_calls,
        "tool_calls": turns + blocked_calls,
        "fingerprints": {**ZERO_FINGERPRINTS, **(fingerprints or {})},
        "self_review": self_review, "host": {"kind": "forge", "version": "1.27.3"},
        "answer": "Done.", "error": None if valid else "synthetic", "transcript": None,
        "tool_version": tool_version, **extra,
    }


def write_store(store, samples) -> Path:
    """Append samples to store/<arm>/<task>.jsonl; returns the store directory."""
    store = Path(store)
    handles = {}
    try:
        for item in samples:
            key = (item["arm"], item["task"])
            if key not in handles:
                path = store / item["arm"] / f"{item['task']}.jsonl"
                path.parent.mkdir(parents=True, exist_ok=True)
                handles[key] = path.open("a")
            handles[key].write(json.dumps(item) + "\n")
    finally:
        for handle in handles.values():
            handle.close()
    return store
