"""What `benchkit run`'s options ask of a run, as one typed record.

The command line reads the options, resolves `--until floor` and `--until trials` against the suite and
checks that they go together; every part of the run stage (the dry run's plan, the
--until-decided rounds, the invocation) then reads this record, not the options.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Protocol

import msgspec

from benchkit.agent.model_probe import Resolution


class RunSettings(msgspec.Struct, frozen=True, kw_only=True):
    driver: str                      # "claude" spends tokens; "replay" plays refs.d/
    store_dir: str                   # results/<arm>/<task>.jsonl
    trials: int | None = None        # --trials: add N samples to each chosen cell
    until: int | None = None         # --until: top each cell up to N valid samples
    budget: float | None = None      # cost-equivalent tokens to spend at most
    model: str | None = None         # None: the suite's
    jobs: int = 1                    # trials at once, each on its own repository
    confine: bool = True             # the agent's shell in the OS sandbox
    until_decided: bool = False      # rounds until the headline comparison is decided
    baseline: str | None = None      # with until_decided: compare each arm with this one
    against_version: str | None = None  # with until_decided: the arm's build against this version
    replay_failures: bool = True     # replay failed trials' calls at the end
    # What the runtime runs for the model (pre-flight asks it: benchkit.agent.model_probe).
    resolved: Resolution | None = None
    shard: tuple[int, int] | None = None  # --shard I/N: the cells of part I of N (planning/shard.py)

    def run_model(self, suite_model: str) -> str:
        """The model every arm runs: what the runtime resolved --model (else the suite's)
        to, once pre-flight asked it; the name as given before."""
        return self.resolved.model if self.resolved is not None else self.model or suite_model

    @property
    def reported_model(self) -> str | None:
        """The model whose samples the run's report counts (None: the suite's)."""
        return self.resolved.model if self.resolved is not None else self.model


class Renderer(Protocol):
    """Renders a store's report for the run's model and returns the paths written. The
    command line hands it down (click's `ctx.obj`): the run stage does not import the
    report."""

    def __call__(self, store_dir: str | Path, reports_dir: str | Path, *,
                 model: str | None = None) -> list[Path]: ...


@dataclass(frozen=True)
class ReportTarget:
    """The report a run renders at the end (a run with --no-report has none)."""
    reports_dir: str
    render: Renderer | None  # None: the command ran without the command line's renderer
