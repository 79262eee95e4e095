"""benchkit.documents: the YAML documents (suite, seeds, arms, tasks), their schemas and tree.

    from benchkit.documents import load_tree, load_suite, load_seed, load_arm, find_root
    from benchkit.documents import DocumentError, Problem, render

Every loader validates against `benchkit/schemas/<kind>.schema.json`, fills in the
schema's defaults and raises one DocumentError listing every Problem (`FILE:LINE: message
(at json.path)`). Task documents are loaded by `benchkit.documents.task.load_task`.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from benchkit import lazy_names

if TYPE_CHECKING:
    from benchkit.documents.loader import (
        Document,
        DocumentError,
        Problem,
        display_path,
        load_document,
        read_document,
        schema,
    )
    from benchkit.documents.models import Arm, Seed, Suite, load_arm, load_seed, load_suite
    from benchkit.documents.reference import load_reference, no_reference, reference_path
    from benchkit.documents.templates import CONTEXT_NAMES, render
    from benchkit.documents.tree import (
        Tree,
        find_root,
        load_arms,
        load_seeds,
        load_tasks,
        load_tree,
        validate_paths,
    )

# name -> the module of the package that defines it. Each module is imported when one of
# its names is first used, not with the package: the loaders' JSON Schema, YAML and
# Jinja2 took 0.15 s (measured, benchmarks/startup_bench.py) of the start of every
# command that reads no document, such as bare `benchkit list`.
_HOMES = {
    **dict.fromkeys(["Document", "DocumentError", "Problem", "display_path", "load_document",
                     "read_document", "schema"], "loader"),
    **dict.fromkeys(["Arm", "Seed", "Suite", "load_arm", "load_seed", "load_suite"], "models"),
    **dict.fromkeys(["load_reference", "no_reference", "reference_path"], "reference"),
    **dict.fromkeys(["CONTEXT_NAMES", "render"], "templates"),
    **dict.fromkeys(["Tree", "find_root", "load_arms", "load_seeds", "load_tasks", "load_tree",
                     "validate_paths"], "tree"),
}
__all__ = [
    "CONTEXT_NAMES", "Arm", "Document", "DocumentError", "Problem", "Seed", "Suite", "Tree",
    "display_path", "find_root", "load_arm", "load_arms", "load_document", "load_reference",
    "load_seed", "load_seeds", "load_suite", "load_tasks", "load_tree", "no_reference",
    "read_document", "reference_path", "render", "schema", "validate_paths",
]  # the names of _HOMES (tests/cli/test_cli_contract.py checks)

__getattr__ = lazy_names(__name__, _HOMES)
