"""The model service's accounting checked where it enters, never trusted.

Every usage figure of an agent run is checked before it becomes a measured figure:
the agent's own requests one by one (the transcript's `request` events, the figures
the service streamed) and the run's totals (the CLI's final account, per model). A
figure is wrong when it is

    missing      the API always reports input and output in a request's stream
                 (message_start, message_delta); an agent request without them
    not a count  a figure that is not an integer: a string ("4000"), a float, a
                 bool, a null where a number is due (benchkit.agent.usage keeps
                 each as given, never coerced)
    negative     a count below zero
    implausible  more than the request could produce: a prompt (input, cache writes
                 and reads together) above the model's context window, an output
                 above the request's own `max_tokens` (what the runtime sends for
                 the run's model, benchkit.agent.model_probe; where unknown, the
                 largest a request of the model may carry); a total above what the
                 run's requests together could reach

Any of these makes the trial a harness error of class `model-usage` (benchkit.run.
outcome): its sample keeps the figures as reported (`usage_reported`), never a
measured figure. A request answered by a model other than the one asked for makes it
`model-mismatch`: the sample names the models that answered (`models`) and is never
pooled with the requested model's. An undated id answered by one of its own dated
snapshots (claude-sonnet-4-5 by claude-sonnet-4-5-20250929) is the same model, as is an
id with a runtime's option answered as the id (claude-sonnet-4-5[1m] by
claude-sonnet-4-5), but one run answered by two of its snapshots holds another model; a
dated id is matched exactly (claude-3-5-sonnet-20240620 answered by
claude-3-5-sonnet-20241022 is another model), and a model that is no string is another
model.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from benchkit.evidence import RequestEvent, UsageFigures, UsageReported
from benchkit.sample import USAGE_FIELDS

from .usage import is_count

MODEL_USAGE, MODEL_MISMATCH = "model-usage", "model-mismatch"

# What no request of a model can produce: (context window, largest max_tokens), by the
# longest matching name prefix; a model not listed gets the largest of any.
LIMITS = {
    "claude-opus-4-5": (200_000, 64_000), "claude-opus-4": (200_000, 32_000),
    "claude-sonnet-4": (1_000_000, 64_000), "claude-haiku-4": (200_000, 64_000),
    "claude-3-7-sonnet": (200_000, 128_000), "claude-3-5": (200_000, 8_192),
}
ANY_MODEL = (1_000_000, 128_000)
_PROMPT = ("input", "cache_write", "cache_read")
_SPLIT = ("cache_write_5m", "cache_write_1h")
_SNAPSHOT = re.compile(r"-[0-9]{8}$")  # a dated snapshot's suffix
# A runtime's option on an id ("claude-sonnet-4-5[1m]": a longer context): the CLI sends
# its requests as the id alone and asks for the option in a header.
_OPTION = re.compile(r"\[[^\]]*\]$")


@dataclass
class Accounting:
    """What the check found: the problems (empty: the figures stand) and the models
    that answered the agent's requests."""

    problems: list[str] = field(default_factory=list)
    models: list[str] = field(default_factory=list)
    mismatch: bool = False


def limits(model: str | None) -> tuple[int, int]:
    """(context window, largest output) of `model`."""
    name = (model or "").lower()
    matches = [prefix for prefix in LIMITS if name.startswith(prefix)]
    return LIMITS[max(matches, key=len)] if matches else ANY_MODEL


def same_model(asked: str, answered: str) -> bool:
    """The model asked for (less a runtime's option), or (asked undated) one of its own
    dated snapshots: claude-sonnet-4-5 and claude-sonnet-4-5-20250929. A dated id is
    itself only."""
    asked = _OPTION.sub("", asked)
    if answered == asked:
        return True
    return (_SNAPSHOT.search(asked) is None and _SNAPSHOT.search(answered) is not None
            and _SNAPSHOT.sub("", answered) == asked)


def check(requests: list[RequestEvent], usage: UsageFigures,
          usage_by_model: dict[str, UsageFigures], asked: str,
          max_tokens: int | None = None) -> Accounting:
    """Check an agent run's figures: `requests` (the transcript's request events, their
    `usage` and `usage_missing`), its totals and per-model totals, against the model
    `asked` for; `max_tokens`, what each of the agent's requests asks for at most (None:
    unknown, the model's largest bounds it)."""
    found = Accounting()
    for number, request in enumerate(requests, start=1):
        model = request.get("model") or asked
        if not isinstance(model, str):  # no name: another model, named as sent
            model = repr(model)
        if model not in found.models:
            found.models.append(model)
        figures = request.get("usage") or {}
        missing = request.get("usage_missing") or []
        if missing:
            found.problems.append(f"request {number} reported no {' or '.join(missing)}")
        found.problems += _bounded(f"request {number}", figures, model, 1, max_tokens=max_tokens)
    if requests and all(r.get("usage_missing") for r in requests):
        found.problems.insert(0, "usage missing from every agent request")
    found.problems += _bounded("the run's total", usage, asked, max(len(requests), 1) + 1,
                               loose=True)
    for model, figures in usage_by_model.items():
        found.problems += _bounded(f"{model}'s total", figures, model,
                                   max(len(requests), 1) + 1, loose=True)
    others = [model for model in found.models if not same_model(asked, model)]
    if not others and len(set(found.models) - {asked, _OPTION.sub("", asked)}) > 1:
        others = found.models  # two snapshots: an undated id has one of its own
    if others:
        found.mismatch = True
        found.problems.append(f"asked for {asked}, answered by {', '.join(others)}")
    return found


def _bounded(what: str, figures: Mapping[str, Any], model: str, count: int, loose: bool = False,
             max_tokens: int | None = None) -> list[str]:
    """Problems of one set of figures of up to `count` requests of `model`. `loose`:
    a total, whose request count is not known exactly (the runtime's own chores);
    `max_tokens`: one request's own bound on its output."""
    problems = []
    for key in USAGE_FIELDS:
        if key not in figures:
            continue
        value = figures[key]
        if value is None and key in _SPLIT:  # a lifetime split not reported
            continue
        if not is_count(value):
            problems.append(f"{what}: {key} is {value!r}, not a count")
        elif value < 0:
            problems.append(f"{what}: {key} {value} is negative")
    if problems:
        return problems
    window, output = limits(model)
    scale = count * (4 if loose else 1)  # a total also carries chores and retries
    prompt = sum(figures.get(key) or 0 for key in _PROMPT)
    if prompt > window * scale:
        problems.append(f"{what}: a prompt of {prompt:,} tokens, above {model}'s context "
                        f"window ({window:,}){f' x {scale}' if scale > 1 else ''}")
    if max_tokens is not None and figures["output"] > max_tokens:
        problems.append(f"{what}: {figures['output']:,} output tokens, above the request's "
                        f"own max_tokens ({max_tokens:,})")
    elif (figures.get("output") or 0) > output * scale:
        problems.append(f"{what}: {figures['output']:,} output tokens, above the largest a "
                        f"request of {model} may ask for ({output:,})"
                        f"{f' x {scale}' if scale > 1 else ''}")
    return problems


def reported(usage: UsageFigures, usage_by_model: dict[str, UsageFigures],
             cost_usd: float | None) -> UsageReported:
    """The figures as the service reported them, kept on a sample whose accounting
    failed (never read as measured)."""
    return {"usage": dict(usage), "usage_by_model": {m: dict(f) for m, f in usage_by_model.items()},
            "cost_usd": cost_usd}
