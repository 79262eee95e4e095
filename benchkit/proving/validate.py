"""`benchkit validate`: the documents against their schemas, or with --live the arms on
a host (benchkit.proving.selfcheck).

The command sits above the trial because --live runs arms; without --live it needs
only the documents package (benchkit.documents.commands.validate_documents), so it answers in a blink.
"""

import sys
from pathlib import Path

import click

from benchkit.documents.commands import validate_documents
from benchkit.errors import HarnessError
from benchkit.exits import reported


@click.command()
@click.argument("paths", nargs=-1, type=click.Path(path_type=Path))
@click.option("--live", is_flag=True,
              help="Prove arms on a host instead (PATHS: arm YAML files, default every arm): "
                   "each task's reference must pass, a null agent and a wrong target must fail.")
@click.option("--task", "task_ids", metavar="ID|GLOB", multiple=True,
              help="--live: only the tasks matching (e.g. 'fta-*'); repeatable.")
@click.option("--jobs", type=click.IntRange(min=1), default=3, show_default=True,
              help="--live: controls run at once.")
@click.option("--allow-unprovable", is_flag=True,
              help="--live: a task with no reference for an arm is a warning, not a failure "
                   "(while an arm's references are being written).")
@click.option("--host", metavar="URL|gitea",
              help="--live: Gitea host (default: GITEA_URL, a tea login, else an embedded "
                   "forge); `gitea`: a throwaway pinned Gitea started for the check.")
@click.option("--token", metavar="TOKEN", help="--live: access token (default: GITEA_TOKEN, else the tea login).")
@click.option("--login", metavar="NAME", help="--live: use this tea login.")
@click.pass_context
def validate(ctx: click.Context, paths, live, task_ids, jobs, allow_unprovable, host, token,
             login):
    """Validate YAML documents: files, directories or trees (default: the whole tree).

    Exit 0 when valid (a scored task an arm of arms.d/ has no reference for is a warning
    on stderr: not provable on that arm); exit 2 with a `FILE:LINE: message` line per
    problem. With --live, exit 0 only when every task is proved: 1 when any is
    unsolvable, mis-scored, ambiguous, or unprovable (no reference for the arm: unless
    --allow-unprovable), 2 when the host cannot be used (benchkit.proving.selfcheck).

    \b
    Examples:
      benchkit validate                                   # the whole tree
      benchkit validate tasks.d/ms-triage-export-perf.yaml
      benchkit validate --live arms.d/raw-api.yaml --task 'fta-*'
    """
    if live:
        ctx.exit(_live(paths, task_ids=task_ids, jobs=jobs, host=host, token=token, login=login,
                       allow_unprovable=allow_unprovable))
    validate_documents(paths)


def _live(arm_paths, *, task_ids, jobs, host, token, login, allow_unprovable=False) -> int:
    """Run, print the table; the exit status (0 every task proved, 1 any unsolvable,
    mis-scored, ambiguous or unproved). Bad documents exit 2, a host that cannot be
    used at all 1, before any table. An unprovable task fails the proof too: a
    maintainer (or CI) reading exit 0 as "the arm is proven" must not be told so of an
    arm with 6 tasks proved and 15 never tried; --allow-unprovable accepts them."""
    # Imported here, not at the top: the self-check (the agent's replay driver) adds
    # 85 ms (measured) to the 150 ms a plain `validate` takes, and only --live uses it.
    from benchkit.proving.selfcheck import render_table, validate_live
    with reported(HarnessError):
        checks = validate_live(arm_paths, host=host, token=token, login=login, task_ids=task_ids,
                               jobs=jobs, progress=lambda line: print(line, file=sys.stderr))
    print(render_table(checks))
    unprovable = sum(c.verdict == "unprovable" for c in checks)
    if unprovable and not allow_unprovable:
        print(f"error: {unprovable} task(s) unprovable: no reference solution for the arm "
              "(refs.d/); add the steps, or give --allow-unprovable to prove the others alone",
              file=sys.stderr)
        return 1
    return 1 if any(c.problem for c in checks) else 0
