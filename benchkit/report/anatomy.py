"""The report's "where the tokens go" view: each arm's cost-equivalent tokens split
into the six parts of benchkit.anatomy (ambient, the runtime's own requests, tool searches, carried context, tool
output, model output), from the trials that recorded their requests one by one: where
an eager MCP arm and one behind the runtime's tool search part ways (a large first
request against searches and the schemas they bring).

Figures are means over the arm's tasks of each task's mean (the headline's estimand),
on the cells the headline counts (measured) or the replay's (estimated from bytes).
"""

from __future__ import annotations

import math
from collections.abc import Mapping

import numpy as np

from benchkit.report.columns import ANATOMY_COLUMNS, ANATOMY_PARTS
from benchkit.report.model import AnatomyRow
from benchkit.sample import COMPONENTS

PART_NAMES = {"ambient": "first request", "runtime_own": "runtime's own requests",
              "searches": "tool searches",
              "carried": "carried context",
              "tool_output": "tool output", "model_output": "model output"}
_AT = {name: index for index, name in enumerate(ANATOMY_COLUMNS)}


def anatomy_view(tallies: Mapping, cells: dict, weights: Mapping[str, float],
                 kind: str) -> list[AnatomyRow]:
    """Per arm with any trial that has an anatomy: each part's mean cost-equivalent
    tokens per trial and share, the first request's prompt, requests per trial and the
    mean tool result's bytes. cells: arm -> the tasks counted; kind: measured | replay."""
    weight = np.array([weights[c] for c in COMPONENTS], dtype=float)
    view = []
    for arm, tasks in cells.items():
        found = (_task_figures(tallies[(arm, task)].anatomy, weight) for task in tasks)
        per_task = [figures for figures in found if figures is not None]
        if not per_task:
            continue
        mean = {key: math.fsum(f[key] for f in per_task) / len(per_task) for key in per_task[0]}
        parts = {part: mean[part] for part in ANATOMY_PARTS}
        total = math.fsum(parts.values())
        results = mean["tool_results"]
        view.append(AnatomyRow(
            arm=arm, kind=kind, tasks=len(per_task),
            trials=int(sum(f["trials"] for f in per_task)),
            estimated=kind == "replay" or any(f["estimated"] for f in per_task),
            parts=parts, total=total,
            shares={part: (value / total if total else 0.0) for part, value in parts.items()},
            ambient_tokens=mean["ambient_tokens"], requests=mean["requests"],
            tool_results=results,
            tool_result_bytes=(mean["tool_result_bytes"] / results) if results else None,
            search_calls=mean["search_calls"]))
    return view


def _task_figures(rows: np.ndarray, weight: np.ndarray) -> dict | None:
    """A cell's mean figures over its trials that have an anatomy."""
    rows = rows[rows[:, _AT["has"]] > 0]
    if not len(rows):
        return None
    figures = {"trials": float(len(rows)), "estimated": bool(rows[:, _AT["estimated"]].any())}
    for part in ANATOMY_PARTS:
        start = _AT[f"{part}.{COMPONENTS[0]}"]
        figures[part] = float((rows[:, start:start + len(COMPONENTS)] @ weight).mean())
    for column in ("ambient_tokens", "requests", "tool_results", "tool_result_bytes",
                   "search_calls"):
        figures[column] = float(rows[:, _AT[column]].mean())
    return figures
