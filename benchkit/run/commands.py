"""`benchkit run` on the command line: its options, parsed and checked, then handed on.

    pre-flight (benchkit.preflight.checks)  nothing spent, nothing recorded on failure
    --dry-run (benchkit.run.dryrun)         the plan, nothing started
    the run (benchkit.run.execution)        host, run user, probes, lock, trials, report
    its exit status (benchkit.run.status)   decided in one place from how it ended

The loop itself is loop.py; one trial is trial/cell.py; the trials on their host are
invocation.py; the display is progress.py.
"""

from __future__ import annotations

import os
import shlex
import sys
from dataclasses import replace
from pathlib import Path

import click
import msgspec

from benchkit.documents.loader import did_you_mean
from benchkit.documents.tree import find_root, yaml_files
from benchkit.gitea.commands import host_options
from benchkit.planning.settings import ReportTarget, RunSettings
from benchkit.planning.shard import parse_shard
from benchkit.preflight.checks import PreflightError, load_documents, preflight
from benchkit.run import events
from benchkit.run.dryrun import dry_run as dry_run_plan
from benchkit.run.execution import after_interrupt, execute, preflight_failed
from benchkit.run.progress import Progress
from benchkit.run.status import RunEnd, exit_status
from benchkit.sample import DRIVERS, TIERS
from benchkit.stopping import Interrupted, Stop


class Until(click.ParamType):
    """A number, or a depth suite.yaml sets, by its key: `floor` or `trials`."""
    name = "N|floor|trials"
    SUITE_KEYS = ("floor", "trials")

    def convert(self, value, param, ctx):
        if isinstance(value, int) or value in self.SUITE_KEYS:
            return value
        try:
            number = int(value)
        except ValueError:
            number = 0
        if number < 1:
            self.fail(f"{value!r}: expected a positive number, `floor` or `trials`", param, ctx)
        return number


class Tokens(click.ParamType):
    """A budget: cost-equivalent tokens, 0 or more."""
    name = "TOKENS"

    def convert(self, value, param, ctx):
        try:
            number = float(value)
        except (TypeError, ValueError):
            number = -1.0
        if not number >= 0 or number == float("inf"):  # a negative, nan, inf, or no number
            self.fail(f"{value!r}: expected a number of cost-equivalent tokens, 0 or more "
                      "(e.g. 200000)", param, ctx)
        return number


class ShardOf(click.ParamType):
    """`I/N`: part I of N of the plan, counted from 0 (planning/shard.py)."""
    name = "I/N"

    def convert(self, value, param, ctx):
        if isinstance(value, tuple):
            return value
        shard = parse_shard(str(value))
        if shard is None:
            self.fail(f"{value!r}: expected I/N, part I of N counted from 0 (e.g. 0/3, 1/3, "
                      "2/3)", param, ctx)
        return shard


class ArmFile(click.Path):
    """An arm's YAML file; an arm id or a mistyped name gets the file it likely meant."""

    def __init__(self) -> None:
        super().__init__(exists=True, dir_okay=False)

    def convert(self, value, param, ctx):
        if not isinstance(value, str) or Path(value).exists():
            return super().convert(value, param, ctx)
        root = find_root(required=False)
        arms = {path.stem: path for path in (yaml_files(root / "arms.d") if root else [])}
        hint = did_you_mean(Path(value).stem, arms,  # an arm's file is named by its id
                            shown=lambda arm: os.path.relpath(arms[arm]))
        self.fail(f"{value}: no such arm file{hint}", param, ctx)


@click.command()
@click.argument("arm_yamls", metavar="ARM_YAML...", nargs=-1, required=True, type=ArmFile())
@click.option("--task", "task_patterns", metavar="ID|GLOB", multiple=True,
              help="Task id or glob (e.g. 'fta-*'); repeat for more. Default: every task.")
@click.option("--tier", "tiers", type=click.Choice(TIERS), multiple=True,
              help="Only the chosen tasks of this tier; repeat for more.")
@click.option("--trials", type=click.IntRange(min=1), metavar="N",
              help="Add N samples to each chosen cell (default: 1).")
@click.option("--until", type=Until(), metavar="N|floor|trials",
              help="Top each cell up to N valid samples (`floor`: the suite's floor; "
                   "`trials`: the suite's trials, a full sweep); "
                   "trials that end in a harness error are run again.")
@click.option("--until-decided", is_flag=True,
              help="Run rounds of trials only where they can still change a verdict of the "
                   "headline comparison (cheaper / equivalent within the suite's margin), "
                   "until every pair is decided or out of reach; needs --budget.")
@click.option("--baseline", metavar="ARM",
              help="With --until-decided: compare each arm against this one, not every pair.")
@click.option("--against-version", metavar="VERSION",
              help="With --until-decided and one arm: run its current build only where the "
                   "verdict against its stored samples of tool VERSION can still change "
                   "(docs/versions.md).")
@click.option("--shard", type=ShardOf(), metavar="I/N",
              help="Run part I of N of the plan (counted from 0): every Nth of the chosen "
                   "cells in the order of their ids, the same on every machine; each shard "
                   "into its own store, joined by `benchkit merge` (docs/scale-out.md).")
@click.option("--budget", type=Tokens(), metavar="TOKENS",
              help="Cost-equivalent tokens to spend at most: a trial whose expected cost "
                   "exceeds what is left is not started.")
@click.option("--driver", "driver_name", type=click.Choice(DRIVERS),
              default="claude", show_default=True,
              help="claude spends real tokens; replay plays refs.d/<arm>.yaml through a "
                   "scripted model (estimated usage, no tokens).")
@click.option("--model", help="Model for every arm (default: suite.yaml's).")
@click.option("--store", "store_dir", type=click.Path(file_okay=False), default="results",
              show_default=True, help="Store directory (results/<arm>/<task>.jsonl).")
@click.option("--jobs", type=click.IntRange(min=1, max=64), default=1, show_default=True,
              metavar="N",
              help="Trials run at once, each on its own repository.")
@click.option("--json", "json_mode", is_flag=True,
              help="Progress as JSON events on stdout (one per line), nothing else there.")
@click.option("--dry-run", is_flag=True,
              help="Print the plan (cells in order, expected tokens each and in total, what "
                   "would be skipped and why) and stop: nothing spent, started or written.")
@click.option("--no-report", is_flag=True, help="Do not render the report at the end.")
@click.option("--no-replay-failures", is_flag=True,
              help="Do not replay failed trials' own tool calls on a fresh repository at the "
                   "end (a passing replay marks the trial `not reproducible`).")
@click.option("--unconfined", is_flag=True,
              help="Run the agent's shell without the OS sandbox (bubblewrap): every sample "
                   "is marked unconfined, and the report says so.")
@click.option("--gateway-only-containment", "gateway_only", is_flag=True,
              help="Run with your own token behind the gateway, without a user of the run's "
                   "own (which needs a site administrator's token): the gateway alone then "
                   "bounds what an agent's requests reach, and every sample and the report "
                   "say so.")
@click.option("--only-installed", is_flag=True,
              help="Run the arms whose tools are installed here and list the others as not "
                   "run, with their install lines (without it, a missing tool stops the run "
                   "at pre-flight).")
@click.option("--reports", "reports_dir", type=click.Path(file_okay=False), default="reports",
              show_default=True, help="Where the report is rendered at the end.")
@host_options
@click.pass_context
def run(ctx: click.Context, arm_yamls, task_patterns, tiers, trials, until, until_decided,
        baseline, against_version, shard, budget, driver_name, model, store_dir, jobs,
        json_mode, dry_run, no_report, no_replay_failures, only_installed, reports_dir,
        unconfined, gateway_only, host, token, login):
    """Run trials of the cells ARM_YAML x chosen tasks and append their samples.

    Cells with the fewest valid samples go first. With no host given (--host/--token,
    GITEA_URL/GITEA_TOKEN, a tea login) the run starts an embedded forge. Ctrl-C (SIGTERM,
    SIGHUP) stops cleanly in any phase: what runs leaves no sample, no process, no
    repository; the report is left as it was, and the last lines say how to render it
    and how to resume: the same command again runs only what it has not run yet.

    Exit status: 0 done; 1 harness errors (recorded apart, never scored) or a halt; 2 a
    pre-flight check failed, no chosen cell can run or --budget fits none of its trials
    (nothing started, nothing recorded), or in the trials the model service refused the
    credentials or the store a sample (what ran is kept); 130 Ctrl-C (143 SIGTERM, 129
    SIGHUP: the same clean stop).

    \b
    Examples:
      benchkit run arms.d/raw-api.yaml --driver replay            # the main job, no tokens
      benchkit run arms.d/*.yaml --tier read --tier multi-step --until floor --dry-run
      benchkit run arms.d/tea.yaml --task 'fta-*' --task read-open-issue-count --budget 200000
      benchkit run arms.d/*.yaml --until trials --shard 0/3 --store shard-0   # 1 of 3 machines
    """
    if trials is not None and until is not None:
        raise click.UsageError("give --trials or --until, not both")
    if until_decided and (trials is not None or until is not None or budget is None):
        raise click.UsageError("--until-decided takes --budget, and neither --trials nor --until")
    if baseline is not None and not until_decided:
        raise click.UsageError("--baseline goes with --until-decided")
    if against_version is not None and (not until_decided or baseline is not None):
        raise click.UsageError("--against-version goes with --until-decided, not --baseline")
    progress = Progress(json_mode=json_mode, estimated=driver_name == "replay")
    # The command line's renderer is click's context object (None outside the group).
    report = None if no_report else ReportTarget(reports_dir, ctx.obj)
    # One stop for every phase, from pre-flight to the report (benchkit.stopping).
    with Stop(note=progress.interrupted, say=progress.note) as stop:
        settings = RunSettings(
            driver=driver_name, store_dir=store_dir, trials=trials,
            until=until if isinstance(until, int) else None, budget=budget, model=model,
            jobs=jobs, confine=not unconfined, until_decided=until_decided, baseline=baseline,
            against_version=against_version, replay_failures=not no_replay_failures,
            shard=shard)
        try:
            end = _run(progress, stop, report, arm_yamls, settings, task_patterns=task_patterns,
                       tiers=tiers, dry_run=dry_run, host=host, token=token, login=login,
                       gateway_only=gateway_only, only_installed=only_installed,
                       suite_until=until if until in Until.SUITE_KEYS else None)
        except Interrupted:  # pre-flight or its probes: cleaned up on the way here
            end = RunEnd("pre-flight", stopped=stop.status)
        finally:
            progress.close()
        if stop.is_set():
            after_interrupt(progress, store_dir, report)
            end = replace(end, stopped=stop.status)
        if end.stopped is not None or end.halted:
            progress.note(f"resume: `{_command()}` runs only what this command has not run "
                          "yet (its finished trials are kept)")
    ctx.exit(exit_status(end))


def _command() -> str:
    """The command as it was typed, to run again; a token given on it is never shown
    (`--token "$GITEA_TOKEN"` in its place)."""
    args = sys.argv[1:]
    if "run" not in args:  # not the command line (a test's runner)
        return "the same command"
    shown = [shlex.quote(arg) for arg in args]
    for at, arg in enumerate(args):
        if arg == "--token" and at + 1 < len(args):
            shown[at + 1] = '"$GITEA_TOKEN"'
        elif arg.startswith("--token="):
            shown[at] = '--token="$GITEA_TOKEN"'
    return " ".join(["benchkit", *shown])


def _run(progress: Progress, stop: Stop, report: ReportTarget | None, arm_yamls,
         settings: RunSettings, *, task_patterns, tiers, dry_run: bool, host, token, login,
         gateway_only: bool, only_installed: bool, suite_until: str | None) -> RunEnd:
    """Pre-flight (the documents alone for a dry run), the options that need the
    documents (`suite_until`: --until floor|trials, the suite's), then the dry run or
    the run."""
    try:
        checked = (load_documents(arm_yamls, task_patterns=task_patterns, tiers=tiers,
                                  driver=settings.driver, only_installed=only_installed,
                                  model=settings.model)
                   if dry_run else
                   preflight(arm_yamls, task_patterns=task_patterns, tiers=tiers,
                             driver=settings.driver, host=host, token=token, login=login,
                             confine=settings.confine, gateway_only=gateway_only,
                             only_installed=only_installed, model=settings.model))
    except PreflightError as error:
        return preflight_failed(progress, error.failures, error.problems)
    if checked.resolution is not None:  # what every trial runs, as the runtime said
        settings = msgspec.structs.replace(settings, resolved=checked.resolution)
        progress.note(checked.resolution.said())
    for warning in checked.warnings:  # before anything starts
        progress.note(warning)
    for arm_id, why in checked.not_installed.items():
        progress.emit(events.NotInstalledEvent(arm=arm_id, reason=why),
                      f"not run (--only-installed): {why}")
    if suite_until is not None:
        settings = msgspec.structs.replace(settings, until=getattr(checked.tree.suite,
                                                                   suite_until))
    baseline = settings.baseline
    if baseline is not None and baseline not in [arm.id for arm in checked.arms]:
        raise click.BadParameter(f"{baseline}: not one of the arms given "
                                 f"({', '.join(arm.id for arm in checked.arms)})",
                                 param_hint="--baseline")
    if dry_run:
        return dry_run_plan(checked, progress, settings, host=host, token=token, login=login)
    return execute(checked, progress, settings, stop, report)
