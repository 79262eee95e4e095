"""`benchkit show`: the store's trials, and why one of them came out as it did."""

from __future__ import annotations

import json
from pathlib import Path

import click
import msgspec

from benchkit.exits import BadInput
from benchkit.report.links import trial_href
from benchkit.report.load import open_store
from benchkit.report.trials import find_trial, list_lines, load_trials, trial_lines, trial_view
from benchkit.sample import OUTCOMES


@click.command()
@click.argument("sample_id", metavar="[ID]", required=False)
@click.option("--store", "store_dir", type=click.Path(file_okay=False, path_type=Path),
              default="results", show_default=True, help="Store directory.")
@click.option("--arm", "arms", multiple=True, metavar="ID|GLOB", help="Only this arm; repeatable.")
@click.option("--task", "tasks", multiple=True, metavar="ID|GLOB",
              help="Only this task (e.g. 'fta-*'); repeatable.")
@click.option("--outcome", "outcomes", multiple=True,
              type=click.Choice([*OUTCOMES, "failures"]),
              help="Only trials with this outcome (`failures`: every one but passed); repeatable.")
@click.option("--reports", "reports_dir", type=click.Path(file_okay=False, path_type=Path),
              default="reports", show_default=True,
              help="The reports directory whose trial page ID names.")
@click.option("--limit", type=click.IntRange(min=1), default=50, show_default=True,
              help="List at most this many trials.")
@click.option("--full", is_flag=True, help="A tool's output whole, as recorded.")
@click.option("--json", "as_json", is_flag=True, help="The samples (or the one trial) as JSON.")
def show(sample_id, store_dir, arms, tasks, outcomes, reports_dir, limit, full, as_json):
    """List the store's trials, newest first, or show one trial (ID: its sample id or a
    unique prefix): outcome, failure class, the checker's differences, tokens per
    component, turns, the failure replay's verdict, the transcript as a conversation
    (tool calls, their output, the guard's denials) and the path of its page in the
    HTML report. Exit 0, or 2 when the store or the trial is not there.

    \b
    Examples:
      benchkit show --outcome failures --task 'fta-*'
      benchkit show 43e5990b
    """
    store = open_store(store_dir)
    try:
        if sample_id:
            view = trial_view(store, find_trial(store, sample_id))
            if as_json:
                # the failure replay is a typed record (benchkit.replays): as stored
                click.echo(json.dumps(view, indent=1, ensure_ascii=False,
                                      default=msgspec.to_builtins))
                return
            click.echo("\n".join([*trial_lines(view, full=full), "",
                                   page_line(reports_dir, view["sample"])]))
            return
        trials = load_trials(store, arms=arms, tasks=tasks, outcomes=outcomes)
    except (FileNotFoundError, LookupError) as error:
        raise BadInput(str(error.args[0] if error.args else error)) from None
    for problem in trials.problems:
        click.echo(f"warning: {problem}", err=True)
    shown = trials.samples[:limit]
    if as_json:
        click.echo(json.dumps(shown, indent=1, ensure_ascii=False))
        return
    if not shown:
        click.echo("no trials match")
        return
    click.echo("\n".join(list_lines(shown)))
    if len(trials.samples) > limit:
        click.echo(f"... {len(trials.samples) - limit} more (--limit)")


def page_line(reports_dir: Path, sample: dict) -> str:
    """Where the trial's page is in the HTML report, or would be once it is rendered."""
    page = reports_dir / trial_href(sample.get("arm", ""), sample.get("task", ""),
                                    sample.get("id", ""))
    return f"page: {page}" + ("" if page.is_file() else " (not written yet: benchkit report)")
