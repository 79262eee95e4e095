"""The base of the report's typed records (benchkit.report.model, benchkit.report.grid,
the per-command view's in benchkit.report.calls): a field with a default is left out of
report.json while it holds that default."""

from __future__ import annotations

import msgspec


class ReportRecord(msgspec.Struct, omit_defaults=True):
    """A record of the report."""
