"""Token usage from what the Claude Code CLI reports, in the sample's component names.

The final result carries two views that differ in casing: `model_usage`, keyed by
model, in camelCase (inputTokens, cacheCreationEphemeral5mInputTokens, ...), and the
aggregate `usage` in the API's snake_case. Per-model figures come first, because they
include the runtime's auxiliary model and give the split; the aggregate is the fallback.

Figures are taken as reported, never coerced: a count stays a count, one not reported
is 0 (the API may leave a cache figure out or null), and anything else (a string such
as "4000", a float, a bool, a null where the figure is due) is kept as given, so that
the check where usage enters (benchkit.agent.accounting) names it and the trial keeps
it raw: coerced, "4000" would have been a silent 0.
"""

from __future__ import annotations

from typing import Any, cast

from benchkit.evidence import UsageFigures
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


# Figures the API reports in every response: null there is a figure that is due and
# missing. The cache figures may be null (the API's own schema allows it): 0.
_DUE = ("input_tokens", "output_tokens")


def from_model_usage(entry: dict) -> UsageFigures:
    """One model's camelCase figures (the CLI reports each, so a null is due); the
    lifetime split is None where not reported."""
    return cast(UsageFigures, _settled({key: _figure(entry, name, due=key not in _SPLIT)
                                        if key not in _SPLIT or name in entry else None
                                        for key, name in _CAMEL.items()}))


def from_api_usage(usage: dict) -> UsageFigures:
    """The snake_case usage of the API and the aggregate result (split under
    `cache_creation`, where reported)."""
    figures: dict = {key: _figure(usage, name, due=name in _DUE) for key, name in _SNAKE.items()}
    split = usage.get("cache_creation")
    for key, name in (("cache_write_5m", "ephemeral_5m_input_tokens"),
                      ("cache_write_1h", "ephemeral_1h_input_tokens")):
        figures[key] = _figure(split, name) if isinstance(split, dict) else None
    return cast(UsageFigures, _settled({key: figures[key] for key in USAGE_FIELDS}))


def _settled(figures: dict) -> dict:
    """The lifetime split only where it accounts for every cache write: the CLI reports
    5m and 1h as 0 when the API gave no split (a replay's estimates never do), and a
    0/0 split beside real writes would claim they were free of either lifetime."""
    parts = [figures[key] for key in _SPLIT]
    if not all(is_count(part) or part is None for part in (*parts, figures["cache_write"])):
        return figures  # not counts: kept as given, for the check to name
    if any(part is not None for part in parts) and sum(p or 0 for p in parts) != figures["cache_write"]:
        figures.update(dict.fromkeys(_SPLIT))
    return figures


def total(by_model: dict[str, UsageFigures]) -> UsageFigures:
    """Sum over models; a split component stays None unless some model reported it. A
    figure that is not a count makes its total that figure: no sum of it is a count."""
    summed: dict[str, Any] = dict(zero_usage())
    for figures in by_model.values():
        for key in USAGE_FIELDS:
            summed[key] = _plus(summed[key], figures.get(key))
    for key in _SPLIT:
        if all(figures.get(key) is None for figures in by_model.values()):
            summed[key] = None
    return cast(UsageFigures, summed)


def from_result(model_usage: dict | None,
                usage: dict | None) -> tuple[UsageFigures, dict[str, UsageFigures]]:
    """(usage summed over every model, usage by model) from a final result."""
    if model_usage:
        by_model = {model: from_model_usage(entry) for model, entry in model_usage.items()}
        return total(by_model), by_model
    if usage:
        return from_api_usage(usage), {}
    return zero_usage(), {}


def from_messages(per_message: dict[str, tuple[str, dict]]
                  ) -> tuple[UsageFigures, dict[str, UsageFigures]]:
    """Fallback when no final result came (the backstop ended the run): the usage the
    assistant messages carried, once per API message id, grouped by model."""
    by_model: dict[str, Any] = {}  # model -> UsageFigures, filled in a key at a time
    for model, usage in per_message.values():
        figures: dict[str, Any] = dict(from_api_usage(usage))
        into = by_model.setdefault(model, {key: None if key in _SPLIT else 0 for key in USAGE_FIELDS})
        for key in USAGE_FIELDS:
            if figures[key] is not None:
                into[key] = _plus(into[key] or 0, figures[key])
    return total(by_model), by_model


def is_count(value) -> bool:
    """A figure reported as an integer (bool is not one; the sign is checked later)."""
    return isinstance(value, int) and not isinstance(value, bool)


def _figure(given: dict, name: str, *, due: bool = False):
    """A figure of `given` as reported: a count as it is, 0 when not reported (or null
    where it may be), anything else as given, for the check to name."""
    value = given.get(name)
    if is_count(value):
        return value
    if value is None and (not due or name not in given):
        return 0
    return value


def _plus(summed, figure):
    """summed + figure while both are counts; else the first that is not one."""
    if not is_count(summed):
        return summed
    if figure is None:
        return summed
    return summed + figure if is_count(figure) else figure
