"""Task documents (tasks.d/<id>.yaml): loading, validation, the Task model.

A task is validated in two passes: the JSON Schema (shape), then the meaning of its
scoring spec against the seed it names (selectors that match nothing or too much,
undefined labels, edits that change nothing, patterns that do not compile). Every
problem is a `Problem` at the line of the offending key, raised together.
"""

import re
from dataclasses import dataclass, field
from pathlib import Path

from benchkit.documents.answer_key import key_problems
from benchkit.documents.expectation import edit_problems, resolve_variant
from benchkit.documents.loader import load_document, schema_problems
from benchkit.documents.models import load_seed
from benchkit.fingerprint import fingerprint


@dataclass(frozen=True, eq=False)
class Task:
    id: str
    tier: str
    scored: bool
    kind: str  # "read" | "mutation" | "bonus"
    intent: str  # the wording for hosts that forbid self-review (the common case)
    seed: str  # the seed's name: seeds/<seed>.yaml
    facts: list
    edits: list
    applicability: dict
    only_when: dict
    path: Path
    data: dict = field(repr=False)
    fingerprint: str = ""

    def intent_for(self, self_review: bool) -> str:
        """The intent worded for a host that does (or does not) permit self-review."""
        return resolve_variant(self.data["intent"], self_review)

    def applies_to(self, *, self_review: bool) -> bool:
        """Whether the task means something on a host with this self-review permission."""
        wanted = self.only_when.get("self_review")
        return wanted is None or (wanted == "permitted") == self_review

    @property
    def has_spec(self) -> bool:
        """Whether the checker can score it (every scored task; some bonus operations)."""
        return bool(self.facts or self.edits)


def load_task(path, seeds=None) -> Task:
    """Load and validate one task document against its seed.

    `seeds` maps seed names to seeds (models with `.data`, or plain dicts); a single
    seed stands for every name; None finds seeds/<name>.yaml beside the task's tree.
    Raises DocumentError listing every problem, the schema's and the loader's own together.
    """
    path = Path(path)
    document = load_document(path, "task", lambda document: _check(document, path, seeds))
    return _task(path, document.data)


def _check(document, path, seeds) -> list:
    """The rules a schema cannot express; shapes the schema rejected are skipped."""
    data, problems = document.data, []
    if isinstance(data.get("id"), str) and data["id"] != path.stem:
        problems.append(document.problem(
            ("id",), f"id {data['id']!r} differs from the file name {path.stem!r}"))
    for key in ("facts", "forbidden_facts"):
        for index, fact in enumerate(_list(data.get(key))):
            if isinstance(fact, dict) and isinstance(fact.get("pattern"), str):
                try:
                    re.compile(fact["pattern"])
                except re.error as error:
                    problems.append(document.problem((key, index, "pattern"),
                                                     f"invalid regex: {error}"))
    edits = _list(data.get("edits"))
    if isinstance(data.get("seed"), str):
        seed = _find_seed(path, data["seed"], seeds, document, problems)
        if seed is not None and data.get("facts") and not problems \
                and not schema_problems(document, "task"):
            problems += [document.problem(where, message)
                         for where, message in key_problems(data, seed)]
        if seed is not None and edits:
            try:
                found = edit_problems(edits, seed)
            except (KeyError, TypeError, AttributeError, ValueError):
                if not schema_problems(document, "task"):
                    raise
                found = []  # a malformed edit: the schema has said so
            rejected = [p.where for p in schema_problems(document, "task") if p.where] \
                if found else []
            # A value of the wrong shape is the schema's to report: read anyway (a string
            # where a list of labels goes reads as its letters), it says nothing more.
            problems += [problem for problem in (
                document.problem(where, message, at_key=where == ("edits",))
                for where, message in found) if not _within(problem.where, rejected)]
    return problems


def _within(where: str, rejected: list[str]) -> bool:
    """Whether a place (`edits[0].add_labels[1]`) is at or inside one the schema rejected."""
    return any(where == place or where.startswith((place + ".", place + "["))
               for place in rejected)


def _list(value) -> list:
    return value if isinstance(value, list) else []


def _task(path, data) -> Task:
    tier = data["tier"]
    kind = "bonus" if not data["scored"] else "read" if tier == "read" else "mutation"
    return Task(
        id=data["id"], tier=tier, scored=data["scored"], kind=kind,
        intent=resolve_variant(data["intent"], False), seed=data["seed"],
        facts=data.get("facts", []), edits=data.get("edits", []),
        applicability=data.get("applicability", {}), only_when=data.get("only_when", {}),
        path=path, data=data, fingerprint=fingerprint(data),
    )


def _find_seed(path, name, seeds, document, problems):
    if seeds is None:
        return _seed_beside(path, name, document, problems)
    if hasattr(seeds, "data") or not _is_mapping_of_seeds(seeds):
        return seeds  # one seed for every name
    if name not in seeds:
        known = ", ".join(sorted(seeds)) or "none"
        problems.append(document.problem(("seed",), f"unknown seed {name!r} (known: {known})"))
        return None
    return seeds[name]


def _is_mapping_of_seeds(seeds) -> bool:
    """A {name: seed} map, as opposed to one seed's own data (which has labels/issues)."""
    return isinstance(seeds, dict) and not ({"labels", "issues", "pull_requests"} & set(seeds))


def _seed_beside(path, name, document, problems):
    found = seed_path(path, name)
    if found is None:
        problems.append(document.problem(
            ("seed",), f"seed {name!r} not found: no seeds/{name}.yaml above the task"))
        return None
    return load_seed(found)


def seed_path(task_path, name):
    """seeds/<name>.yaml in the nearest directory above the task that has one."""
    for directory in Path(task_path).resolve().parents:
        candidate = directory / "seeds" / f"{name}.yaml"
        if candidate.is_file():
            return candidate
    return None


def seed_given(value: str, near) -> Path | None:
    """A `--seed` option's seed file: `value` as a path when it names a file, else as a
    seed's name (what a task's `seed:` says), seeds/<value>.yaml of the tree above
    `near` (a task file, or the tree's suite.yaml). None when it is neither."""
    path = Path(value)
    if path.is_file():
        return path
    if path.name == value and path.suffix not in (".yaml", ".yml"):
        return seed_path(near, value)
    return None
