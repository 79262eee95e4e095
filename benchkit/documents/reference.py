"""Reference solutions: the documents in refs.d/ and their templates.

A reference (refs.d/<arm>.yaml, benchkit/schemas/reference.schema.json) gives, per
task, the steps a competent agent takes with one arm's tool and, for reads, its final
answer. Steps and answers are Jinja2 templates: the host and repository coordinates,
the task's `targets` (the entities the steps act on, so a wrong-target control can
re-render the same steps on others), and `outputs`, the text each earlier step
returned, so an answer is read off what the tool really showed.

A reference may take another arm's tasks (`from`) and add the runtime's tool search
(`search: select`): before the first call of each tool, a step that loads its schema
with ToolSearch and the query `select:<tool>`, as a model must when the schemas wait
behind the search. A search step's output is no template's: `outputs` holds the other
steps' alone, so the answers of the arm it takes from read the same.

Loading, checking and rendering live here, apart from the replay driver
(benchkit.agent.replay), so `benchkit validate` checks references without the agent.
"""

from __future__ import annotations

import functools
import json
import re
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING

from benchkit.documents.loader import Document, DocumentError, Problem, load_document, strings
from benchkit.documents.templates import jinja
from benchkit.fingerprint import fingerprint
from benchkit.tool import TOOL_SEARCH

if TYPE_CHECKING:
    import jinja2

# Names every step and answer template may use besides the task's targets.
CONTEXT_NAMES = frozenset({"api_url", "host_url", "token", "owner", "repo", "user",
                           "self_review", "outputs"})
EXCERPT_CHARS = 300


# --- the documents -------------------------------------------------------------------

@dataclass(frozen=True)
class Step:
    """One model turn: a shell command (`run`) or one MCP tool call (`tool`, `input`);
    `search`: a tool search that loads the next tool's schema (its output no
    template's)."""

    run: str | None = None
    tool: str | None = None
    input: dict | None = None
    search: bool = False


@dataclass(frozen=True)
class TaskReference:
    task: str
    steps: tuple[Step, ...] = ()
    targets: dict = field(default_factory=dict)
    decoys: dict = field(default_factory=dict)
    answer: str | None = None
    unsupported: str | None = None  # why the arm's tool cannot do the task

    @property
    def fingerprint(self) -> str:
        """What a replay of it plays, as a digest: its samples' figures are the bytes
        of these steps' outputs and this answer."""
        return fingerprint(asdict(self))

    def retargeted(self, seed) -> TaskReference | None:
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
    tasks: dict[str, TaskReference]  # by task id

    def for_task(self, task_id: str) -> TaskReference | None:
        return self.tasks.get(task_id)


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


def no_reference(arm_id: str) -> str:
    """Why a task cannot be replayed or proved on an arm whose reference lacks it."""
    return f"not provable on arm {arm_id}: no reference in refs.d/{arm_id}.yaml"


def load_reference(path, *, kind: str | None = None, tasks=None, tool_search: bool | None = None,
                   taken_by: Document | None = None) -> Reference:
    """Load and check refs.d/<arm>.yaml. `kind` ("shell" or "mcp", the arm's tool kind)
    also checks every step is of the kind that arm can take; `tool_search` (the arm's)
    that the reference searches for its tools exactly when the arm's tools wait behind
    the runtime's tool search; `tasks` (the task ids of
    the tree) that every task it covers exists. `taken_by`: the reference that takes
    this one's tasks (which must then be its own: one step, no chains or cycles)."""
    document = load_document(path, "reference",
                             lambda document: _check(document, kind, tasks, tool_search))
    data = document.data
    if "from" in data and taken_by is not None:
        raise DocumentError([taken_by.problem(("from",), (
            f"takes its tasks from {Path(path).name}, which takes its own from "
            f"{data['from']}.yaml: name a reference with tasks of its own"))])
    if "from" in data:  # _check has found it
        base = load_reference(Path(path).parent / f"{data['from']}.yaml", kind=kind, tasks=tasks,
                              taken_by=document)
        covered, content = dict(base.tasks), {"reference": data, "from": base.data}
    else:
        covered = {task_id: _task(task_id, entry) for task_id, entry in data["tasks"].items()}
        content = data
    if data.get("search") == "select":
        covered = {task_id: searching(task) for task_id, task in covered.items()}
    return Reference(path=Path(path), data=data, fingerprint=fingerprint(content),
                     arm=data["arm"], verified=data["verified"], tasks=covered)


def searching(task: TaskReference) -> TaskReference:
    """The task's steps with the runtime's tool search before the first call of each
    tool: ToolSearch with the query select:<tool>."""
    steps: list[Step] = []
    loaded: set[str] = set()
    for step in task.steps:
        if step.tool is not None and step.tool not in loaded:
            loaded.add(step.tool)
            steps.append(Step(tool=TOOL_SEARCH, input={"query": f"select:{step.tool}"},
                              search=True))
        steps.append(step)
    return replace(task, steps=tuple(steps))


def reference_for(arm, root) -> Reference:
    """The reference of an arm model (benchkit.documents Arm), checked against its kind:
    for an arm file from outside the tree's arms.d/, the `refs.d/<id>.yaml` beside its
    file (a tool's repository keeps both), else the tree's."""
    path = reference_path(arm.id, root)
    home = Path(arm.path).resolve().parent if arm.path else None
    if home is not None and home != (Path(root) / "arms.d").resolve():
        beside = reference_path(arm.id, home)
        path = beside if beside.is_file() else path
    if not path.is_file():
        raise DocumentError([Problem(path, None, f"no reference solutions for arm {arm.id!r}")])
    return load_reference(path, kind=arm.tool.kind, tool_search=arm.tool.tool_search)


def _task(task_id: str, entry: dict) -> TaskReference:
    steps = tuple(Step(run=s.get("run"), tool=s.get("tool"), input=s.get("input"))
                  for s in entry.get("steps", []))
    return TaskReference(task=task_id, steps=steps, targets=entry.get("targets", {}),
                         decoys=entry.get("decoys", {}), answer=entry.get("answer"),
                         unsupported=entry.get("unsupported"))


def _check(document: Document, kind: str | None, tasks,
           tool_search: bool | None = None) -> list[Problem]:
    """What a schema cannot say: the file is the named arm's, tasks exist, templates
    name only known variables, decoys name targets, and every step suits the arm's kind."""
    problems = []
    arm, path = document.data.get("arm"), Path(document.path)
    if path.parent.name == "refs.d" and isinstance(arm, str) and arm != path.stem:
        problems.append(document.problem(("arm",), f"names arm {arm!r}, but {path.name} is "
                                                   f"read for arm {path.stem!r}"))
    problems += _source_problems(document)
    searches = "search" in document.data
    if tool_search is not None and searches != tool_search:
        problems.append(document.problem(("search",) if searches else (), (
            "its arm's tools are not behind the runtime's tool search: no `search`"
            if searches else "its arm's tools wait behind the runtime's tool search "
                             "(tool_search): add `search: select`")))
    for task_id, entry in (document.data.get("tasks") or {}).items():
        at = ("tasks", task_id)
        if tasks is not None and task_id not in tasks:
            problems.append(document.problem(at, f"no task {task_id!r} in tasks.d/", at_key=True))
        if not isinstance(entry, dict):
            continue  # the schema has said so
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
            for path, text in strings(step, at + ("steps", index)):
                message = template_problem(text, names)
                if message:
                    problems.append(document.problem(path, message))
        if "answer" in entry:
            message = template_problem(entry["answer"], names)
            if message:
                problems.append(document.problem(at + ("answer",), message))
    return problems


def _source_problems(document: Document) -> list[Problem]:
    """A reference has tasks of its own, or takes them `from` another arm's file (one
    beside it, itself with tasks of its own), not both."""
    data, path = document.data, Path(document.path)
    if ("tasks" in data) == ("from" in data):
        return [document.problem((), "a reference has its own `tasks` or takes another "
                                     "arm's (`from: ARM`), not both")]
    if "from" not in data:
        return []
    source = path.parent / f"{data['from']}.yaml"
    if not source.is_file():
        return [document.problem(("from",), f"no reference {source.name} beside it")]
    if source.resolve() == path.resolve():
        return [document.problem(("from",), "a reference cannot take its own tasks")]
    return []


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


@functools.cache
def _env() -> jinja2.Environment:
    env = jinja().Environment(undefined=jinja().StrictUndefined, autoescape=False)
    env.filters["fromjson"] = from_json
    return env

_WHOLE_EXPRESSION = re.compile(r"^\s*\{\{(?P<expr>(?:(?!\}\}).)*)\}\}\s*$", re.DOTALL)


def template_problem(text: str, names) -> str | None:
    """What is wrong with a step or answer template (syntax, unknown names), or None."""
    try:
        unknown = sorted(_variables(text) - set(names))
    except jinja().TemplateError as error:
        return f"template error: {error.message}"
    if unknown:
        return f"unknown template variable{'s' if len(unknown) > 1 else ''} {', '.join(map(repr, unknown))}"
    return None


@functools.lru_cache(maxsize=4096)
def _variables(text: str) -> frozenset:
    """The names a template reads (references repeat their templates, and validate
    parses every one)."""
    if not any(mark in text for mark in ("{{", "{%", "{#")):
        return frozenset()  # plain text: nothing to parse
    return frozenset(jinja().meta.find_undeclared_variables(_env().parse(text)))


def render_text(template: str, context: dict) -> str:
    return _env().from_string(template).render(**context)


def render_value(value, context: dict):
    """Render every string in a value. A string that is one `{{ expression }}` keeps the
    expression's own type, so an MCP argument can be an integer or a list."""
    if isinstance(value, str):
        whole = _WHOLE_EXPRESSION.match(value)
        if whole:
            return _env().compile_expression(whole["expr"], undefined_to_none=False)(**context)
        return render_text(value, context)
    if isinstance(value, dict):
        return {key: render_value(item, context) for key, item in value.items()}
    if isinstance(value, list):
        return [render_value(item, context) for item in value]
    return value


def render_step(step: Step, context: dict) -> Step:
    if step.run is not None:
        return Step(run=render_text(step.run, context).strip())
    return Step(tool=step.tool, input=render_value(step.input or {}, context),
                search=step.search)


def render_answer(task: TaskReference, context: dict) -> str:
    return render_text(task.answer, context).strip() if task.answer is not None else ""


def excerpt(text: str | None, limit: int = EXCERPT_CHARS) -> str:
    text = (text or "").strip()
    return text if len(text) <= limit else text[:limit] + "..."
