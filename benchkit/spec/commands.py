"""`benchkit validate` and `benchkit list`: the spec's commands.

Neither imports the forge, the SDK or the report code, so both answer in a blink.
"""

import json
import sys
from pathlib import Path

import click

from benchkit.exits import fail
from benchkit.spec.loader import SpecError, display_path
from benchkit.spec.models import (
    find_root,
    load_arms,
    load_seeds,
    load_tasks,
    load_tree,
    validate_paths,
)
from benchkit.spec.reference import load_reference, no_reference, reference_path


@click.command()
@click.argument("paths", nargs=-1, type=click.Path(path_type=Path))
@click.option("--live", is_flag=True,
              help="Prove arms on a host instead (PATHS: arm YAML files, default every arm): "
                   "each task's reference must pass, a null agent and a wrong target must fail.")
@click.option("--task", "task_ids", metavar="ID|GLOB", multiple=True,
              help="--live: only the tasks matching (e.g. 'fta-*'); repeatable.")
@click.option("--jobs", type=click.IntRange(min=1), default=3, show_default=True,
              help="--live: controls run at once.")
@click.option("--host", metavar="URL", help="--live: Gitea host (default: GITEA_URL, a tea login, else an embedded forge).")
@click.option("--token", metavar="TOKEN", help="--live: access token (default: GITEA_TOKEN, else the tea login).")
@click.option("--login", metavar="NAME", help="--live: use this tea login.")
def validate(paths, live, task_ids, jobs, host, token, login):
    """Validate YAML documents: files, directories or trees (default: the whole tree).

    Exit 0 when valid (a scored task an arm of arms.d/ has no reference for is a warning
    on stderr: not provable on that arm); exit 2 with a `FILE:LINE: message` line per
    problem. With --live, exit 1 when any task is unsolvable, mis-scored or ambiguous,
    2 when the host cannot be used (benchkit.run.selfcheck).

    \b
    Examples:
      benchkit validate                                   # the whole tree
      benchkit validate tasks.d/ms-wontfix-export-perf.yaml
      benchkit validate --live arms.d/raw-api.yaml --task 'fta-*'
    """
    if live:
        from benchkit.run.selfcheck import command
        sys.exit(command(paths, task_ids=task_ids, jobs=jobs, host=host, token=token, login=login))
    try:
        paths = paths or [find_root()]
        checked, problems = validate_paths(paths)
    except SpecError as error:
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
        tree = load_tree(root)
        for arm in tree.arms.values():
            path = reference_path(arm.id, root)
            covered = set(load_reference(path).tasks) if path.is_file() else set()
            for task in tree.tasks.values():
                if (task.scored and task.has_spec and task.id not in covered
                        and (task_ids is None or task.id in task_ids)
                        and task.applicability.get(arm.id) != "not-applicable"):
                    warnings.append(f"{display_path(task.path)}: warning: {no_reference(arm.id)}")
    return warnings


def _trees_of(paths) -> dict:
    """tree root -> the task ids named (None: the whole tree)."""
    trees = {}
    for path in map(Path, paths):
        if path.is_dir() and (path / "suite.yaml").is_file():
            trees[path.resolve()] = None
        elif path.is_file() and path.parent.name == "tasks.d" \
                and (path.parent.parent / "suite.yaml").is_file():
            root = path.parent.parent.resolve()
            if root not in trees or trees[root] is not None:
                trees.setdefault(root, set()).add(path.stem)
    return trees


@click.command("list")
@click.argument("what", type=click.Choice(["tasks", "arms"]))
@click.option("--json", "as_json", is_flag=True, help="A JSON array instead of a table.")
def list_documents(what, as_json):
    """List the tree's tasks or arms.

    \b
    Examples:
      benchkit list tasks
      benchkit list arms --json
    """
    problems = []
    try:
        root = find_root()
        if what == "arms":
            rows = [_arm_row(arm) for arm in load_arms(root, problems).values()]
        else:
            seeds = load_seeds(root, problems)
            rows = [_task_row(task) for task in load_tasks(root, seeds, problems).values()]
    except SpecError as error:
        problems += error.problems
    if problems:
        fail(problems)
    if as_json:
        click.echo(json.dumps(rows, indent=2, ensure_ascii=False))
    else:
        columns = ["id", "kind", "tool", "description"] if what == "arms" else ["id", "tier", "kind", "scored"]
        click.echo(_table(rows, columns))


def _task_row(task) -> dict:
    return {"id": task.id, "path": display_path(task.path), "tier": task.tier, "kind": task.kind,
            "scored": task.scored, "intent": task.intent, "fingerprint": task.fingerprint}


def _arm_row(arm) -> dict:
    tool = arm.tool
    command = tool["binary"] if tool["kind"] == "shell" else tool["server"]["command"]
    return {"id": arm.id, "path": display_path(arm.path), "kind": tool["kind"], "tool": command,
            "user_agents": list(arm.user_agents), "description": arm.description,
            "fingerprint": arm.fingerprint}


def _table(rows, columns) -> str:
    cells = [columns] + [[_cell(row[c]) for c in columns] for row in rows]
    widths = [max(len(line[i]) for line in cells) for i in range(len(columns))]
    return "\n".join("  ".join(v.ljust(w) for v, w in zip(line, widths)).rstrip() for line in cells)


def _cell(value) -> str:
    if isinstance(value, bool):
        return "yes" if value else "no"
    return str(value)
