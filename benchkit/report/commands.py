"""`benchkit report`: aggregate the store against the current tree and render it."""

from __future__ import annotations

import functools
import math
from pathlib import Path

import click

from benchkit.exits import BadDocuments, BadInput, fail
from benchkit.report.builder import (
    ReportOptions,
    build,
    set_key,
    unreadable,
    unreadable_lines,
    write_reports,
)
from benchkit.report.load import open_store
from benchkit.report.publish import FORMATS, unchanged
from benchkit.report.summary import Summariser
from benchkit.stopping import Interrupted, Stop
from benchkit.store import unwritable


def parse_weight(text: str) -> tuple[str, float]:
    """COMPONENT=W, W a finite number of at least 0: a negative weight would make a
    cost that grows with fewer tokens."""
    name, sep, value = text.partition("=")
    try:
        if not sep:
            raise ValueError
        weight = float(value)
    except ValueError:
        raise click.BadParameter(f"{text!r}: expected COMPONENT=NUMBER, e.g. output=4",
                                 param_hint="--weight") from None
    if not math.isfinite(weight) or weight < 0:
        raise click.BadParameter(f"{text!r}: a weight is a number of at least 0",
                                 param_hint="--weight")
    return name.strip(), weight


@click.command()
@click.option("--store", "store_dir", type=click.Path(file_okay=False, path_type=Path),
              default="results",
              show_default=True, help="Store directory (results/<arm>/<task>.jsonl).")
@click.option("--format", "format_", type=click.Choice(FORMATS),
              help="One format: to -o FILE, else to standard output. "
                   "Without --format or -o, every format is written into --reports.")
@click.option("-o", "--output", type=click.Path(dir_okay=False, path_type=Path),
              help="Write one report here; its format from --format or the file suffix.")
@click.option("--reports", "reports_dir", type=click.Path(file_okay=False, path_type=Path),
              default="reports", show_default=True,
              help="Directory for report.md, .html, .json and .csv.")
@click.option("--weight", "weights", multiple=True, metavar="COMPONENT=W",
              help="Override a token weight of suite.yaml (input, cache_write_5m, "
                   "cache_write_1h, cache_read, output); repeatable.")
@click.option("--model", "models", multiple=True, metavar="MODEL",
              help="Report the samples of this model (default: the suite's); repeat to "
                   "compare models per arm (default: every model the store holds). A model "
                   "the store holds no sample of is refused, naming those it holds.")
@click.option("--pass-k", type=click.IntRange(min=1),
              help="k of pass^k (default: the suite's floor).")
@click.option("--baseline", metavar="ARM",
              help="Compare each arm against this one (default: every pair of arms).")
@click.pass_context
def report(ctx: click.Context, store_dir, format_, output, reports_dir, weights, models, pass_k,
           baseline):
    """Aggregate the store into the report: what was run, headline per arm with 95%
    intervals, verdicts per pair of arms, tiers, token components, per-task tables,
    replay estimates apart, bonus operations, coverage; the HTML links every cell to its
    trials. Unreadable store lines are left out, with a warning on stderr. Exit 0, or 2
    on bad input.

    \b
    Examples:
      benchkit report                               # reports/report.{md,html,json,csv}
      benchkit report --format md | less
      benchkit report --weight output=4 -o reweighted.html
      benchkit report --baseline gitea-axi          # each arm against gitea-axi
      benchkit report --model claude-sonnet-4-5 --model claude-opus-4-5   # two models compared
    """
    overrides = dict(parse_weight(w) for w in weights)
    if output is not None and format_ is None:
        format_ = output.suffix.lstrip(".").lower()
        if format_ not in FORMATS:
            raise click.BadParameter(f"cannot tell the format of {output.name}: give --format "
                                     f"({', '.join(FORMATS)})", param_hint="-o")
    options = ReportOptions(weights=overrides, model=models[0] if models else None,
                            pass_k=pass_k, baseline=baseline, models=tuple(models))
    store = open_store(store_dir)  # read through this one Store from here on
    # The whole set, as it would be written, is in place already: nothing to do.
    key = set_key(store, options) if format_ is None and output is None else None
    problems = unchanged(reports_dir, key) if key is not None else None
    if problems is not None:
        for line in unreadable_lines(problems):
            click.echo(line, err=True)
        for format_ in FORMATS:
            click.echo(reports_dir / f"report.{format_}")
        return
    with Stop() as stop:  # Ctrl-C, SIGTERM, SIGHUP: the previous report stays whole
        try:
            with Summariser(store) as summariser:  # the store's half, in a child from here on
                _report(store_dir, summariser, options, format_, output, reports_dir, key)
        except Interrupted:
            click.echo(f"interrupted: {output or reports_dir} left as it was", err=True)
            ctx.exit(stop.status)


def _report(store_dir: Path, store: Summariser, options: ReportOptions, format_: str | None,
            output: Path | None, reports_dir: Path, key: str | None) -> None:
    # Imported here (measured: Jinja2 and the report's model, ~0.1 s with numpy), so a
    # report whose set is unchanged starts without them.
    from benchkit.report.render import load_templates, render
    warn = functools.partial(click.echo, err=True)
    try:
        load_templates(FORMATS if format_ is None else (format_,))  # while the child reads
        if format_ is None:
            for path in write_reports(store_dir, reports_dir, options, warn=warn, store=store,
                                      key=key):
                click.echo(path)
            return
        if output is not None:
            click.echo(write_reports(store_dir, output.parent, options, formats=(format_,),
                                     name=output.name, warn=warn, store=store)[0])
            return
        data = build(store_dir, options, store=store)
        for line in unreadable(data):
            warn(line)
        click.echo(render(data, format_), nl=False)
    except BadDocuments as error:  # the tree the samples are judged against is broken
        # (benchkit.documents' DocumentError: caught by its base, since a cached tree's report
        # never imports benchkit.documents)
        fail(error.problems)
    except (FileNotFoundError, ValueError) as error:
        raise BadInput(str(error)) from None
    except OSError as error:  # a reports directory that cannot be written: one line
        refused = unwritable(error)
        if refused is None:
            raise
        raise BadInput(str(refused)) from None
