"""The run's ledger: which stored samples count toward each cell (the report's own rule,
benchkit.counting, so `--until` tops up exactly what the report shows below the floor),
and what a trial of each cell is expected to cost (for `--budget` and `--dry-run`).
"""

from __future__ import annotations

from collections import Counter

import msgspec

from benchkit import counting
from benchkit.cost import usage_cost
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


class Ledger:
    """Counting samples per cell (the report's rule, for this run's driver kind: replay
    samples count toward replay runs, measured ones toward the rest) and past costs per
    cell and per arm (valid samples of the same driver, any version) for the expected
    cost of a trial. `runtime`: the agent runtime this run's samples will name (the
    drivers'), part of each arm's current tool."""

    def __init__(self, cells: list[tuple[Arm, Task]], seeds: dict[str, Seed], suite: Suite, *,
                 driver: str, model: str, runtime: Runtime | None = None):
        self.weights, self.default = suite.weights, float(suite.default_cell_tokens)
        self.driver, self.estimated = driver, driver == "replay"
        self.cells = [(arm.id, task.id) for arm, task in cells]
        self.current = counting.Current(
            arms={arm.id: arm.fingerprint for arm, _ in cells},
            tasks={task.id: (task.fingerprint, seeds[task.seed].fingerprint) for _, task in cells},
            model=fingerprint(model),
            tools={arm.id: (arm.tool_version, arm.tool_surface, runtime) for arm, _ in cells
                   if arm.tool_version is not None})
        self.groups: dict[tuple, counting.Group[Sample]] = {}  # counting.group_samples
        self.samples = 0
        self._placed: counting.Sorted[Sample] = counting.Sorted()
        self.valid: Counter = Counter()   # (arm, task) -> counting samples
        self.cell_cost: dict = {}         # (arm, task) -> [sum, count]
        self.arm_cost: dict = {}          # arm -> [sum, count]
        self._next: Counter = Counter()   # (arm, task, estimated) -> its next trial's number
        self.problems: list[str] = []     # lines that are not samples, FILE:LINE: why

    def load(self, store: Store) -> Ledger:
        leaked = counting.replay_leaks(store)
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
        key = (sample.arm, sample.task, sample.estimated)
        self._next[key] = max(self._next[key], sample.trial + 1)
        counting.add_sample(self.groups, sample, self.samples)
        self.samples += 1
        if sample.driver == self.driver and sample.valid:
            cost = self.cost(sample)
            for table, at in ((self.cell_cost, (sample.arm, sample.task)),
                              (self.arm_cost, sample.arm)):
                total = table.setdefault(at, [0.0, 0])
                total[0] += cost
                total[1] += 1

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
        for table, at, basis in ((self.cell_cost, (arm_id, task_id), "this cell's mean"),
                                 (self.arm_cost, arm_id, "this arm's mean")):
            total, count = table.get(at, (0.0, 0))
            if count:
                return total / count, basis
        return self.default, "suite default"
