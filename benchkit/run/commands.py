"""`benchkit run`: for now, single cells: each ARM_YAML x each --task, one trial each.

With no host given or discovered (flags, GITEA_URL/GITEA_TOKEN, a tea login) it runs
against an embedded forge started for the run. The per-cell logic is in cell.py; the
full run loop (trials, budgets, jobs) builds on it.
"""

from __future__ import annotations

import contextlib
import sys
from pathlib import Path

import click

from benchkit.gitea.commands import host_options


@click.command()
@click.argument("arm_yamls", metavar="ARM_YAML...", nargs=-1, required=True,
                type=click.Path(exists=True, dir_okay=False))
@click.option("--task", "task_ids", metavar="ID", multiple=True, required=True,
              help="Task id (tasks.d/<id>.yaml); repeat for more.")
@click.option("--driver", "driver_name", type=click.Choice(["claude", "replay"]),
              default="claude", show_default=True,
              help="claude spends real tokens; replay plays refs.d/<arm>.yaml through a "
                   "scripted model (estimated usage).")
@click.option("--model", help="Model for every arm (default: suite.yaml's).")
@click.option("--store", "store_dir", type=click.Path(file_okay=False), default="results",
              show_default=True, help="Store directory (results/<arm>/<task>.jsonl).")
@host_options
def run(arm_yamls, task_ids, driver_name, model, store_dir, host, token, login):
    """Run one trial of each (ARM_YAML, --task) cell and append its sample."""
    from benchkit.errors import HarnessError
    from benchkit.spec import SpecError

    try:
        tree, arms, tasks = _load(arm_yamls, task_ids)
        with _host(host, token, login) as client:
            failed = _run_cells(tree, arms, tasks, client, driver_name, model, store_dir)
    except SpecError as exc:
        for problem in exc.problems:
            click.echo(str(problem), err=True)
        sys.exit(2)
    except HarnessError as exc:
        click.echo(f"error: {exc}", err=True)
        sys.exit(1)
    sys.exit(1 if failed else 0)


def _load(arm_yamls, task_ids):
    from benchkit.spec import Problem, SpecError, load_arm, load_tree
    tree = load_tree()
    arms = [load_arm(path) for path in arm_yamls]
    unknown = [task_id for task_id in task_ids if task_id not in tree.tasks]
    if unknown:
        raise SpecError([Problem(tree.root / "tasks.d" / f"{task_id}.yaml", None,
                                 f"no task {task_id!r} (see `benchkit list tasks`)")
                         for task_id in unknown])
    return tree, arms, [tree.tasks[task_id] for task_id in task_ids]


@contextlib.contextmanager
def _host(host, token, login):
    """The host's client: the given or discovered one, else an embedded forge's."""
    from benchkit.gitea import Client, CredentialsError, resolve_credentials
    try:
        credentials = resolve_credentials(host=host, token=token, login=login)
    except CredentialsError:
        if host or token or login:
            raise
        credentials = None
    if credentials is not None:
        with credentials.client() as client:
            yield client
        return
    from benchkit.forge import Forge
    with Forge() as forge:
        click.echo(f"no Gitea host given: running against an embedded forge at {forge.url}",
                   err=True)
        with Client(forge.url, forge.token) as client:
            yield client


def _run_cells(tree, arms, tasks, client, driver_name, model, store_dir) -> bool:
    """Run each cell once; True when any could not run or was a harness error."""
    from benchkit.run.cell import Cell, CellError, RunContext, run_cell
    from benchkit.store import Store

    store = Store(store_dir, secrets=[client.token])
    trouble = False
    for arm in arms:
        ctx = RunContext(suite=tree.suite, seeds=tree.seeds, client=client, store=store,
                         driver=_driver(driver_name, arm, tree.root), model=model,
                         root=tree.root)
        for task in tasks:
            try:
                sample = run_cell(Cell(arm, task), ctx)
            except CellError as exc:
                click.echo(f"{arm.id} {task.id}: not run: {exc}", err=True)
                trouble = True
                continue
            trouble |= sample["outcome"] == "harness-error"
            click.echo(_line(sample, store_dir))
    return trouble


def _driver(name: str, arm, root: Path):
    if name == "replay":
        from benchkit.agent.replay import ReplayDriver, reference_for
        return ReplayDriver(reference_for(arm, root))
    from benchkit.agent.claude import ClaudeDriver
    return ClaudeDriver()


def _line(sample: dict, store_dir) -> str:
    usage = sample["usage"]
    tokens = usage["input"] + usage["cache_write"] + usage["cache_read"] + usage["output"]
    detail = sample["failure_class"] or ""
    if sample["outcome"] == "failed" and sample["differences"]:
        detail = sample["differences"][0]
    elif sample["error"]:
        detail = f"{detail}: {sample['error'].splitlines()[0]}"
    estimated = " (estimated)" if sample["usage_estimated"] else ""
    return (f"{sample['arm']} {sample['task']}: {sample['outcome']}"
            f"{' - ' + detail if detail else ''} | {tokens} tokens{estimated}, "
            f"{sample['turns']} turns, {sample['duration_s']:.1f}s "
            f"-> {Path(store_dir) / sample['arm'] / (sample['task'] + '.jsonl')}")
