"""benchkit.report: the store aggregated against the current tree, rendered.

    from benchkit.report import ReportOptions, build, write_reports
    report = build("results")                 # the report (benchkit.report.model.Report)
    paths = write_reports("results", "reports")  # report.md, .html, .json, .csv
    build("results", ReportOptions(weights={"output": 4}))  # re-weighted

Stages: load (the store), matrix (the current tree), aggregate (headline, views,
notes; + stats, verdicts), render (+ charts, templates/; pages and trials for the
HTML report's drill-down).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from benchkit import lazy_names

if TYPE_CHECKING:
    from benchkit.report.aggregate import build_report
    from benchkit.report.builder import (
        ReportOptions,
        build,
        current_matrix,
        unreadable,
        write_reports,
    )
    from benchkit.report.load import load_store
    from benchkit.report.publish import FORMATS

# name -> the module of the package that defines it, imported when one of its names is
# first used, not with the package: `benchkit show` reads trials (report.trials) and
# needs none of the aggregation, its statistics (numpy) or the templates (Jinja2), which
# took 0.2 s of its start (measured, benchmarks/startup_bench.py); `benchkit report`
# imports the aggregation while its child reads the store (benchkit.report.summary).
_HOMES = {
    "build_report": "aggregate",
    **dict.fromkeys(["ReportOptions", "build", "current_matrix", "unreadable",
                     "write_reports"], "builder"),
    "load_store": "load",
    "FORMATS": "publish",
}  # never a submodule's name: importing the submodule would replace it (report.render)
__all__ = ["FORMATS", "ReportOptions", "build", "build_report", "current_matrix", "load_store",
           "unreadable", "write_reports"]  # the names of _HOMES

__getattr__ = lazy_names(__name__, _HOMES)
