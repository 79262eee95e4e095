"""A cell's counting samples as tallies: the summary's Blocks of one (arm, task), with
their trial rows and component tokens built once, column-wise, when first asked for;
and the store's groups each in its one place (benchkit.counting) as tallies. The
headline, the views and the aggregation all read them."""

from __future__ import annotations

from collections import Counter, defaultdict

import numpy as np

from benchkit import counting
from benchkit.report.columns import Block


class Tally:
    """One cell's counting samples, as the summary's Blocks; their trial rows
    (stats.CellStats) and component tokens are built once, column-wise, when first
    asked for."""

    def __init__(self, weights: tuple):
        self.weights = weights
        self.blocks: list[Block] = []
        self.count = 0
        self._built: tuple[np.ndarray, np.ndarray] | None = None

    def extend(self, blocks: list[Block]) -> None:
        self.blocks.extend(blocks)
        self.count += sum(block.count for block in blocks)
        self._built = None

    def __len__(self) -> int:
        return self.count

    @property
    def rows(self) -> np.ndarray:
        """(n, rows.WIDTH): each trial's row (benchkit.statistics.rows.TrialRow)."""
        return self._build()[0]

    @property
    def tokens(self) -> np.ndarray:
        """(n, 5): tokens per trial in COMPONENTS order."""
        return self._build()[1]

    @property
    def anatomy(self) -> np.ndarray:
        """(m, Block.ANATOMY): the cost anatomy of each trial that has one
        (columns.ANATOMY_COLUMNS)."""
        return _stacked([b.anatomy for b in self.blocks], Block.ANATOMY)

    def commands(self) -> tuple[dict[str, np.ndarray], int]:
        """(command -> its columns.COMMAND_COLUMNS summed over the cell's trials that
        have an anatomy, how many trials have one)."""
        sums: dict[str, np.ndarray] = {}
        for block in self.blocks:
            for command, row in block.commands.items():
                sums[command] = sums.get(command, 0) + np.asarray(row)
        anatomy = self.anatomy
        return sums, int(anatomy[:, 0].sum()) if len(anatomy) else 0

    def _build(self) -> tuple[np.ndarray, np.ndarray]:
        if self._built is not None:
            return self._built
        usage = _stacked([b.usage for b in self.blocks], Block.USAGE)
        tokens = usage.copy()
        tokens[:, 1] -= usage[:, 2]  # a write not split by lifetime counts as 5-minute
        recorded = _stacked([b.other for b in self.blocks], Block.OTHER)
        cost, raw = tokens @ np.array(self.weights, dtype=float), usage[:, [0, 1, 3, 4]].sum(axis=1)
        rows = np.column_stack([cost, raw, recorded])  # FROM_USAGE, then AS_RECORDED
        self._built = (rows, tokens)
        return self._built


def _stacked(parts: list[bytes], width: int) -> np.ndarray:
    """(n, width), row-major, of blocks stored column after column."""
    if not parts:
        return np.empty((0, width))
    columns = [np.frombuffer(part).reshape(width, -1) for part in parts]
    return np.ascontiguousarray(np.concatenate(columns, axis=1).T)


class Placed:
    """The store's groups, each in its one place (benchkit.counting), as tallies."""

    def __init__(self, placed: counting.Sorted[Block], weights: tuple):
        def tally(blocks: list[Block]) -> Tally:
            result = Tally(weights)
            result.extend(blocks)
            return result

        def tallies(cells: dict) -> defaultdict:
            result: defaultdict = defaultdict(lambda: Tally(weights))
            result.update((cell, tally(blocks)) for cell, blocks in cells.items())
            return result
        self.measured = tallies(placed.measured)  # (arm, task) -> Tally
        self.replay = tallies(placed.replay)
        self.excluded = placed.excluded  # (arm, task) -> Counter
        # (arm, task, changes, estimated) -> (Tally of the valid ones, count)
        self.other: dict[tuple, tuple[Tally, int]] = {
            key: (tally(valid), count[0]) for key, (valid, count) in placed.other.items()}
        self.jobs: Counter = Counter()
        for blocks in placed.measured.values():
            for block in blocks:
                self.jobs[block.jobs] += block.count
        self.tools = placed.tools  # arm -> its current tool (version, surface)
