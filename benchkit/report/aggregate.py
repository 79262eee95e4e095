"""Aggregate a store's samples against the current matrix into the report's data.

Every sample lands in exactly one place: the measured cells (the headline and its
views), the replay cells (estimates, their own table), the exclusions (invalid and
harness-error samples, counted, never scored) or the other versions (fingerprints
that differ from the current tree, or a tool version other than the arm's newest,
reported apart). Per-arm figures are means over
tasks of per-task means, so an arm is not flattered by which tasks it happened to
run; when arms ran different tasks a second headline compares them on the common ones.

The result is plain JSON-ready data: the JSON export is this, the templates read it.
"""

from __future__ import annotations

from collections import Counter, defaultdict

import numpy as np

from benchkit.cost import COMPONENTS
from benchkit.fingerprint import arm_fingerprint
from benchkit.report.headline import (
    Cells,
    arm_row,
    by_cost,
    common_headline,
    comparison,
    statistics_view,
    verdict_view,
)
from benchkit.report.load import Sample, StoreContents
from benchkit.report.matrix import Matrix
from benchkit.report.notes import notes
from benchkit.report.stats import LEVEL
from benchkit.report.views import (
    bonus_view,
    cells_view,
    component_view,
    coverage_view,
    duration_view,
    estimate_view,
    exclusion_view,
    other_versions_view,
    replay_view,
    task_view,
    tier_view,
    totals,
)

REPORT_VERSION = 2


class Tally:
    """One cell's counting samples; their trial rows (stats.CellStats) and component
    tokens are built once, column-wise, when first asked for."""

    def __init__(self, weights: tuple):
        self.weights = weights
        self.samples: list[Sample] = []
        self._rows = self._tokens = None

    def extend(self, samples: list[Sample]):
        self.samples.extend(samples)
        self._rows = None

    def __len__(self) -> int:
        return len(self.samples)

    @property
    def rows(self) -> np.ndarray:
        """(n, 8): cost, raw, turns, duration, passed, blocked, cost_usd or 0, has it."""
        if self._rows is None:
            self._build()
        return self._rows

    @property
    def tokens(self) -> np.ndarray:
        """(n, 5): tokens per trial in COMPONENTS order."""
        if self._rows is None:
            self._build()
        return self._tokens

    def _build(self):
        usage = np.array([(s.usage.input, s.usage.cache_write, s.usage.cache_write_1h or 0,
                           s.usage.cache_read, s.usage.output) for s in self.samples],
                         dtype=float).reshape(-1, 5)
        tokens = usage.copy()
        tokens[:, 1] -= usage[:, 2]  # a write not split by lifetime counts as 5-minute
        other = np.array([(s.turns, s.duration_s, s.outcome == "passed", s.blocked_calls,
                           s.cost_usd or 0.0, s.cost_usd is not None) for s in self.samples],
                         dtype=float).reshape(-1, 6)
        self._tokens = tokens
        self._rows = np.column_stack([tokens @ np.array(self.weights, dtype=float),
                                      usage[:, [0, 1, 3, 4]].sum(axis=1), other])


class Sorted:
    """The store's samples, each in its one place."""

    def __init__(self, weights: tuple):
        def tally():
            return Tally(weights)
        self.tally = tally
        self.measured = defaultdict(tally)  # (arm, task) -> Tally
        self.replay = defaultdict(tally)
        self.excluded = defaultdict(Counter)  # (arm, task) -> Counter
        self.other: dict = {}  # (arm, task, changes, estimated) -> [Tally, count]
        self.jobs = Counter()  # concurrency of the measured samples -> count
        self.tools: dict = {}  # arm -> its current tool version


def version_changes(sample: Sample, matrix: Matrix, arms: dict, tasks: dict) -> tuple:
    """What of the current tree a sample did not run with (its task, arm, seed or
    model; the arm's fingerprint takes the sample's tool version in; the tool version
    itself is judged per arm by current_tools, the prompt per cell by current_prompts);
    empty when current."""
    arm, task = arms.get(sample.arm), tasks.get(sample.task)
    if arm is None or task is None:
        return tuple(f"{kind} not in the tree" for kind, entry in
                     (("arm", arm), ("task", task)) if entry is None)
    arm_print = (arm_fingerprint(arm.fingerprint, sample.tool_version)
                 if arm.fingerprint is not None else None)
    expected = {"task": task.fingerprint, "arm": arm_print,
                "seed": task.seed_fingerprint, "model": matrix.model_fingerprint}
    found = sample.fingerprints
    return tuple(name for name, value in expected.items()
                 if value is not None and getattr(found, name) != value)


def group_samples(samples: list[Sample]) -> dict:
    """Samples by everything that decides where they land: (arm, task, fingerprints,
    estimated, outcome, valid, failure class, jobs, tool version) -> [position of the
    last, samples]. One pass of tuple keys: what a 100,000-sample store can afford per
    sample."""
    groups = {}
    for position, s in enumerate(samples):
        key = (s.arm, s.task, s.fingerprints, s.usage_estimated or s.driver == "replay",
               s.outcome, s.valid, s.failure_class, s.jobs, s.tool_version)
        group = groups.get(key)
        if group is None:
            groups[key] = group = [position, []]
        group[0] = position
        group[1].append(s)
    return groups


def current_tools(groups: dict, changes: dict) -> dict:
    """arm -> the tool version of its newest otherwise-current sample: results of two
    versions of a tool are never counted together, and the newest is the current one."""
    newest = {}
    for key, (last, members) in groups.items():
        if not changes[key]:
            order = (max(s.started_at for s in members), last)
            if key[0] not in newest or order > newest[key[0]][0]:
                newest[key[0]] = (order, key[8])
    return {arm: version for arm, (_, version) in newest.items()}


def tool_change(arm: str, version, tools: dict) -> tuple:
    """("tool VERSION",) for samples of a tool version other than their arm's current."""
    if arm in tools and version != tools[arm]:
        return (f"tool {version or 'version unknown'}",)
    return ()


def current_prompts(groups: dict, changes: dict) -> dict:
    """(arm, task, estimated) -> the prompt fingerprint of the newest otherwise-current
    sample of the cell and driver kind that reached the agent (a harness error may not
    have assembled a prompt). The store is append-only: the newest is the last read."""
    newest = {}
    for key, (last, _) in groups.items():
        arm, task, prints, estimated, outcome = key[:5]
        if not changes[key] and outcome != "harness-error":
            cell = (arm, task, estimated)
            if cell not in newest or newest[cell][0] < last:
                newest[cell] = (last, prints.prompt)
    return {cell: prompt for cell, (_, prompt) in newest.items()}


def sort_samples(samples: list[Sample], matrix: Matrix) -> Sorted:
    """Each sample in its one place (see the module's docstring)."""
    arms = {a.id: a for a in matrix.arms}
    tasks = {t.id: t for t in matrix.tasks}
    groups = group_samples(samples)
    changes = {key: version_changes(group[1][0], matrix, arms, tasks) for key, group in groups.items()}
    tools = current_tools(groups, changes)
    changes = {key: changed or tool_change(key[0], key[8], tools) for key, changed in changes.items()}
    prompts = current_prompts(groups, changes)
    result = Sorted(tuple(matrix.weights[c] for c in COMPONENTS))
    result.tools = tools
    for key, (_, members) in groups.items():
        arm, task, prints, estimated, outcome, valid, failure_class, jobs, _tool = key
        cell, changed = (arm, task), changes[key]
        harness_error = outcome == "harness-error"
        if not changed and not harness_error and prints.prompt != prompts[cell + (estimated,)]:
            changed = ("prompt",)
        if changed:
            slot = result.other.setdefault(cell + (changed, estimated), [result.tally(), 0])
            slot[1] += len(members)
            if valid and outcome not in ("invalid", "unaudited") and not harness_error:
                slot[0].extend(members)
        elif harness_error or outcome in ("invalid", "unaudited") or not valid:
            reason = ("harness-error" if harness_error else
                      "unaudited" if outcome == "unaudited" else "invalid")
            result.excluded[cell][(reason, failure_class or "")] += len(members)
        elif estimated:
            result.replay[cell].extend(members)
        else:
            result.measured[cell].extend(members)
            result.jobs[jobs] += len(members)
    return result


# --- the report ---------------------------------------------------------------------

def build_report(contents: StoreContents, matrix: Matrix, *, level: float = LEVEL) -> dict:
    sorted_ = sort_samples(contents.samples, matrix)
    arm_ids = [a.id for a in matrix.arms]
    scored = [t.id for t in matrix.scored_tasks]
    k, floor = matrix.k, matrix.floor
    measured, replay = (Cells(sorted_.measured, k, "measured"),
                        Cells(sorted_.replay, k, "replay-estimate"))
    cells = {arm: measured.of_arm(arm, scored) for arm in arm_ids}

    headline = by_cost([arm_row(arm, cells[arm], tasks_total=len(scored), floor=floor,
                                level=level) for arm in arm_ids])
    common = common_headline(cells, scored, floor, level)
    pairs = verdict_view(cells, headline, matrix, level)
    report = {
        "version": REPORT_VERSION,
        "model": matrix.model,
        "weights": dict(matrix.weights),
        "floor": floor, "pass_k": k, "level": level,
        "arms": arm_ids,
        "tool_versions": {arm: sorted_.tools[arm] for arm in arm_ids if arm in sorted_.tools},
        "totals": totals(contents, sorted_),
        "headline": headline,
        "common": common,
        "verdicts": pairs,
        "comparison": comparison(pairs, common["rows"] if common and common["tasks"] else headline),
        "statistics": statistics_view(level, pairs),
        "durations": duration_view(sorted_.jobs),
        "tiers": tier_view(cells, matrix),
        "components": component_view(sorted_.measured, cells, matrix),
        "bonus": bonus_view(sorted_.measured, matrix),
        "coverage": coverage_view(sorted_, matrix),
        "cells": cells_view(measured, replay, matrix),
        "replay": replay_view(replay, matrix),
        "estimates": estimate_view(replay, matrix),
        "tasks": {"measured": task_view(measured, matrix), "replay": task_view(replay, matrix)},
        "exclusions": exclusion_view(sorted_.excluded, arm_ids),
        "other_versions": other_versions_view(sorted_.other),
        "problems": contents.problems,
    }
    report["notes"] = notes(report)
    return report
