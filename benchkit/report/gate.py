"""`benchkit gate ARM_YAML --against VERSION`: the installed build of an arm's tool
against an earlier version's samples in the store, with an exit status CI acts on and a
Markdown summary to post on the pull request (docs/ci.md).

    benchkit gate arms.d/gitea-axi.yaml --against 0.1.0 --driver replay --budget 2000000

It runs `benchkit run ARM --until-decided --against-version VERSION` (benchkit.planning.decide
and benchkit.planning.against: the same rounds, the same pair), renders the report, and reads
the pair's verdict from its version comparison (benchkit.report.versions), so the gate,
the run and the report never disagree:

    0  not worse: cheaper or equivalent (within the suite's equivalence margin), and
       success not lower
    1  worse: costlier, or lower success
    3  undecided within the budget
    2  bad input (no such version in the store, the build is VERSION itself, a tool
       not installed, ...): the run's own refusal, nothing spent
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import click

from benchkit.documents.models import load_arm
from benchkit.exits import EXIT_FAILED, EXIT_OK, EXIT_UNDECIDED, BadInput, reported
from benchkit.gitea.commands import host_options
from benchkit.installed import installed
from benchkit.planning.against import names
from benchkit.report import ReportOptions, build, write_reports
from benchkit.report.model import Report, VersionComparison
from benchkit.run.commands import ArmFile, Tokens
from benchkit.run.commands import run as run_command
from benchkit.sample import DRIVERS, read_samples
from benchkit.store import Store

DEFAULT_BUDGET = 2_000_000.0
SHOWN_COMMANDS = 15
SHOWN_FAILURES = 20
REFERENCE_BYTES = ("Replay figures (~) are estimates from the bytes of the arm's reference "
                   "solutions played by a scripted model: a smaller answer of the tool shows; "
                   "only measured trials say what an agent spends.")


@dataclass(frozen=True)
class Outcome:
    """The gate's verdict on a comparison: its exit status and how the summary says it."""
    status: int
    word: str   # not worse | worse | undecided
    why: str


def judge(comparison: VersionComparison) -> Outcome:
    """The exit status of a version comparison (the module's docstring)."""
    figures = comparison.figures
    lower = (figures.success_difference is not None and figures.success_difference < 0)
    if comparison.verdict == "costlier" or (lower and comparison.verdict != "inconclusive"):
        why = (comparison.says if comparison.verdict == "costlier" else
               f"success {figures.success_newest:.0%} against {figures.success_older:.0%}")
        return Outcome(EXIT_FAILED, "worse", why)
    if comparison.verdict in ("cheaper", "equivalent"):
        return Outcome(EXIT_OK, "not worse", comparison.says)
    return Outcome(EXIT_UNDECIDED, "undecided", "the budget ran out before a verdict: "
                   + comparison.says)


def newest_other_version(store_dir: str | Path, arm: str, build: str | None,
                         estimated: bool) -> str | None:
    """The version line of the arm's newest valid sample of this driver kind in the
    store whose tool is not `build`: the last release, in a store CI restored."""
    newest: tuple[str, str] | None = None
    for path in Store(store_dir).files(arm=arm):
        for sample in read_samples(path)[0]:
            version = sample.tool_version
            if (version is None or version == build or not sample.valid
                    or sample.estimated != estimated):
                continue
            if newest is None or sample.started_at > newest[0]:
                newest = (sample.started_at, version)
    return newest[1] if newest else None


def find_comparison(report: Report, arm: str, build: str, version: str,
                    estimated: bool) -> VersionComparison | None:
    """The report's comparison of the build against VERSION (a line, or a bare version
    within one), of this driver kind."""
    return next((c for c in report.version_comparisons
                 if c.arm == arm and c.estimated == estimated and c.versions[0] == build
                 and names(version, c.versions[1])), None)


@click.command()
@click.argument("arm_yaml", metavar="ARM_YAML", type=ArmFile())
@click.option("--against", "version", metavar="VERSION",
              help="The version to compare the installed build with: its version line or "
                   "a bare version within it (default: the newest other version of the "
                   "arm's tool in the store).")
@click.option("--budget", type=Tokens(), default=DEFAULT_BUDGET, show_default=True,
              metavar="TOKENS", help="Cost-equivalent tokens to spend at most on the build's "
                                     "trials before the verdict (replay: estimated).")
@click.option("--driver", "driver_name", type=click.Choice(DRIVERS), default="replay",
              show_default=True,
              help="replay plays refs.d/<arm>.yaml through a scripted model (no tokens); "
                   "claude spends real tokens.")
@click.option("--task", "task_patterns", metavar="ID|GLOB", multiple=True,
              help="Only these tasks (default: every task VERSION ran).")
@click.option("--store", "store_dir", type=click.Path(file_okay=False), default="results",
              show_default=True, help="The store holding VERSION's samples; the build's "
                                      "are appended to it.")
@click.option("--reports", "reports_dir", type=click.Path(file_okay=False), default="reports",
              show_default=True, help="Where the report (and its trial pages) goes.")
@click.option("--summary", "summary_path", type=click.Path(dir_okay=False),
              default="gate.md", show_default=True,
              help="The Markdown summary for the pull request.")
@click.option("--links", metavar="URL",
              help="Where the reports directory is published (e.g. the run's artifact): "
                   "the summary's links to failing trials start with it (default: paths "
                   "relative to --reports).")
@host_options
@click.pass_context
def gate(ctx: click.Context, arm_yaml, version, budget, driver_name, task_patterns, store_dir,
         reports_dir, summary_path, links, host, token, login):
    """Compare the installed build of the arm's tool with an earlier version in the store
    until a verdict or the budget, and write a summary for the pull request.

    Exit status: 0 not worse (cheaper or equivalent within the suite's margin, success not
    lower); 1 worse (costlier, or lower success); 3 undecided within the budget; 2 bad
    input (no such version in the store, the build is that version itself, the tool not
    installed): nothing spent; 130 Ctrl-C.

    \b
    Examples:
      benchkit gate arms.d/gitea-axi.yaml --against 0.1.0
      benchkit gate arms.d/gitea-axi.yaml --driver claude --budget 500000 --summary gate.md
    """
    with reported():
        arm = load_arm(arm_yaml)
    estimated = driver_name == "replay"
    found = installed(arm.tool, arm_yaml)
    if found.version is None:
        raise BadInput(f"arm {arm.id}: {found.line}")
    build_line = found.version
    if version is None:
        version = newest_other_version(store_dir, arm.id, build_line, estimated)
        if version is None:
            kind = "replay" if estimated else "measured"
            raise BadInput(f"the store {store_dir} holds no {kind} sample of {arm.id} at a "
                           f"version other than the installed {build_line!r}: restore the "
                           "last release's store, or give --against (docs/ci.md)")
        click.echo(f"gate: {arm.id} {build_line} against {version}, the newest other "
                   f"version in {store_dir}", err=True)
    try:
        ctx.invoke(run_command, arm_yamls=(arm_yaml,), task_patterns=task_patterns,
                   until_decided=True, against_version=version, budget=budget,
                   driver_name=driver_name, store_dir=store_dir, no_report=True,
                   host=host, token=token, login=login)
        status = EXIT_OK
    except click.exceptions.Exit as ended:
        status = ended.exit_code
    if status not in (EXIT_OK, EXIT_FAILED):  # refused (the reason is said), or stopped
        ctx.exit(status)
    write_reports(store_dir, reports_dir)
    report = build(store_dir, ReportOptions())
    comparison = find_comparison(report, arm.id, build_line, version, estimated)
    if comparison is None:
        raise BadInput(f"the report of {store_dir} has no comparison of {arm.id} "
                       f"{build_line} against {version}: the build ran none of its tasks")
    outcome = judge(comparison)
    text = summary(comparison, outcome, report, links or reports_dir)
    Path(summary_path).write_text(text, encoding="utf-8")
    if status == EXIT_FAILED:  # harness errors: recorded apart, never the build's
        click.echo("gate: warning: the run had harness errors (never charged to the "
                   "build); the verdict stands on its valid trials", err=True)
    click.echo(f"gate: {outcome.word} ({outcome.why}); summary: {summary_path}")
    ctx.exit(outcome.status)


# --- the summary ---------------------------------------------------------------------

def summary(comparison: VersionComparison, outcome: Outcome, report: Report,
            links: str | Path) -> str:
    """The Markdown a pull request gets: the verdict, the ratio and its interval, the
    figures of both versions, the commands whose cost changed most, the failing trials
    of the build."""
    new, old = comparison.versions
    figures, mark = comparison.figures, "~" if comparison.estimated else ""
    ratio = figures.ratio
    icon = {"not worse": "✅", "worse": "❌"}.get(outcome.word, "⚠️")
    lines = [f"## benchkit gate: {comparison.arm} {icon} {outcome.word}", "",
             f"`{new}` against `{old}`: **{comparison.says}** on {len(comparison.tasks)} "
             f"task{'s' if len(comparison.tasks) != 1 else ''}.", ""]
    if ratio.value is not None:
        interval = (f" (interval {ratio.low:.3f} to {ratio.high:.3f})"
                    if ratio.low is not None and ratio.high is not None else "")
        lines += [f"Cost ratio {new} ÷ {old}: **{ratio.value:.3f}**{interval}.", ""]
    lines += ["| | this build | " + old + " |", "| --- | ---: | ---: |",
              f"| cost-equivalent tokens per trial | {_tokens(figures.cost_newest, mark)} | "
              f"{_tokens(figures.cost_older, mark)} |",
              f"| success | {_percent(figures.success_newest)} | "
              f"{_percent(figures.success_older)} |",
              f"| trials | {figures.samples_newest} | {figures.samples_older} |", ""]
    if comparison.commands:
        lines += ["### By command", "", "| command | tokens per trial (this build · "
                  f"{old}) | change | calls per trial | failed |",
                  "| --- | ---: | ---: | ---: | ---: |"]
        for change in comparison.commands[:SHOWN_COMMANDS]:
            delta = ("—" if change.cost_newest is None or change.cost_older is None
                     else f"{change.cost_newest - change.cost_older:+,.0f}")
            lines.append(f"| `{change.command}` | {_tokens(change.cost_newest, mark)} · "
                         f"{_tokens(change.cost_older, mark)} | {delta} | "
                         f"{_number(change.calls_newest)} · {_number(change.calls_older)} | "
                         f"{_percent(change.failed_newest)} · {_percent(change.failed_older)} |")
        lines.append("")
    failing = [f for f in report.failures
               if f.arm == comparison.arm and f.estimated == comparison.estimated
               and f.task in comparison.tasks]
    lines += ["### Failing trials of this build", ""]
    lines += [f"- [{f.trial[:12]}]({str(links).rstrip('/')}/{f.page}) {f.task}: {f.outcome}"
              + (f" ({f.failure_class})" if f.failure_class else "")
              for f in failing[:SHOWN_FAILURES]] or ["None."]
    if len(failing) > SHOWN_FAILURES:
        lines.append(f"- ... and {len(failing) - SHOWN_FAILURES} more: "
                     "`benchkit show --outcome failures`")
    lines += ["", f"<sub>{comparison.method}."
              + (f" {REFERENCE_BYTES}" if comparison.estimated else "") + "</sub>", ""]
    return "\n".join(lines)


def _tokens(value: float | None, mark: str) -> str:
    return "—" if value is None else f"{value:,.0f}{mark}"


def _percent(value: float | None) -> str:
    return "—" if value is None else f"{value:.0%}"


def _number(value: float | None) -> str:
    return "—" if value is None else f"{value:.2f}"
