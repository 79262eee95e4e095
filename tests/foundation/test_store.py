"""The store: one JSON line per sample, appended under a lock, never rewritten,
validated against the published schema, secrets scrubbed."""

import json
import subprocess
import sys
import uuid

import msgspec
import pytest
from conftest import CHECKOUT

from benchkit.sample import Record
from benchkit.scrub import SCRUBBED, scrub
from benchkit.store import Store, StoreError

TOKEN = "0123456789abcdef0123456789abcdef01234567"


def sample(arm="raw-api", task="close-issue", **overrides):
    usage = {"input": 10, "cache_write": 20, "cache_write_5m": 20, "cache_write_1h": 0,
             "cache_read": 30, "output": 5}
    value = {
        "schema_version": 1, "id": uuid.uuid4().hex, "arm": arm, "task": task,
        "tier": "single-mutation", "scored": True, "started_at": "2025-01-01T00:00:00+00:00",
        "duration_s": 1.5, "driver": "claude", "model": "claude-sonnet-4-5",
        "temperature": None, "outcome": "passed", "failure_class": None, "valid": True,
        "differences": [], "usage": usage, "usage_by_model": {"claude-sonnet-4-5": usage},
        "usage_estimated": False, "turns": 2, "cost_usd": 0.01, "blocked_calls": 0,
        "tool_calls": 1, "fingerprints": {k: "0" * 16 for k in ("task", "arm", "seed", "prompt", "model")},
        "self_review": False, "host": {"kind": "forge", "version": "1.22.0"},
        "answer": "done", "error": None, "transcript": None,
    }
    value.update(overrides)
    return msgspec.convert(value, Record)


def test_appends_one_line_per_sample_and_reads_them_back(tmp_path):
    store = Store(tmp_path)
    first, second = sample(), sample(outcome="failed", differences=["issue #1: state"])
    store.append(first)
    store.append(second)
    store.append(sample(task="read-labels"))
    path = tmp_path / "raw-api" / "close-issue.jsonl"
    lines = path.read_text().splitlines()
    assert [json.loads(line)["id"] for line in lines] == [first.id, second.id]
    assert [s["id"] for s in store.samples(arm="raw-api", task="close-issue")] == [first.id, second.id]
    assert len(list(store.samples())) == 3
    assert list(store.samples(arm="tea")) == []


def test_appending_never_rewrites_what_is_there(tmp_path):
    store = Store(tmp_path)
    store.append(sample())
    path = store.cell_path("raw-api", "close-issue")
    before = path.read_bytes()
    store.append(sample())
    assert path.read_bytes().startswith(before)


def test_the_store_holds_only_samples_and_transcripts(tmp_path):
    store = Store(tmp_path)
    stored = store.append(sample())
    store.write_transcript("raw-api", "close-issue", stored.id, [{"event": "stop"}])
    store.append(sample(arm="tea"))
    files = sorted(p.relative_to(tmp_path).as_posix() for p in tmp_path.rglob("*") if p.is_file())
    assert files == ["raw-api/close-issue.jsonl", f"raw-api/close-issue/{stored.id}.json",
                     "tea/close-issue.jsonl"]


def test_a_torn_line_is_kept_apart_and_reported(tmp_path):
    store = Store(tmp_path)
    path = store.cell_path("raw-api", "close-issue")
    path.parent.mkdir(parents=True)
    path.write_text('{"schema_version": 1, "id": "tor')  # a crash mid-write
    good = store.append(sample())
    found = list(store.samples())
    assert [s["id"] for s in found] == [good.id]
    assert len(store.problems) == 1 and "close-issue.jsonl:1" in store.problems[0]


def test_a_sample_of_the_wrong_shape_is_refused(tmp_path):
    with pytest.raises(StoreError, match="raw-api/close-issue.*outcome"):
        Store(tmp_path).append(msgspec.structs.replace(sample(), outcome="great"))
    with pytest.raises(StoreError, match="store name"):
        Store(tmp_path).append(sample(arm="../escape"))
    assert not (tmp_path / "raw-api").exists()


def test_secrets_are_scrubbed_from_samples_and_transcripts(tmp_path):
    store = Store(tmp_path, secrets=[TOKEN])
    events = [{"event": "tool_call", "input": {"command": f"curl -H 'Authorization: token {TOKEN}'"}}]
    relative = store.write_transcript("raw-api", "close-issue", "abc", events)
    stored = store.append(sample(answer=f"I used {TOKEN}.", error=f"401 for {TOKEN}",
                                 transcript=relative))
    assert stored.answer == f"I used {SCRUBBED}."
    assert relative == "raw-api/close-issue/abc.json"
    everything = "".join(p.read_text() for p in tmp_path.rglob("*") if p.is_file())
    assert TOKEN not in everything and SCRUBBED in everything


def test_scrub_replaces_longer_secrets_first():
    assert scrub("a-b-c and a-b", ["a-b", "a-b-c", ""]) == f"{SCRUBBED} and {SCRUBBED}"


APPENDER = """
import sys, uuid
sys.path[:0] = [sys.argv[1], sys.argv[1] + "/tests"]  # the checkout; conftest
from tests.foundation.test_store import sample
from benchkit.store import Store
store = Store(sys.argv[2])
for i in range(int(sys.argv[3])):
    store.append(sample(answer=sys.argv[4] + str(i) + "x" * 3000))
"""


def test_two_processes_appending_to_one_cell_lose_nothing(tmp_path):
    root = str(CHECKOUT)
    count = 150
    writers = [subprocess.Popen([sys.executable, "-c", APPENDER, root, str(tmp_path), str(count), name])
               for name in ("a", "b")]
    assert [w.wait(timeout=120) for w in writers] == [0, 0]
    lines = (tmp_path / "raw-api" / "close-issue.jsonl").read_text().splitlines()
    assert len(lines) == 2 * count
    answers = {json.loads(line)["answer"][:4].rstrip("x") for line in lines}
    assert answers == {f"{name}{i}" for name in "ab" for i in range(count)}


def test_a_sample_keeps_its_gateway_requests_and_an_older_one_without_them_still_loads(tmp_path):
    store = Store(tmp_path)
    entry = {"started": 1.0, "method": "GET", "path": "/api/v1/version", "status": 200,
             "scope": "global", "user_agent": "curl/8.5.0", "bytes_in": 0, "bytes_out": 21,
             "duration": 0.001}
    store.append(sample(requests=[entry]))
    older = msgspec.to_builtins(sample())
    del older["requests"]  # written before the gateway
    with (tmp_path / "raw-api" / "close-issue.jsonl").open("a") as lines:
        lines.write(json.dumps(older) + "\n")
    kept, old = store.samples()
    assert kept["requests"] == [entry] and "requests" not in old
    assert msgspec.convert(old, Record).requests == []
