"""benchkit: which tool lets a Claude agent drive Gitea for the fewest tokens."""

from pathlib import Path

__version__ = "0.1.0"

# The shipped tree (suite.yaml, seeds/, tasks.d/, arms.d/) sits beside the package in a
# checkout; BENCHKIT_ROOT points elsewhere (a user's own tree, a test's temporary copy).
PACKAGE_DIR = Path(__file__).resolve().parent
SCHEMA_DIR = PACKAGE_DIR / "schemas"
