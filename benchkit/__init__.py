"""benchkit: which tool lets a Claude agent drive Gitea for the fewest tokens."""

import importlib
import os
import sys
from collections.abc import Callable, Mapping
from pathlib import Path

__version__ = "0.1.0"

# The shipped tree (suite.yaml, seeds/, tasks.d/, arms.d/) sits beside the package in a
# checkout; BENCHKIT_ROOT points elsewhere (a user's own tree, a test's temporary copy).
PACKAGE_DIR = Path(__file__).resolve().parent
SCHEMA_DIR = PACKAGE_DIR / "schemas"
YAML_SUFFIXES = (".yaml", ".yml")


def find_tree() -> Path | None:
    """The tree holding suite.yaml: $BENCHKIT_ROOT when set (None when it holds none),
    else the working directory or the nearest parent with one, else the checkout beside
    the installed package; None where there is none. benchkit.documents.find_root says why.
    Here, not in benchkit.documents, so `benchkit report` can find its tree's cached matrix
    without importing the document loaders' YAML and JSON-Schema stack."""
    override = os.environ.get("BENCHKIT_ROOT")
    if override:
        root = Path(override).resolve()
        return root if (root / "suite.yaml").is_file() else None
    cwd = Path.cwd().resolve()
    for directory in (cwd, *cwd.parents, PACKAGE_DIR.parent):
        if (directory / "suite.yaml").is_file():
            return directory
    return None


def yaml_files(directory: Path) -> list[Path]:
    """The YAML documents of a tree's directory, sorted (none where it is not one). Here,
    beside find_tree, so bare `benchkit list` counts them without the document loaders."""
    if not directory.is_dir():
        return []
    return sorted(p for p in directory.iterdir() if p.suffix in YAML_SUFFIXES and p.is_file())


def cache_dir() -> Path:
    """$BENCHKIT_CACHE_DIR, else benchkit/ under $XDG_CACHE_HOME or ~/.cache."""
    base = os.environ.get("BENCHKIT_CACHE_DIR")
    return Path(base) if base else (
        Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "benchkit")


def lazy_names(package: str, homes: Mapping[str, str]) -> Callable[[str], object]:
    """A package's module-level __getattr__ that imports each name's module (`homes`:
    name -> submodule) when the name is first used, not with the package, and keeps it
    in the package from then on (benchkit.documents, benchkit.report: start-up)."""
    def __getattr__(name: str) -> object:
        if name not in homes:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        value = getattr(importlib.import_module(f"{package}.{homes[name]}"), name)
        setattr(sys.modules[package], name, value)  # found directly from now on
        return value
    return __getattr__
