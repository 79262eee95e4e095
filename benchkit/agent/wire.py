"""The Messages API's wire shapes, as the scripted model sends them: a whole message,
its server-sent events, a request id."""

from __future__ import annotations

import json
import uuid


def request_id() -> str:
    return f"req_{uuid.uuid4().hex[:24]}"


def message(model: str, blocks: list[dict], usage: dict | None, stop: str | None = None) -> dict:
    """A whole message; `usage` None: one that reports none (an accounting fault)."""
    stop = stop or ("tool_use" if any(b["type"] == "tool_use" for b in blocks) else "end_turn")
    return {"id": f"msg_{uuid.uuid4().hex[:24]}", "type": "message", "role": "assistant",
            "model": model, "content": blocks, "stop_reason": stop,
            "stop_sequence": None, "usage": usage}


def message_start(message: dict) -> dict:
    """The message_start event of a message (input and cache figures, output 1)."""
    start = {**message, "content": [], "stop_reason": None}
    if message["usage"] is None:
        start.pop("usage")
    else:
        start["usage"] = {**message["usage"], "output_tokens": 1}
    return {"type": "message_start", "message": start}


def sse(event: str, data: dict) -> bytes:
    return f"event: {event}\ndata: {json.dumps(data)}\n\n".encode()


def stream_events(message: dict):
    """The server-sent events of one streamed message: input and cache figures in
    message_start, output tokens in message_delta (where the CLI reads them)."""
    usage = message["usage"]
    yield "message_start", message_start(message)
    for index, block in enumerate(message["content"]):
        if block["type"] == "text":
            yield "content_block_start", {"type": "content_block_start", "index": index,
                                          "content_block": {"type": "text", "text": ""}}
            yield "content_block_delta", {"type": "content_block_delta", "index": index,
                                          "delta": {"type": "text_delta", "text": block["text"]}}
        else:
            yield "content_block_start", {"type": "content_block_start", "index": index,
                                          "content_block": {**block, "input": {}}}
            yield "content_block_delta", {"type": "content_block_delta", "index": index,
                                          "delta": {"type": "input_json_delta",
                                                    "partial_json": json.dumps(block["input"])}}
        yield "content_block_stop", {"type": "content_block_stop", "index": index}
    delta = {"type": "message_delta",
             "delta": {"stop_reason": message["stop_reason"], "stop_sequence": None}}
    if usage is not None:
        delta["usage"] = {"output_tokens": usage["output_tokens"]}
    yield "message_delta", delta
    yield "message_stop", {"type": "message_stop"}


def usage(input: int = 0, cache_write_5m: int = 0, cache_write_1h: int = 0,
          cache_read: int = 0, output: int = 0) -> dict:
    """A response's usage as the API reports it: the cache write in total and split by
    lifetime under `cache_creation`."""
    return {"input_tokens": input,
            "cache_creation_input_tokens": cache_write_5m + cache_write_1h,
            "cache_creation": {"ephemeral_5m_input_tokens": cache_write_5m,
                               "ephemeral_1h_input_tokens": cache_write_1h},
            "cache_read_input_tokens": cache_read, "output_tokens": output}
