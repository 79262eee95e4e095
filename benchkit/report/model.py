"""The report as typed records: what benchkit.report.aggregate builds, the templates
and charts read by attribute, and the JSON export (report.json) writes field by field
in the order declared here (the arm-by-task ones in benchkit.report.grid). A mapping keyed by data (an arm, a component, a part)
stays a dict; a record with fixed fields is a Struct.

A field with a default is left out of the JSON while it holds that default
(omit_defaults): the replay's rows are headline rows with `estimated` added, and an arm
without samples has no component `total`.
"""

from __future__ import annotations

from typing import Any

import msgspec

from benchkit.report.calls import CommandChange, CommandTable
from benchkit.report.grid import CellRow, Coverage, TaskTables
from benchkit.report.record import ReportRecord
from benchkit.statistics.verdicts import PairVerdict


class Figure(ReportRecord):
    """A figure and its interval (None where undefined)."""
    value: float | None
    low: float | None
    high: float | None


class ArmRow(ReportRecord):
    """One arm's headline row: means over its tasks of per-task means, with intervals
    (statistics.intervals.ALL_METRICS), over the `tasks` it ran of `tasks_total`."""
    arm: str
    tasks: int
    tasks_total: int
    covered: int      # tasks at the floor
    samples: int
    pass_k_tasks: int
    cost: Figure
    raw: Figure
    turns: Figure
    duration: Figure
    success: Figure
    blocked: Figure
    pass_k: Figure
    cost_usd: Figure
    coverage: float | None
    estimated: bool = False  # the replay's rows: estimates, never the headline


class Unsupported(ReportRecord):
    """A scored task an arm left out because its tool cannot do it."""
    arm: str
    task: str
    reason: str


class Common(ReportRecord):
    """The arms ranked on the tasks every one of them ran (the report's first table,
    headline.common_headline): `apart` the arms with samples that share no task with
    the ranked ones (listed, not ranked), `uneven` when the arms ran different tasks
    (their all-task means, the headline rows, are then not comparable)."""
    tasks: list[str]
    ran: dict[str, int]  # arm -> how many scored tasks it ran
    rows: list[ArmRow]
    unsupported: list[Unsupported]
    apart: list[str] = []
    uneven: bool = False


class Verdicts(ReportRecord):
    """The headline comparison's family of verdicts (benchkit.statistics.verdicts)."""
    method: str
    margin: float
    baseline: str | None
    alpha: float
    alpha_pair: float
    pairs: list[PairVerdict]


class Difference(ReportRecord):
    """One arm's cost against the comparison's reference."""
    arm: str
    tasks: int
    verdict: str
    difference: Figure
    relative: float | None
    distinguishable: bool


class ReferenceComparison(ReportRecord):
    reference: str
    rows: list[Difference]


class StatisticsNote(ReportRecord):
    """What the intervals and the verdicts are, in words."""
    intervals: str
    verdicts: str | None


class JobCount(ReportRecord):
    jobs: int | None  # trials run at once (None: not recorded)
    samples: int


class Durations(ReportRecord):
    jobs: list[JobCount]


class TierArm(ReportRecord):
    """An arm in a tier: cost and success over the tier's tasks it ran, and over the
    tier's common tasks (those every arm with samples in the tier ran), on which it is
    compared: `relative` is its common cost over the cheapest arm's among those at the
    tier's best common success, and `below_best` says its success falls short of that
    (None: no common task, not comparable)."""
    arm: str
    tasks: int
    cost: float | None
    success: float | None
    relative: float | None
    common_cost: float | None = None
    common_success: float | None = None
    below_best: bool = False


class Tier(ReportRecord):
    tier: str
    tasks_total: int
    arms: list[TierArm]
    common: int = 0  # the tier's tasks every arm with samples in it ran


class ComponentRow(ReportRecord, kw_only=True):
    """An arm's mean tokens per trial of each component, weighted, and its share (all
    None without samples, and no total)."""
    arm: str
    tokens: dict[str, float] | None
    weighted: dict[str, float] | None
    total: float | None = None
    shares: dict[str, float] | None


class AnatomyRow(ReportRecord):
    """Where an arm's tokens go (benchkit.report.anatomy)."""
    arm: str
    kind: str  # measured | replay
    tasks: int
    trials: int
    estimated: bool
    parts: dict[str, float]
    total: float
    shares: dict[str, float]
    ambient_tokens: float
    requests: float
    tool_results: float
    tool_result_bytes: float | None
    search_calls: float = 0.0  # tool searches per trial (an arm behind the runtime's tool search)


class BonusArm(ReportRecord, kw_only=True):
    """An arm on a bonus operation (benchkit.report.bonus): `status` is measured,
    replayed (estimates), or why the cell has no figures (not applicable,
    unsupported, not run: no scoring spec, no sample yet); where it ran, the figures
    the headline gives an arm, over this operation (intervals on measured ones)."""
    arm: str
    applicability: str | None  # the task's: first-class | applicable | not-applicable
    status: str
    why: str | None  # why no trial of the cell can run, as the run says it
    estimated: bool = False
    samples: int = 0
    passes: int = 0
    success: Figure | None = None
    cost: Figure | None = None
    turns: Figure | None = None
    duration: Figure | None = None


class Bonus(ReportRecord):
    task: str
    only_when: dict[str, Any]
    arms: list[BonusArm]


class Estimates(ReportRecord):
    """The replay's samples in the measured figures' layout: every figure an estimate;
    `common` compares the arms on the tasks all of them replayed, when they differ."""
    headline: list[ArmRow]
    tiers: list[Tier]
    components: list[ComponentRow]
    estimated: bool
    common: Common | None = None


class ExclusionRow(ReportRecord):
    arm: str
    invalid: int
    unaudited: int
    harness_error: int
    classes: dict[str, int]  # "reason: failure class" -> samples


class OtherVersion(ReportRecord):
    arm: str
    task: str
    changed: list[str]
    estimated: bool
    samples: int
    valid: int
    success: float | None
    cost: float | None


class VersionFigures(ReportRecord):
    """The newest and an older version of one arm's tool on the tasks both ran: mean
    cost-equivalent tokens, the ratio newest / older with its simultaneous interval,
    success, and the measured samples each counted."""
    cost_newest: float | None
    cost_older: float | None
    ratio: Figure
    success_newest: float | None
    success_older: float | None
    success_difference: float | None  # newest minus older
    samples_newest: int
    samples_older: int


class VersionComparison(ReportRecord):
    """An arm's newest tool version against an older one (benchkit.report.versions):
    `verdict` is the newest's, cheaper | equivalent | costlier | inconclusive."""
    arm: str
    versions: list[str]  # [newest, older]
    tasks: list[str]     # the scored tasks both ran
    figures: VersionFigures
    verdict: str
    says: str
    method: str
    estimated: bool = False  # replay samples of both: estimates of the references' bytes
    commands: list[CommandChange] = msgspec.field(default_factory=list)  # by command


class ModelRow(ReportRecord):
    """One model's figures on an arm, over the tasks every compared model ran."""
    model: str
    tasks: int
    samples: int
    cost: Figure
    success: Figure
    pass_k: Figure
    turns: Figure
    duration: Figure


class ModelComparison(ReportRecord):
    """An arm's models compared (benchkit.report.models_compared): rows cheapest first
    on `tasks`, the scored tasks all of them ran; `ran`, the scored tasks each ran; the
    verdicts of every pair (a and b: models); `estimated`, on the replay's estimates."""
    arm: str
    estimated: bool
    tasks: list[str]
    ran: dict[str, int]
    rows: list[ModelRow]
    apart: list[str]  # models with samples that share no task with the rest
    verdicts: list[PairVerdict]
    method: str


class NotReproducible(ReportRecord):
    """A failed trial whose own calls passed on a fresh repository."""
    trial: Any
    arm: Any
    task: Any
    outcome: Any
    differences: Any


class FailedTrial(ReportRecord):
    """A counted trial that did not pass: measured, or replayed (`estimated`)."""
    trial: str        # the sample's id
    arm: str
    task: str
    number: int       # its trial number within the cell
    outcome: str
    failure_class: str | None
    estimated: bool
    page: str         # its drill-down page, relative to the reports


class Ambient(ReportRecord):
    """An arm's ambient size (benchkit.surface): bytes and estimated tokens per part
    (skill, schemas, bootstrap) and in all ("total")."""
    bytes: dict[str, int]
    tokens_estimated: dict[str, int]
    bytes_per_token: int


class SampleTotals(ReportRecord):
    samples: int
    files: int
    measured: int
    replay: int
    invalid: int
    unaudited: int
    harness_error: int
    other_versions: int
    unconfined: int
    unreadable: int
    gateway_only: int = 0  # samples whose agent only the gateway kept from the account
    leaks_counted: int = 0  # of the invalid, the agent's own leaks: failures of their arm


class Report(ReportRecord):
    """The report of a store against the current tree (benchkit.report.aggregate)."""
    version: int
    model: str
    weights: dict[str, float]
    reweighted: dict[str, float]  # report --weight, over suite.yaml's
    floor: int
    pass_k: int
    level: float
    arms: list[str]
    tool_versions: dict[str, str | None]
    runtimes: dict[str, str]  # arm -> the agent runtime of its counted samples
    ambient_size: dict[str, Ambient]  # arms whose current tool recorded one
    totals: SampleTotals
    headline: list[ArmRow]
    common: Common | None
    verdicts: Verdicts | None
    comparison: ReferenceComparison | None
    statistics: StatisticsNote
    durations: Durations
    tiers: list[Tier]
    components: list[ComponentRow]
    anatomy: list[AnatomyRow]
    bonus: list[Bonus]
    coverage: Coverage
    cells: list[CellRow]
    replay: list[ArmRow]
    estimates: Estimates | None
    tasks: TaskTables
    exclusions: list[ExclusionRow]
    other_versions: list[OtherVersion]
    version_comparisons: list[VersionComparison]
    problems: list[str]
    not_reproducible: list[NotReproducible]
    failures: list[FailedTrial]
    notes: list[str]  # benchkit.report.notes, read off the rest
    # The models the store holds samples of (samples each), and each arm's compared.
    models: dict[str, int] = {}
    model_comparisons: list[ModelComparison] = []
    commands: list[CommandTable] = msgspec.field(default_factory=list)  # report.calls
