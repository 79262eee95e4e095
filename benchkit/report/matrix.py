"""The matrix a report is measured against: the current arms and tasks, the
fingerprints a sample must carry to count, and the suite's report settings.

Plain data, so aggregation is testable on synthetic stores; `matrix_from_tree` wires
it to the declarative tree, and `tree_matrix` keeps it between runs (under the cache
directory, keyed on the tree's documents, benchkit's code and the document loaders' libraries).
A fingerprint of None accepts any sample's. The prompt's
fingerprint is not here: the runner takes it of the assembled prompt (skill and
bootstrap included), which only a run knows, so each cell's current prompt is the one
its newest sample ran with (aggregate.current_prompts).
"""

from __future__ import annotations

import contextlib
import hashlib
import sys
from dataclasses import dataclass, field, replace
from pathlib import Path

import msgspec

from benchkit import cache_dir, find_tree
from benchkit.cache import keep, tree_stamp
from benchkit.fingerprint import fingerprint
from benchkit.sample import COMPONENTS

DEFAULT_WEIGHTS = {"input": 1.0, "cache_write_5m": 1.25, "cache_write_1h": 2.0,
                   "cache_read": 0.1, "output": 5.0}


@dataclass(frozen=True)
class TaskEntry:
    id: str
    tier: str
    scored: bool = True
    applicability: dict = field(default_factory=dict)  # bonus: arm id -> first-class|applicable|not-applicable
    only_when: dict = field(default_factory=dict)
    cannot_run: dict = field(default_factory=dict)  # arm id -> why no trial of the cell can run
    intent: str = ""              # what the agent is asked, on a host that forbids self-review
    intent_self_review: str = ""  # ... and on one that permits it
    fingerprint: str | None = None
    seed_fingerprint: str | None = None


@dataclass(frozen=True)
class ArmEntry:
    id: str
    fingerprint: str | None = None
    unsupported: dict = field(default_factory=dict)  # task id -> why the arm's tool cannot (refs.d)
    references: dict = field(default_factory=dict)  # task id -> what a replay of it plays (refs.d)


@dataclass(frozen=True)
class Matrix:
    arms: tuple[ArmEntry, ...]
    tasks: tuple[TaskEntry, ...]
    model: str = ""
    model_fingerprint: str | None = None
    floor: int = 3
    weights: dict = field(default_factory=lambda: dict(DEFAULT_WEIGHTS))
    pass_k: int | None = None  # None: the floor
    margin: float = 0.05       # verdicts: equivalent within +-margin (suite.yaml)
    baseline: str | None = None  # verdicts: each arm against this one, else every pair
    reweighted_by: dict = field(default_factory=dict)  # report --weight: the overrides

    @property
    def k(self) -> int:
        return self.pass_k or self.floor

    @property
    def scored_tasks(self) -> list[TaskEntry]:
        return [t for t in self.tasks if t.scored]

    @property
    def bonus_tasks(self) -> list[TaskEntry]:
        return [t for t in self.tasks if not t.scored]

    def reweighted(self, overrides: dict) -> Matrix:
        unknown = sorted(set(overrides) - set(COMPONENTS))
        if unknown:
            raise ValueError(f"unknown token component {', '.join(unknown)} "
                             f"(known: {', '.join(COMPONENTS)})")
        return replace(self, weights={**self.weights, **overrides},
                       reweighted_by={**self.reweighted_by, **overrides})


def matrix_from_tree(tree, *, model: str | None = None) -> Matrix:
    """The current matrix of a loaded tree (benchkit.documents.load_tree).

    Task, arm and seed fingerprints are their documents'; the model's is that of its
    name: what the runner stamps on every sample (benchkit.trial.cell).
    """
    suite = tree.suite
    model = model or suite.model
    references = {a.id: _references(a, tree.root) for a in tree.arms.values()}
    unsupported = {arm: {task_id: " ".join(entry.unsupported.split())
                         for task_id, entry in entries.items() if entry.unsupported}
                   for arm, entries in references.items()}
    tasks = tuple(
        TaskEntry(id=t.id, tier=t.tier, scored=t.scored, applicability=dict(t.applicability),
                  only_when=dict(t.only_when), fingerprint=t.fingerprint,
                  seed_fingerprint=tree.seeds[t.seed].fingerprint,
                  intent=t.intent_for(False), intent_self_review=t.intent_for(True),
                  cannot_run={arm.id: why for arm in tree.arms.values()
                              if (why := _cannot_run(t, arm, unsupported))})
        for t in tree.tasks.values())
    arms = tuple(ArmEntry(id=a.id, fingerprint=a.fingerprint, unsupported=unsupported[a.id],
                          references={t: e.fingerprint for t, e in references[a.id].items()})
                 for a in tree.arms.values())
    return Matrix(arms=arms, tasks=tasks, model=model, model_fingerprint=fingerprint(model),
                  floor=suite.floor, margin=suite.equivalence_margin,
                  weights={**DEFAULT_WEIGHTS, **suite.weights})


def with_arms(matrix: Matrix, documents: list[Path]) -> Matrix:
    """The matrix with the arm documents a store kept from outside the tree
    (benchkit.store.Store.kept_arms) whose ids the tree does not define; a document
    that no longer loads is left out (its samples stay apart, "arm not in the tree")."""
    if not documents:
        return matrix
    # Imported here, measured: the document loaders' YAML and JSON-Schema stack (~0.1 s) that a
    # kept matrix otherwise spares a `benchkit report`; only a store with such arms pays.
    from benchkit.documents import DocumentError, load_arm
    known, added = {a.id for a in matrix.arms}, []
    for path in documents:
        try:
            arm = load_arm(path)
        except DocumentError:
            continue
        if arm.id not in known:
            known.add(arm.id)
            added.append(ArmEntry(id=arm.id, fingerprint=arm.fingerprint))
    if not added:
        return matrix
    tasks = tuple(replace(t, cannot_run={**t.cannot_run, **{a.id: why for a in added}})
                  if (why := _no_spec(t)) else t for t in matrix.tasks)
    return replace(matrix, arms=(*matrix.arms, *added), tasks=tasks)


def _no_spec(task: TaskEntry) -> str | None:
    """Why no arm can run the task whatever its tool, as the tree's arms have it."""
    return next((why for why in task.cannot_run.values() if why.startswith("no scoring spec")),
                None)


def _cannot_run(task, arm, unsupported: dict) -> str | None:
    """Why no trial of the cell can run, or pass on any host, as the run says it; None
    if one can. A scored task the arm's tool cannot do still runs (its failure is the
    arm's), so only a bonus operation is set aside as unsupported."""
    if task.applicability.get(arm.id) == "not-applicable":
        return None  # shown as n/a
    if not task.has_spec:
        return "no scoring spec: the checker cannot judge it"
    why = None if task.scored else unsupported[arm.id].get(task.id)
    return f"unsupported by the arm's tool ({why})" if why else None


def _references(arm, root) -> dict:
    """task id -> the arm's reference solution of it (none without a refs.d document):
    what its tool cannot do, and what a replay of it plays."""
    # Only with the tree loaded, as on a cache miss (measured: the document loaders' YAML and
    # JSON-Schema stack is ~0.1 s of a cold `benchkit report`; a kept matrix skips it).
    from benchkit.documents.reference import reference_for, reference_path
    if root is None or not reference_path(arm.id, root).is_file():
        return {}
    return dict(reference_for(arm, root).tasks)


# --- the matrix kept between runs ---------------------------------------------------

CACHE_FORMAT = 5


class Kept(msgspec.Struct):
    """A cache entry: plain JSON, so a foreign or corrupt file is a miss, never code."""
    key: str
    matrix: Matrix


def tree_matrix(root=None, *, model: str | None = None) -> Matrix:
    """matrix_from_tree(benchkit.documents.load_tree(root), model=model), from the cache when
    nothing it depends on has changed since it was kept: loading and validating the
    tree, with the imports that takes (YAML, JSON Schema), was a third of the parent's
    work in a `benchkit report`. A broken tree is never kept, so it raises DocumentError
    every time."""
    root = Path(root).resolve() if root is not None else find_tree()
    entry = _cache_entry(root, model) if root is not None else None
    if entry is not None:
        with contextlib.suppress(OSError, msgspec.DecodeError):
            kept = msgspec.json.decode(entry[0].read_bytes(), type=Kept)
            if kept.key == entry[1]:
                return kept.matrix
    # Imported on a miss only (measured: the document loaders' YAML and JSON-Schema stack, ~0.1 s
    # of a cold `benchkit report`).
    from benchkit.documents import load_tree
    matrix = matrix_from_tree(load_tree(root), model=model)
    if entry is not None and _cache_entry(root, model) == entry:  # not edited meanwhile
        keep(entry[0], msgspec.json.encode(Kept(entry[1], matrix)))
    return matrix


def tree_key(root=None, *, model: str | None = None) -> str | None:
    """What the matrix of the tree at root (default: find_tree()) is derived from, as
    the key tree_matrix keeps it under; None without a tree, or when it cannot be read."""
    root = Path(root).resolve() if root is not None else find_tree()
    entry = _cache_entry(root, model) if root is not None else None
    return entry[1] if entry is not None else None


def _cache_entry(root: Path, model: str | None) -> tuple[Path, str] | None:
    """Where the matrix of (root, model) is kept (one entry each, replaced when stale),
    and the key it must be kept under: the tree's documents, benchkit's code and the
    document loaders' libraries (benchkit.cache.tree_stamp). None, so no cache, when any of it
    cannot be read (a checkout or an upgrade under way)."""
    try:
        stamp = tree_stamp(root)
    except OSError:
        return None
    digest = hashlib.blake2b(repr((CACHE_FORMAT, sys.version, str(root), model)).encode() + stamp)
    name = hashlib.blake2b(repr((str(root), model)).encode(), digest_size=12).hexdigest()
    return cache_dir() / "matrix" / f"{name}.json", digest.hexdigest()
