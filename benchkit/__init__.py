"""benchkit: which tool lets a Claude agent drive Gitea for the fewest tokens."""

import os
from pathlib import Path

__version__ = "0.1.0"

# The shipped tree (suite.yaml, seeds/, tasks.d/, arms.d/) sits beside the package in a
# checkout; BENCHKIT_ROOT points elsewhere (a user's own tree, a test's temporary copy).
PACKAGE_DIR = Path(__file__).resolve().parent
SCHEMA_DIR = PACKAGE_DIR / "schemas"


def cache_dir() -> Path:
    """$BENCHKIT_CACHE_DIR, else benchkit/ under $XDG_CACHE_HOME or ~/.cache."""
    base = os.environ.get("BENCHKIT_CACHE_DIR")
    return Path(base) if base else (
        Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "benchkit")
