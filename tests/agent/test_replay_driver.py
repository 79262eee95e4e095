"""The replay driver through the real Claude Code CLI: one turn per step, computed from
the tool results the request carries; failed and denied steps recorded; usage
estimated from bytes by the documented formula; a request without its cell not run."""

import json
from pathlib import Path

import pytest
from reported import reported_usage

from benchkit.agent.claude import ClaudeDriver
from benchkit.agent.driver import AgentRequest, Assignment, Coordinates, ToolDecision
from benchkit.agent.replay import Play, ReplayDriver, ReplayModel, context_for, tool_results
from benchkit.documents.reference import Reference, Step, TaskReference

pytestmark = pytest.mark.slow

MODEL = "claude-sonnet-4-5"
CELL = {"task": "t", "host_url": "http://127.0.0.1:9/", "api_url": "http://127.0.0.1:9/api/v1",
        "token": "tok-secret-123", "owner": "bench", "repo": "demo", "user": "bench"}


def reference(task: TaskReference) -> Reference:
    return Reference(path=Path("refs.d/test.yaml"), data={}, fingerprint="0" * 16,
                     arm="test", verified=False, tasks={task.task: task})


def request(guard=None, **cell) -> AgentRequest:
    made = AgentRequest(system_prompt="You are testing.", prompt="Do the task.", model=MODEL,
                        tools=["Bash"], mcp_servers={}, env={}, cwd=None,
                        guard=guard or (lambda name, tool_input: ToolDecision()),
                        max_turns=10, backstop_seconds=90)
    given = {**CELL, **cell}
    made.assignment = Assignment(given.pop("task"), False, Coordinates(**given))
    return made


def replay_event(run) -> dict:
    return next(e for e in run.transcript if e.get("event") == "replay")


def test_steps_become_turns_and_the_answer_is_read_off_their_outputs():
    task = TaskReference("t", targets={"issue": 3}, steps=(
        Step(run="""echo '[{"number": {{ issue }}, "title": "A"}, {"number": 4, "title": "B"}]'"""),
        Step(run="echo {{ owner }}/{{ repo }}#{{ (outputs[0] | fromjson)[1].number }}"),
    ), answer="{{ (outputs[0] | fromjson) | map(attribute='title') | join(' and ') }} in {{ outputs[1] }}")
    run = ReplayDriver(reference(task)).run(request())
    assert run.stop == "end", run.error
    commands = [e["input"]["command"] for e in run.transcript if e["event"] == "tool_call"]
    assert commands == ["""echo '[{"number": 3, "title": "A"}, {"number": 4, "title": "B"}]'""",
                        "echo bench/demo#4"]
    assert run.answer == "A and B in bench/demo#4"  # the CLI's reminders stripped
    assert run.turns == 3 and run.usage_estimated
    assert replay_event(run) == {"event": "replay", "task": "t", "steps": 2, "served": 2,
                                 "failed_steps": {}, "errors": [], "targets": {"issue": 3}}


def test_failing_and_denied_steps_are_recorded_and_the_token_never_is():
    task = TaskReference("t", steps=(Step(run="echo {{ token }} >/dev/null; exit 3"),
                                     Step(run="wget http://example.invalid/"),
                                     Step(run="echo fine")), answer="done")

    def guard(name, tool_input):
        denied = tool_input.get("command", "").startswith("wget")
        return ToolDecision(allowed=not denied, reason="wget is not this arm's tool" if denied else "ok")

    run = ReplayDriver(reference(task)).run(request(guard=guard))
    event = replay_event(run)
    assert sorted(event["failed_steps"]) == [1, 2]
    assert "Exit code 3" in event["failed_steps"][1]
    assert "wget is not this arm's tool" in event["failed_steps"][2]
    assert event["served"] == 3 and run.answer == "done"
    assert CELL["token"] not in json.dumps(event)


def test_a_broken_template_ends_the_replay_with_the_reason():
    task = TaskReference("t", steps=(Step(run="echo not json"),
                                     Step(run="echo {{ (outputs[0] | fromjson).x }}")), answer="x")
    run = ReplayDriver(reference(task)).run(request())
    event = replay_event(run)
    assert event["errors"] and event["errors"][0].startswith("step 2: ValueError: expected JSON")
    assert run.answer.startswith("The replay stopped: step 2")


def test_a_request_without_its_cell_or_reference_is_not_run():
    task = TaskReference("t", steps=(Step(run="true"),))
    bare = request()
    bare.assignment = None
    run = ReplayDriver(reference(task)).run(bare)
    assert run.stop == "startup-error" and "carries no assignment" in run.error and run.turns == 0
    run = ReplayDriver(reference(task)).run(request(task="other"))
    assert run.stop == "startup-error" and "no playable reference for task 'other'" in run.error
    unsupported = TaskReference("t", unsupported="no such command")
    run = ReplayDriver(reference(unsupported)).run(request())
    assert run.stop == "startup-error" and run.error.endswith(": no such command")


def canonical(body: dict) -> bytes:
    """tools, system, messages: each as canonical JSON, in the order the API caches them."""
    return b"".join(json.dumps(body.get(k), sort_keys=True, separators=(",", ":")).encode()
                    for k in ("tools", "system", "messages"))


def test_usage_is_the_documented_byte_estimate_of_every_request():
    """docs/replay.md: per response, cache read ceil(P/4) for the prefix shared with the
    previous request of that model, cache write ceil((B-P)/4), output ceil(R/4); the
    run's usage sums every response, the auxiliary model's included."""
    task = TaskReference("t", steps=(Step(run="echo one"), Step(run="echo two")), answer="ok")
    play = Play(task, context_for(**{k: CELL[k] for k in CELL if k != "task"}))
    with ReplayModel(play, model=MODEL) as model:
        run = ClaudeDriver(base_url=model.url).run(request())
    assert run.stop == "end", run.error
    main = model.messages(auxiliary=False)  # the agent loop's requests come one at a time
    assert [len(tool_results(r.body)) for r in main] == [0, 1, 2]
    first = canonical(main[0].body)
    assert main[0].usage["cache_read_input_tokens"] + main[0].usage["cache_creation_input_tokens"] \
        in (-(-len(first) // 4), -(-len(first) // 4) + 1)
    for earlier, r in zip(main, main[1:]):
        body, before = canonical(r.body), canonical(earlier.body)
        shared = next(i for i, (a, b) in enumerate(zip(body, before)) if a != b)
        assert r.usage["cache_read_input_tokens"] == -(-shared // 4)
        assert r.usage["cache_creation_input_tokens"] == -(-(len(body) - shared) // 4)
        assert r.usage["input_tokens"] == 0
        assert shared > len(body) / 2  # the loop's history is read back from cache
    reported = reported_usage(model)
    assert set(reported) == {r.model for r in model.messages()}
    for key, name in (("cache_read", "cache_read_input_tokens"),
                      ("cache_write", "cache_creation_input_tokens"),
                      ("output", "output_tokens"), ("input", "input_tokens")):
        assert run.usage[key] == sum(figures[name] for figures in reported.values())
    # A replay knows nothing of cache lifetimes: the split is unknown, not 0/0.
    assert run.usage["cache_write"] > 0
    assert run.usage["cache_write_5m"] is None and run.usage["cache_write_1h"] is None
    assert all(figures["cache_write_5m"] is None for figures in run.usage_by_model.values())
