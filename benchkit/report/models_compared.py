"""The models compared as the arms are: per arm, each model the store holds samples of
(or each given with `report --model`, repeatable), its figures on the scored tasks all
of them ran, and each pair's verdict on the tasks both ran, by the verdicts' own
statistics (benchkit.statistics.verdicts), every pair of models one family per arm.

Each model's samples are placed by the rule the headline's are (benchkit.counting),
with its model in the headline model's place, and, so that only the model differs,
the headline model's tool, runtime and prompt per cell: a model's samples of another
tool version or prompt are set apart here as they are from the headline. A sample
records what the runtime ran (benchkit.agent.model_probe), so an alias's samples are
its full id's. Measured samples and the replay's estimates are compared apart, the
estimates labelled so.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import replace

from benchkit import counting
from benchkit.report.headline import Cells, arm_row, by_cost, ranked_arms
from benchkit.report.matrix import Matrix
from benchkit.report.model import ModelComparison, ModelRow
from benchkit.report.tally import Placed
from benchkit.sample import COMPONENTS
from benchkit.statistics.verdicts import Family, family, verdicts

KINDS = (("measured", False), ("replay-estimate", True))


def held(groups: Mapping[tuple, counting.Group]) -> dict[str, int]:
    """model -> the store's samples of it (every version and outcome), most first."""
    counts: dict[str, int] = {}
    for key, group in groups.items():
        if key[10]:
            counts[key[10]] = counts.get(key[10], 0) + group.count
    return dict(sorted(counts.items(), key=lambda item: (-item[1], item[0])))


def check_held(groups: Mapping[tuple, counting.Group], models: tuple[str, ...]) -> None:
    """Raise ValueError naming a model asked for that the store holds no sample of,
    and the models it holds."""
    found = held(groups)
    for model in models:
        if model not in found:
            holds = ", ".join(f"{name} ({count} sample{'s' if count != 1 else ''})"
                              for name, count in found.items()) or "no samples at all"
            raise ValueError(f"--model {model}: the store holds no samples of it; it holds "
                             f"{holds}")


def model_view(groups: Mapping[tuple, counting.Group], current: counting.Current,
               matrix: Matrix, *, models: tuple[str, ...] = (),
               level: float) -> list[ModelComparison]:
    """Per arm and kind with samples of two models or more: the models compared.
    `current`: the headline's (its model the report's); `models`: the ones to compare
    (none given: every model the store holds), the report's own first."""
    prints = {key[10]: key[2].model for key in groups if key[10]}
    chosen = list(dict.fromkeys([matrix.model, *(models or held(groups))]))
    if models:
        chosen = [m for m in chosen if m in models]
    chosen = [m for m in chosen if m in prints]
    if len(chosen) < 2:
        return []
    headline = counting.place_groups(groups, current)
    weights = tuple(matrix.weights[c] for c in COMPONENTS)
    placed = {model: Placed(counting.place_groups(groups, replace(
        current, model=prints[model], tools=headline.tools, prompts=headline.prompts)), weights)
        for model in chosen}
    scored = [t.id for t in matrix.scored_tasks]
    view = []
    for arm in (a.id for a in matrix.arms):
        for kind, estimated in KINDS:
            cells = {model: Cells(found.replay if estimated else found.measured, matrix.k,
                                  f"{kind}:{model}").of_arm(arm, scored)
                     for model, found in placed.items()}
            compared = _compared(arm, cells, scored, matrix, level, estimated)
            if compared is not None:
                view.append(compared)
    return view


def _compared(arm: str, cells: dict, scored: list[str], matrix: Matrix, level: float,
              estimated: bool) -> ModelComparison | None:
    """One arm's models: their figures on the tasks all of them ran, each pair's verdict
    on the tasks both ran, as the arms' (None: fewer than two models ran any)."""
    ran = {model: set(c) for model, c in cells.items() if c}
    if len(ran) < 2:
        return None
    ranked, apart = ranked_arms(ran)
    shared = [t for t in scored if all(t in ran[model] for model in ranked)]
    on_shared = {model: {t: cells[model][t] for t in shared} for model in ranked}
    rows = by_cost([arm_row(model, on_shared[model], tasks_total=len(shared),
                            floor=matrix.floor, level=None if estimated else level,
                            estimated=estimated) for model in ranked])
    fam = family([r.arm for r in rows], alpha=1 - level, margin=matrix.margin)
    return ModelComparison(
        arm=arm, estimated=estimated, tasks=shared,
        ran={model: len(tasks) for model, tasks in ran.items()},
        rows=[ModelRow(model=r.arm, tasks=r.tasks, samples=r.samples, cost=r.cost,
                       success=r.success, pass_k=r.pass_k, turns=r.turns,
                       duration=r.duration) for r in rows],
        apart=apart, verdicts=verdicts({model: cells[model] for model in ranked}, fam),
        method=_method(fam, estimated))


def _method(fam: Family, estimated: bool) -> str:
    on = (" On the replay's estimates from bytes, not a model's spending: they compare "
          "what the runtime sent for each model, not what a model chose to do."
          if estimated else "")
    return (f"{1 - fam.alpha:.0%} per arm, every pair of models ({len(fam.pairs)} "
            f"pair{'s' if len(fam.pairs) != 1 else ''}, Bonferroni), by the verdicts' "
            "confidence sequences on the log ratio of mean cost-equivalent tokens over the "
            f"tasks both models ran, valid at every sample size; equivalent means within "
            f"±{fam.margin:.0%}.{on}")
