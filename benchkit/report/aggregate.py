"""Aggregate a store's samples against the current matrix into the report's data.

Every sample lands in exactly one place, by the rule the run loop's ledger shares
(benchkit.counting): the measured cells (the headline and its views), the replay cells
(estimates, their own table), the exclusions (invalid and harness-error samples,
counted, never scored) or the other versions (reported apart). Per-arm figures are means over
tasks of per-task means, so an arm is not flattered by which tasks it happened to
run; when arms ran different tasks a second headline compares them on the common ones.

The result is plain JSON-ready data: the JSON export is this, the templates read it.
"""

from __future__ import annotations

import math
from collections import Counter, defaultdict

import numpy as np

from benchkit import counting
from benchkit.report.load import StoreContents
from benchkit.report.matrix import Matrix
from benchkit.report.stats import ALL_METRICS, COST, LEVEL, SUCCESS, CellStats, intervals, mean_of
from benchkit.report.verdicts import family, verdicts
from benchkit.sample import COMPONENTS, SCORED_TIERS, Sample

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


class Placed:
    """The store's samples, each in its one place (benchkit.counting), as tallies."""

    def __init__(self, placed: counting.Sorted, weights: tuple):
        def tally(samples: list[Sample]) -> Tally:
            result = Tally(weights)
            result.extend(samples)
            return result

        def tallies(cells: dict) -> defaultdict:
            result: defaultdict = defaultdict(lambda: Tally(weights))
            result.update((cell, tally(samples)) for cell, samples in cells.items())
            return result
        self.measured = tallies(placed.measured)  # (arm, task) -> Tally
        self.replay = tallies(placed.replay)
        self.excluded = placed.excluded  # (arm, task) -> Counter
        # (arm, task, changes, estimated) -> [Tally of the valid ones, count]
        self.other = {key: [tally(valid), count[0]]
                      for key, (valid, count) in placed.other.items()}
        self.jobs = Counter(s.jobs for samples in placed.measured.values() for s in samples)
        self.tools = placed.tools  # arm -> its current tool version


def current(matrix: Matrix) -> counting.Current:
    """What the matrix's tree expects of a sample."""
    return counting.Current(
        arms={a.id: a.fingerprint for a in matrix.arms},
        tasks={t.id: (t.fingerprint, t.seed_fingerprint) for t in matrix.tasks},
        model=matrix.model_fingerprint)


def place_samples(samples: list[Sample], matrix: Matrix) -> Placed:
    """Each sample in its one place (see the module's docstring)."""
    return Placed(counting.sort_samples(samples, current(matrix)),
                  tuple(matrix.weights[c] for c in COMPONENTS))


# --- figures ------------------------------------------------------------------------

def figure(value, interval=(None, None)) -> dict:
    low, high = interval
    return {"value": value, "low": low, "high": high}


def cell_stats(tallies: dict, arm: str, task_ids, k: int) -> dict:
    """task id -> CellStats of the arm's cells that have at least one sample."""
    cells = {}
    for task in task_ids:
        tally = tallies.get((arm, task))
        if tally is not None and len(tally):
            cells[task] = CellStats(tally.rows, k, name=f"{arm}/{task}")
    return cells


def arm_row(arm: str, cells: dict, *, tasks_total: int, floor: int,
            level: float | None) -> dict:
    """One arm's headline row: means over its tasks of per-task means, with intervals
    (none when level is None)."""
    figures = [c.figures() for c in cells.values()]
    points = [mean_of(column) for column in zip(*figures)] if figures else [None] * len(ALL_METRICS)
    bounds = (intervals(list(cells.values()), level=level) if level
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

def build_report(contents: StoreContents, matrix: Matrix, *, level: float = LEVEL) -> dict:
    sorted_ = place_samples(contents.samples, matrix)
    arm_ids = [a.id for a in matrix.arms]
    scored = [t.id for t in matrix.scored_tasks]
    k, floor = matrix.k, matrix.floor
    cells = {arm: cell_stats(sorted_.measured, arm, scored, k) for arm in arm_ids}

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


def totals(contents: StoreContents, sorted_: Placed) -> dict:
    def trials(tallies):
        return sum(len(t) for t in tallies.values())

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


def common_headline(cells: dict, scored: list, floor: int, level: float) -> dict | None:
    """The arms compared on the tasks every arm with samples ran; None when they all
    ran the same tasks (the headline already is that comparison)."""
    ran = {arm: set(c) for arm, c in cells.items() if c}
    if len(ran) < 2 or len({frozenset(s) for s in ran.values()}) == 1:
        return None
    shared = [t for t in scored if all(t in s for s in ran.values())]
    rows = [arm_row(arm, {t: cells[arm][t] for t in shared}, tasks_total=len(shared),
                    floor=floor, level=level) for arm in ran]
    return {"tasks": shared, "ran": {arm: len(s) for arm, s in ran.items()},
            "rows": by_cost(rows)}


def verdict_view(cells: dict, headline: list, matrix: Matrix, level: float) -> dict | None:
    """The headline comparison: each pair's three-way verdict (benchkit.report.verdicts),
    every pair of the arms with samples, or each against the baseline."""
    ranked = [r["arm"] for r in headline if r["cost"]["value"] is not None]
    if len(ranked) < 2:
        return None
    fam = family(ranked, alpha=1 - level, margin=matrix.margin, baseline=matrix.baseline)
    return {"method": fam.method(), "margin": fam.margin, "baseline": fam.baseline,
            "alpha": fam.alpha, "alpha_pair": fam.alpha_pair,
            "pairs": verdicts({arm: cells[arm] for arm in ranked}, fam)}


def comparison(pairs: dict | None, rows: list) -> dict | None:
    """Each arm's cost difference to the reference (the baseline, else the cheapest
    arm), from the verdicts' simultaneous intervals, so choosing the cheapest after
    looking costs nothing: every pair is covered at once."""
    if pairs is None:
        return None
    ranked = [r["arm"] for r in rows if r["cost"]["value"] is not None]
    reference = pairs["baseline"] or ranked[0]
    found = []
    for arm in (a for a in ranked if a != reference):
        pair = next((p for p in pairs["pairs"] if {p["a"], p["b"]} == {arm, reference}), None)
        if pair is None:
            continue
        flip = pair["a"] != arm  # rows read "arm vs reference"
        ratio, low, high = ((1 / pair["ratio"] if pair["ratio"] else None,
                             _inverse(pair["ratio_high"]), _inverse(pair["ratio_low"])) if flip
                            else (pair["ratio"], pair["ratio_low"], pair["ratio_high"]))
        base = pair["a_mean"] if flip else pair["b_mean"]
        verdict = {"a-cheaper": "b-cheaper", "b-cheaper": "a-cheaper"}.get(
            pair["verdict"], pair["verdict"]) if flip else pair["verdict"]
        found.append({
            "arm": arm, "tasks": pair["tasks"], "verdict": verdict,
            "difference": figure(_scaled(base, ratio), (_scaled(base, low), _scaled(base, high))),
            "relative": ratio - 1 if ratio is not None else None,
            "distinguishable": verdict in ("a-cheaper", "b-cheaper")})
    return {"reference": reference, "rows": found} if found else None


def _inverse(value):
    return 1 / value if value else None


def _scaled(base, ratio):
    """The difference in tokens a ratio to the reference's mean means."""
    return base * (ratio - 1) if base is not None and ratio is not None else None


def statistics_view(level: float, pairs: dict | None) -> dict:
    return {"intervals": (
        f"Intervals: {level:.0%}, for the mean over the suite's tasks. Tokens, turns and "
        "durations: t-intervals pooling each arm's within-cell spread (proportional to a "
        "cell's mean) over its cells, or the spread between tasks while no cell has two "
        "trials; success and pass^k: score (Wilson-type) intervals around the unbiased "
        "per-task estimates, never a point. Not corrected for looking often: the verdicts "
        "are (docs/statistics.md)."),
        "verdicts": pairs["method"] if pairs else None}


def duration_view(jobs: Counter) -> dict:
    """How many measured samples ran at each concurrency (None: not recorded)."""
    return {"jobs": [{"jobs": j, "samples": n} for j, n in
                     sorted(jobs.items(), key=lambda item: (item[0] is None, item[0] or 0))]}


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
        per_task = [tallies[(arm, t)].tokens.mean(axis=0).tolist()
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
            ran = tally is not None and len(tally) > 0
            arms.append({"arm": arm, "applicability": task.applicability.get(arm),
                         "samples": len(tally) if ran else 0,
                         "passes": round(tally.rows[:, SUCCESS].sum()) if ran else 0,
                         "success": _column_mean(tally, SUCCESS) if ran else None,
                         "cost": _column_mean(tally, COST) if ran else None})
        view.append({"task": task.id, "only_when": task.only_when, "arms": arms})
    return view


def coverage_view(sorted_: Placed, matrix: Matrix) -> dict:
    """Arm by task: valid measured samples, whether the floor is reached, what else is
    there (excluded, replay), and the cells missing or below the floor."""
    rows, missing, below = [], [], []
    for task in matrix.tasks:
        entries = []
        for arm in (a.id for a in matrix.arms):
            key = (arm, task.id)
            n = len(sorted_.measured[key]) if key in sorted_.measured else 0
            not_applicable = task.applicability.get(arm) == "not-applicable"
            status = ("n/a" if not_applicable and n == 0 else "missing" if n == 0
                      else "covered" if n >= matrix.floor else "below")
            if task.scored and status in ("missing", "below"):
                (missing if status == "missing" else below).append({"arm": arm, "task": task.id, "samples": n})
            entries.append({"arm": arm, "samples": n, "status": status,
                            "excluded": sum(sorted_.excluded.get(key, {}).values()),
                            "replay": len(sorted_.replay[key]) if key in sorted_.replay else 0})
        rows.append({"task": task.id, "tier": task.tier, "scored": task.scored, "cells": entries})
    return {"rows": rows, "missing": missing, "below_floor": below}


def cells_view(sorted_: Placed, matrix: Matrix) -> list:
    """Every current cell with samples, measured or replayed, with its component means:
    the CSV export, from which a spreadsheet can re-weight without the store."""
    tasks = {t.id: t for t in matrix.tasks}
    rows = []
    for kind, tallies in (("measured", sorted_.measured), ("replay-estimate", sorted_.replay)):
        for (arm, task), tally in tallies.items():
            if not len(tally):
                continue
            stats = CellStats(tally.rows, matrix.k, name=f"{kind}:{arm}/{task}")
            tokens = tally.tokens.mean(axis=0).tolist()
            rows.append({"arm": arm, "task": task, "tier": tasks[task].tier, "kind": kind,
                         "samples": stats.n, "passes": stats.passes,
                         **dict(zip(ALL_METRICS, stats.figures())),
                         **dict(zip(COMPONENTS, tokens))})
    order = {t.id: i for i, t in enumerate(matrix.tasks)}
    arms = {a.id: i for i, a in enumerate(matrix.arms)}
    return sorted(rows, key=lambda r: (r["kind"], arms[r["arm"]], order[r["task"]]))


def _column_mean(tally: Tally, column: int):
    return float(tally.rows[:, column].mean()) if len(tally) else None


def replay_view(tallies: dict, matrix: Matrix) -> list:
    """Replay samples per arm, over the scored tasks: estimates, never the headline."""
    scored = [t.id for t in matrix.scored_tasks]
    rows = []
    for arm in (a.id for a in matrix.arms):
        cells = cell_stats(tallies, arm, scored, matrix.k)
        if cells:
            rows.append({**arm_row(arm, cells, tasks_total=len(scored), floor=matrix.floor,
                                   level=None), "estimated": True})
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
                                level=None) for arm in arm_ids])
    return {"headline": headline, "tiers": tier_view(cells, matrix),
            "components": component_view(tallies, cells, matrix), "estimated": True}


def task_view(tallies: dict, matrix: Matrix) -> list:
    """Per arm with samples: a row per task it ran, in matrix order, with its means."""
    view = []
    for arm in (a.id for a in matrix.arms):
        rows = []
        for task in matrix.tasks:
            tally = tallies.get((arm, task.id))
            if tally is None or not len(tally):
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
                     "samples": count, "valid": len(tally),
                     "success": _column_mean(tally, SUCCESS), "cost": _column_mean(tally, COST)})
    return rows


# --- prose ----------------------------------------------------------------------------

def _names(items) -> str:
    items = list(items)
    return items[0] if len(items) == 1 else ", ".join(items[:-1]) + " and " + items[-1]


def _count(n: int, noun: str) -> str:
    return f"{n} {noun}" if n == 1 else f"{n} {noun}s"


def notes(report: dict) -> list[str]:
    """The sentences that say what the numbers may and may not be read as."""
    return (coverage_notes(report) + exclusion_notes(report["totals"])
            + duration_notes(report["durations"]))


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
                "intervals for the mean over the suite's tasks.")
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


def duration_notes(durations: dict) -> list[str]:
    """Durations are soft: the host's speed, and how many trials shared the machine."""
    counts = durations["jobs"]
    if not counts:
        return []
    known = [f"{_count(c['samples'], 'sample')} at {c['jobs']}" for c in counts
             if c["jobs"] is not None]
    unknown = sum(c["samples"] for c in counts if c["jobs"] is None)
    parts = known + ([f"{_count(unknown, 'sample')} that did not record it"] if unknown else [])
    return ["Durations are soft: they depend on the host and on how many trials ran at "
            "once (--jobs; " + ", ".join(parts) + "), so compare them only at one "
            "concurrency."]
