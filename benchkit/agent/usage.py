"""Token usage from what the Claude Code CLI reports, in the sample's component names.

The final result carries two views that differ in casing: `model_usage`, keyed by
model, in camelCase (inputTokens, cacheCreationEphemeral5mInputTokens, ...), and the
aggregate `usage` in the API's snake_case. Per-model figures come first, because they
include the runtime's auxiliary model and give the split; the aggregate is the fallback.
"""

from __future__ import annotations

from benchkit.sample import USAGE_FIELDS

from .driver import zero_usage

_CAMEL = {
    "input": "inputTokens",
    "cache_write": "cacheCreationInputTokens",
    "cache_write_5m": "cacheCreationEphemeral5mInputTokens",
    "cache_write_1h": "cacheCreationEphemeral1hInputTokens",
    "cache_read": "cacheReadInputTokens",
    "output": "outputTokens",
}
_SNAKE = {
    "input": "input_tokens",
    "cache_write": "cache_creation_input_tokens",
    "cache_read": "cache_read_input_tokens",
    "output": "output_tokens",
}
_SPLIT = ("cache_write_5m", "cache_write_1h")


def from_model_usage(entry: dict) -> dict:
    """One model's camelCase figures; the lifetime split is None where not reported."""
    return _settled({key: _int(entry.get(name)) if key not in _SPLIT or name in entry else None
                     for key, name in _CAMEL.items()})


def from_api_usage(usage: dict) -> dict:
    """The snake_case usage of the API and the aggregate result (split under
    `cache_creation`, where reported)."""
    figures: dict[str, int | None] = {key: _int(usage.get(name)) for key, name in _SNAKE.items()}
    split = usage.get("cache_creation")
    figures["cache_write_5m"] = _int(split.get("ephemeral_5m_input_tokens")) if isinstance(split, dict) else None
    figures["cache_write_1h"] = _int(split.get("ephemeral_1h_input_tokens")) if isinstance(split, dict) else None
    return _settled({key: figures[key] for key in USAGE_FIELDS})


def _settled(figures: dict) -> dict:
    """The lifetime split only where it accounts for every cache write: the CLI reports
    5m and 1h as 0 when the API gave no split (a replay's estimates never do), and a
    0/0 split beside real writes would claim they were free of either lifetime."""
    parts = [figures[key] for key in _SPLIT]
    if any(part is not None for part in parts) and sum(p or 0 for p in parts) != figures["cache_write"]:
        figures.update(dict.fromkeys(_SPLIT))
    return figures


def total(by_model: dict[str, dict]) -> dict:
    """Sum over models; a split component stays None unless some model reported it."""
    summed = zero_usage()
    for figures in by_model.values():
        for key in USAGE_FIELDS:
            summed[key] += figures.get(key) or 0
    for key in _SPLIT:
        if all(figures.get(key) is None for figures in by_model.values()):
            summed[key] = None
    return summed


def from_result(model_usage: dict | None, usage: dict | None) -> tuple[dict, dict]:
    """(usage summed over every model, usage by model) from a final result."""
    if model_usage:
        by_model = {model: from_model_usage(entry) for model, entry in model_usage.items()}
        return total(by_model), by_model
    if usage:
        return from_api_usage(usage), {}
    return zero_usage(), {}


def from_messages(per_message: dict[str, tuple[str, dict]]) -> tuple[dict, dict]:
    """Fallback when no final result came (the backstop ended the run): the usage the
    assistant messages carried, once per API message id, grouped by model."""
    by_model: dict[str, dict] = {}
    for model, usage in per_message.values():
        figures = from_api_usage(usage)
        into = by_model.setdefault(model, {key: None if key in _SPLIT else 0 for key in USAGE_FIELDS})
        for key in USAGE_FIELDS:
            if figures[key] is not None:
                into[key] = (into[key] or 0) + figures[key]
    return total(by_model), by_model


def _int(value) -> int:
    return int(value) if isinstance(value, (int, float)) else 0
