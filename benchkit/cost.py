"""Cost-equivalent tokens: fresh input x1 + cache write x1.25 (5 min) / x2 (1 h) + cache
read x0.1 + output x5, the weights being the suite's. One weighing for the run loop's
budget and the report's figures.
"""

from collections.abc import Mapping

from benchkit.sample import COMPONENTS


def components(input, cache_write, cache_write_1h, cache_read, output) -> tuple:
    """A sample's usage in COMPONENTS order. A cache write not split by lifetime counts
    as a 5-minute one."""
    one_hour = cache_write_1h or 0
    return (input, cache_write - one_hour, one_hour, cache_read, output)


def cost(tokens: tuple, weights: tuple) -> float:
    """Each component (COMPONENTS order) times its weight (the same order), summed."""
    return sum(count * weight for count, weight in zip(tokens, weights))


def usage_cost(usage: Mapping, weights: Mapping[str, float]) -> float:
    """Cost-equivalent tokens of a sample's usage (as recorded), weighed by name."""
    tokens = components(usage["input"], usage["cache_write"], usage.get("cache_write_1h"),
                        usage["cache_read"], usage["output"])
    return cost(tokens, tuple(weights[name] for name in COMPONENTS))


def token_figure(tokens: float, estimated: bool) -> str:
    """Tokens as the report and the run print them: "12,345", and "12,345~" for an
    estimate (a replay's figures, an expected cost): the mark always follows the figure."""
    return f"{tokens:,.0f}~" if estimated else f"{tokens:,.0f}"
