"""The documents' model objects (Suite, Seed, Arm), each loaded from one document.

Each loader validates its file against the schema, fills in schema defaults, then runs
the checks a schema cannot express (a label an issue names must exist, a template must
only use names the harness provides). Every problem is collected before one DocumentError
is raised. The tree of documents (and tasks, benchkit.documents.task) is benchkit.documents.tree.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from benchkit.documents.loader import Document, Problem, load_document, strings
from benchkit.documents.templates import CONTEXT_NAMES, template_problem
from benchkit.fingerprint import arm_fingerprint, fingerprint
from benchkit.surface import Surface
from benchkit.tool import ToolSpec


@dataclass(frozen=True)
class Loaded:
    """What every loaded document has: its file, its data (validated, schema defaults
    filled in) and the data's fingerprint."""

    path: Path
    data: dict = field(repr=False)
    fingerprint: str


@dataclass(frozen=True)
class Suite(Loaded):
    model: str
    trials: int
    floor: int
    turn_cap: int
    backstop_seconds: float
    repo_prefix: str
    default_cell_tokens: int
    weights: dict
    base_prompt: str
    equivalence_margin: float = 0.05
    max_request_bytes: int = 10 * 1024 * 1024
    max_trial_upload_bytes: int = 100 * 1024 * 1024
    max_trial_connections: int = 32
    request_arrival_seconds: float = 5.0
    model_idle_seconds: float = 120.0
    harness_retries: int = 3  # --until: more trials per cell and run after harness errors
    max_trial_download_bytes: int = 256 * 1024 * 1024
    max_trial_host_cpu_seconds: float = 60.0


@dataclass(frozen=True)
class Seed(Loaded):
    name: str  # the file's stem; tasks name their seed by it
    labels: list
    issues: list
    pull_requests: list


@dataclass(frozen=True)
class Arm(Loaded):
    id: str
    description: str
    tool: ToolSpec
    user_agents: tuple[str, ...]  # prefixes the audit accepts; empty: no audit
    bootstrap: str
    credentials: dict
    tool_version: str | None = None  # what the version command printed (pre-flight)
    surface: Surface | None = None   # what the agent sees of the tool (the tool probe)

    @property
    def tool_surface(self) -> str | None:
        return None if self.surface is None else self.surface.digest

    @property
    def run_fingerprint(self) -> str:
        """The fingerprint a sample of this arm carries: the document's, the tool's
        version and its surface together (the document's alone while the version is
        unknown)."""
        return arm_fingerprint(self.fingerprint, self.tool_version, self.tool_surface)


# --- single documents ----------------------------------------------------------------

def _fields(document: Document, names) -> dict:
    data = document.data
    return dict(path=document.path, data=data, fingerprint=fingerprint(data),
                **{name: data[name] for name in names})


def load_suite(path) -> Suite:
    document = load_document(path, "suite", _check_suite)
    return Suite(**_fields(document, [
        "model", "trials", "floor", "turn_cap", "backstop_seconds", "repo_prefix",
        "default_cell_tokens", "weights", "base_prompt", "equivalence_margin",
        "max_request_bytes", "max_trial_upload_bytes", "max_trial_connections",
        "request_arrival_seconds", "model_idle_seconds", "harness_retries",
        "max_trial_download_bytes", "max_trial_host_cpu_seconds"]))


def load_seed(path) -> Seed:
    document = load_document(path, "seed", _check_seed)
    return Seed(name=Path(path).stem, **_fields(document, ["labels", "issues", "pull_requests"]))


def load_arm(path) -> Arm:
    document = load_document(path, "arm", _check_arm)
    fields = _fields(document, ["id", "description", "bootstrap", "credentials"])
    # How the tool is installed changes nothing a trial runs: a new install line keeps
    # the arm's samples counted together.
    tool = {key: value for key, value in document.data["tool"].items() if key != "install"}
    fields["fingerprint"] = fingerprint({**document.data, "tool": tool})
    return Arm(**fields, tool=ToolSpec.from_data(document.data["tool"]),
               user_agents=tuple(document.data["user_agents"]))


def _check_suite(document: Document) -> list[Problem]:
    data = document.data
    problems = _template_problems(document, [("base_prompt",)], CONTEXT_NAMES - {"skill"})
    trials, floor = data.get("trials"), data.get("floor")
    if type(trials) is int and type(floor) is int and 1 <= trials < floor:
        problems.append(document.problem(("floor",), (
            f"floor {floor} is above trials {trials}: a default sweep would never cover a cell")))
    return problems


def _check_seed(document: Document) -> list[Problem]:
    data = document.data
    problems: list[Problem] = []
    defined = _defined_once(document, "labels", "name", problems)
    milestones = _defined_once(document, "milestones", "title", problems)
    heads = set()
    for kind in ("issues", "pull_requests"):
        for index, item in _entries(data, kind):
            milestone = item.get("milestone") if isinstance(item, dict) else None
            if isinstance(milestone, str) and milestone not in milestones:
                problems.append(document.problem(
                    (kind, index, "milestone"),
                    f"milestone {milestone!r} is not defined under 'milestones'"))
            for position, name in _entries(item, "labels"):
                if isinstance(name, str) and name not in defined:
                    problems.append(document.problem(
                        (kind, index, "labels", position),
                        f"label {name!r} is not defined under 'labels'"))
            head = item.get("head") if kind == "pull_requests" and isinstance(item, dict) else None
            if isinstance(head, str) and head in heads:
                problems.append(document.problem(
                    (kind, index, "head"), f"head branch {head!r} is used by an earlier pull request"))
            heads.add(head)
    return problems


def _defined_once(document: Document, kind: str, key: str, problems: list) -> set:
    """The names `kind` defines (labels by name, milestones by title), each a problem
    when defined twice."""
    defined = set()
    for index, item in _entries(document.data, kind):
        name = item.get(key) if isinstance(item, dict) else None
        if name in defined:
            problems.append(document.problem((kind, index, key),
                                             f"{kind[:-1]} {name!r} is defined twice"))
        defined.add(name)
    return defined


def _entries(mapping, key) -> list:
    """(index, item) of the list at mapping[key]; none when the shape is wrong."""
    value = mapping.get(key) if isinstance(mapping, dict) else None
    return list(enumerate(value)) if isinstance(value, list) else []


# Arm fields that are templates; only bootstrap may use {{ skill }}, only the skill's
# places {{ tool_package }}.
ARM_TEMPLATES = [("tool", "server"), ("tool", "probe"), ("credentials",)]


def _check_arm(document: Document) -> list[Problem]:
    names = CONTEXT_NAMES - {"skill"}
    problems = _template_problems(document, ARM_TEMPLATES, names)
    problems += _template_problems(document, [("tool", "skill")], names | {"tool_package"})
    return problems + _template_problems(document, [("bootstrap",)], CONTEXT_NAMES)


def _template_problems(document: Document, paths, names) -> list[Problem]:
    """Problems of every template string at or under the given paths."""
    problems = []
    for path in paths:
        value = document.data
        for part in path:
            value = value.get(part) if isinstance(value, dict) else None
        for where, text in strings(value, path):
            message = template_problem(text, names)
            if message:
                problems.append(document.problem(where, message))
    return problems
