"""Geometry of the HTML report's inline SVG charts, computed from the report's data.

The template draws what these functions lay out: cost per arm with interval whiskers,
the weighted token components stacked per arm, and a tier-by-arm heat map of cost.
"""

from __future__ import annotations

import math
from typing import NamedTuple

from benchkit.report.model import AnatomyRow, ArmRow, ComponentRow, Tier
from benchkit.sample import COMPONENTS

WIDTH = 720
LABEL = 130  # the least left column for arm names; wider for longer names (label_width)
CHAR = 6.5  # px a character of the charts' 12 px text is laid out at: a margin over the
# ~5.5 px measured in headless Chromium (tests/report/test_report_like_with_like.py checks)
RIGHT = 90  # room for the value printed past a bar
ROW = 30
TOP = 12
AXIS = 28
# Colours: one per token component, readable on white and in greyscale order.
COMPONENT_COLOURS = {"input": "#4e79a7", "cache_write_5m": "#f28e2b", "cache_write_1h": "#e15759",
                     "cache_read": "#76b7b2", "output": "#59a14f"}
PART_COLOURS = {"ambient": "#9c755f", "runtime_own": "#bab0ac", "searches": "#b07aa1",
                "carried": "#76b7b2", "tool_output": "#f28e2b", "model_output": "#59a14f"}
CHEAP, DEAR = (216, 240, 216), (240, 138, 93)  # heat map: the tier's cheapest .. DEAREST
# The heat map's scale is logarithmic up to 4x the cheapest, so 1.5x and 3x are told apart
# (a linear scale ending at 1.5x painted every dearer arm one orange).
DEAREST = 4.0
SCALE_MARKS = (1.0, 1.5, 2.0, 3.0, 4.0)  # the heat map's key
# Heat map: an arm below the tier's best success, whatever its cost (never the green of
# the cheapest: cheapest is not best when it fails), and an arm not comparable.
BELOW_BEST, NOT_COMPARABLE = "#e3c8e8", "#eeeeee"


def nice_ticks(top: float, count: int = 5) -> list[float]:
    """Round axis ticks from 0 to at least top."""
    if top <= 0:
        return [0.0]
    raw = top / count
    magnitude = 10 ** math.floor(math.log10(raw))
    step = next(m * magnitude for m in (1, 2, 2.5, 5, 10) if m * magnitude >= raw)
    return [i * step for i in range(int(math.ceil(top / step)) + 1)]


def label_width(labels) -> float:
    """The left column: room for the longest label (right-aligned 8 px off the plot)."""
    return max([LABEL, *(CHAR * len(label) + 16 for label in labels)])


def _axis(top: float, plot: float, y: float, left: float) -> tuple[float, list]:
    ticks = nice_ticks(top)
    scale = plot / ticks[-1] if ticks[-1] else 0.0
    return scale, [{"x": left + t * scale, "y": y, "label": _short(t)} for t in ticks]


def _short(value: float) -> str:
    if value >= 1000:
        return f"{value / 1000:g}k"
    return f"{value:g}"


def cost_chart(rows: list[ArmRow]) -> dict | None:
    """Horizontal bars of cost-equivalent tokens per arm, whiskers at the interval."""
    costs = [(r.arm, value, r.cost.low, r.cost.high) for r in rows
             if (value := r.cost.value) is not None]
    if not costs:
        return None
    left = label_width(arm for arm, *_ in costs)
    plot = WIDTH - left - RIGHT
    top = max(high or value for _, value, _, high in costs)
    height = TOP + ROW * len(costs) + AXIS
    scale, ticks = _axis(top, plot, height - AXIS + 4, left)
    bars = []
    for index, (arm, value, low, high) in enumerate(costs):
        y = TOP + index * ROW
        bars.append({
            "arm": arm, "y": y, "mid": y + ROW / 2 - 4, "height": ROW - 8,
            "width": value * scale, "value": value,
            "low_x": left + (low if low is not None else value) * scale,
            "high_x": left + (high if high is not None else value) * scale,
            "low": low, "high": high,
            "text_x": left + max(high or 0, value) * scale + 6,
        })
    return {"width": WIDTH, "height": height, "left": left, "axis_y": height - AXIS,
            "bars": bars, "ticks": ticks}


class Stack(NamedTuple):
    """One arm's stacked bar: each key's weighted tokens, tokens and share."""
    arm: str
    weighted: dict[str, float]
    tokens: dict[str, float]
    shares: dict[str, float]
    total: float
    estimated: bool = False  # its figures are estimates (the replay's)


def component_chart(components: list[ComponentRow], names: dict) -> dict | None:
    """Stacked bars per arm: each component's weighted share of cost-equivalent tokens;
    names are the components' display names, for the legend's spacing."""
    return _stacked_chart([Stack(c.arm, c.weighted, c.tokens, c.shares, c.total)
                           for c in components
                           if c.weighted and c.tokens and c.shares and c.total is not None],
                          COMPONENTS, COMPONENT_COLOURS, names)


def anatomy_chart(rows: list[AnatomyRow], names: dict) -> dict | None:
    """Stacked bars per arm: cost-equivalent tokens split into the parts of the
    cost anatomy (benchkit.report.anatomy)."""
    shaped = [Stack(row.arm + (" (replay)" if row.kind == "replay" else ""), row.parts,
                    row.parts, row.shares, row.total, row.estimated) for row in rows]
    return _stacked_chart(shaped, tuple(names), PART_COLOURS, names)


def _stacked_chart(rows: list[Stack], keys, colours: dict, names: dict) -> dict | None:
    if not rows:
        return None
    left = label_width(row.arm for row in rows)
    plot = WIDTH - left - RIGHT
    legend, legend_rows = _legend(keys, colours, names, left)
    bars = TOP + ROW * len(rows)
    height = bars + AXIS + 26 * legend_rows
    scale, ticks = _axis(max(c.total for c in rows), plot, bars + 4, left)
    stacks = []
    for index, row in enumerate(rows):
        x: float = left  # an int until the first segment: the template prints it so
        y, segments = TOP + index * ROW, []
        for name in keys:
            width = row.weighted[name] * scale
            segments.append({"component": name, "x": x, "width": width,
                             "colour": colours[name], "value": row.weighted[name],
                             "tokens": row.tokens[name], "share": row.shares[name]})
            x += width
        stacks.append({"arm": row.arm, "y": y, "mid": y + ROW / 2 - 4, "height": ROW - 8,
                       "segments": segments, "total": row.total, "text_x": x + 6,
                       "estimated": row.estimated})
    for item in legend:
        item["y"] += bars + AXIS
    return {"width": WIDTH, "height": height, "left": left, "axis_y": bars,
            "stacks": stacks, "ticks": ticks, "legend": legend}


def _legend(keys, colours: dict, names: dict, left: float) -> tuple[list[dict], int]:
    """The key's items, flowed into rows 26 px apart from `left` (each a swatch, then
    its name at CHAR px a character): (items, with y from the legend's top; rows)."""
    legend: list[dict] = []
    x, row = left, 0
    for name in keys:
        width = 16 + CHAR * len(names[name])
        if x > left and x + width > WIDTH - 4:
            x, row = left, row + 1
        legend.append({"component": name, "colour": colours[name], "x": x, "y": 12 + 26 * row})
        x += width + 18
    return legend, row + 1


def _blend(relative: float) -> str:
    """The tier's cheapest arm light green, DEAREST times its cost and above orange, on
    a logarithmic scale between."""
    t = min(max(math.log(max(relative, 1e-9)) / math.log(DEAREST), 0.0), 1.0)
    return "#" + "".join(f"{round(a + (b - a) * t):02x}" for a, b in zip(CHEAP, DEAR, strict=True))


def tier_heatmap(tiers: list[Tier], arms: list[str]) -> dict | None:
    """Arms by tiers; each cell coloured by its cost on the tier's common tasks relative
    to the cheapest arm's at the tier's best success (views.tier_view); an arm below
    that success has a colour of its own."""
    if not tiers or not any(a.cost is not None for t in tiers for a in t.arms):
        return None
    left = label_width(arms)
    column, row, head = (WIDTH - left) / len(tiers), 40, 26
    cells = []
    for x_index, tier in enumerate(tiers):
        for y_index, entry in enumerate(tier.arms):
            relative = entry.relative
            cells.append({
                "tier": tier.tier, "arm": entry.arm,
                "x": left + x_index * column, "y": head + y_index * row,
                "width": column - 4, "height": row - 4, "cost": entry.cost,
                "success": entry.success, "relative": relative,
                "tasks": entry.tasks, "tasks_total": tier.tasks_total,
                "common": tier.common, "common_cost": entry.common_cost,
                "common_success": entry.common_success, "below_best": entry.below_best,
                "colour": (NOT_COMPARABLE if relative is None else BELOW_BEST
                           if entry.below_best else _blend(relative))})
    bottom = head + row * len(arms)
    step = (WIDTH - left) / len(SCALE_MARKS)
    scale = [{"x": left + i * step, "y": bottom + 6, "colour": _blend(mark),
              "label": f"{mark:g}×" + (" (the cheapest)" if mark == 1 else
                                       " or more" if mark == DEAREST else "")}
             for i, mark in enumerate(SCALE_MARKS)]
    return {"width": WIDTH, "height": bottom + 30, "left": left,
            "columns": [{"tier": t.tier, "x": left + i * column + (column - 4) / 2}
                        for i, t in enumerate(tiers)],
            "rows": [{"arm": arm, "y": head + i * row + (row - 4) / 2} for i, arm in enumerate(arms)],
            "cells": cells, "scale": scale}
