"""A run's intent, kept in its store until the run has done what it planned, so that
the same command after a stop (Ctrl-C, SIGTERM, a halt, a crash) resumes it.

    intent = Intent.load(store_dir, intent_key(settings, arms, tasks, model, host))
    intent.done[(arm, task)]     trials this command already finished, per cell
    intent.spent                 the cost-equivalent tokens they spent
    intent.note(sample, cost)    a trial finished (its sample stored)
    intent.finish()              the run did what it planned: the next run is a new one

`--until N` and `--until-decided` aim at a state of the store and resume by themselves;
`--trials N` adds N trials to each cell, so a stopped run's command run again would add
N more where some already ran. The intent says what the command already did: its file,
`<store>/.intents/<key>.intent`, is keyed by what decides the plan (the arms and tasks
chosen, the host, the driver, model, --trials, --until, --until-decided, --budget,
--baseline, --against-version, --shard; not --jobs), and lists each trial it finished
(its sample id, cell and cost). The same command then plans, per cell, only the trials still
missing, and spends only what is left of --budget. A command that ran to its end removes
its intent: run again, it adds N more, as before.
"""

from __future__ import annotations

import contextlib
import json
import os
from collections import Counter
from datetime import UTC, datetime
from pathlib import Path

from benchkit.fingerprint import fingerprint
from benchkit.planning.settings import RunSettings
from benchkit.store import writing

DIRECTORY = ".intents"  # under the store directory
SUFFIX = ".intent"  # JSON lines, never taken for a cell's samples (`*.jsonl`)


def intent_key(settings: RunSettings, arms: list[str], tasks: list[str], model: str,
               host: str) -> str:
    """What decides a run's plan, as a digest: the same command gives the same key.
    `host`: its URL, or the kind of throwaway host the run starts (a new port each
    time): the same trials on another host are another command's."""
    return fingerprint({"host": host,
        "arms": sorted(arms), "tasks": sorted(tasks), "driver": settings.driver,
        "model": model, "trials": settings.trials, "until": settings.until,
        "until_decided": settings.until_decided, "budget": settings.budget,
        "baseline": settings.baseline, "against_version": settings.against_version,
        "shard": settings.shard, "confine": settings.confine})


class Intent:
    """One command's intent in a store: what it already finished (read when it was
    loaded), and its file, written as trials finish."""

    def __init__(self, path: Path):
        self.path = path
        self.done: Counter[tuple[str, str]] = Counter()
        self.spent = 0.0
        self.since: str | None = None  # when the stopped run began: None, a new intent
        self._ragged = False  # a crash cut its last line short

    @classmethod
    def load(cls, store_dir: str | os.PathLike, key: str) -> Intent:
        intent = cls(Path(store_dir) / DIRECTORY / f"{key}{SUFFIX}")
        try:
            data = intent.path.read_bytes()
        except OSError:
            return intent
        intent._ragged, seen = not data.endswith(b"\n") and bool(data), set()
        for line in data.split(b"\n"):
            with contextlib.suppress(ValueError, KeyError, TypeError):  # a torn last line
                entry = json.loads(line)
                if "since" in entry:
                    intent.since = str(entry["since"])
                elif entry["sample"] not in seen:
                    seen.add(entry["sample"])
                    intent.done[(entry["arm"], entry["task"])] += 1
                    intent.spent += float(entry["cost"])
        return intent

    @property
    def resumed(self) -> bool:
        """Whether this command was stopped before, with trials done, and goes on now."""
        return bool(self.done)

    def note(self, sample_id: str, arm: str, task: str, cost: float) -> None:
        """A trial of this command finished: its sample is stored. (`done` and `spent`
        stay what the plan was made from.)"""
        lines: list[dict] = []
        if self.since is None:
            self.since = datetime.now(UTC).isoformat(timespec="seconds")
            lines.append({"since": self.since})
        lines.append({"sample": sample_id, "arm": arm, "task": task, "cost": cost})
        text = "\n" * self._ragged + "".join(json.dumps(line) + "\n" for line in lines)
        self._ragged = False  # never glued onto a line a crash left unfinished
        with writing(self.path):
            self.path.parent.mkdir(parents=True, exist_ok=True)
            with open(self.path, "a", encoding="utf-8") as f:
                f.write(text)

    def finish(self) -> None:
        """The command did what it planned: its intent goes (the directory with it when
        no other is left)."""
        self.path.unlink(missing_ok=True)
        with contextlib.suppress(OSError):
            self.path.parent.rmdir()
