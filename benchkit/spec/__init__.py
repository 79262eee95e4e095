"""benchkit.spec: the YAML documents (suite, seeds, arms, tasks), their schemas and tree.

    from benchkit.spec import load_tree, load_suite, load_seed, load_arm, find_root
    from benchkit.spec import SpecError, Problem, render

Every loader validates against `benchkit/schemas/<kind>.schema.json`, fills in the
schema's defaults and raises one SpecError listing every Problem (`FILE:LINE: message
(at json.path)`). Task documents are loaded by `benchkit.spec.task.load_task`.
"""

from benchkit.spec.loader import (
    Document,
    Problem,
    SpecError,
    display_path,
    load_document,
    read_document,
    schema,
)
from benchkit.spec.models import Arm, Seed, Suite, load_arm, load_seed, load_suite
from benchkit.spec.templates import CONTEXT_NAMES, render
from benchkit.spec.tree import Tree, find_root, load_tree, validate_paths

__all__ = [
    "Arm", "CONTEXT_NAMES", "Document", "Problem", "Seed", "SpecError", "Suite", "Tree",
    "display_path", "find_root", "load_arm", "load_document", "load_seed", "load_suite",
    "load_tree", "read_document", "render", "schema", "validate_paths",
]
