"""The tests mirror the house: a module's tests are found by its path. Each test file sits
in tests/<folder>/, the folder named after the product package it tests
(tests/gitea/ for benchkit/gitea/), or one of four that no package names:

    foundation/   the foundation modules, benchkit/*.py (tests/foundation/test_store.py)
    cli/          the command line's shared contract, across every command
    end_to_end/   a whole command or several packages at once: the README's main job,
                  the arms on their real tools, a sweep over machines
    house/        the checkout itself: its rules, import graph, docs, setup and lock

Helper modules (and conftest.py) stay at tests/ itself. The product modules no test file
imports by name are listed in untested_modules.txt, a list that only shrinks: many are
reached through their package or the command line, and a new module needs a test.
"""

import ast
import tomllib
from collections import defaultdict
from pathlib import Path

from conftest import CHECKOUT

TESTS = CHECKOUT / "tests"
PACKAGES = {p.name for p in (CHECKOUT / "benchkit").iterdir() if (p / "__init__.py").is_file()}
CROSSING = {"foundation", "cli", "end_to_end", "house"}
# The modules no test file imports yet, one a line: it only shrinks.
UNTESTED = Path(__file__).with_name("untested_modules.txt")


def found_test_files() -> list[Path]:
    return sorted(TESTS.rglob("test_*.py"))


def test_every_test_file_sits_in_the_folder_of_what_it_tests():
    misplaced = [str(path.relative_to(TESTS)) for path in found_test_files()
                 if path.parent.parent != TESTS or path.parent.name not in PACKAGES | CROSSING]
    assert not misplaced, (
        "test files outside tests/<package>/: move each (git mv) into the folder of the "
        f"package it tests, or one of {sorted(CROSSING)}:\n" + "\n".join(misplaced))


def test_no_two_test_files_share_a_name():
    """pytest imports a test file by its name alone (no __init__.py in tests/), and a
    test imports another folder's helpers by it (`from test_trial_cell import context`)."""
    folders = defaultdict(list)
    for path in found_test_files():
        folders[path.name].append(path.parent.name)
    assert not {name: where for name, where in folders.items() if len(where) > 1}


def test_every_test_folder_is_on_pytests_path():
    """So that a test file importing another folder's test file runs alone."""
    with open(CHECKOUT / "pyproject.toml", "rb") as pyproject:
        path = tomllib.load(pyproject)["tool"]["pytest"]["ini_options"]["pythonpath"]
    folders = sorted({f"tests/{p.parent.name}" for p in found_test_files()})
    assert path == ["tests", *folders], "pyproject.toml's pythonpath: tests and " + \
        ", ".join(folders)


def product_modules() -> set[str]:
    """benchkit's modules by dotted name, a package by its own."""
    names = set()
    for path in (CHECKOUT / "benchkit").rglob("*.py"):
        parts = path.relative_to(CHECKOUT).with_suffix("").parts
        names.add(".".join(parts[:-1] if parts[-1] == "__init__" else parts))
    return names


def imported(text: str) -> set[str]:
    """What a Python source imports of benchkit by name: `from benchkit.a import b` is
    benchkit.a and, should it be a module, benchkit.a.b."""
    names = set()
    for node in ast.walk(ast.parse(text)):
        if isinstance(node, ast.ImportFrom) and node.level == 0 and node.module and \
                node.module.split(".")[0] == "benchkit":
            names.add(node.module)
            names.update(f"{node.module}.{alias.name}" for alias in node.names)
        elif isinstance(node, ast.Import):
            names.update(alias.name for alias in node.names)
    return names


def test_imports_are_read_by_module():
    source = ("from benchkit.trial import cell\nfrom benchkit.gitea.snapshot.reader import x\n"
              "import benchkit.store\nfrom . import near\nfrom os import path\n")
    assert imported(source) & product_modules() == {
        "benchkit.trial", "benchkit.trial.cell", "benchkit.gitea.snapshot.reader",
        "benchkit.store"}


def untested_modules() -> list[str]:
    """The product modules no test file imports by name."""
    used = set().union(*(imported(path.read_text(encoding="utf-8"))
                         for path in TESTS.rglob("*.py")))
    return sorted(product_modules() - used)


def test_every_module_is_imported_by_a_test_or_still_listed():
    """A ratchet: the modules no test file imports yet are listed in UNTESTED (each
    reached through its package or the command line today); a new module must have a
    test that imports it, and a listed module that gained one leaves the list."""
    listed = UNTESTED.read_text(encoding="utf-8").split()
    untested = untested_modules()
    assert len(untested) < len(product_modules())  # the tests were read
    new = sorted(set(untested) - set(listed))
    assert not new, ("modules no test file imports: give each a test that imports it:\n"
                     + "\n".join(new))
    tested = sorted(set(listed) - set(untested))
    assert not tested, (f"modules a test now imports: remove them from {UNTESTED.name}:\n"
                        + "\n".join(tested))
