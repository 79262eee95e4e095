"""Which samples count: the one rule the run loop's ledger (`--until`, `--until-decided`)
and the report share, so a cell the report shows below the floor is a cell `--until`
tops up.

Every sample lands in exactly one place:
- other versions: it ran with a task, arm, seed or model document other than the
  current tree's (a replay sample: or another reference of its cell), a tool (version
  and surface) or an agent runtime (the CLI's and the SDK's versions) other than its
  arm's current one, or a prompt other than the newest its cell was run with (set
  apart, reported apart, never counted);
- excluded: invalid, unaudited and harness-error samples (counted, never scored); a
  sample whose failure replay leaked (store's failure-replays.jsonl, verdict `leaked`)
  counts as invalid, class `replay-leak`, though the store keeps it as it was written;
- replay or measured: the rest, by whether its token figures are estimates; and a leak
  of the agent's own (invalid, class `leak` or `replay-leak`) besides its place among
  the excluded: it is flagged and listed there, and counted here as a failure of its
  arm, so that an agent cannot escape a failing trial by sending what the gateway
  refuses. A leak not of its doing (`leak-foreign`) is excluded alone.

The current tool of an arm, (its version, the digest of its surface: benchkit.surface,
the runtime that carried it: benchkit.sample.Runtime), is the one its pre-flight found
when the caller knows it (a run), else that of the arm's newest otherwise-current
sample that reached the agent (a report). A sample older than the runtime field has
none: an unknown runtime, apart from every named one.
The current prompt cannot be known without assembling the arm (a skill comes from the
installed tool), so it is always the newest: the store is append-only, and the newest
prompt is the last read.
"""

from __future__ import annotations

import operator
from collections import Counter, defaultdict
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Generic, TypeVar

import msgspec

from benchkit.fingerprint import arm_fingerprint
from benchkit.replays import FailureReplay
from benchkit.sample import EXCLUDED, LEAK, Fingerprints, Runtime, Sample
from benchkit.surface import AmbientSize

Cell = tuple[str, str]  # (arm id, task id)
# A failure replay's verdict that its calls leaked (benchkit.run.failures), and the
# failure class its trial counts with from then on.
REPLAY_LEAKED, REPLAY_LEAK = "leaked", "replay-leak"
CHARGED_LEAKS = (LEAK, REPLAY_LEAK)  # invalid, and failures of their arm all the same
Tool = tuple[str | None, str | None, Runtime | None]  # (tool version, surface digest, runtime)
# What decides where a sample lands (group_key): arm, task, fingerprints, estimated,
# outcome, valid, failure class, jobs, tool, ambient size, the model's name.
GroupKey = tuple[str, str, Fingerprints, bool, str, bool, str | None, int | None, Tool,
                 AmbientSize | None, str]


@dataclass(frozen=True)
class Current:
    """What the current tree expects of a sample; a fingerprint of None accepts any."""
    arms: Mapping[str, str | None]                     # arm id -> its document's
    tasks: Mapping[str, tuple[str | None, str | None]]  # task id -> (task's, seed's)
    model: str | None                                   # the model's fingerprint
    tools: Mapping[str, Tool] = field(default_factory=dict)  # arm -> known tool
    # (arm, task, estimated) -> the prompt that counts, where another placement decided
    # it (a model compared with the headline's: benchkit.report.models_compared)
    prompts: Mapping[tuple, str] = field(default_factory=dict)
    # (arm, task) -> the reference a replay sample must have played (refs.d: its
    # figures are that reference's bytes, so another's are another workload's)
    references: Mapping[Cell, str] = field(default_factory=dict)


M = TypeVar("M")  # what a group's members are: samples, or a caller's summary of them


@dataclass
class Sorted(Generic[M]):
    """The samples, each in its one place."""
    measured: dict[Cell, list[M]] = field(default_factory=lambda: defaultdict(list))
    replay: dict[Cell, list[M]] = field(default_factory=lambda: defaultdict(list))
    excluded: dict[Cell, Counter] = field(default_factory=lambda: defaultdict(Counter))
    # (arm, task, what changed, estimated) -> [valid scorable samples, all samples]
    other: dict[tuple, tuple[list[M], list[int]]] = field(default_factory=dict)
    tools: dict[str, Tool] = field(default_factory=dict)  # arm -> current tool
    prompts: dict[tuple, str] = field(default_factory=dict)  # (arm, task, estimated) -> current

    def counting(self, cell: Cell, *, estimated: bool) -> list[M]:
        """The samples that count toward the cell: replay ones or measured ones."""
        return (self.replay if estimated else self.measured).get(cell, [])


@dataclass
class Group(Generic[M]):
    """Samples that land in one place together (they share everything that decides
    it): the position of the last, the newest started_at, how many, and the members
    placed as a whole (the samples, or a caller's summary of them, e.g. one item)."""
    last: int
    newest: str
    count: int
    members: list[M]


def replay_leaks(replays: Mapping[str, FailureReplay]) -> frozenset[str]:
    """The trials whose failure replay leaked (of the store's failure replays,
    Store.failure_replays): their samples count as invalid."""
    return frozenset(trial for trial, entry in replays.items()
                     if entry.verdict == REPLAY_LEAKED)


def overruled(samples: list[Sample], leaked: frozenset[str]) -> list[Sample]:
    """The samples, each of a trial in `leaked` counted as invalid (class replay-leak)."""
    if not leaked:
        return samples
    return [msgspec.structs.replace(s, outcome="invalid", failure_class=REPLAY_LEAK, valid=False)
            if s.id in leaked else s for s in samples]


def group_samples(samples: Iterable[Sample]) -> dict[tuple, Group[Sample]]:
    """The samples by everything that decides where they land: (arm, task,
    fingerprints, estimated, outcome, valid, failure class, jobs, tool, ambient size,
    the model's name)."""
    return {key: Group(last, max(map(_STARTED, members)), len(members), members)
            for key, (last, members) in _group(samples).items()}


def add_sample(groups: dict[tuple, Group[Sample]], sample: Sample, position: int) -> None:
    """group_samples of one more sample, the store's next (at `position`), in place."""
    key = group_key(sample)
    group = groups.get(key)
    if group is None:
        groups[key] = Group(position, sample.started_at, 1, [sample])
        return
    group.last, group.newest = position, max(group.newest, sample.started_at)
    group.count += 1
    group.members.append(sample)


def group_key(s: Sample) -> GroupKey:
    return (s.arm, s.task, s.fingerprints, s.usage_estimated or s.driver == "replay",
            s.outcome, s.valid, s.failure_class, s.jobs, (s.tool_version, s.tool_surface, s.runtime),
            s.ambient_size, s.model)


def place_groups(groups: Mapping[tuple, Group[M]], current: Current) -> Sorted[M]:
    """Each group in its one place (see the module's docstring); a group's members
    are placed as they are, so the lists of the result hold the groups' members."""
    changes = {key: _version_changes(key, current) for key in groups}
    tools = _current_tools(groups, changes, current)
    changes = {key: changed or _tool_change(key[0], key[8], tools)
               for key, changed in changes.items()}
    prompts = {**_current_prompts(groups, changes), **current.prompts}
    result: Sorted[M] = Sorted(tools=tools, prompts=prompts)
    for key, group in groups.items():
        arm, task, prints, estimated, outcome, valid, failure_class = key[:7]
        cell, changed = (arm, task), changes[key]
        harness_error = outcome == "harness-error"
        if not changed and not harness_error and prints.prompt != prompts[(*cell, estimated)]:
            changed = ("prompt",)
        counts = (valid and outcome not in EXCLUDED) or charged_leak(outcome, failure_class)
        if changed:
            scorable, count = result.other.setdefault((*cell, changed, estimated), ([], [0]))
            count[0] += group.count
            if counts:
                scorable.extend(group.members)
            continue
        if outcome in EXCLUDED or not valid:
            reason = ("harness-error" if harness_error else
                      "unaudited" if outcome == "unaudited" else "invalid")
            result.excluded[cell][(reason, failure_class or "")] += group.count
        if counts:
            (result.replay if estimated else result.measured)[cell].extend(group.members)
    return result


def charged_leak(outcome: str, failure_class: str | None) -> bool:
    """Whether an invalid sample's leak was the agent's own doing: a failure of its arm."""
    return outcome == "invalid" and failure_class in CHARGED_LEAKS


# The fields group_key reads, fetched in one call (C, not a Python function a sample):
# samples equal in these have one group key, computed once per distinct tuple.
_KEYED = operator.attrgetter(
    "arm", "task", "fingerprints", "usage_estimated", "driver", "outcome", "valid",
    "failure_class", "jobs", "tool_version", "tool_surface", "runtime", "ambient_size", "model")
_STARTED = operator.attrgetter("started_at")


def _group(samples: Iterable[Sample]) -> dict:
    """Samples by the key of group_samples -> [position of the last, samples]. One
    pass, a dictionary look-up a sample: what a 100,000-sample store can afford."""
    groups: dict = {}
    by_fields: dict = {}  # _KEYED's tuple -> its group (several tuples may share one)
    samples = list(samples)
    for position, (fields, s) in enumerate(zip(map(_KEYED, samples), samples)):
        group = by_fields.get(fields)
        if group is None:
            key = group_key(s)
            group = groups.get(key)
            if group is None:
                groups[key] = group = [position, []]
            by_fields[fields] = group
        group[0] = position
        group[1].append(s)
    return groups


def _version_changes(key: tuple, current: Current) -> tuple[str, ...]:
    """What of the current tree a group's samples did not run with (their task, arm,
    seed or model, a replay's reference; the arm's fingerprint takes their tool version
    in); empty when current. The tool version itself is judged per arm, the prompt per
    cell."""
    arm, task_id, found, (tool_version, surface, _) = key[0], key[1], key[2], key[8]
    if arm not in current.arms or task_id not in current.tasks:
        return tuple(f"{kind} not in the tree" for kind, known in
                     (("arm", arm in current.arms), ("task", task_id in current.tasks))
                     if not known)
    document = current.arms[arm]
    task, seed = current.tasks[task_id]
    expected = {"task": task, "seed": seed, "model": current.model,
                "arm": None if document is None else arm_fingerprint(document, tool_version, surface),
                "reference": current.references.get((arm, task_id))
                if key[3] and found.reference is not None else None}
    named = {"model": f"model {key[10]}" if key[10] else "model"}  # older: no name
    return tuple(named.get(name, name) for name, value in expected.items()
                 if value is not None and getattr(found, name) != value)


def _current_tools(groups: Mapping[tuple, Group], changes: dict,
                   current: Current) -> dict[str, Tool]:
    """arm -> its current tool (version, surface): the known one, else that of its newest
    otherwise-current sample that reached the agent (a run the host failed says nothing
    of the tool, and must not set an arm's measured samples aside). Two versions of a
    tool are never counted together."""
    newest: dict = {}
    for key, group in groups.items():
        if not changes[key] and key[0] not in current.tools and key[4] != "harness-error":
            order = (group.newest, group.last)
            if key[0] not in newest or order > newest[key[0]][0]:
                newest[key[0]] = (order, key[8])
    return {**{arm: version for arm, (_, version) in newest.items()}, **current.tools}


def _tool_change(arm: str, tool: Tool, tools: dict) -> tuple[str, ...]:
    """("tool VERSION",) for samples of a tool version other than their arm's current,
    ("tool VERSION, surface DIGEST",) for its version with another surface, ("runtime
    LABEL",) for its tool in another runtime."""
    if arm not in tools or tool == tools[arm]:
        return ()
    version, surface, runtime = tool
    if version != tools[arm][0]:
        return (f"tool {version or 'version unknown'}",)
    if surface != tools[arm][1]:
        return (f"tool {version or 'version unknown'}, surface {surface or 'unknown'}",)
    return (f"runtime {runtime.label}" if runtime is not None else "runtime unknown",)


def other_tool_version(changed: tuple[str, ...]) -> str | None:
    """The tool version a set-apart group ran when that alone set it apart (its
    `changed` is _tool_change's version label, one surface of another version), else
    None: what a comparison of a tool's versions may read (benchkit.report.versions)."""
    if len(changed) != 1 or not changed[0].startswith("tool ") or ", surface " in changed[0]:
        return None
    return changed[0].removeprefix("tool ")


def _current_prompts(groups: Mapping[tuple, Group], changes: dict) -> dict:
    """(arm, task, estimated) -> the prompt fingerprint of the newest otherwise-current
    sample of the cell and driver kind that reached the agent (a harness error may not
    have assembled a prompt)."""
    newest: dict = {}
    for key, group in groups.items():
        arm, task, prints, estimated, outcome = key[:5]
        last = group.last
        if not changes[key] and outcome != "harness-error":
            cell = (arm, task, estimated)
            if cell not in newest or newest[cell][0] < last:
                newest[cell] = (last, prints.prompt)
    return {cell: prompt for cell, (_, prompt) in newest.items()}
