"""The model service's faults as the scripted model serves them, over HTTP: the API's
documented error shapes (body, request-id, retry-after, SSE `event: error`), broken
streams, and a fault that answers a turn's first requests before the turn plays."""

import json
import socket
from urllib.parse import urlsplit

import pytest
from test_agent_scripted import events, post, request

from benchkit.agent import faults
from benchkit.agent.scripted import ScriptedModel, Turn, fail, say
from benchkit.agent.wire import usage


@pytest.mark.parametrize("status,kind", [(529, "overloaded_error"), (500, "api_error"),
                                         (401, "authentication_error"),
                                         (403, "permission_error")])
def test_an_http_error_has_the_apis_error_body_and_a_request_id(status, kind):
    with ScriptedModel([fail(status)]) as model:
        response = post(model, request())
    assert response.status_code == status
    assert response.json() == {"type": "error", "error": {"type": kind,
                                                          "message": f"scripted {kind}"}}
    assert response.headers["request-id"].startswith("req_")


def test_a_rate_limit_says_when_to_retry():
    with ScriptedModel([Turn(text="ok", fault=faults.rate_limited(retry_after=2))]) as model:
        response = post(model, request())
    assert response.status_code == 429 and response.headers["retry-after"] == "2"
    assert response.json()["error"]["type"] == "rate_limit_error"


def test_a_fault_answers_the_turns_first_requests_then_the_turn_plays():
    with ScriptedModel([Turn(text="done", fault=faults.overloaded(times=2)), say("next")]) as model:
        statuses = [post(model, request()).status_code for _ in range(3)]
        last = events(post(model, request()))
    assert statuses == [529, 529, 200]
    assert last[2][1]["delta"]["text"] == "next"
    assert [r.turn for r in model.messages()] == [0, 0, 0, 1]


def test_an_error_inside_a_stream_is_an_sse_error_event():
    with ScriptedModel([Turn(text="x", fault=faults.Fault("stream-error", 529))]) as model:
        response = post(model, request())
    assert response.status_code == 200
    stream = events(response)
    assert [name for name, _ in stream] == ["message_start", "error"]
    assert stream[1][1] == {"type": "error", "error": {"type": "overloaded_error",
                                                       "message": "scripted overloaded_error"}}


def test_a_reset_comes_after_message_start():
    with ScriptedModel([Turn(text="x", fault=faults.reset())]) as model:
        with raw_post(model, request()) as conn:
            received = b""
            with pytest.raises(ConnectionResetError):
                while chunk := conn.recv(65536):
                    received += chunk
    assert b"event: message_start" in received and b"message_stop" not in received


def test_malformed_sse_is_not_an_event_stream():
    with ScriptedModel([Turn(text="x", fault=faults.malformed())]) as model:
        response = post(model, request())
    assert response.status_code == 200
    assert "this is not an event stream" in response.text
    with pytest.raises(ValueError):
        events(response)


def raw_post(model, body: dict) -> socket.socket:
    """A Messages API request on a bare socket, to watch the bytes as they come."""
    url = urlsplit(model.url)
    data = json.dumps(body).encode()
    conn = socket.create_connection((url.hostname, url.port), timeout=10)
    conn.sendall(b"POST /v1/messages HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
                 b"Content-Length: %d\r\n\r\n" % len(data) + data)
    return conn


def test_a_mid_stream_stall_sends_message_start_then_holds():
    with ScriptedModel([Turn(text="x", fault=faults.stall_mid_stream())]) as model:
        with raw_post(model, request()) as conn:
            received = b""
            while b"content_block_start" not in received:
                received += conn.recv(65536)
            assert model.stalled.wait(10)
            conn.settimeout(0.5)
            with pytest.raises(TimeoutError):  # nothing more comes while it holds
                conn.recv(65536)
    assert b"event: message_start" in received and b"content_block_delta" not in received


@pytest.mark.parametrize("fault,alive", [
    (faults.pings(), b"event: ping"),
    (faults.trickle(), b'"delta": {"type": "text_delta", "text": ""}'),
], ids=["pings", "trickle"])
def test_a_stall_kept_alive_sends_only_what_moves_nothing_on(fault, alive):
    with ScriptedModel([Turn(text="x", fault=fault)]) as model:
        with raw_post(model, request()) as conn:
            received = b""
            while received.count(alive) < 3:
                received += conn.recv(65536)
    assert b"event: message_start" in received and b"message_stop" not in received
    events_after = received.split(b"content_block_start", 1)[1].split(b"\n\n")[1:]
    assert all(alive in event for event in events_after if event.strip())


def test_progress_is_what_moves_the_answer_on():
    from benchkit.agent.transcript import progress
    assert not progress({"type": "ping"})
    assert not progress({"type": "content_block_delta", "delta": {"type": "text_delta", "text": ""}})
    assert not progress({"type": "content_block_start",
                         "content_block": {"type": "text", "text": ""}})
    assert not progress({"type": "keepalive"})
    assert progress({"type": "content_block_delta", "delta": {"type": "text_delta", "text": "x"}})
    assert progress({"type": "content_block_delta",
                     "delta": {"type": "input_json_delta", "partial_json": "{"}})
    assert progress({"type": "content_block_start",
                     "content_block": {"type": "tool_use", "name": "Bash", "input": {}}})
    assert all(progress({"type": kind}) for kind in
               ("message_start", "message_delta", "message_stop", "content_block_stop"))


@pytest.mark.parametrize("reason", ["max_tokens", "refusal"])
def test_a_turn_may_stop_for_another_reason(reason):
    with ScriptedModel([Turn(text="cut", stop_reason=reason)]) as model:
        stream = events(post(model, request()))
    assert stream[-2][1]["delta"]["stop_reason"] == reason


def test_usage_comes_as_the_api_reports_it_with_the_cache_write_split():
    figures = usage(input=5, cache_write_5m=300, cache_write_1h=40, cache_read=1000, output=70)
    with ScriptedModel([say("hi", usage=figures)]) as model:
        stream = events(post(model, request()))
    start = stream[0][1]["message"]["usage"]
    assert start["cache_creation_input_tokens"] == 340
    assert start["cache_creation"] == {"ephemeral_5m_input_tokens": 300,
                                       "ephemeral_1h_input_tokens": 40}
    assert start["cache_read_input_tokens"] == 1000 and stream[-2][1]["usage"]["output_tokens"] == 70


def test_a_fault_of_an_unknown_kind_is_refused():
    with pytest.raises(ValueError, match="fault kind"):
        faults.Fault("teapot")
