"""Reference solutions and the replay driver that plays them through the real agent.

A reference (refs.d/<arm>.yaml, benchkit/schemas/reference.schema.json) gives, per
task, the steps a competent agent takes with one arm's tool and, for reads, its final
answer. Steps and answers are Jinja2 templates: the host and repository coordinates,
the task's `targets` (the entities the steps act on, so a wrong-target control can
re-render the same steps on others), and `outputs`, the text each earlier step
returned, so an answer is read off what the tool really showed.

The replay driver serves a reference as the model's turns through the scripted model
server and the real Claude Code CLI: guard, caps, tools, host and checker all run for
real; only the model is scripted. Each turn is computed when its request arrives,
from the tool results that request carries. Usage is an estimate from the bytes the
CLI sent and the model returned (docs/replay.md), and the run is marked as estimated.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field, replace
from datetime import datetime, timezone
from pathlib import Path

import jinja2
import jinja2.meta

from benchkit.agent.driver import AgentRequest, AgentRun, zero_usage
from benchkit.agent.scripted import ScriptedModel, ToolCall, Turn, estimate_usage
from benchkit.fingerprint import fingerprint
from benchkit.spec.loader import Document, Problem, SpecError, load_document

# Names every step and answer template may use besides the task's targets.
CONTEXT_NAMES = frozenset({"api_url", "host_url", "token", "owner", "repo", "user",
                           "self_review", "outputs"})
NULL_ANSWER = "I made no changes."
EXCERPT_CHARS = 300


# --- the reference documents ---------------------------------------------------------

@dataclass(frozen=True)
class Step:
    """One model turn: a shell command (`run`) or one MCP tool call (`tool`, `input`)."""

    run: str | None = None
    tool: str | None = None
    input: dict | None = None


@dataclass(frozen=True)
class TaskReference:
    task: str
    steps: tuple[Step, ...] = ()
    targets: dict = field(default_factory=dict)
    decoys: dict = field(default_factory=dict)
    answer: str | None = None
    unsupported: str | None = None  # why the arm's tool cannot do the task

    def retargeted(self, seed) -> "TaskReference | None":
        """The same steps aimed at wrong targets (the wrong-target control), or None
        when no target can be swapped. Explicit decoys win; an integer target moves to
        the next issue (or pull request) of the seed that is not a target itself."""
        swapped = dict(self.targets)
        for name, value in self.targets.items():
            if name in self.decoys:
                swapped[name] = self.decoys[name]
            elif isinstance(value, int) and not isinstance(value, bool):
                swapped[name] = next_entity(value, seed, taken=set(self.targets.values()))
        if swapped == self.targets:
            return None
        return replace(self, targets=swapped)


@dataclass(frozen=True)
class Reference:
    path: Path
    data: dict = field(repr=False)
    fingerprint: str
    arm: str
    verified: bool
    tasks: dict  # task id -> TaskReference

    def for_task(self, task_id: str) -> TaskReference | None:
        return self.tasks.get(task_id)


def null_reference(task_id: str) -> TaskReference:
    """The null agent: no tool call, a final answer that states nothing."""
    return TaskReference(task=task_id, answer=NULL_ANSWER)


def next_entity(number: int, seed, taken=frozenset()) -> int:
    """The next issue number after `number` in the seed (pull requests likewise, as
    they are numbered after the issues), wrapping round, skipping `taken`."""
    issues, pulls = len(seed.issues), len(seed.pull_requests)
    group = range(1, issues + 1) if number <= issues else range(issues + 1, issues + pulls + 1)
    candidates = [n for n in group if n not in taken] or [n for n in group if n != number]
    if not candidates:
        return number
    later = [n for n in candidates if n > number]
    return later[0] if later else candidates[0]


def reference_path(arm_id: str, root) -> Path:
    return Path(root) / "refs.d" / f"{arm_id}.yaml"


def load_reference(path, *, kind: str | None = None) -> Reference:
    """Load and check refs.d/<arm>.yaml. `kind` ("shell" or "mcp", the arm's tool kind)
    also checks every step is of the kind that arm can take."""
    document = load_document(path, "reference", lambda document: _check(document, kind))
    data = document.data
    tasks = {task_id: _task(task_id, entry) for task_id, entry in data["tasks"].items()}
    return Reference(path=Path(path), data=data, fingerprint=fingerprint(data),
                     arm=data["arm"], verified=data["verified"], tasks=tasks)


def reference_for(arm, root) -> Reference:
    """The reference of an arm model (benchkit.spec Arm), checked against its kind."""
    path = reference_path(arm.id, root)
    if not path.is_file():
        raise SpecError([Problem(path, None, f"no reference solutions for arm {arm.id!r}")])
    reference = load_reference(path, kind=arm.tool["kind"])
    if reference.arm != arm.id:
        raise SpecError([Problem(path, None, f"names arm {reference.arm!r}, not {arm.id!r}")])
    return reference


def _task(task_id: str, entry: dict) -> TaskReference:
    steps = tuple(Step(run=s.get("run"), tool=s.get("tool"), input=s.get("input"))
                  for s in entry.get("steps", []))
    return TaskReference(task=task_id, steps=steps, targets=entry.get("targets", {}),
                         decoys=entry.get("decoys", {}), answer=entry.get("answer"),
                         unsupported=entry.get("unsupported"))


def _check(document: Document, kind: str | None) -> list[Problem]:
    """What a schema cannot say: templates name only known variables, decoys name
    targets, and every step suits the arm's kind."""
    problems = []
    for task_id, entry in document.data["tasks"].items():
        if not isinstance(entry, dict):
            continue  # the schema has said so
        at = ("tasks", task_id)
        names = CONTEXT_NAMES | set(entry.get("targets", {}))
        for name in entry.get("decoys", {}):
            if name not in entry.get("targets", {}):
                problems.append(document.problem(at + ("decoys", name),
                                                 f"decoy {name!r} is not a target"))
        for index, step in enumerate(entry.get("steps", [])):
            if not isinstance(step, dict):
                continue
            if kind == "shell" and "run" not in step:
                problems.append(document.problem(at + ("steps", index),
                                                 "a shell arm's step is {run: COMMAND}"))
            if kind == "mcp" and "tool" not in step:
                problems.append(document.problem(at + ("steps", index),
                                                 "an MCP arm's step is {tool: ..., input: {...}}"))
            for path, text in _templates(step, at + ("steps", index)):
                message = template_problem(text, names)
                if message:
                    problems.append(document.problem(path, message))
        if "answer" in entry:
            message = template_problem(entry["answer"], names)
            if message:
                problems.append(document.problem(at + ("answer",), message))
    return problems


def _templates(value, path):
    """(path, text) of every string inside a step."""
    if isinstance(value, str):
        yield path, value
    elif isinstance(value, dict):
        for key, item in value.items():
            yield from _templates(item, path + (key,))
    elif isinstance(value, list):
        for index, item in enumerate(value):
            yield from _templates(item, path + (index,))


# --- rendering -----------------------------------------------------------------------

def from_json(text: str):
    """The first JSON value in a tool's output (a tool may print a line before it). An
    MCP result's structured form {"result": X}, which the CLI passes on for a tool
    that returns a list, reads as X, as the text form would."""
    match = re.search(r"[\[{]", text or "")
    if match is None:
        raise ValueError(f"expected JSON in the step's output, got {excerpt(text)!r}")
    value, _ = json.JSONDecoder().raw_decode(text[match.start():])
    if isinstance(value, dict) and list(value) == ["result"]:
        return value["result"]
    return value


_ENV = jinja2.Environment(undefined=jinja2.StrictUndefined, autoescape=False)
_ENV.filters["fromjson"] = from_json
_WHOLE_EXPRESSION = re.compile(r"^\s*\{\{(?P<expr>(?:(?!\}\}).)*)\}\}\s*$", re.DOTALL)


def template_problem(text: str, names) -> str | None:
    """What is wrong with a step or answer template (syntax, unknown names), or None."""
    try:
        unknown = sorted(jinja2.meta.find_undeclared_variables(_ENV.parse(text)) - set(names))
    except jinja2.TemplateError as error:
        return f"template error: {error.message}"
    if unknown:
        return f"unknown template variable{'s' if len(unknown) > 1 else ''} {', '.join(map(repr, unknown))}"
    return None


def render_text(template: str, context: dict) -> str:
    return _ENV.from_string(template).render(**context)


def render_value(value, context: dict):
    """Render every string in a value. A string that is one `{{ expression }}` keeps the
    expression's own type, so an MCP argument can be an integer or a list."""
    if isinstance(value, str):
        whole = _WHOLE_EXPRESSION.match(value)
        if whole:
            return _ENV.compile_expression(whole["expr"], undefined_to_none=False)(**context)
        return render_text(value, context)
    if isinstance(value, dict):
        return {key: render_value(item, context) for key, item in value.items()}
    if isinstance(value, list):
        return [render_value(item, context) for item in value]
    return value


def render_step(step: Step, context: dict) -> Step:
    if step.run is not None:
        return Step(run=render_text(step.run, context).strip())
    return Step(tool=step.tool, input=render_value(step.input or {}, context))


def render_answer(task: TaskReference, context: dict) -> str:
    return render_text(task.answer, context).strip() if task.answer is not None else ""


def context_for(*, host_url: str, api_url: str, token: str, owner: str, repo: str,
                user: str, self_review: bool = False, targets: dict | None = None) -> dict:
    """The names a step or answer template sees (outputs is added turn by turn)."""
    return {**(targets or {}), "host_url": host_url, "api_url": api_url, "token": token,
            "owner": owner, "repo": repo, "user": user, "self_review": self_review,
            "outputs": []}


def excerpt(text: str | None, limit: int = EXCERPT_CHARS) -> str:
    text = (text or "").strip()
    return text if len(text) <= limit else text[:limit] + "..."


# --- the model's side of a replay ----------------------------------------------------

def tool_results(request: dict) -> list[tuple[str, bool]]:
    """(text, is_error) of every tool result a Messages API request carries, in order."""
    results = []
    for message in request.get("messages") or []:
        content = message.get("content") if isinstance(message, dict) else None
        if message.get("role") != "user" or not isinstance(content, list):
            continue
        for block in content:
            if isinstance(block, dict) and block.get("type") == "tool_result":
                results.append((_text_of(block.get("content")), bool(block.get("is_error"))))
    return results


# The CLI appends reminders of its own to a tool result before sending it on.
_REMINDER = re.compile(r"\s*<system-reminder>.*?</system-reminder>\s*", re.DOTALL)


def _text_of(content) -> str:
    if isinstance(content, list):
        content = "\n".join(b.get("text", "") for b in content
                            if isinstance(b, dict) and b.get("type") == "text")
    return _REMINDER.sub("\n", content).strip() if isinstance(content, str) else ""


class Play:
    """The model's turns for one task reference: step i is served once the request
    carries i tool results (one per earlier step), then the answer. Steps and answer
    are rendered at that moment, with `outputs` the text of those results."""

    def __init__(self, task: TaskReference, context: dict):
        self.task = task
        self.context = context
        self.failed: dict[int, str] = {}  # step number (1-based) -> excerpt of its result
        self.errors: list[str] = []
        self.served = 0

    def turn(self, request: dict):
        results = tool_results(request)
        for number, (text, is_error) in enumerate(results, start=1):
            if is_error and number <= len(self.task.steps):
                self.failed[number] = self._scrub(excerpt(text))
        index = len(results)
        self.served = max(self.served, index)
        context = {**self.context, "outputs": [text for text, _ in results]}
        try:
            if index < len(self.task.steps):
                step = render_step(self.task.steps[index], context)
                call = (ToolCall("Bash", {"command": step.run}) if step.run is not None
                        else ToolCall(step.tool, step.input))
                return Turn(calls=(call,))
            return Turn(text=render_answer(self.task, context) or NULL_ANSWER)
        except Exception as error:  # noqa: BLE001 - a broken template ends the replay, reported
            message = f"step {index + 1}: {type(error).__name__}: {error}" \
                if index < len(self.task.steps) else f"answer: {type(error).__name__}: {error}"
            self.errors.append(self._scrub(message))
            return Turn(text=f"The replay stopped: {self._scrub(message)}")

    def summary(self) -> dict:
        """The transcript event that says how the replay went."""
        return {"event": "replay", "task": self.task.task, "steps": len(self.task.steps),
                "served": self.served, "failed_steps": dict(sorted(self.failed.items())),
                "errors": list(self.errors), "targets": dict(self.task.targets)}

    def _scrub(self, text: str) -> str:
        token = self.context.get("token")
        return text.replace(token, "***") if token else text


class ReplayModel(ScriptedModel):
    """The scripted model server, its turns computed by a Play as requests arrive.
    Every figure it reports is estimated from bytes (docs/replay.md)."""

    def __init__(self, play: Play, *, model: str | None = None):
        super().__init__([], model=model, usage=estimate_usage, auxiliary_usage=estimate_usage)
        self.play = play

    def turn_for(self, index: int, request: dict) -> Turn:
        return self.play.turn(request)


# --- the driver ----------------------------------------------------------------------

# What the replay needs to know of its cell, read from `request.cell`.
CELL_KEYS = ("task", "host_url", "api_url", "token", "owner", "repo", "user")


class ReplayDriver:
    """Plays a reference as the model through the real Claude Code CLI (Driver protocol).

    The request must carry `cell`, a dict with the task id and the host and repository
    coordinates (CELL_KEYS, and `self_review`), since steps are rendered against them.
    """

    name = "replay"

    def __init__(self, reference: Reference, *, cli_path: str | None = None):
        self.reference = reference
        self.cli_path = cli_path

    def supports(self, task_id: str) -> bool:
        """Whether this reference can play the task at all."""
        task = self.reference.for_task(task_id)
        return task is not None and task.unsupported is None

    def run(self, request: AgentRequest) -> AgentRun:
        from benchkit.agent.claude import ClaudeDriver  # the SDK, only when a run happens
        cell = getattr(request, "cell", None) or {}
        missing = [key for key in CELL_KEYS if key not in cell]
        task = self.reference.for_task(cell.get("task", ""))
        if missing or task is None or task.unsupported is not None:
            why = (f"the request carries no cell {', '.join(missing)}" if missing else
                   f"{self.reference.path.name} has no playable reference for task {cell['task']!r}"
                   + (f": {task.unsupported}" if task is not None and task.unsupported else ""))
            return _not_run(why)
        context = context_for(**{key: cell[key] for key in CELL_KEYS[1:]},
                              self_review=bool(cell.get("self_review")), targets=task.targets)
        play = Play(task, context)
        with ReplayModel(play, model=request.model) as model:
            run = ClaudeDriver(base_url=model.url, cli_path=self.cli_path).run(request)
        run.usage_estimated = True
        run.transcript.append(play.summary())
        return run


def _not_run(why: str) -> AgentRun:
    """A run that never started: the cell runner records it as a harness error."""
    now = datetime.now(timezone.utc)
    return AgentRun(usage=zero_usage(), usage_by_model={}, turns=0, duration_s=0.0,
                    cost_usd=None, answer=None, stop="startup-error", error=why,
                    transcript=[{"event": "stop", "stop": "startup-error", "error": why}],
                    started=now, finished=now, usage_estimated=True)
