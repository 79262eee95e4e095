"""The scripted model over HTTP: the Messages API events it streams, the turns it
plays, auxiliary requests, usage figures, stalls, and what it records."""

import json
import threading
import time

import requests
from reported import reported_usage

from benchkit.agent.scripted import (
    AUXILIARY_USAGE,
    END_OF_SCRIPT,
    ScriptedModel,
    bash,
    estimate_usage,
    say,
    stall,
    tool,
)


def post(model, body, timeout=10):
    return requests.post(f"{model.url}/v1/messages?beta=true", json=body, timeout=timeout)


def events(response):
    """(event name, data) pairs of a server-sent event stream."""
    out = []
    for chunk in response.text.strip().split("\n\n"):
        lines = dict(line.split(": ", 1) for line in chunk.splitlines())
        out.append((lines["event"], json.loads(lines["data"])))
    return out


BASH_TOOL = {"name": "Bash", "input_schema": {"type": "object"}}


def request(model="claude-test", stream=True, text="hi", tools=(BASH_TOOL,)):
    return {"model": model, "stream": stream, "max_tokens": 100, "tools": list(tools),
            "messages": [{"role": "user", "content": text}]}


def test_streams_a_tool_call_as_messages_api_events():
    usage = {"input_tokens": 7, "cache_creation_input_tokens": 3,
             "cache_read_input_tokens": 2, "output_tokens": 11}
    with ScriptedModel([bash("echo hi", usage=usage)]) as model:
        response = post(model, request())
    assert response.headers["Content-Type"] == "text/event-stream"
    stream = events(response)
    assert [name for name, _ in stream] == [
        "message_start", "content_block_start", "content_block_delta", "content_block_stop",
        "message_delta", "message_stop"]
    start = stream[0][1]["message"]
    assert start["usage"]["input_tokens"] == 7 and start["usage"]["cache_read_input_tokens"] == 2
    block = stream[1][1]["content_block"]
    assert block["type"] == "tool_use" and block["name"] == "Bash"
    assert json.loads(stream[2][1]["delta"]["partial_json"]) == {"command": "echo hi"}
    assert stream[4][1]["delta"]["stop_reason"] == "tool_use"
    assert stream[4][1]["usage"]["output_tokens"] == 11


def test_plays_turns_in_order_then_ends_the_script():
    with ScriptedModel([say("first"), tool("mcp__gitea__get_issue", issue_number=1)]) as model:
        texts = [events(post(model, request())) for _ in range(3)]
        assert texts[0][2][1]["delta"]["text"] == "first"
        assert texts[0][4][1]["delta"]["stop_reason"] == "end_turn"
        assert texts[1][1][1]["content_block"]["name"] == "mcp__gitea__get_issue"
        assert texts[2][2][1]["delta"]["text"] == END_OF_SCRIPT
        assert [r.turn for r in model.messages()] == [0, 1, 2]


def test_auxiliary_model_is_answered_apart_and_its_usage_reported():
    with ScriptedModel([say("main")], model="claude-main") as model:
        aux = post(model, request(model="claude-small", stream=False))
        main = post(model, request(model="claude-main", stream=False))
        assert aux.json()["usage"]["input_tokens"] == AUXILIARY_USAGE["input_tokens"]
        assert main.json()["content"] == [{"type": "text", "text": "main"}]
        assert [r.auxiliary for r in model.messages()] == [True, False]
        reported = reported_usage(model)
    assert reported["claude-small"]["input_tokens"] == AUXILIARY_USAGE["input_tokens"]
    assert reported["claude-main"]["output_tokens"] > 0


def test_a_chore_without_tools_is_auxiliary_whatever_its_model():
    title = {**request(model="claude-main", stream=False, tools=()),
             "output_config": {"format": {"type": "json_schema", "schema": {
                 "type": "object", "properties": {"title": {"type": "string"}}}}}}
    with ScriptedModel([say("the turn")]) as model:
        chore = post(model, title).json()
        turn = post(model, request(model="claude-main", stream=False)).json()
        assert [(r.auxiliary, r.turn) for r in model.messages()] == [(True, None), (False, 0)]
    assert json.loads(chore["content"][0]["text"]) == {"title": "benchkit"}
    assert turn["content"][0]["text"] == "the turn"


def test_estimated_usage_counts_the_repeated_prefix_as_cache_read():
    first = request(text="x" * 400)
    second = {**first, "messages": first["messages"] + [{"role": "assistant", "content": "ok"}]}
    one = estimate_usage(first, 40, None)
    two = estimate_usage(second, 40, first)
    assert one["cache_read_input_tokens"] == 0 and one["cache_creation_input_tokens"] > 100
    # The first request is (nearly) a prefix of the second: read back, barely written.
    assert abs(two["cache_read_input_tokens"] - one["cache_creation_input_tokens"]) <= 2
    assert two["cache_creation_input_tokens"] < one["cache_creation_input_tokens"] / 4
    assert one["output_tokens"] == 10
    with ScriptedModel([say("a"), say("b")], usage=estimate_usage) as model:
        post(model, first), post(model, second)
        recorded = [r.usage for r in model.messages()]
    assert recorded[1]["cache_read_input_tokens"] > recorded[0]["cache_read_input_tokens"]


def test_a_stall_holds_the_request_until_the_server_stops():
    model = ScriptedModel([stall()]).start()
    outcome = {}

    def call():
        try:
            outcome["response"] = post(model, request(), timeout=10)
        except requests.RequestException as exc:
            outcome["error"] = exc

    caller = threading.Thread(target=call)
    caller.start()
    time.sleep(0.6)
    assert caller.is_alive(), "a stalled turn must not answer"
    model.stop()
    caller.join(5)
    assert not caller.is_alive()
    assert "response" not in outcome or not outcome["response"].text


def test_records_requests_it_does_not_script():
    with ScriptedModel([]) as model:
        assert requests.get(f"{model.url}/v1/models", timeout=5).status_code == 404
        assert requests.post(f"{model.url}/other", json={}, timeout=5).status_code == 404
        assert [(r.method, r.path) for r in model.received] == [("GET", "/v1/models"),
                                                               ("POST", "/other")]
        assert model.messages() == []


def test_a_turn_may_carry_text_with_its_tool_call():
    with ScriptedModel([tool("Bash", text="Let me look.", command="ls")]) as model:
        stream = events(post(model, request()))
    kinds = [data["content_block"]["type"] for name, data in stream if name == "content_block_start"]
    assert kinds == ["text", "tool_use"]


def test_non_streamed_reply_is_a_whole_message():
    with ScriptedModel([say("done")]) as model:
        body = post(model, request(stream=False)).json()
    assert body["type"] == "message" and body["stop_reason"] == "end_turn"
    assert body["content"][0]["text"] == "done"


def test_a_title_chore_naming_the_main_model_is_not_the_first_turns_previous_request():
    # The CLI asks for a session title with the main model's name and no tools; keyed by
    # model alone, it would be the "previous request" of the first agent turn.
    title = {**request(model="claude-main", tools=(), text="x" * 400), "system": "s" * 400}
    turn = {**request(model="claude-main", text="x" * 400), "system": "s" * 400}
    with ScriptedModel([say("a"), say("b")], model="claude-main", usage=estimate_usage,
                       auxiliary_usage=estimate_usage) as model:
        post(model, title), post(model, turn), post(model, turn)
        chore, first, second = (r.usage for r in model.messages())
    assert first["cache_read_input_tokens"] == 0  # nothing of its own thread came before
    assert first == {**estimate_usage(turn, 4, None), "output_tokens": first["output_tokens"]}
    assert second["cache_read_input_tokens"] == first["cache_creation_input_tokens"]
    assert chore["cache_read_input_tokens"] == 0


class Thinking(ScriptedModel):
    """A subclass computing each turn from its request, through the public hook."""

    def turn_for(self, index, request):
        return say(f"turn {index} saw {len(request['messages'])} message(s)")


def test_a_subclass_computes_turns_through_the_public_hook():
    with Thinking([]) as model:
        first = post(model, request(stream=False)).json()
        aux = post(model, request(model="claude-small", stream=False)).json()
        second = post(model, {**request(stream=False), "messages": [
            {"role": "user", "content": "a"}, {"role": "assistant", "content": "b"},
            {"role": "user", "content": "c"}]}).json()
    assert first["content"][0]["text"] == "turn 0 saw 1 message(s)"
    assert aux["content"][0]["text"] == "benchkit"  # chores never reach the hook
    assert second["content"][0]["text"] == "turn 1 saw 3 message(s)"
