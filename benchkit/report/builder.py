"""A report built and written: the options it is built with, the current tree's matrix,
the store's report against it, its files, and what a whole set of them is made of (its
key: a set in place under the same key is not written again). benchkit.report names
these.
"""

from __future__ import annotations

import hashlib
import time
from dataclasses import dataclass, replace
from pathlib import Path
from typing import TYPE_CHECKING

from benchkit import cache
from benchkit.report import kept
from benchkit.report.load import open_store, store_files
from benchkit.report.matrix import Matrix, tree_key, tree_matrix, with_arms
from benchkit.report.publish import FORMATS, Staging
from benchkit.report.summary import Summariser
from benchkit.store import Store

if TYPE_CHECKING:
    from benchkit.report.model import Report

SHOWN_PROBLEMS = 20
SET_FORMAT = 1


@dataclass(frozen=True)
class ReportOptions:
    """What a report is built with besides its store: the tree (default: the one
    benchkit.documents.find_root() finds), token weight overrides, the model whose samples
    count (default: the suite's), k of pass^k (default: the suite's floor), the
    baseline arm the others are compared against (default: every pair), and the models
    compared per arm (default: every model the store holds; each given must have
    samples there)."""
    root: Path | None = None
    weights: dict[str, float] | None = None
    model: str | None = None
    pass_k: int | None = None
    baseline: str | None = None
    models: tuple[str, ...] = ()


def current_matrix(root=None, *, weights=None, model=None, pass_k=None,
                   baseline=None) -> Matrix:
    """The matrix of the tree at root (default: benchkit.documents.find_root()), with any
    weight overrides (the tree's own matrix is kept between runs: matrix.tree_matrix).
    Raises benchkit.documents.DocumentError when the tree is broken, and ValueError for a
    baseline that is not an arm of the tree."""
    matrix = tree_matrix(root, model=model)
    if weights:
        matrix = matrix.reweighted(weights)
    if baseline is not None and baseline not in {a.id for a in matrix.arms}:
        raise ValueError(f"--baseline {baseline}: no such arm (arms: "
                         f"{', '.join(a.id for a in matrix.arms)})")
    return replace(matrix, pass_k=pass_k or matrix.pass_k, baseline=baseline)


def build(store_dir, options: ReportOptions = ReportOptions(), *,
          store: Summariser | None = None) -> Report:
    """The report of the store at store_dir against the current tree; `store`, when
    given, is store_dir already being summarised (else it is, in this process alone)."""
    # Imported here, measured: the aggregation's views and notes (~0.1 s with the
    # statistics they compute) load in `benchkit report`'s parent while its child reads
    # the store (benchkit.report.summary).
    from benchkit.report.aggregate import build_report
    if store is None:
        with Summariser(open_store(store_dir), fork=False) as alone:
            return build(store_dir, options, store=alone)
    matrix = current_matrix(options.root, weights=options.weights, model=options.model,
                            pass_k=options.pass_k, baseline=options.baseline)
    matrix = with_arms(matrix, store.store.kept_arms())  # runs' arms from outside the tree
    return build_report(store.result(), matrix, models=options.models)


def set_key(store: Store, options: ReportOptions = ReportOptions()) -> str | None:
    """What a whole report set (every format, the trial pages) is made of, as a key: the
    store's files as they stand (device, inode, size, modification time: the store
    appends, never rewrites) and the arm documents it keeps, the tree (matrix.tree_key),
    the options, benchkit's code and templates (benchkit.cache.code_stamp). None when
    there is no tree or store, or a store file was written too recently for its
    modification time to tell (kept.RACY_NS)."""
    tree = tree_key(options.root, model=options.model)
    if tree is None or not store.root.is_dir():
        return None
    digest = hashlib.blake2b(repr((SET_FORMAT, tree, sorted((options.weights or {}).items()),
                                   options.model, options.pass_k, options.baseline,
                                   options.models)).encode() + cache.code_stamp())
    recent = time.time_ns() - kept.RACY_NS
    for path in [*store_files(store), store.failure_replays_path, *store.kept_arms()]:
        found = kept.identity(path)
        if found is not None and found[3] >= recent:
            return None
        digest.update(f"{path}\0{found}\0".encode())
    return digest.hexdigest()


def unreadable(report: Report) -> list[str]:
    """Warning lines for the store lines the report had to leave out (none: [])."""
    return unreadable_lines(report.problems)


def unreadable_lines(problems: list[str]) -> list[str]:
    """Warning lines for these unreadable store lines (none: [])."""
    if not problems:
        return []
    lines = [f"warning: {problem}" for problem in problems[:SHOWN_PROBLEMS]]
    if len(problems) > SHOWN_PROBLEMS:
        lines.append(f"warning: ... and {len(problems) - SHOWN_PROBLEMS} more")
    lines.append(f"warning: {len(problems)} unreadable store line(s) left out of the report")
    return lines


def write_reports(store_dir, reports_dir, options: ReportOptions = ReportOptions(), *,
                  formats=FORMATS, name: str | None = None, warn=None,
                  store: Summariser | None = None, key: str | None = None) -> list[Path]:
    """Write reports_dir/report.<format> (or `name`, for one format) for every format,
    and for HTML the trial pages beside it, as one set (benchkit.report.publish: all
    replaced, or, interrupted or failing, none); return the report paths. `warn` gets a
    line per unreadable store line. `key`: the whole set's (set_key), published with it."""
    if store is None:
        with Summariser(open_store(store_dir), fork=False) as alone:
            return write_reports(store_dir, reports_dir, options, formats=formats, name=name,
                                 warn=warn, store=alone, key=key)
    # Imported here (measured: Jinja2 and the report's model, ~0.1 s with numpy), so a
    # report whose set is unchanged (set_key) starts without them.
    from benchkit.report.render import render
    report = build(store_dir, options, store=store)
    for line in unreadable(report) if warn else ():
        warn(line)
    with Staging(reports_dir) as staging:
        names = [name or f"report.{format_}" for format_ in formats]
        for format_, file_name in zip(formats, names):
            staging.path(file_name).write_text(render(report, format_), encoding="utf-8")
        if "html" in formats:
            # Imported here: the trial pages read the store whole (trials, benchkit.store),
            # measured ~20 ms of imports a one-format report never uses.
            from benchkit.report.pages import write_pages
            matrix = current_matrix(options.root, model=options.model)  # kept: cheap
            write_pages(store.store, staging.directory, report, store.replays,
                        intents={t.id: (t.intent, t.intent_self_review) for t in matrix.tasks},
                        published=reports_dir)  # unchanged pages are not rendered again
        return staging.publish(names, key=key, problems=report.problems)
