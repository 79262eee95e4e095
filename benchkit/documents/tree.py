"""The tree of documents: suite.yaml, seeds/, arms.d/, tasks.d/ (and refs.d/), found,
loaded and validated together.

`load_tree` raises one DocumentError with every problem of every document; `validate_paths`
checks chosen files and directories and returns the problems instead.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal, overload

from benchkit import SCHEMA_DIR, find_tree, yaml_files
from benchkit.documents.loader import (
    DocumentError,
    Problem,
    declared_schema,
    did_you_mean,
    load_document,
    read_document,
    sort_problems,
)
from benchkit.documents.models import Arm, Seed, Suite, load_arm, load_seed, load_suite
from benchkit.documents.reference import load_reference
from benchkit.documents.task import Task, load_task
from benchkit.sample import SCORED_TIERS

# Directory of the tree -> the kind of document it holds.
DIRECTORIES = {"seeds": "seed", "tasks.d": "task", "arms.d": "arm"}


@dataclass(frozen=True)
class Tree:
    root: Path
    suite: Suite
    seeds: dict[str, Seed]  # by name
    arms: dict[str, Arm]  # by id
    tasks: dict[str, Task]  # by id


@overload
def find_root(*, required: Literal[True] = True) -> Path: ...
@overload
def find_root(*, required: bool) -> Path | None: ...
def find_root(*, required: bool = True) -> Path | None:
    """The tree holding suite.yaml: $BENCHKIT_ROOT, else the working directory or the
    nearest parent with one, else the checkout beside the installed package. None
    where there is none and it is not `required` (else DocumentError)."""
    try:
        return _find_root()
    except DocumentError:
        if required:
            raise
        return None


def _find_root() -> Path:
    root = find_tree()
    if root is not None:
        return root
    override = os.environ.get("BENCHKIT_ROOT")
    if override:
        root = Path(override).resolve()
        raise DocumentError([Problem(root / "suite.yaml", None, "not found (BENCHKIT_ROOT points here)")])
    raise DocumentError([Problem(Path.cwd().resolve() / "suite.yaml", None,
                                 "no benchkit tree here or above (set BENCHKIT_ROOT)")])


def _collect(problems: list, load, *args):
    """Run one loader; keep its problems and return None instead of raising."""
    try:
        return load(*args)
    except DocumentError as error:
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
    tasks = [_collect(problems, load_task, p, seeds) for p in paths]
    return _by_id(sorted((t for t in tasks if t is not None), key=_task_order), "task", problems)


def _task_order(task):
    """Scored before bonus, then by tier as the reference suite lists them, then by id."""
    rank = SCORED_TIERS.index(task.tier) if task.tier in SCORED_TIERS else len(SCORED_TIERS)
    return (not task.scored, rank, task.id)


def _by_id(items, kind: str, problems: list) -> dict:
    found: dict[str, Any] = {}  # Arms or Tasks, by id
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
    """Load suite, seeds, arms and tasks; raise one DocumentError with every problem."""
    tree, problems = load_tree_parts(root)
    if problems or tree is None:
        raise DocumentError(problems)
    return tree


def load_tree_parts(root=None) -> tuple[Tree | None, list[Problem]]:
    """The tree of every document that loads (None when suite.yaml does not), and the
    problems of the others: a broken task or arm is left out of `tasks` or `arms`, so
    a command that does not need it can go on (benchkit.preflight.checks decides which)."""
    root = Path(root).resolve() if root is not None else find_root()
    problems: list[Problem] = []
    suite = _collect(problems, load_suite, root / "suite.yaml")
    seeds = load_seeds(root, problems)
    arms = load_arms(root, problems)
    tasks = load_tasks(root, seeds, problems)
    problems += applicability_problems(tasks, {*arms, *(p.stem for p in yaml_files(root / "arms.d"))})
    return (None if suite is None else Tree(root, suite, seeds, arms, tasks)), problems


def applicability_problems(tasks: dict, arm_ids: set) -> list[Problem]:
    """A task's `applicability` naming an arm arms.d/ does not hold (a typo would leave
    the arm's real applicability at its default, unsaid)."""
    found = []
    for task in tasks.values():
        for arm in task.applicability:
            if arm not in arm_ids:
                found.append(read_document(task.path).problem(
                    ("applicability", arm), f"no arm {arm!r} in arms.d/"
                    + did_you_mean(arm, arm_ids)))
    return found


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
    return kind_by_content(path)


# The documents a file anywhere may be, by what it holds: the keys only that kind
# requires (a seed requires none: its keys are all a seed may have).
CONTENT_KINDS = {"suite": {"base_prompt"}, "task": {"tier", "intent"}, "arm": {"tool"},
                 "reference": {"arm", "tasks"}}
SEED_KEYS = {"files", "labels", "milestones", "issues", "pull_requests"}


def kind_by_content(path: Path) -> str | None:
    """suite, task, arm, reference or seed, by the top-level keys of the YAML mapping in
    `path` (a task drafted outside tasks.d/ with no schema line); None when it reads as
    none of them, or not at all."""
    try:
        data = read_document(path).data
    except DocumentError:
        return None
    if not isinstance(data, dict) or not data:
        return None
    keys = set(map(str, data))
    for kind, required in CONTENT_KINDS.items():
        if required <= keys:
            return kind
    return "seed" if keys <= SEED_KEYS else None


def validate_paths(paths) -> tuple[list[Path], list[Problem]]:
    """The documents checked and every problem they have, for the given files and
    directories. A directory holding suite.yaml is validated as a whole tree, with the
    files of its other `*.d/` directories that name a shipped schema (e.g. refs.d/)."""
    checked: list[Path] = []
    problems: list[Problem] = []
    seeds_of: dict[Path, dict] = {}
    trees: dict[Path, Tree | None] = {}
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
        try:  # a file that does not read as YAML says why (its kind is not the first news)
            read_document(path)
        except DocumentError as error:
            problems.extend(error.problems)
            return
        problems.append(Problem(path, None, (
            "not a benchkit document: expected suite.yaml, a file in seeds/, tasks.d/ or "
            "arms.d/, a `# yaml-language-server: $schema=` line naming a benchkit schema, "
            "or the keys of one (a task's `tier` and `intent`, an arm's `tool`, a seed's "
            "`labels`/`issues`/`pull_requests`)")))
    elif kind == "task":
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
    arm = tree.arms.get(path.stem) if tree is not None else None
    _collect(problems, lambda: load_reference(
        path, kind=arm.tool.kind if arm else None, tasks=set(tree.tasks) if tree else None,
        tool_search=arm.tool.tool_search if arm else None))


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
