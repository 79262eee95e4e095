"""`benchkit run ... --shard I/N`: one deterministic part of a sweep, for one of N
machines (docs/scale-out.md).

    shard = parse_shard("1/3")            # (1, 3): the second of three, counted from 0
    owned(shard, arm_ids, task_ids)       # the cells (arm, task) that shard runs

The chosen cells, every arm given by every task chosen (before any is left out as not
runnable here, so that a host's answers cannot move a cell), are put in the order of
their ids, and shard I takes every Nth from the Ith: the same command on any machine
gives the same split, no two shards share a cell and together they cover every one,
each shard within one cell of the others in size. A shard's samples say which it was
(`"shard": "I/N"`), so `benchkit merge` can tell two trials of one number apart.
"""

from __future__ import annotations

Shard = tuple[int, int]  # (index, count): 0 <= index < count


def parse_shard(text: str) -> Shard | None:
    """`I/N` as (I, N), None when it is not one: two whole numbers, 0 <= I < N."""
    index, slash, count = text.partition("/")
    if not (slash and index.isdigit() and count.isdigit()):
        return None
    shard = (int(index), int(count))
    return shard if shard[0] < shard[1] else None


def label(shard: Shard | None) -> str | None:
    """How a sample and a line name a shard: `I/N`."""
    return None if shard is None else f"{shard[0]}/{shard[1]}"


def owned(shard: Shard | None, arm_ids: list[str],
          task_ids: list[str]) -> frozenset[tuple[str, str]]:
    """The cells (arm id, task id) of these arms and tasks that the shard runs (every
    one without a shard)."""
    cells = sorted({(arm, task) for arm in arm_ids for task in task_ids})
    if shard is None:
        return frozenset(cells)
    index, count = shard
    return frozenset(cells[index::count])
