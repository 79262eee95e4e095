"""Render the aggregated report (benchkit.report.model.Report): markdown and HTML
through Jinja2, JSON and CSV exports."""

from __future__ import annotations

import csv
import io
import json
import os
from operator import attrgetter
from pathlib import Path
from typing import TYPE_CHECKING, Any

import msgspec

from benchkit import cache_dir
from benchkit.cost import token_figure
from benchkit.report import charts
from benchkit.report.anatomy import PART_NAMES
from benchkit.report.links import cell_href
from benchkit.report.model import Figure, Report, Tier, TierArm
from benchkit.report.publish import FORMATS
from benchkit.sample import COMPONENTS

if TYPE_CHECKING:
    import jinja2

TEMPLATES = Path(__file__).parent / "templates"
COMPONENT_NAMES = {"input": "fresh input", "cache_write_5m": "cache write (5 min)",
                   "cache_write_1h": "cache write (1 h)", "cache_read": "cache read",
                   "output": "output"}
# Said next to every replay figure: what a replay estimate measures.
REFERENCE_BYTES = ("Replay figures are the bytes of each arm's reference solutions "
                   "(refs.d/ARM.yaml) played by a scripted model: they measure the "
                   "references as written, so a terse reference makes a cheap arm; only "
                   "measured trials say what an agent spends.")
# The CSV's columns: every field of CellRow, in a spreadsheet's order.
CSV_COLUMNS = ["arm", "task", "tier", "kind", "samples", "passes", "success", "pass_k",
               "cost", "raw", *COMPONENTS, "turns", "duration", "blocked", "cost_usd"]


# --- number formats (None renders as an em dash) -----------------------------------

def _formatter(template: str):
    """A filter: the value formatted by `template`, or an em dash for None."""
    return lambda value, digits=1: "—" if value is None else template.format(value, digits=digits)


FORMATTERS = {name: _formatter(template) for name, template in {
    "number": "{0:,.{digits}f}", "percent": "{0:.0%}",
    "usd": "${0:.2f}", "seconds": "{0:,.1f} s", "signed": "{0:+,.0f}",
    "change": "{0:+.0%}", "ratio": "{0:.2f}×", "weight": "{0:g}"}.items()}


def tokens(value: float | None, estimated: bool = False) -> str:
    """A token figure (marked an estimate when it is one), or an em dash for None."""
    return "—" if value is None else token_figure(value, estimated)


# Headline metric -> its formatter name; the token metrics are marked when estimated.
METRIC_FORMATS = {"cost": "tokens", "raw": "tokens", "turns": "number", "duration": "seconds",
                  "success": "percent", "pass_k": "percent", "blocked": "number", "cost_usd": "usd"}


def _format(metric: str, number: float | None, estimated: bool) -> str:
    name = METRIC_FORMATS[metric]
    return tokens(number, estimated) if name == "tokens" else FORMATTERS[name](number)


def value(figure: Figure, metric: str, estimated: bool = False) -> str:
    """A headline figure's value, formatted for its metric."""
    return _format(metric, figure.value, estimated)


def interval(figure: Figure, metric: str, estimated: bool = False) -> str:
    """'low–high' of a headline figure, empty when it has none."""
    if figure.low is None:
        return ""
    return f"{_format(metric, figure.low, estimated)}–{_format(metric, figure.high, estimated)}"


def metric(figure: Figure, metric: str, estimated: bool = False) -> str:
    """'value (low–high)'."""
    bounds = interval(figure, metric, estimated)
    shown = value(figure, metric, estimated)
    return f"{shown} ({bounds})" if bounds else shown


def tier_entry(entry: TierArm, tier: Tier, estimated: bool = False) -> list[str]:
    """An arm's figures in a tier, then what qualifies them: over the tier's tasks it
    ran and, where those are not the tasks every arm ran, over the common ones, which
    alone compare arms. Markdown puts the qualifiers in brackets, HTML under the figure."""
    if entry.cost is None:
        return ["—"]
    said = [f"{tokens(entry.cost, estimated)} · {FORMATTERS['percent'](entry.success)}"]
    if entry.tasks < tier.tasks_total or entry.tasks != tier.common:
        said.append(f"{entry.tasks}/{tier.tasks_total} tasks")
    if entry.tasks != tier.common:
        said.append("not comparable: no task of the tier was run by every arm"
                    if entry.common_cost is None else
                    f"on the {tier.common} common: {tokens(entry.common_cost, estimated)} · "
                    f"{FORMATTERS['percent'](entry.common_success)}")
    return said


def prose(text) -> str:
    """Text written with Markdown's code spans (`tea pulls N`), for HTML: escaped, each
    code span a <code> (an unpaired backtick is left as it is)."""
    # Imported here: Jinja2 imports it (measured above: ~0.03 s), which this module
    # defers until a template is rendered.
    from markupsafe import Markup, escape
    parts = str(text).split("`")
    if len(parts) % 2 == 0:
        return escape(text)
    return Markup("".join(f"<code>{escape(part)}</code>" if index % 2 else str(escape(part))
                          for index, part in enumerate(parts)))


def count_where(items, attribute: str) -> int:
    """How many of the items have a true `attribute`: in C, where Jinja2's filters make
    a call an item (the report lists every failure: 9,500 on 100,000 samples)."""
    return sum(map(attrgetter(attribute), items))


def md_cell(text) -> str:
    """Text safe inside a markdown table cell."""
    return str(text).replace("|", "\\|").replace("\n", " ")


def _bytecode_cache() -> jinja2.BytecodeCache | None:
    """Compiled templates kept between runs (keyed by their source's checksum, so an
    edited template compiles anew): compiling the report's templates was a third of a
    cold `benchkit report`. Under $BENCHKIT_CACHE_DIR, else the user's cache directory;
    none when it cannot be written."""
    import jinja2  # measured: see _environment
    directory = cache_dir() / "templates"
    try:
        directory.mkdir(parents=True, exist_ok=True)
    except OSError:
        return None
    return jinja2.FileSystemBytecodeCache(str(directory)) if os.access(directory, os.W_OK) else None


def _environment(autoescape: bool) -> jinja2.Environment:
    # Imported here (measured: ~0.03 s): `benchkit report` imports this module before it
    # forks its store-reading child, which has no use for Jinja2.
    import jinja2
    environment = jinja2.Environment(
        loader=jinja2.FileSystemLoader(TEMPLATES), autoescape=autoescape,
        bytecode_cache=_bytecode_cache(),
        undefined=jinja2.StrictUndefined, trim_blocks=True, lstrip_blocks=True,
        keep_trailing_newline=True)
    environment.filters.update(FORMATTERS, tokens=tokens, value=value, interval=interval, metric=metric,
                               md=md_cell, tier_entry=tier_entry, prose=prose,
                               count_where=count_where)
    environment.globals.update(components=COMPONENTS, component_names=COMPONENT_NAMES,
                               parts=tuple(PART_NAMES), part_names=PART_NAMES,
                               cell_href=cell_href, reference_bytes=REFERENCE_BYTES)
    return environment


_TEMPLATES: dict[str, jinja2.Template] = {}


def _template(name: str, autoescape: bool) -> jinja2.Template:
    if name not in _TEMPLATES:
        _TEMPLATES[name] = _environment(autoescape).get_template(name)
    return _TEMPLATES[name]


# Format -> (its template, whether it escapes HTML); JSON and CSV have none.
REPORT_TEMPLATES = {"md": ("report.md.j2", False), "html": ("report.html.j2", True)}


def load_templates(formats) -> None:
    """Load the report templates of these formats now (Jinja2 imported, compiled or
    read from the bytecode cache) rather than when rendering: `benchkit report` does it
    while its child still reads the store, off the path that waits for the child."""
    for format_ in formats:
        if format_ in REPORT_TEMPLATES:
            _template(*REPORT_TEMPLATES[format_])


def render_markdown(report: Report) -> str:
    return _template(*REPORT_TEMPLATES["md"]).render(report=report)


def render_html(report: Report) -> str:
    first = report.common.rows if report.common else report.headline  # the ranking
    figures = {
        "cost": charts.cost_chart(first),
        "components": charts.component_chart(report.components, COMPONENT_NAMES),
        "tiers": charts.tier_heatmap(report.tiers, report.arms),
        "colours": charts.COMPONENT_COLOURS,
        "anatomy": charts.anatomy_chart(report.anatomy, PART_NAMES),
    }
    estimates = report.estimates
    figures.update(est_cost=None, est_components=None, est_tiers=None)
    if estimates:
        figures.update(
            est_cost=charts.cost_chart(estimates.common.rows if estimates.common
                                       else estimates.headline),
            est_components=charts.component_chart(estimates.components, COMPONENT_NAMES),
            est_tiers=charts.tier_heatmap(estimates.tiers, report.arms))
    return _template(*REPORT_TEMPLATES["html"]).render(report=report, charts=figures)


def render_page(name: str, **context) -> str:
    """A drill-down page (benchkit.report.pages) from its HTML template."""
    return _template(name, True).render(**context)


def render_json(report: Report) -> str:
    return json.dumps(as_data(report), indent=2, allow_nan=False) + "\n"


def render_csv(report: Report) -> str:
    """One row per cell with samples (measured or replayed) and its means, for a
    spreadsheet; the components let it re-weight cost without the store."""
    buffer = io.StringIO()
    writer = csv.DictWriter(buffer, fieldnames=CSV_COLUMNS, extrasaction="ignore",
                            lineterminator="\n")
    writer.writeheader()
    for row in report.cells:
        writer.writerow({key: _csv_value(getattr(row, key)) for key in CSV_COLUMNS})
    return buffer.getvalue()


def _csv_value(value):
    if isinstance(value, float):
        return f"{value:.6g}" if abs(value) < 1 else f"{value:.2f}"
    return "" if value is None else value


RENDERERS = {"md": render_markdown, "html": render_html, "json": render_json, "csv": render_csv}


def render(report: Report, format_: str) -> str:
    if format_ not in RENDERERS:
        raise ValueError(f"unknown report format {format_!r} (known: {', '.join(FORMATS)})")
    return RENDERERS[format_](report)


def as_data(report: Report) -> dict[str, Any]:
    """The report as plain JSON-ready data, its fields in declared order."""
    return msgspec.to_builtins(report, enc_hook=_scalar)


def _scalar(value: Any) -> Any:
    """A numpy scalar (a figure the views took of an array) as the Python number it
    holds; msgspec encodes no subclass of float."""
    if hasattr(value, "item"):
        return value.item()
    raise TypeError(f"the report cannot hold a {type(value).__name__}")
