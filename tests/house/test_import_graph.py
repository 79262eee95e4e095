"""The import graph of benchkit/ follows the pipeline (docs/layout.md): no module imports
a later layer, and no modules import each other in a cycle; an import inside a function
says, in a comment, the measured start-up cost that keeps it there.

Every import of a benchkit module counts: at the top of a module, inside a function,
and under `if TYPE_CHECKING:` too. A type-only import never runs, but it couples the
two modules all the same, so a type-only cycle is a cycle (the type moves below both).
Third-party imports are not in the graph.
"""

import ast
import functools
import re
from pathlib import Path

from conftest import CHECKOUT

PACKAGE = CHECKOUT / "benchkit"

# The layers, earliest first: a module may import its own layer and earlier ones.
# docs/layout.md says why each module sits where it does.
LAYERS = (
    ("foundation", ("benchkit", "benchkit.errors", "benchkit.exits", "benchkit.fingerprint",
                    "benchkit.surface", "benchkit.tool", "benchkit.installed",
                    "benchkit.scrub", "benchkit.sample", "benchkit.evidence",
                    "benchkit.replays",
                    "benchkit.cost", "benchkit.anatomy", "benchkit.counting",
                    "benchkit.state", "benchkit.store", "benchkit.lifetime",
                    "benchkit.stopping", "benchkit.journal", "benchkit.executable",
                    "benchkit.prices", "benchkit.cache")),
    ("documents", ("benchkit.documents",)),
    ("gateway", ("benchkit.gateway",)),
    ("host", ("benchkit.gitea", "benchkit.forge")),
    ("isolation", ("benchkit.isolation",)),
    ("agent", ("benchkit.agent",)),
    ("scoring", ("benchkit.scoring",)),
    ("statistics", ("benchkit.statistics",)),
    ("preflight", ("benchkit.preflight",)),
    ("planning", ("benchkit.planning",)),
    ("trial", ("benchkit.trial",)),
    ("proving", ("benchkit.proving",)),
    ("run", ("benchkit.run",)),
    ("report", ("benchkit.report",)),
    ("command line", ("benchkit.cli",)),
)

def module_name(path: Path) -> str:
    parts = path.relative_to(CHECKOUT).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


MODULES = {module_name(path): path for path in sorted(PACKAGE.rglob("*.py"))}


def imported(module: str, node: ast.Import | ast.ImportFrom) -> list[str]:
    """The benchkit modules an import statement loads (`from P import m` loads P.m when
    that is a module, else P itself)."""
    if isinstance(node, ast.Import):
        names = [alias.name for alias in node.names]
    else:
        base = node.module or ""
        if node.level:
            package = module.split(".")
            if not MODULES[module].name == "__init__.py":
                package = package[:-1]
            package = package[:len(package) - node.level + 1]
            base = ".".join([*package, base] if base else package)
        names = [f"{base}.{a.name}" if f"{base}.{a.name}" in MODULES else base for a in node.names]
    return [name for name in names if name in MODULES]


@functools.cache
def edges() -> dict[str, set[str]]:
    """module -> the benchkit modules it imports, type-only imports included."""
    graph = {}
    for module, path in MODULES.items():
        tree = ast.parse(path.read_text(encoding="utf-8"), str(path))
        graph[module] = found_imports(module, tree)
    return graph


def found_imports(module: str, tree: ast.Module) -> set[str]:
    """The benchkit modules a module's source imports, wherever the import sits."""
    return {target for node in ast.walk(tree) if isinstance(node, ast.Import | ast.ImportFrom)
            for target in imported(module, node) if target != module}


def layer_of(module: str) -> int:
    """The index in LAYERS of the longest entry naming the module or a package above it."""
    matches = [(len(prefix), index) for index, (_, prefixes) in enumerate(LAYERS)
               for prefix in prefixes
               if module == prefix or (prefix != "benchkit" and module.startswith(prefix + "."))]
    assert matches, f"{module} is in no layer: add it to LAYERS and docs/layout.md"
    return max(matches)[1]


def back_edges(graph: dict[str, set[str]]) -> set[tuple[str, str]]:
    return {(source, target) for source, targets in graph.items() for target in targets
            if layer_of(target) > layer_of(source)}


def cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components of more than one module (Tarjan)."""
    index, low, stack, on_stack, found = {}, {}, [], set(), []

    def visit(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        on_stack.add(node)
        for target in sorted(graph.get(node, ())):
            if target not in index:
                visit(target)
                low[node] = min(low[node], low[target])
            elif target in on_stack:
                low[node] = min(low[node], index[target])
        if low[node] == index[node]:
            component = []
            while True:
                member = stack.pop()
                on_stack.discard(member)
                component.append(member)
                if member == node:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    for node in sorted(graph):
        if node not in index:
            visit(node)
    return found


def test_every_module_has_a_layer():
    for module in MODULES:
        layer_of(module)


def test_no_import_against_the_pipeline():
    against = back_edges(edges())
    described = [f"{s} ({LAYERS[layer_of(s)][0]}) imports {t} ({LAYERS[layer_of(t)][0]})"
                 for s, t in sorted(against)]
    assert not described, "\n".join(described)


def test_no_import_cycle():
    assert cycles(edges()) == []


def lazy_imports_without_a_reason() -> dict[str, list[int]]:
    """module -> the lines of its imports inside a function with no comment (on the
    line or the three above) giving a measured cost."""
    found: dict[str, list[int]] = {}
    for module, path in MODULES.items():
        text = path.read_text(encoding="utf-8")
        tree, lines = ast.parse(text), text.splitlines()
        nested = {id(node) for function in ast.walk(tree)
                  if isinstance(function, ast.FunctionDef | ast.AsyncFunctionDef)
                  for node in ast.walk(function)}
        for node in ast.walk(tree):
            if isinstance(node, ast.Import | ast.ImportFrom) and id(node) in nested:
                context = lines[max(0, node.lineno - 4):node.lineno]
                if not any("#" in line and "measured" in line for line in context):
                    found.setdefault(module, []).append(node.lineno)
    return found


def test_an_import_inside_a_function_says_what_it_saves():
    assert lazy_imports_without_a_reason() == {}


def test_the_graph_sees_imports_inside_functions_and_type_only_ones():
    """The seams the tests above rely on, on a made-up module: an import inside a
    function and one under TYPE_CHECKING are edges; a third-party one is not."""
    source = ("from typing import TYPE_CHECKING\n"
              "if TYPE_CHECKING:\n    import yaml\n    from benchkit.report import aggregate\n"
              "def f():\n    from benchkit.documents import tree\n    from . import loader\n")
    found = found_imports("benchkit.documents.models", ast.parse(source))
    assert found == {"benchkit.report.aggregate", "benchkit.documents.tree", "benchkit.documents.loader"}
    graph = {"benchkit.documents.models": found, "benchkit.report.aggregate": {"benchkit.documents.models"}}
    assert [sorted(cycle) for cycle in cycles(graph)] == [
        ["benchkit.documents.models", "benchkit.report.aggregate"]]


def test_a_back_edge_and_a_cycle_are_found():
    graph = {"benchkit.documents.task": {"benchkit.run.loop"}, "benchkit.run.loop": {"benchkit.documents.task"}}
    assert back_edges(graph) == {("benchkit.documents.task", "benchkit.run.loop")}
    assert [sorted(cycle) for cycle in cycles(graph)] == [["benchkit.documents.task", "benchkit.run.loop"]]


def documented_modules(text: str) -> set[str]:
    """The module paths (relative to benchkit/) that docs/layout.md's "Every module" names."""
    listing = text.split("## Every module", 1)[1]
    return set(re.findall(r"^\| `([\w/]+\.py)` \|", listing, re.MULTILINE))


def test_layout_names_every_module_and_no_other():
    named = documented_modules((CHECKOUT / "docs" / "layout.md").read_text(encoding="utf-8"))
    present = {str(path.relative_to(PACKAGE)) for path in MODULES.values()
               if path.name != "__init__.py" or path.parent == PACKAGE}
    assert not present - named, f"add these modules to docs/layout.md: {sorted(present - named)}"
    assert not named - present, f"docs/layout.md names modules that are gone: {sorted(named - present)}"


def test_a_module_missing_from_the_layout_is_found():
    listing = "## Every module\n\n| `trial/cell.py` | one trial |\n| `run/gone.py` | was |\n"
    assert documented_modules("# layout\n| `run/loop.py` | not in the listing |\n" + listing) \
        == {"trial/cell.py", "run/gone.py"}
