"""The typed record reads back every stored sample: a line the store wrote (its evidence
made by the writers themselves: the gateway's entries, the model service's account, the
figures as reported, the host's time) decodes to a Record that encodes back to the same
bytes; a line of an older format or another writer (the synthetic samples, json.dumps)
keeps every value it holds, the fields it predates taking their defaults; and the
published schema accepts every re-encoded sample."""

import json
import typing

import msgspec
import pytest
from synthetic import sample

from benchkit import evidence
from benchkit.agent import service
from benchkit.agent.accounting import reported
from benchkit.sample import ENCODER, Record, Runtime, decode_record
from benchkit.store import Store, validate_sample
from benchkit.trial.attribution import host_time

STARTED = 1_700_000_000.0

# The gateway's entries, as benchkit.gateway.exchange and server write them.
FORWARDED = {"started": STARTED, "method": "GET", "path": "/api/v1/repos/o/r/issues",
             "user_agent": "tea/0.9", "bytes_in": 0, "scope": "repo", "host_s": 3.5,
             "status": 200, "bytes_out": 512, "duration": 3.6,
             "control": {"kind": "read", "status": 200, "s": 3.2}}
FAILED = {"started": STARTED + 5, "method": "POST", "path": "/api/v1/repos/o/r/issues",
          "user_agent": "tea/0.9", "bytes_in": 40, "scope": "repo", "unreachable": "reset",
          "status": 502, "bytes_out": 60, "duration": 0.2,
          "control": {"kind": "write", "status": "pending", "s": 20.0}}
REFUSED_UNREAD = {"started": STARTED + 6, "method": "", "path": "", "user_agent": "",
                  "scope": "refused", "status": 408, "bytes_in": 0,
                  "reason": "a request that did not arrive within 10 s", "bytes_out": 71,
                  "duration": 10.0}
STRAY = {"started": STARTED + 7, "method": "GET", "path": "/api/v1/user", "user_agent": "curl",
         "bytes_in": 0, "scope": "refused", "reason": "a stray request while this trial "
         "ran: a foreign token", "problem": "a foreign token", "status": 401,
         "bytes_out": 40, "duration": 0.01, "stray": True}
ABORTED = {"started": 1, "method": "GET", "path": "/api/v1/version", "user_agent": "curl",
           "status": 499, "reason": "the trial ended before it was answered",
           "scope": "aborted", "bytes_in": 0, "bytes_out": 0, "duration": 0}
OLDER_HEALTH = {"started": STARTED + 8, "method": "GET", "path": "/api/v1/version",
                "status": 500, "scope": "global", "health": 200}

TRANSCRIPT = [
    {"event": "api_retry", "at": 1.0, "attempt": 1, "max_retries": 10, "retry_delay_ms": 500,
     "error_status": 529, "error": "overloaded"},
    {"event": "api_retry", "at": 2.0, "attempt": 2, "max_retries": 10, "retry_delay_ms": None,
     "error_status": None, "error": None},
    {"event": "request", "id": "m1", "model": "claude-sonnet-4-5", "at": 3.0, "usage": {},
     "tool_results": 0, "tool_result_bytes": 0, "stop_reason": "refusal", "complete": False},
    {"event": "model_stall", "at": 9.0, "request": 2, "idle_s": 300, "streaming": True},
    {"event": "model_outstanding", "at": 9.5, "by": "backstop", "for_s": 12.5, "request": 2},
]


def record(**evidence) -> Record:
    """A sample as the store takes it: the cell runner's Record, its evidence set as the
    writers made it (never converted first, which would drop a key no type names)."""
    made = msgspec.convert(sample("raw-api", "close-issue"), Record)
    for name, value in evidence.items():
        setattr(made, name, value)
    return made


def stored_lines(tmp_path) -> list[bytes]:
    """Lines the store wrote, every evidence field made by its writer."""
    usage = {"input": "4000", "cache_write": None, "cache_write_5m": 0, "cache_write_1h": 0,
             "cache_read": -1, "output": 7}
    requests = [FORWARDED, FAILED, REFUSED_UNREAD, STRAY, ABORTED]
    found = host_time(requests, STARTED, 60.0)
    assert found is not None
    store = Store(tmp_path)
    for kept in (
        record(),
        record(requests=requests, model_service=service.evidence(TRANSCRIPT), host_time=found,
               models=["claude-sonnet-4-5"], model_alias="sonnet", shard="1/2",
               containment="trial-user", jobs=3, trial=4,
               runtime=Runtime("2.1.332 (Claude Code)", "0.1.80")),
        record(outcome="harness-error", failure_class="model-usage",
               usage_reported=reported(usage, {"claude-sonnet-4-5": usage}, 0.5),
               requests=[OLDER_HEALTH]),
    ):
        store.append(kept)
    return (tmp_path / "raw-api" / "close-issue.jsonl").read_bytes().splitlines()


def other_lines() -> list[bytes]:
    """Lines of older formats and of json.dumps (the tests' synthetic stores)."""
    anatomy = {"requests": 2, "ambient": [0, 2000, 0, 0, 0], "carried": [0, 0, 0, 30000, 0],
               "tool_output": [500, 0, 0, 0, 0], "model_output": [0, 0, 0, 0, 900],
               "ambient_tokens": 2000, "tool_results": 1, "tool_result_bytes": 2000,
               "estimated": True}  # older: no runtime_own, searches, search_calls
    samples = [
        sample("raw-api", "close-issue"),  # before the gateway, the runtime, the calls
        sample("tea", "read-labels", driver="replay", outcome="failed", anatomy=anatomy,
               containment="run-user", tool_surface="0" * 16,
               ambient_size={"skill": 10, "schemas": 0, "bootstrap": 5}),
        sample("tea", "read-labels", outcome="harness-error",
               requests=[OLDER_HEALTH, {**OLDER_HEALTH, "health": "timed out"}],
               model_service={"broken_streams": 2}, host_time={"host_s": 40, "of_s": 60.0,
                                                               "answers": 3}),
    ]
    return [json.dumps(value).encode() for value in samples]


def holds(stored, again) -> bool:
    """Whether `again` holds every value of `stored` as it was (type included)."""
    if isinstance(stored, dict):
        return isinstance(again, dict) and all(key in again and holds(value, again[key])
                                               for key, value in stored.items())
    if isinstance(stored, list):
        return isinstance(again, list) and len(stored) == len(again) \
            and all(holds(a, b) for a, b in zip(stored, again, strict=True))
    return type(stored) is type(again) and stored == again


def test_a_stored_line_decodes_and_encodes_back_to_its_bytes(tmp_path):
    lines = stored_lines(tmp_path)
    assert len(lines) == 3
    for line in lines:
        again = ENCODER.encode(decode_record(line))
        assert again == line
        validate_sample(json.loads(again))


def test_an_older_or_foreign_line_keeps_every_value_it_holds():
    for line in other_lines():
        again = json.loads(ENCODER.encode(decode_record(line)))
        assert holds(json.loads(line), again), line
        validate_sample(again)


def test_evidence_of_the_wrong_shape_is_no_record():
    value = sample("raw-api", "close-issue", host_time={"host_s": "long", "of_s": 1.0,
                                                        "answers": 1})
    with pytest.raises(msgspec.ValidationError, match="host_time"):
        decode_record(json.dumps(value))


def test_every_event_kind_is_spelled_once_and_tags_one_event_type():
    """The constants are the kinds, each the `event` tag of exactly one member of the
    transcript's union, and the union has no member without one."""
    kinds = {value for name, value in vars(evidence).items()
             if name.isupper() and isinstance(value, str)}
    members = typing.get_args(evidence.Event)
    tags = [typing.get_args(typing.get_type_hints(member)["event"])[0] for member in members]
    assert sorted(tags) == sorted(kinds) and len(set(tags)) == len(tags)
