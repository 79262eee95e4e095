"""The matrix a report is measured against: the current arms and tasks, the
fingerprints a sample must carry to count, and the suite's report settings.

Plain data, so aggregation is testable on synthetic stores; `matrix_from_tree` wires
it to the declarative tree. A fingerprint of None accepts any sample's. The prompt's
fingerprint is not here: the runner takes it of the assembled prompt (skill and
bootstrap included), which only a run knows, so each cell's current prompt is the one
its newest sample ran with (aggregate.current_prompts).
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace

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
    fingerprint: str | None = None
    seed_fingerprint: str | None = None


@dataclass(frozen=True)
class ArmEntry:
    id: str
    fingerprint: str | None = None


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
        return replace(self, weights={**self.weights, **overrides})


def matrix_from_tree(tree, *, model: str | None = None) -> Matrix:
    """The current matrix of a loaded tree (benchkit.spec.load_tree).

    Task, arm and seed fingerprints are their documents'; the model's is that of its
    name: what the runner stamps on every sample (benchkit.run.cell).
    """
    suite = tree.suite
    model = model or suite.model
    tasks = tuple(
        TaskEntry(id=t.id, tier=t.tier, scored=t.scored, applicability=dict(t.applicability),
                  only_when=dict(t.only_when), fingerprint=t.fingerprint,
                  seed_fingerprint=tree.seeds[t.seed].fingerprint)
        for t in tree.tasks.values())
    arms = tuple(ArmEntry(id=a.id, fingerprint=a.fingerprint) for a in tree.arms.values())
    return Matrix(arms=arms, tasks=tasks, model=model, model_fingerprint=fingerprint(model),
                  floor=suite.floor, margin=suite.equivalence_margin,
                  weights={**DEFAULT_WEIGHTS, **suite.weights})
