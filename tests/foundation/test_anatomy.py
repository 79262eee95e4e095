"""The cost anatomy: each model request's usage recorded one by one from the real
CLI's stream, and the parts of a trial adding up to its usage exactly."""

import msgspec
import pytest

from benchkit.agent.claude import ClaudeDriver
from benchkit.agent.driver import AgentRequest, ToolDecision
from benchkit.agent.scripted import ScriptedModel, ToolCall, Turn, bash, say
from benchkit.anatomy import PARTS, anatomy, components_of, cost_of
from benchkit.cost import usage_cost
from benchkit.sample import COMPONENTS, DECODER, Record

MODEL = "claude-sonnet-4-5"
WEIGHTS = {"input": 1.0, "cache_write_5m": 1.25, "cache_write_1h": 2.0, "cache_read": 0.1,
           "output": 5.0}


def usage(input=0, cache_write=0, cache_read=0, output=0, one_hour=None):
    return {"input": input, "cache_write": cache_write, "cache_read": cache_read,
            "output": output, "cache_write_5m": None if one_hour is None else cache_write - one_hour,
            "cache_write_1h": one_hour}


def request(figures, results=0, size=0, loaded=()):
    found = {"event": "request", "usage": figures, "tool_results": results,
             "tool_result_bytes": size}
    if loaded:
        found.update(searches=1, loaded=list(loaded))
    return found


def total_of(requests, extra=None):
    summed = [0] * len(COMPONENTS)
    for r in requests + ([request(extra)] if extra else []):
        summed = [a + b for a, b in zip(summed, components_of(r["usage"]), strict=True)]
    return usage(summed[0], summed[1] + summed[2], summed[3], summed[4], one_hour=summed[2])


def assert_adds_up(found, total):
    parts = [msgspec.structs.astuple(getattr(found, p)) for p in PARTS]
    assert [sum(column) for column in zip(*parts, strict=True)] == components_of(total)
    weights = tuple(WEIGHTS[c] for c in COMPONENTS)
    assert sum(cost_of(getattr(found, p), weights) for p in PARTS) == \
        pytest.approx(usage_cost(total, WEIGHTS), rel=1e-12)


def test_the_parts_are_the_first_prompt_re_reads_tool_output_and_output():
    requests = [request(usage(120, 400, 900, 33)),
                request(usage(7, 50, 1300, 44), results=1, size=80),   # 20 tokens of 57 fresh
                request(usage(9, 60, 1400, 55, one_hour=20), results=2, size=4000)]  # all 69
    found = anatomy(requests, total_of(requests), estimated=False)
    assert found.requests == 3 and found.ambient_tokens == 1420
    assert (found.tool_results, found.tool_result_bytes) == (3, 4080)
    assert msgspec.structs.astuple(found.ambient) == (120, 400, 0, 900, 0)
    assert msgspec.structs.astuple(found.model_output) == (0, 0, 0, 0, 132)
    assert sum(msgspec.structs.astuple(found.tool_output)) == 20 + 69
    assert found.carried.cache_read == 2700 and found.tool_output.cache_read == 0
    assert_adds_up(found, total_of(requests))


@pytest.mark.parametrize("extra", [usage(30, 0, 0, 5), usage(0, 10, 0, 0)])
def test_usage_beyond_the_requests_is_the_runtimes_own_and_every_part_still_adds_up(extra):
    requests = [request(usage(100, 0, 0, 10)), request(usage(3, 40, 100, 9), 1, 400)]
    total = total_of(requests, extra)
    found = anatomy(requests, total, estimated=True)
    assert found.estimated
    assert list(msgspec.structs.astuple(found.runtime_own)) == components_of(extra)
    assert msgspec.structs.astuple(found.ambient) == (100, 0, 0, 0, 0)
    assert_adds_up(found, total)


def test_a_tool_search_takes_the_loaded_schemas_share_of_the_next_prompt():
    """The schemas a search loads are its part of the next request's fresh prompt
    (their bytes / 4, by the arm's surface), before tool output is taken of the rest;
    a name the surface does not know adds nothing."""
    schema_bytes = {"list_issues": 800, "issue_write": 4000}
    requests = [request(usage(0, 1300, 0, 30)),
                request(usage(0, 338, 1300, 40), loaded=["mcp__gitea__list_issues"]),
                request(usage(0, 745, 1600, 30), results=1, size=2000),
                request(usage(0, 1204, 2300, 50), loaded=["mcp__gitea__issue_write",
                                                          "mcp__gitea__unknown"])]
    found = anatomy(requests, total_of(requests), estimated=True, schema_bytes=schema_bytes)
    assert found.search_calls == 2
    assert found.searches.cache_write_5m == 200 + 1000
    assert found.tool_output.cache_write_5m == 500
    assert found.carried.cache_write_5m == (338 - 200) + (745 - 500) + (1204 - 1000)
    assert_adds_up(found, total_of(requests))
    eager = anatomy(requests, total_of(requests), estimated=True)  # no surface: no share
    assert sum(msgspec.structs.astuple(eager.searches)) == 0
    assert_adds_up(eager, total_of(requests))


def test_a_total_below_the_requests_takes_the_excess_off_the_parts():
    requests = [request(usage(100, 0, 0, 10)), request(usage(3, 40, 100, 9), 1, 400)]
    total = usage(100, 40, 100, 12)  # the backstop's fallback: output of 1 per message
    found = anatomy(requests, total, estimated=False)
    assert_adds_up(found, total)
    assert anatomy([], total, estimated=False) is None


def test_older_samples_load_without_an_anatomy():
    record = Record(id="x", arm="a", task="t", tier="read", scored=True, started_at="",
                    driver="claude", model=MODEL,
                    fingerprints={"task": "1", "arm": "1", "seed": "1", "prompt": "1", "model": "1"})
    data = msgspec.to_builtins(record)
    data.pop("anatomy")
    assert DECODER.decode(msgspec.json.encode(data)).anatomy is None


@pytest.mark.slow
def test_the_real_cli_records_each_request_as_the_model_served_it():
    served = [{"input_tokens": 120, "cache_creation_input_tokens": 400,
               "cache_read_input_tokens": 900, "output_tokens": 33},
              {"input_tokens": 7, "cache_creation_input_tokens": 50,
               "cache_read_input_tokens": 1300, "output_tokens": 44},
              {"input_tokens": 9, "cache_creation_input_tokens": 60,
               "cache_read_input_tokens": 1400, "output_tokens": 55}]
    script = [Turn(text="Looking.", calls=(ToolCall("Bash", {"command": "echo benchkit-anatomy"}),),
                   usage=served[0]),
              bash("printf '%0500d' 0", usage=served[1]), say("done", usage=served[2])]
    with ScriptedModel(script, model=MODEL) as model:
        run = ClaudeDriver(base_url=model.url).run(AgentRequest(
            system_prompt="You are benchkit's test agent.", prompt="Look.", model=MODEL,
            tools=["Bash"], mcp_servers={}, env={}, cwd=None,
            guard=lambda name, tool_input: ToolDecision(True, "allowed"), max_turns=10,
            backstop_seconds=60))
        main = model.messages(auxiliary=False)
    assert run.stop == "end", run.error
    assert [r.usage for r in main] == served
    assert [{"input": u["input"], "cache_write": u["cache_write"], "cache_read": u["cache_read"],
             "output": u["output"]} for u in (r["usage"] for r in run.requests)] == \
        [{"input": s["input_tokens"], "cache_write": s["cache_creation_input_tokens"],
          "cache_read": s["cache_read_input_tokens"], "output": s["output_tokens"]} for s in served]
    assert [r["tool_results"] for r in run.requests] == [0, 1, 1]
    assert run.requests[2]["tool_result_bytes"] >= 500
    assert [e for e in run.transcript if e["event"] == "request"] == run.requests
    found = anatomy(run.requests, run.usage, estimated=False)
    assert_adds_up(found, run.usage)
    assert found.ambient_tokens == 1420 and found.model_output.output == run.usage["output"]
