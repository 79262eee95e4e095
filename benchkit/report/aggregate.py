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

import math
from collections import Counter, defaultdict
from dataclasses import dataclass, field

from benchkit.report.load import Sample, StoreContents
from benchkit.cost import COMPONENTS, components, cost
from benchkit.fingerprint import arm_fingerprint
from benchkit.report.matrix import SCORED_TIERS, Matrix
from benchkit.report.stats import (
    ALL_METRICS, COST, SUCCESS, CellStats, intervals, mean_of, paired_difference)

REPORT_VERSION = 1
RESAMPLES = 1000
LEVEL = 0.95


@dataclass
class Tally:
    """One cell's counting samples: trial rows (stats.CellStats) and component tokens."""
    rows: list = field(default_factory=list)
    tokens: list = field(default_factory=list)  # per trial, COMPONENTS order

    def add(self, sample: Sample, weights: tuple):
        usage = sample.usage
        tokens = components(usage.input, usage.cache_write, usage.cache_write_1h,
                            usage.cache_read, usage.output)
        raw = usage.input + usage.cache_write + usage.cache_read + usage.output
        usd = sample.cost_usd
        self.rows.append((cost(tokens, weights), raw, sample.turns, sample.duration_s,
                          1.0 if sample.outcome == "passed" else 0.0, sample.blocked_calls,
                          usd or 0.0, usd is not None))
        self.tokens.append(tokens)


@dataclass
class Sorted:
    """The store's samples, each in its one place."""
    measured: dict = field(default_factory=lambda: defaultdict(Tally))  # (arm, task) -> Tally
    replay: dict = field(default_factory=lambda: defaultdict(Tally))
    excluded: dict = field(default_factory=lambda: defaultdict(Counter))  # (arm, task) -> Counter
    other: dict = field(default_factory=dict)  # (arm, task, changes, estimated) -> [Tally, count]
    tools: dict = field(default_factory=dict)  # arm -> its current tool version


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


def current_tools(samples: list[Sample], changes: list[tuple]) -> dict:
    """arm -> the tool version of its newest otherwise-current sample: results of two
    versions of a tool are never counted together, and the newest is the current one."""
    newest = {}
    for order, (sample, changed) in enumerate(zip(samples, changes)):
        key = (sample.started_at, order)
        if not changed and (sample.arm not in newest or key > newest[sample.arm][0]):
            newest[sample.arm] = (key, sample.tool_version)
    return {arm: version for arm, (_, version) in newest.items()}


def tool_change(sample: Sample, tools: dict) -> tuple:
    """("tool VERSION",) for a sample of a tool version other than its arm's current."""
    if sample.arm in tools and sample.tool_version != tools[sample.arm]:
        return (f"tool {sample.tool_version or 'version unknown'}",)
    return ()


def current_prompts(samples: list[Sample], changes: list[tuple]) -> dict:
    """(arm, task, estimated) -> the prompt fingerprint of the newest otherwise-current
    sample of the cell and driver kind that reached the agent (a harness error may not
    have assembled a prompt). The store is append-only: the newest is the last read."""
    prompts = {}
    for sample, changed in zip(samples, changes):
        if not changed and sample.outcome != "harness-error":
            prompts[(sample.arm, sample.task, sample.estimated)] = sample.fingerprints.prompt
    return prompts


def sort_samples(samples: list[Sample], matrix: Matrix) -> Sorted:
    """Each sample in its one place (see the module's docstring)."""
    arms = {a.id: a for a in matrix.arms}
    tasks = {t.id: t for t in matrix.tasks}
    known = {}  # samples of a cell mostly share their fingerprints: judge each set once
    changes = []
    for sample in samples:
        key = (sample.arm, sample.task, sample.fingerprints, sample.tool_version)
        if key not in known:
            known[key] = version_changes(sample, matrix, arms, tasks)
        changes.append(known[key])
    tools = current_tools(samples, changes)
    changes = [changed or tool_change(sample, tools) for sample, changed in zip(samples, changes)]
    prompts = current_prompts(samples, changes)
    weights = tuple(matrix.weights[c] for c in COMPONENTS)
    result = Sorted(tools=tools)
    for sample, changed in zip(samples, changes):
        key, estimated = (sample.arm, sample.task), sample.estimated
        harness_error = sample.outcome == "harness-error"
        if (not changed and not harness_error
                and sample.fingerprints.prompt != prompts[key + (estimated,)]):
            changed = ("prompt",)
        if changed:
            slot = result.other.setdefault(key + (changed, estimated), [Tally(), 0])
            slot[1] += 1
            if sample.valid and sample.outcome != "invalid" and not harness_error:
                slot[0].add(sample, weights)
        elif harness_error or sample.outcome == "invalid" or not sample.valid:
            reason = ("harness-error" if harness_error else
                      "unaudited" if sample.outcome == "unaudited" else "invalid")
            result.excluded[key][(reason, sample.failure_class or "")] += 1
        elif estimated:
            result.replay[key].add(sample, weights)
        else:
            result.measured[key].add(sample, weights)
    return result


# --- figures ------------------------------------------------------------------------

def figure(value, interval=(None, None)) -> dict:
    low, high = interval
    return {"value": value, "low": low, "high": high}


def cell_stats(tallies: dict, arm: str, task_ids, k: int) -> dict:
    """task id -> CellStats of the arm's cells that have at least one sample."""
    cells = {}
    for task in task_ids:
        tally = tallies.get((arm, task))
        if tally is not None and tally.rows:
            cells[task] = CellStats(tally.rows, k, name=f"{arm}/{task}")
    return cells


def arm_row(arm: str, cells: dict, *, tasks_total: int, floor: int, bootstrap: dict | None,
            seed: str) -> dict:
    """One arm's headline row: means over its tasks of per-task means, with intervals."""
    figures = [c.figures() for c in cells.values()]
    points = [mean_of(column) for column in zip(*figures)] if figures else [None] * len(ALL_METRICS)
    bounds = (intervals(list(cells.values()), seed=seed, **bootstrap) if bootstrap
              else [(None, None)] * len(ALL_METRICS))
    row = {"arm": arm, "tasks": len(cells), "tasks_total": tasks_total,
           "covered": sum(1 for c in cells.values() if c.n >= floor),
           "samples": sum(c.n for c in cells.values()),
           "pass_k_tasks": sum(1 for c in cells.values() if c.pass_k is not None)}
    row.update({name: figure(p, b) for name, p, b in zip(ALL_METRICS, points, bounds)})
    row["coverage"] = row["covered"] / tasks_total if tasks_total else None
    return row


def by_cost(rows: list) -> list:
    """Cheapest first; arms without samples last, in matrix order."""
    return sorted(rows, key=lambda r: (r["cost"]["value"] is None, r["cost"]["value"] or 0))


# --- the report ---------------------------------------------------------------------

def build_report(contents: StoreContents, matrix: Matrix, *, resamples: int = RESAMPLES,
                 level: float = LEVEL) -> dict:
    sorted_ = sort_samples(contents.samples, matrix)
    bootstrap = {"resamples": resamples, "level": level}
    arm_ids = [a.id for a in matrix.arms]
    scored = [t.id for t in matrix.scored_tasks]
    k, floor = matrix.k, matrix.floor
    cells = {arm: cell_stats(sorted_.measured, arm, scored, k) for arm in arm_ids}

    headline = by_cost([arm_row(arm, cells[arm], tasks_total=len(scored), floor=floor,
                                bootstrap=bootstrap, seed=f"headline:{arm}")
                        for arm in arm_ids])
    common = common_headline(cells, scored, floor, bootstrap)
    report = {
        "version": REPORT_VERSION,
        "model": matrix.model,
        "weights": dict(matrix.weights),
        "floor": floor, "pass_k": k, "resamples": resamples, "level": level,
        "arms": arm_ids,
        "tool_versions": {arm: sorted_.tools[arm] for arm in arm_ids if arm in sorted_.tools},
        "totals": totals(contents, sorted_),
        "headline": headline,
        "common": common,
        "comparison": comparison(cells, common if common and common["tasks"] else
                                 {"rows": headline}, bootstrap),
        "tiers": tier_view(cells, matrix),
        "components": component_view(sorted_.measured, cells, matrix),
        "bonus": bonus_view(sorted_.measured, matrix),
        "coverage": coverage_view(sorted_, matrix),
        "cells": cells_view(sorted_, matrix),
        "replay": replay_view(sorted_.replay, matrix),
        "estimates": estimate_view(sorted_.replay, matrix),
        "tasks": {"measured": task_view(sorted_.measured, matrix),
                  "replay": task_view(sorted_.replay, matrix)},
        "exclusions": exclusion_view(sorted_.excluded, arm_ids),
        "other_versions": other_versions_view(sorted_.other),
        "problems": contents.problems,
    }
    report["notes"] = notes(report)
    return report


def totals(contents: StoreContents, sorted_: Sorted) -> dict:
    def trials(tallies):
        return sum(len(t.rows) for t in tallies.values())

    def excluded(why):
        return sum(n for c in sorted_.excluded.values() for (reason, _), n in c.items()
                   if reason == why)
    return {"samples": len(contents.samples), "files": contents.files,
            "measured": trials(sorted_.measured), "replay": trials(sorted_.replay),
            "invalid": excluded("invalid"), "unaudited": excluded("unaudited"),
            "harness_error": excluded("harness-error"),
            "other_versions": sum(n for _, n in sorted_.other.values()),
            "unconfined": sum(1 for s in contents.samples if not s.confined),
            "unreadable": len(contents.problems)}


def common_headline(cells: dict, scored: list, floor: int, bootstrap: dict) -> dict | None:
    """The arms compared on the tasks every arm with samples ran; None when they all
    ran the same tasks (the headline already is that comparison)."""
    ran = {arm: set(c) for arm, c in cells.items() if c}
    if len(ran) < 2 or len({frozenset(s) for s in ran.values()}) == 1:
        return None
    shared = [t for t in scored if all(t in s for s in ran.values())]
    rows = [arm_row(arm, {t: cells[arm][t] for t in shared}, tasks_total=len(shared),
                    floor=floor, bootstrap=bootstrap, seed=f"common:{arm}")
            for arm in ran]
    return {"tasks": shared, "ran": {arm: len(s) for arm, s in ran.items()},
            "rows": by_cost(rows)}


def comparison(cells: dict, basis: dict, bootstrap: dict) -> dict | None:
    """Each arm's cost difference to the cheapest arm, paired over the tasks both ran."""
    ranked = [r for r in basis["rows"] if r["cost"]["value"] is not None]
    if len(ranked) < 2:
        return None
    reference = ranked[0]["arm"]
    rows = []
    for row in ranked[1:]:
        arm = row["arm"]
        shared = [t for t in cells[arm] if t in cells[reference]]
        pairs = [(cells[arm][t], cells[reference][t]) for t in shared]
        point, low, high = paired_difference(pairs, seed=f"difference:{arm}:{reference}",
                                             **bootstrap)
        base = mean_of([cells[reference][t].means[COST] for t in shared])
        rows.append({"arm": arm, "tasks": len(shared), "difference": figure(point, (low, high)),
                     "relative": point / base if point is not None and base else None,
                     "distinguishable": low is not None and (low > 0 or high < 0)})
    return {"reference": reference, "rows": rows}


def tier_view(cells: dict, matrix: Matrix) -> list:
    """Per tier and arm: cost and success over the tier's tasks the arm ran."""
    view = []
    for tier in SCORED_TIERS:
        ids = [t.id for t in matrix.scored_tasks if t.tier == tier]
        if not ids:
            continue
        arms = []
        for arm in (a.id for a in matrix.arms):
            ran = [cells[arm][t] for t in ids if t in cells[arm]]
            arms.append({"arm": arm, "tasks": len(ran),
                         "cost": mean_of([c.means[COST] for c in ran]),
                         "success": mean_of([c.means[SUCCESS] for c in ran])})
        costs = [a["cost"] for a in arms if a["cost"] is not None]
        for entry in arms:
            entry["relative"] = (entry["cost"] / min(costs)
                                 if entry["cost"] is not None and min(costs) else None)
        view.append({"tier": tier, "tasks_total": len(ids), "arms": arms})
    return view


def component_view(tallies: dict, cells: dict, matrix: Matrix) -> list:
    """Per arm: mean tokens per trial of each component, weighted, and its share."""
    view = []
    for arm in (a.id for a in matrix.arms):
        per_task = [[math.fsum(col) / len(col) for col in zip(*tallies[(arm, t)].tokens)]
                    for t in cells[arm]]
        if not per_task:
            view.append({"arm": arm, "tokens": None, "weighted": None, "shares": None})
            continue
        tokens = {c: mean_of(col) for c, col in zip(COMPONENTS, zip(*per_task))}
        weighted = {c: tokens[c] * matrix.weights[c] for c in COMPONENTS}
        total = math.fsum(weighted.values())
        view.append({"arm": arm, "tokens": tokens, "weighted": weighted, "total": total,
                     "shares": {c: (w / total if total else 0.0) for c, w in weighted.items()}})
    return view


def bonus_view(tallies: dict, matrix: Matrix) -> list:
    """Per bonus operation: each arm's applicability, and its outcome where it ran."""
    view = []
    for task in matrix.bonus_tasks:
        arms = []
        for arm in (a.id for a in matrix.arms):
            tally = tallies.get((arm, task.id))
            ran = tally is not None and tally.rows
            arms.append({"arm": arm, "applicability": task.applicability.get(arm),
                         "samples": len(tally.rows) if ran else 0,
                         "passes": round(sum(r[SUCCESS] for r in tally.rows)) if ran else 0,
                         "success": mean_of([r[SUCCESS] for r in tally.rows]) if ran else None,
                         "cost": mean_of([r[COST] for r in tally.rows]) if ran else None})
        view.append({"task": task.id, "only_when": task.only_when, "arms": arms})
    return view


def coverage_view(sorted_: Sorted, matrix: Matrix) -> dict:
    """Arm by task: valid measured samples, whether the floor is reached, what else is
    there (excluded, replay), and the cells missing or below the floor."""
    rows, missing, below = [], [], []
    for task in matrix.tasks:
        entries = []
        for arm in (a.id for a in matrix.arms):
            key = (arm, task.id)
            n = len(sorted_.measured[key].rows) if key in sorted_.measured else 0
            not_applicable = task.applicability.get(arm) == "not-applicable"
            status = ("n/a" if not_applicable and n == 0 else "missing" if n == 0
                      else "covered" if n >= matrix.floor else "below")
            if task.scored and status in ("missing", "below"):
                (missing if status == "missing" else below).append({"arm": arm, "task": task.id, "samples": n})
            entries.append({"arm": arm, "samples": n, "status": status,
                            "excluded": sum(sorted_.excluded.get(key, {}).values()),
                            "replay": len(sorted_.replay[key].rows) if key in sorted_.replay else 0})
        rows.append({"task": task.id, "tier": task.tier, "scored": task.scored, "cells": entries})
    return {"rows": rows, "missing": missing, "below_floor": below}


def cells_view(sorted_: Sorted, matrix: Matrix) -> list:
    """Every current cell with samples, measured or replayed, with its component means:
    the CSV export, from which a spreadsheet can re-weight without the store."""
    tasks = {t.id: t for t in matrix.tasks}
    rows = []
    for kind, tallies in (("measured", sorted_.measured), ("replay-estimate", sorted_.replay)):
        for (arm, task), tally in tallies.items():
            if not tally.rows:
                continue
            stats = CellStats(tally.rows, matrix.k, name=f"{kind}:{arm}/{task}")
            tokens = [math.fsum(col) / stats.n for col in zip(*tally.tokens)]
            rows.append({"arm": arm, "task": task, "tier": tasks[task].tier, "kind": kind,
                         "samples": stats.n, "passes": stats.passes,
                         **dict(zip(ALL_METRICS, stats.figures())),
                         **dict(zip(COMPONENTS, tokens))})
    order = {t.id: i for i, t in enumerate(matrix.tasks)}
    arms = {a.id: i for i, a in enumerate(matrix.arms)}
    return sorted(rows, key=lambda r: (r["kind"], arms[r["arm"]], order[r["task"]]))


def replay_view(tallies: dict, matrix: Matrix) -> list:
    """Replay samples per arm, over the scored tasks: estimates, never the headline."""
    scored = [t.id for t in matrix.scored_tasks]
    rows = []
    for arm in (a.id for a in matrix.arms):
        cells = cell_stats(tallies, arm, scored, matrix.k)
        if cells:
            rows.append({**arm_row(arm, cells, tasks_total=len(scored), floor=matrix.floor,
                                   bootstrap=None, seed=""), "estimated": True})
    return rows


def estimate_view(tallies: dict, matrix: Matrix) -> dict | None:
    """Replay samples in the measured figures' layout (headline, tiers, components),
    every figure an estimate and kept apart from the measured ones; None without any."""
    scored = [t.id for t in matrix.scored_tasks]
    arm_ids = [a.id for a in matrix.arms]
    cells = {arm: cell_stats(tallies, arm, scored, matrix.k) for arm in arm_ids}
    if not any(cells.values()):
        return None
    headline = by_cost([arm_row(arm, cells[arm], tasks_total=len(scored), floor=matrix.floor,
                                bootstrap=None, seed="") for arm in arm_ids])
    return {"headline": headline, "tiers": tier_view(cells, matrix),
            "components": component_view(tallies, cells, matrix), "estimated": True}


def task_view(tallies: dict, matrix: Matrix) -> list:
    """Per arm with samples: a row per task it ran, in matrix order, with its means."""
    view = []
    for arm in (a.id for a in matrix.arms):
        rows = []
        for task in matrix.tasks:
            tally = tallies.get((arm, task.id))
            if tally is None or not tally.rows:
                continue
            stats = CellStats(tally.rows, matrix.k, name=f"tasks:{arm}/{task.id}")
            rows.append({"task": task.id, "tier": task.tier, "scored": task.scored,
                         "samples": stats.n, "passes": stats.passes,
                         **dict(zip(ALL_METRICS, stats.figures()))})
        if rows:
            view.append({"arm": arm, "rows": rows,
                         "missing": len(matrix.scored_tasks) - sum(r["scored"] for r in rows)})
    return view


def exclusion_view(excluded: dict, arm_ids: list) -> list:
    """Per arm: invalid, unaudited and harness-error samples, by failure class."""
    per_arm = defaultdict(Counter)
    for (arm, _), counter in excluded.items():
        per_arm[arm].update(counter)
    order = arm_ids + sorted(set(per_arm) - set(arm_ids))
    return [{"arm": arm,
             "invalid": sum(n for (r, _), n in per_arm[arm].items() if r == "invalid"),
             "unaudited": sum(n for (r, _), n in per_arm[arm].items() if r == "unaudited"),
             "harness_error": sum(n for (r, _), n in per_arm[arm].items() if r == "harness-error"),
             "classes": {f"{r}: {c}" if c else r: n for (r, c), n in sorted(per_arm[arm].items())}}
            for arm in order if per_arm[arm]]


def other_versions_view(other: dict) -> list:
    rows = []
    for (arm, task, changes, estimated), (tally, count) in sorted(other.items()):
        rows.append({"arm": arm, "task": task, "changed": list(changes), "estimated": estimated,
                     "samples": count, "valid": len(tally.rows),
                     "success": mean_of([r[SUCCESS] for r in tally.rows]),
                     "cost": mean_of([r[COST] for r in tally.rows])})
    return rows


# --- prose ----------------------------------------------------------------------------

def _names(items) -> str:
    items = list(items)
    return items[0] if len(items) == 1 else ", ".join(items[:-1]) + " and " + items[-1]


def _count(n: int, noun: str) -> str:
    return f"{n} {noun}" if n == 1 else f"{n} {noun}s"


def notes(report: dict) -> list[str]:
    """The sentences that say what the numbers may and may not be read as."""
    return coverage_notes(report) + exclusion_notes(report["totals"])


def coverage_notes(report: dict) -> list[str]:
    rows = [r for r in report["headline"] if r["tasks"]]
    if not rows:
        return ["No measured samples of the current tasks and arms yet: nothing to compare."]
    said = []
    total = rows[0]["tasks_total"]
    full = [r["arm"] for r in rows if r["covered"] == total]
    partial = [f"{r['arm']} {r['covered']}/{total}" for r in rows if r["covered"] < total]
    if not partial and len(rows) == len(report["headline"]):
        said.append(f"Every arm covered all {total} scored tasks at the floor of "
                    f"{report['floor']} valid samples.")
    else:
        said.append("The matrix is partial. Cells at the floor of "
                    f"{report['floor']} valid samples, per arm: "
                    + ", ".join(partial + [f"{a} {total}/{total}" for a in full]) + ".")
    silent = [r["arm"] for r in report["headline"] if not r["tasks"]]
    if silent:
        said.append(f"No measured samples yet for {_names(silent)}.")
    common = report["common"]
    if common:
        ran = ", ".join(f"{arm} {n}" for arm, n in common["ran"].items())
        if common["tasks"]:
            said.append(f"The arms ran different tasks ({ran} of {total}), so the headline "
                        "figures are not directly comparable; the second table compares them "
                        f"on the {len(common['tasks'])} tasks all of them ran.")
        else:
            said.append(f"The arms ran different tasks ({ran} of {total}) and no task was run "
                        "by all of them, so they cannot yet be compared like for like.")
    said.append("Figures are means over tasks of per-task means, so a cell's number of "
                f"trials does not weigh on them; intervals are {report['level']:.0%} "
                "two-stage bootstrap intervals (tasks, then trials).")
    return said


def exclusion_notes(totals: dict) -> list[str]:
    said = []
    excluded = totals["invalid"] + totals["unaudited"] + totals["harness_error"]
    if excluded:
        unaudited = (f"{totals['unaudited']} unaudited (the audit could not read its "
                     "evidence), " if totals["unaudited"] else "")
        said.append(f"{_count(excluded, 'sample')} left out of every figure: "
                    f"{totals['invalid']} invalid (a foreign tool reached), {unaudited}and "
                    f"{_count(totals['harness_error'], 'harness error')}.")
    if totals["other_versions"]:
        said.append(f"{_count(totals['other_versions'], 'sample')} ran with another version "
                    "of the task, arm, tool, seed, prompt or model: reported apart.")
    if totals["replay"]:
        said.append(f"{_count(totals['replay'], 'replay sample')} (scripted model, token "
                    "figures estimated from bytes): reported apart as estimates, never in "
                    "the headline.")
    if totals.get("unconfined"):
        said.append(f"{_count(totals['unconfined'], 'sample')} ran unconfined (--unconfined): "
                    "the agent's shell was not in the OS sandbox, so nothing but the guard "
                    "and the audit kept it from the host.")
    return said
