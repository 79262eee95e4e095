"""The run's ledger: which stored samples count toward each cell (the report's own rule,
benchkit.counting, so `--until` tops up exactly what the report shows below the floor),
and what a trial of each cell is expected to cost and take (for `--budget` and
`--dry-run`): the mean of the store's own samples of the cell (the run's model, arm,
task and the arm's current tool version), else of the arm's, else the suite's
`default_cell_tokens`; each estimate names what it rests on.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping
from dataclasses import dataclass

import msgspec

from benchkit import counting
from benchkit.cost import components, usage_cost
from benchkit.documents.models import Arm, Seed, Suite
from benchkit.documents.task import Task
from benchkit.fingerprint import fingerprint
from benchkit.sample import Runtime, Sample, read_samples
from benchkit.store import Store


class _Numbered(msgspec.Struct):
    """The part of any stored line that names its cell and trial."""
    arm: str
    task: str
    trial: int = 0


_NUMBERED = msgspec.json.Decoder(_Numbered)
CELL, ARM, DEFAULT = "this cell's mean", "this arm's mean", "suite default"


@dataclass(frozen=True)
class Estimate:
    """What one more trial of a cell is expected to cost and take, and what says so."""
    tokens: float                 # cost-equivalent tokens
    basis: str                    # CELL, ARM or DEFAULT
    samples: int = 0              # the samples the mean is over
    tasks: int = 0                # ... of how many tasks (an arm's mean)
    usage: tuple | None = None    # mean tokens by component (COMPONENTS); None: the default
    seconds: float | None = None  # mean duration of those samples, else the arm's or store's
    model: str = ""
    tool_version: str | None = None

    @property
    def source(self) -> str:
        """The basis in words: "this cell's mean: 4 samples of claude-sonnet-4-5, tool
        0.9.1"."""
        if self.basis == DEFAULT:
            return "suite default (default_cell_tokens)"
        over = f" over {self.tasks} tasks" if self.basis == ARM and self.tasks > 1 else ""
        tool = (self.tool_version or "version unknown").split(" (")[0][:60]  # curl's is long
        return (f"{self.basis}: {self.samples} sample{'s' if self.samples != 1 else ''}"
                f"{over} of {self.model}, tool {tool}")


class _Sums:
    """Running sums of samples: count, cost, tokens by component, duration; tasks seen."""
    __slots__ = ("count", "cost", "tokens", "seconds", "tasks")

    def __init__(self) -> None:
        self.count, self.cost, self.seconds = 0, 0.0, 0.0
        self.tokens = [0.0] * 5
        self.tasks: set[str] = set()

    def add(self, sample: Sample, cost: float) -> None:
        usage = sample.usage
        self.count += 1
        self.cost += cost
        self.seconds += sample.duration_s
        self.tasks.add(sample.task)
        for i, count in enumerate(components(usage.input, usage.cache_write, usage.cache_write_1h,
                                             usage.cache_read, usage.output)):
            self.tokens[i] += count


class Ledger:
    """Counting samples per cell (the report's rule, for this run's driver kind: replay
    samples count toward replay runs, measured ones toward the rest) and past costs per
    cell and per arm (valid samples of the same driver, any version) for the expected
    cost of a trial. `runtime`: the agent runtime this run's samples will name (the
    drivers'), part of each arm's current tool. `references`: (arm, task) -> the
    reference a replay sample must have played (benchkit.counting.Current)."""

    def __init__(self, cells: list[tuple[Arm, Task]], seeds: dict[str, Seed], suite: Suite, *,
                 driver: str, model: str, runtime: Runtime | None = None,
                 references: Mapping[tuple[str, str], str] | None = None):
        self.weights, self.default = suite.weights, float(suite.default_cell_tokens)
        self.driver, self.estimated, self.model = driver, driver == "replay", model
        self.cells = [(arm.id, task.id) for arm, task in cells]
        self.current = counting.Current(
            arms={arm.id: arm.fingerprint for arm, _ in cells},
            tasks={task.id: (task.fingerprint, seeds[task.seed].fingerprint) for _, task in cells},
            model=fingerprint(model),
            tools={arm.id: (arm.tool_version, arm.tool_surface, runtime) for arm, _ in cells
                   if arm.tool_version is not None},
            references=references or {})
        self.groups: dict[tuple, counting.Group[Sample]] = {}  # counting.group_samples
        self.samples = 0
        self._placed: counting.Sorted[Sample] = counting.Sorted()
        self.valid: Counter = Counter()   # (arm, task) -> counting samples
        # Valid samples of this driver kind by (model, arm, tool version, task), and with
        # task None the arm's: what a trial's expected cost and time rest on.
        self.sums: dict[tuple, _Sums] = {}
        self.timed = _Sums()              # every such sample of the run's model: durations
        self._next: Counter = Counter()   # (arm, task, estimated) -> its next trial's number
        self.problems: list[str] = []     # lines that are not samples, FILE:LINE: why
        # (arm, task) -> trials a stopped run of this command already ran (planning/intent.py)
        self.resumed: Counter = Counter()

    def load(self, store: Store) -> Ledger:
        leaked = counting.replay_leaks(store.failure_replays())
        for arm_id in sorted({arm for arm, _ in self.cells}):
            for path in store.files(arm=arm_id):
                # A line that is not a sample (another version wrote it) counts for
                # nothing, but its trial number is still taken.
                samples, problems = read_samples(path)
                for sample in counting.overruled(samples, leaked):
                    self._book(sample)
                if problems:
                    self.problems += problems
                    self._take_numbers(path)
        self._recount()
        return self

    def add(self, sample: Sample) -> None:
        """A sample this run has just stored."""
        self._book(sample)
        self._recount()

    def number(self, arm_id: str, task_id: str) -> int:
        """The next trial's number within its cell and this run's kind (measured, or
        replay: the first measured trial of a replayed cell is trial 0), taken: one past
        the highest stored (any sample of the cell and kind, whatever its version) or
        handed out in this run, so trials are numbered within their cell across runs.
        Runs on one store take turns under its run lock, so two never hand out the
        same number."""
        key = (arm_id, task_id, self.estimated)
        self._next[key] += 1
        return self._next[key] - 1

    def _take_numbers(self, path) -> None:
        """Every line's trial number, read leniently: a line another version wrote keeps
        its number from being handed out again."""
        for line in path.read_bytes().split(b"\n"):
            try:
                seen = _NUMBERED.decode(line)
            except msgspec.DecodeError:
                continue
            for kind in (False, True):  # its kind unknown: neither reuses the number
                key = (seen.arm, seen.task, kind)
                self._next[key] = max(self._next[key], seen.trial + 1)

    def _book(self, sample: Sample) -> None:
        numbered = (sample.arm, sample.task, sample.estimated)
        self._next[numbered] = max(self._next[numbered], sample.trial + 1)
        counting.add_sample(self.groups, sample, self.samples)
        self.samples += 1
        if sample.driver == self.driver and sample.valid:
            cost = self.cost(sample)
            for task in (sample.task, None):
                self.sums.setdefault((sample.model, sample.arm, sample.tool_version, task),
                                     _Sums()).add(sample, cost)
            if sample.model == self.model:
                self.timed.add(sample, cost)

    def _recount(self) -> None:
        # A new sample can set older ones aside (a newer prompt): place every group
        # anew, which costs a pass over the groups, not over the samples.
        self._placed = counting.place_groups(self.groups, self.current)
        self.valid = Counter({cell: len(samples) for cell in self.cells
                              if (samples := self._counted(cell))})

    def _counted(self, cell: tuple[str, str]) -> list[Sample]:
        return self._placed.counting(cell, estimated=self.estimated)

    @property
    def costs(self) -> dict[tuple[str, str], list[float]]:
        """(arm, task) -> the costs of its counting samples (decide.py, once a round)."""
        return {cell: [self.cost(s) for s in samples] for cell in self.cells
                if (samples := self._counted(cell))}

    def cost(self, sample: Sample) -> float:
        return usage_cost(msgspec.structs.asdict(sample.usage), self.weights)

    def expected(self, arm_id: str, task_id: str) -> tuple[float, str]:
        """(expected cost-equivalent tokens of one trial, what the figure rests on)."""
        found = self.estimate(arm_id, task_id)
        return found.tokens, found.basis

    def tool_version(self, arm_id: str) -> str | None:
        """The arm's current tool version: pre-flight's, else its newest counted
        sample's (benchkit.counting), else unknown."""
        tool = self.current.tools.get(arm_id) or self._placed.tools.get(arm_id)
        return tool[0] if tool is not None else None

    def estimate(self, arm_id: str, task_id: str) -> Estimate:
        """One more trial of the cell: the mean of the store's samples of it (this run's
        model and driver kind, the arm's current tool version), else of the arm's, else
        the suite's default; its time from the same samples, else the store's."""
        version = self.tool_version(arm_id)
        store_seconds = self.timed.seconds / self.timed.count if self.timed.count else None
        for task, basis in ((task_id, CELL), (None, ARM)):
            sums = self.sums.get((self.model, arm_id, version, task))
            if sums is not None and sums.count:
                return Estimate(sums.cost / sums.count, basis, sums.count, len(sums.tasks),
                                tuple(t / sums.count for t in sums.tokens),
                                sums.seconds / sums.count, self.model, version)
        return Estimate(self.default, DEFAULT, seconds=store_seconds, model=self.model,
                        tool_version=version)
