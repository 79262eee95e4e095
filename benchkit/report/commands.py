"""`benchkit report`: aggregate the store against the current tree and render it."""

from __future__ import annotations

from pathlib import Path

import click

from benchkit.cli import fail
from benchkit.report import build, write_reports
from benchkit.report.render import FORMATS, render
from benchkit.spec import SpecError

def parse_weight(text: str) -> tuple[str, float]:
    name, sep, value = text.partition("=")
    try:
        if not sep:
            raise ValueError
        return name.strip(), float(value)
    except ValueError:
        raise click.BadParameter(f"{text!r}: expected COMPONENT=NUMBER, e.g. output=4",
                                 param_hint="--weight") from None


@click.command()
@click.option("--store", "store_dir", type=click.Path(path_type=Path), default="results",
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
@click.option("--model", help="Report the samples of this model (default: the suite's).")
@click.option("--pass-k", type=click.IntRange(min=1),
              help="k of pass^k (default: the suite's floor).")
@click.option("--baseline", metavar="ARM",
              help="Compare each arm against this one (default: every pair of arms).")
def report(store_dir, format_, output, reports_dir, weights, model, pass_k, baseline):
    """Aggregate the store into the report: headline per arm with 95% intervals,
    tiers, token components, bonus operations, coverage, replay estimates."""
    overrides = dict(parse_weight(w) for w in weights)
    if output is not None and format_ is None:
        format_ = output.suffix.lstrip(".").lower()
        if format_ not in FORMATS:
            raise click.BadParameter(f"cannot tell the format of {output.name}: give --format "
                                     f"({', '.join(FORMATS)})", param_hint="-o")
    try:
        if format_ is None:
            for path in write_reports(store_dir, reports_dir, weights=overrides, model=model,
                                      pass_k=pass_k, baseline=baseline):
                click.echo(path)
            return
        text = render(build(store_dir, weights=overrides, model=model, pass_k=pass_k,
                            baseline=baseline), format_)
    except SpecError as error:  # the tree the samples are judged against is broken
        fail(error.problems)
    except (FileNotFoundError, ValueError) as error:
        raise click.ClickException(str(error)) from None
    if output is None:
        click.echo(text, nl=False)
    else:
        output.parent.mkdir(parents=True, exist_ok=True)
        output.write_text(text, encoding="utf-8")
        click.echo(output)
