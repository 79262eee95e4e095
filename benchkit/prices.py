"""The Claude models' list prices, per million tokens of each component, as of one date:
what `benchkit run --dry-run` turns a plan's tokens into dollars with (docs/models.md).

A price is the list price of the model's first-party API, by component in the order the
sample's usage weighs them (benchkit.sample.COMPONENTS): fresh input, cache write for 5
minutes, cache write for 1 hour, cache read, output. It is looked up by the model's id
without a dated snapshot's suffix (claude-sonnet-4-5-20250929 is claude-sonnet-4-5's);
a model the table does not list has no price, and the plan says so rather than guess.
Prices change: the table is dated, and the plan prints the date beside every dollar.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import NamedTuple

AS_OF = "2026-12-07"


class Price(NamedTuple):
    """US dollars per million tokens, by component (COMPONENTS order)."""
    input: float
    cache_write_5m: float
    cache_write_1h: float
    cache_read: float
    output: float


_OPUS_4 = Price(15.0, 18.75, 30.0, 1.5, 75.0)
_OPUS_4_5 = Price(5.0, 6.25, 10.0, 0.5, 25.0)
_SONNET = Price(3.0, 3.75, 6.0, 0.3, 15.0)
PRICES: dict[str, Price] = {
    "claude-opus-5-5": Price(4.0, 5.0, 8.0, 0.2, 20.0),
    "claude-sonnet-5-5": Price(2.0, 2.5, 4.0, 0.1, 10.0),
    "claude-haiku-5-5": Price(0.1, 0.125, 0.2, 0.01, 0.5),
    "claude-opus-4-6": _OPUS_4_5,
    "claude-opus-4-5": _OPUS_4_5,
    "claude-opus-4-1": _OPUS_4,
    "claude-opus-4-0": _OPUS_4,
    "claude-opus-4": _OPUS_4,
    "claude-sonnet-4-6": _SONNET,
    "claude-sonnet-4-5": _SONNET,
    "claude-sonnet-4-0": _SONNET,
    "claude-sonnet-4": _SONNET,
    "claude-3-7-sonnet": _SONNET,
    "claude-3-5-sonnet": _SONNET,
    "claude-haiku-4-5": Price(1.0, 1.25, 2.0, 0.1, 5.0),
    "claude-3-5-haiku": Price(0.8, 1.0, 1.6, 0.08, 4.0),
}
_SNAPSHOT = re.compile(r"-[0-9]{8}$")


def price(model: str) -> Price | None:
    """The model's list price, or None where the table has none."""
    return PRICES.get(_SNAPSHOT.sub("", model))


def dollars(tokens: Sequence[float], of: Price) -> float:
    """Tokens by component (COMPONENTS order) at `of`'s prices."""
    return sum(count * per_million for count, per_million in zip(tokens, of)) / 1_000_000
