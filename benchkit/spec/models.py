"""The spec's model objects (Suite, Seed, Arm, Tree) and the tree they are loaded from.

Each loader validates its file against the schema, fills in schema defaults, then runs
the checks a schema cannot express (a label an issue names must exist, a template must
only use names the harness provides). Every problem is collected before one SpecError
is raised, for a single file as for the whole tree.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path

from benchkit import PACKAGE_DIR, SCHEMA_DIR
from benchkit.fingerprint import arm_fingerprint, fingerprint
from benchkit.sample import SCORED_TIERS
from benchkit.spec.loader import (
    Document,
    Problem,
    SpecError,
    declared_schema,
    load_document,
    read_document,
    sort_problems,
    strings,
)
from benchkit.spec.templates import CONTEXT_NAMES, template_problem

YAML_SUFFIXES = (".yaml", ".yml")
# Directory of the tree -> the kind of document it holds.
DIRECTORIES = {"seeds": "seed", "tasks.d": "task", "arms.d": "arm"}


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
    tool: dict
    user_agents: tuple[str, ...]  # prefixes the audit accepts; empty: no audit
    bootstrap: str
    credentials: dict
    tool_version: str | None = None  # what the version command printed (pre-flight)

    @property
    def run_fingerprint(self) -> str:
        """The fingerprint a sample of this arm carries: the document's and the tool's
        version together (the document's alone while the version is unknown)."""
        return arm_fingerprint(self.fingerprint, self.tool_version)


@dataclass(frozen=True)
class Tree:
    root: Path
    suite: Suite
    seeds: dict  # name -> Seed
    arms: dict  # id -> Arm
    tasks: dict  # id -> Task (benchkit.spec.task)


# --- single documents ----------------------------------------------------------------

def _fields(document: Document, names) -> dict:
    data = document.data
    return dict(path=document.path, data=data, fingerprint=fingerprint(data),
                **{name: data[name] for name in names})


def load_suite(path) -> Suite:
    document = load_document(path, "suite", _check_suite)
    return Suite(**_fields(document, [
        "model", "trials", "floor", "turn_cap", "backstop_seconds", "repo_prefix",
        "default_cell_tokens", "weights", "base_prompt", "equivalence_margin"]))


def load_seed(path) -> Seed:
    document = load_document(path, "seed", _check_seed)
    return Seed(name=Path(path).stem, **_fields(document, ["labels", "issues", "pull_requests"]))


def load_arm(path) -> Arm:
    document = load_document(path, "arm", _check_arm)
    fields = _fields(document, ["id", "description", "tool", "bootstrap", "credentials"])
    return Arm(**fields, user_agents=tuple(document.data["user_agents"]))


def _check_suite(document: Document) -> list[Problem]:
    data = document.data
    problems = _template_problems(document, [("base_prompt",)], CONTEXT_NAMES - {"skill"})
    trials, floor = data.get("trials"), data.get("floor")
    if type(trials) is int and type(floor) is int and 1 <= trials < floor:
        problems.append(document.problem(("floor",), (
            f"floor {floor} is above trials {trials}: a default sweep would never cover a cell")))
    return problems


def _check_seed(document: Document) -> list[Problem]:
    data, problems = document.data, []
    defined = set()
    for index, label in _entries(data, "labels"):
        name = label.get("name") if isinstance(label, dict) else None
        if name in defined:
            problems.append(document.problem(("labels", index, "name"),
                                             f"label {name!r} is defined twice"))
        defined.add(name)
    heads = set()
    for kind in ("issues", "pull_requests"):
        for index, item in _entries(data, kind):
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


# --- the tree ------------------------------------------------------------------------

def find_root(*, required: bool = True) -> Path | None:
    """The tree holding suite.yaml: $BENCHKIT_ROOT, else the working directory or the
    nearest parent with one, else the checkout beside the installed package. None
    where there is none and it is not `required` (else SpecError)."""
    try:
        return _find_root()
    except SpecError:
        if required:
            raise
        return None


def _find_root() -> Path:
    override = os.environ.get("BENCHKIT_ROOT")
    if override:
        root = Path(override).resolve()
        if not (root / "suite.yaml").is_file():
            raise SpecError([Problem(root / "suite.yaml", None, "not found (BENCHKIT_ROOT points here)")])
        return root
    cwd = Path.cwd().resolve()
    for directory in (cwd, *cwd.parents, PACKAGE_DIR.parent):
        if (directory / "suite.yaml").is_file():
            return directory
    raise SpecError([Problem(cwd / "suite.yaml", None,
                             "no benchkit tree here or above (set BENCHKIT_ROOT)")])


def yaml_files(directory: Path) -> list[Path]:
    if not directory.is_dir():
        return []
    return sorted(p for p in directory.iterdir() if p.suffix in YAML_SUFFIXES and p.is_file())


def _collect(problems: list, load, *args):
    """Run one loader; keep its problems and return None instead of raising."""
    try:
        return load(*args)
    except SpecError as error:
        problems.extend(error.problems)
        return None


def load_seeds(root: Path, problems: list) -> dict:
    """name -> Seed; a seed with problems maps to None, so tasks on it are checked for
    shape only instead of being buried in follow-on errors."""
    paths = yaml_files(root / "seeds")
    if not paths:
        problems.append(Problem(root / "seeds", None, "no seed files (expected seeds/default.yaml)"))
    return {path.stem: _collect(problems, load_seed, path) for path in paths}


def load_arms(root: Path, problems: list) -> dict:
    return _by_id([_collect(problems, load_arm, p) for p in yaml_files(root / "arms.d")],
                  "arm", problems)


def load_tasks(root: Path, seeds: dict, problems: list) -> dict:
    paths = yaml_files(root / "tasks.d")
    if not paths:
        return {}
    from benchkit.spec.task import load_task  # the scoring side's loader, only when needed
    tasks = [_collect(problems, load_task, p, seeds) for p in paths]
    return _by_id(sorted((t for t in tasks if t is not None), key=_task_order), "task", problems)




def _task_order(task):
    """Scored before bonus, then by tier as the reference suite lists them, then by id."""
    rank = SCORED_TIERS.index(task.tier) if task.tier in SCORED_TIERS else len(SCORED_TIERS)
    return (not task.scored, rank, task.id)


def _by_id(items, kind: str, problems: list) -> dict:
    found = {}
    for item in items:
        if item is None:
            continue
        if item.id in found:
            problems.append(_id_problem(item.path, (
                f"{kind} id {item.id!r} is already used by {found[item.id].path.name}")))
            continue
        found[item.id] = item
    return found


def _id_problem(path: Path, message: str) -> Problem:
    document = read_document(path)
    return document.problem(("id",), message)


def load_tree(root=None) -> Tree:
    """Load suite, seeds, arms and tasks; raise one SpecError with every problem."""
    root = Path(root).resolve() if root is not None else find_root()
    problems = []
    suite = _collect(problems, load_suite, root / "suite.yaml")
    seeds = load_seeds(root, problems)
    arms = load_arms(root, problems)
    tasks = load_tasks(root, seeds, problems)
    if problems:
        raise SpecError(problems)
    return Tree(root, suite, seeds, arms, tasks)


# --- validating chosen files ---------------------------------------------------------

def document_kind(path: Path) -> str | None:
    """suite, seed, task, arm (or another shipped schema's name): by the file's name or
    directory, else by the schema its `# yaml-language-server: $schema=` line names."""
    if path.name in ("suite.yaml", "suite.yml"):
        return "suite"
    if path.parent.name in DIRECTORIES:
        return DIRECTORIES[path.parent.name]
    declared = declared_schema(path)
    if declared is not None and (SCHEMA_DIR / declared.name).is_file():
        return declared.name.removesuffix(".schema.json")
    return None


def validate_paths(paths) -> tuple[list[Path], list[Problem]]:
    """The documents checked and every problem they have, for the given files and
    directories. A directory holding suite.yaml is validated as a whole tree, with the
    files of its other `*.d/` directories that name a shipped schema (e.g. refs.d/)."""
    checked, problems, seeds_of, trees = [], [], {}, {}
    for path in map(Path, paths):
        if not path.exists():
            problems.append(Problem(path, None, "no such file or directory"))
            continue
        if path.is_dir() and (path / "suite.yaml").is_file():
            trees[path.resolve()] = _collect(problems, load_tree, path)
            checked += [path / "suite.yaml"] + [f for d in DIRECTORIES for f in yaml_files(path / d)]
            files = [f for d in sorted(path.glob("*.d")) if d.name not in DIRECTORIES
                     for f in yaml_files(d) if document_kind(f)]
        else:
            files = yaml_files(path) if path.is_dir() else [path]
        for file in files:
            _validate_file(file, problems, seeds_of, trees)
            checked.append(file)
    return checked, sort_problems(problems)


LOADERS = {"suite": load_suite, "seed": load_seed, "arm": load_arm}


def _validate_file(path: Path, problems: list, seeds_of: dict, trees: dict):
    kind = document_kind(path)
    if kind is None:
        problems.append(Problem(path, None, (
            "not a benchkit document: expected suite.yaml, a file in seeds/, tasks.d/ or "
            "arms.d/, or a `# yaml-language-server: $schema=` line naming a benchkit schema")))
    elif kind == "task":
        from benchkit.spec.task import load_task
        _collect(problems, load_task, path, _seeds_for(path, problems, seeds_of))
    elif kind in LOADERS:
        _collect(problems, LOADERS[kind], path)
    elif kind == "reference":
        _check_reference(path, problems, _tree_for(path, trees))
    else:  # another shipped schema (e.g. reference solutions): its shape only
        _collect(problems, load_document, path, kind)


def _check_reference(path: Path, problems: list, tree: Tree | None):
    """A reference checked against its tree: the tasks it covers exist, and its steps
    suit its arm's tool kind (an arm outside arms.d/, such as a test arm, is not known
    here: then its steps are checked for shape and templates only)."""
    from benchkit.spec.reference import load_reference
    arm = tree.arms.get(path.stem) if tree is not None else None
    _collect(problems, lambda: load_reference(
        path, kind=arm.tool["kind"] if arm else None, tasks=set(tree.tasks) if tree else None))


def _tree_for(path: Path, trees: dict) -> Tree | None:
    """The loaded tree a refs.d/ file belongs to (once per tree; None when it has
    problems of its own, which its own documents report)."""
    root = path.resolve().parent.parent
    if root not in trees:
        trees[root] = _collect([], load_tree, root) if (root / "suite.yaml").is_file() else None
    return trees[root]


def _seeds_for(task_path: Path, problems: list, seeds_of: dict) -> dict:
    """The seeds of the tree a task file belongs to (loaded once per tree)."""
    root = task_path.resolve().parent.parent
    if not (root / "seeds").is_dir():
        root = _collect(problems, find_root)
        if root is None:
            return {}
    if root not in seeds_of:
        seeds_of[root] = load_seeds(root, problems)
    return seeds_of[root]
