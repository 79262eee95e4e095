"""`benchkit list`, and what `benchkit validate` does without --live: the documents' commands.

Neither imports the forge, the SDK or the report code, so both answer in a blink; the
document loaders are imported when a document is first read (through the package,
benchkit.documents), so bare `benchkit list`, which reads none, starts with click alone. The
`validate` command itself is benchkit.proving.validate: with --live it runs the arms.
"""

import contextlib
import hashlib
import json
from pathlib import Path

import click

from benchkit import cache, cache_dir, documents, find_tree, yaml_files
from benchkit.exits import fail


def validate_documents(paths) -> None:
    """`benchkit validate` without --live: the documents at `paths` (default: the whole
    tree) against their schemas; exit 2 through `fail` on any problem."""
    try:
        paths = paths or [documents.find_root()]
        checked, problems = documents.validate_paths(paths)
    except documents.DocumentError as error:
        checked, problems = [], error.problems
    if problems:
        fail(problems)
    for warning in unprovable(paths):
        click.echo(warning, err=True)
    click.echo(f"valid: {len(checked)} document{'s' if len(checked) != 1 else ''}")


def unprovable(paths) -> list[str]:
    """A warning per scored task of the validated trees (or task files) that an arm of
    their arms.d/ has no reference solution for: replay and validate --live skip it."""
    warnings = []
    for root, task_ids in _trees_of(paths).items():
        tree = documents.load_tree(root)
        for arm in tree.arms.values():
            path = documents.reference_path(arm.id, root)
            if not path.is_file():  # one warning for the arm, not one per task
                warnings.append(f"{documents.display_path(arm.path)}: warning: not provable on arm "
                                f"{arm.id}: no refs.d/{arm.id}.yaml (replay and validate "
                                "--live skip its tasks)")
                continue
            covered = set(documents.load_reference(path).tasks)
            for task in tree.tasks.values():
                if (task.scored and task.has_spec and task.id not in covered
                        and (task_ids is None or task.id in task_ids)
                        and task.applicability.get(arm.id) != "not-applicable"):
                    warnings.append(f"{documents.display_path(task.path)}: warning: "
                                    f"{documents.no_reference(arm.id)}")
    return warnings


def _trees_of(paths) -> dict:
    """tree root -> the task ids named (None: the whole tree)."""
    trees: dict[Path, set[str] | None] = {}
    for path in map(Path, paths):
        if path.is_dir() and (path / "suite.yaml").is_file():
            trees[path.resolve()] = None
        elif path.is_file() and path.parent.name == "tasks.d" \
                and (path.parent.parent / "suite.yaml").is_file():
            named = trees.setdefault(path.parent.parent.resolve(), set())
            if named is not None:  # else the whole tree is named already
                named.add(path.stem)
    return trees


# What `benchkit list` lists: kind -> (its directory, what its table shows).
KINDS = {"tasks": ("tasks.d", "id, tier, kind, scored"),
         "arms": ("arms.d", "id, kind, tool, whether the tool is installed here")}
VERSION_SHOWN = 60  # characters of a tool's version line in the table (--json: whole)
TASKS_FORMAT = 1


@click.command("list")
@click.argument("what", type=click.Choice(list(KINDS)), required=False)
@click.option("--json", "as_json", is_flag=True, help="A JSON array instead of a table.")
def list_documents(what, as_json):
    """List the tree's tasks or arms (whether each arm's tool is installed). A broken
    document is named on stderr (FILE:LINE: message, as `benchkit validate` names it,
    which exits 2 on it) and the others are listed.

    With no argument, what there is to list: each kind, how many files the tree holds,
    and what its list shows. `list arms` says, per arm, the version its tool reports
    here, or how to install it.

    \b
    Examples:
      benchkit list
      benchkit list tasks
      benchkit list arms --json
    """
    problems: list[documents.Problem] = []
    try:
        # find_tree first: the document loaders are imported only when a document is read
        # (benchkit.documents), and find_root, which says why there is no tree, is one of them.
        root = find_tree() or documents.find_root()
        if what is None:
            rows = [_kind_row(root, kind) for kind in KINDS]
        elif what == "arms":
            rows = [_arm_row(arm) for arm in documents.load_arms(root, problems).values()]
        else:
            rows = _task_rows(root, problems)
    except documents.DocumentError as error:  # no tree to list
        fail(problems + error.problems)
    for problem in problems:  # a broken document is named; the others are listed
        click.echo(str(problem), err=True)
    if as_json:
        click.echo(json.dumps(rows, indent=2, ensure_ascii=False))
    elif what is None:
        click.echo(_table([{**row, "command": f"benchkit list {row['kind']}",
                            "files": f"{row['files']} in {row['directory']}/"} for row in rows],
                          ["command", "files", "shows"]))
    elif what == "arms":
        click.echo(_table([{**row, "installed": _shortened(row["installed"])
                            if row["tool_version"] else row["installed"]} for row in rows],
                          ["id", "kind", "tool", "installed"]))
    else:
        click.echo(_table(rows, ["id", "tier", "kind", "scored"]))


def _kind_row(root: Path, kind: str) -> dict:
    directory, shows = KINDS[kind]
    return {"kind": kind, "directory": directory, "files": len(yaml_files(root / directory)),
            "shows": shows}


def _task_rows(root: Path, problems: list) -> list[dict]:
    """The tree's tasks as `list tasks` shows them, kept between runs while the tree,
    benchkit and the document loaders' libraries are as they were and the working directory (the
    paths shown are relative to it) is the same (benchkit.cache): loading and validating
    every task, and importing YAML and JSON Schema for it, was most of the command."""
    try:
        key = hashlib.blake2b(repr((TASKS_FORMAT, str(Path.cwd()))).encode()
                              + cache.tree_stamp(root)).hexdigest()
    except OSError:
        key = None
    name = hashlib.blake2b(str(root).encode(), digest_size=12).hexdigest()
    place = cache_dir() / "tasks" / f"{name}.json"
    data = cache.read(place) if key is not None else None
    with contextlib.suppress(ValueError):  # plain JSON: a foreign or corrupt entry is a miss
        kept = json.loads(data) if data is not None else None
        if isinstance(kept, dict) and kept.get("key") == key and isinstance(kept.get("rows"), list):
            return kept["rows"]
    seeds = documents.load_seeds(root, problems)
    rows = [_task_row(task) for task in documents.load_tasks(root, seeds, problems).values()]
    if key is not None and not problems:  # a broken document is named every time
        cache.keep(place, json.dumps({"key": key, "rows": rows}).encode())
    return rows


def _task_row(task) -> dict:
    return {"id": task.id, "path": documents.display_path(task.path), "tier": task.tier,
            "kind": task.kind,
            "scored": task.scored, "intent": task.intent, "fingerprint": task.fingerprint}


def _arm_row(arm) -> dict:
    # Imported here (measured: ~4 ms, subprocess and the probes' helpers), off `list
    # tasks`' start.
    from benchkit.installed import installed
    here = installed(arm.tool, documents.display_path(arm.path))
    return {"id": arm.id, "path": documents.display_path(arm.path), "kind": arm.tool.kind,
            "tool": arm.tool.executable, "installed": here.line, "tool_path": here.path,
            "tool_version": here.version, "install": here.install,
            "user_agents": list(arm.user_agents), "description": arm.description,
            "fingerprint": arm.fingerprint}


def _shortened(line: str) -> str:
    """A long version line (curl's names every library) cut at a word, for the table."""
    if len(line) <= VERSION_SHOWN:
        return line
    return line[:VERSION_SHOWN].rsplit(" ", 1)[0] + " ..."


def _table(rows, columns) -> str:
    cells = [columns] + [[_cell(row[c]) for c in columns] for row in rows]
    widths = [max(len(line[i]) for line in cells) for i in range(len(columns))]
    return "\n".join("  ".join(v.ljust(w) for v, w in zip(line, widths)).rstrip() for line in cells)


def _cell(value) -> str:
    if isinstance(value, bool):
        return "yes" if value else "no"
    return str(value)
