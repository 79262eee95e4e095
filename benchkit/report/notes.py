"""The report's prose: the sentences that say what the numbers may and may not be
read as (coverage, exclusions, other versions, replay estimates, durations)."""

from __future__ import annotations

from collections.abc import Iterable

from benchkit.report.model import Durations, Report, SampleTotals


def _names(items: Iterable[str]) -> str:
    items = list(items)
    return items[0] if len(items) == 1 else ", ".join(items[:-1]) + " and " + items[-1]


def _count(n: int, noun: str) -> str:
    return f"{n} {noun}" if n == 1 else f"{n} {noun}s"


def notes(report: Report) -> list[str]:
    """The sentences that say what the numbers may and may not be read as."""
    return (coverage_notes(report) + exclusion_notes(report.totals)
            + duration_notes(report.durations))


def coverage_notes(report: Report) -> list[str]:
    rows = [r for r in report.headline if r.tasks]
    if not rows:
        return ["No measured samples of the current tasks and arms yet: nothing to compare."]
    said = []
    total = rows[0].tasks_total
    full = [r.arm for r in rows if r.covered == total]
    partial = [f"{r.arm} {r.covered}/{total}" for r in rows if r.covered < total]
    if not partial and len(rows) == len(report.headline):
        said.append(f"Every arm covered all {total} scored tasks at the floor of "
                    f"{report.floor} valid samples.")
    else:
        said.append("The matrix is partial. Cells at the floor of "
                    f"{report.floor} valid samples, per arm: "
                    + ", ".join(partial + [f"{a} {total}/{total}" for a in full]) + ".")
    silent = [r.arm for r in report.headline if not r.tasks]
    if silent:
        said.append(f"No measured samples yet for {_names(silent)}.")
    common = report.common
    if common and common.uneven:
        ran = ", ".join(f"{arm} {n}" for arm, n in common.ran.items())
        said.append(f"The arms ran different tasks ({ran} of {total}), so the first table "
                    f"ranks them on the {_count(len(common.tasks), 'task')} "
                    f"{'all of them' if not common.apart else 'all the ranked ones'} ran; "
                    "the all-task means after it are not comparable between arms.")
    said.append("Figures are means over tasks of per-task means, so a cell's number of "
                f"trials does not weigh on them; intervals are {report.level:.0%} "
                "intervals for the mean over the suite's tasks.")
    return said


def exclusion_notes(totals: SampleTotals) -> list[str]:
    said = []
    excluded = totals.invalid + totals.unaudited + totals.harness_error - totals.leaks_counted
    if excluded:
        unaudited = (f"{totals.unaudited} unaudited (the audit could not read its "
                     "evidence), " if totals.unaudited else "")
        said.append(f"{_count(excluded, 'sample')} left out of every figure: "
                    f"{totals.invalid - totals.leaks_counted} invalid (a foreign tool reached), "
                    f"{unaudited}and {_count(totals.harness_error, 'harness error')}.")
    if totals.leaks_counted:
        said.append(f"{_count(totals.leaks_counted, 'sample')} invalid for a leak of the "
                    "agent's own (a request the gateway refused, a call the guard denies): "
                    "listed with the excluded and counted as failures of their arm.")
    if totals.other_versions:
        said.append(f"{_count(totals.other_versions, 'sample')} ran with another version "
                    "of the task, arm, tool, seed, prompt or model: reported apart.")
    if totals.replay:
        said.append(f"{_count(totals.replay, 'replay sample')} (scripted model, token "
                    "figures estimated from bytes): reported apart as estimates, never in "
                    "the headline.")
    if totals.unconfined:
        said.append(f"{_count(totals.unconfined, 'sample')} ran unconfined (--unconfined): "
                    "the agent's shell was not in the OS sandbox, so nothing but the guard "
                    "and the audit kept it from the host.")
    if totals.gateway_only:
        said.append(f"{_count(totals.gateway_only, 'sample')} ran with gateway-only containment "
                    "(--gateway-only-containment): the host token behind the gateway was the "
                    "maintainer's, so the gateway alone kept the agent from the account's other "
                    "repositories, not the host's own permissions.")
    return said


def duration_notes(durations: Durations) -> list[str]:
    """Durations are soft: the host's speed, and how many trials shared the machine."""
    counts = durations.jobs
    if not counts:
        return []
    known = [f"{_count(c.samples, 'sample')} at {c.jobs}" for c in counts if c.jobs is not None]
    unknown = sum(c.samples for c in counts if c.jobs is None)
    parts = known + ([f"{_count(unknown, 'sample')} that did not record it"] if unknown else [])
    return ["Durations are soft: they depend on the host and on how many trials ran at "
            "once (--jobs; " + ", ".join(parts) + "), so compare them only at one "
            "concurrency."]


def baseline_notes(baseline: str | None, verdicts) -> list[str]:
    """A --baseline the report could not apply, said (it is not an error: the store
    may simply hold no measured samples yet)."""
    if baseline is None or verdicts is not None:
        return []
    return [f"--baseline {baseline} is not applied: verdicts compare measured samples "
            "only, and fewer than two arms have any (replay estimates are never compared "
            "by verdicts)."]
