"""Every file the project cites is in the repository: no code, test or document points
at a design note, a sibling directory or an issue tracker a reader of the repository
does not have."""

import re
import subprocess

from conftest import CHECKOUT

# Built from pieces, so that this file does not match itself.
CITED_ELSEWHERE = re.compile("|".join([
    "DESIGN" + r"\.md",
    r"\.\./" + "shared",
    r"\b" + "shared/" + r"[\w-]+\.md",
    r"[\w-]+-" + "facts" + r"\.md",
    "reference-" + r"suite\.md",
    r"/work/" + "shared",
    r"\b[Ii]ssue" + r" \d+\b",  # an issue tracker's number (not a seeded issue's "#2")
]))
TEXT = (".py", ".md", ".yaml", ".yml", ".j2", ".toml", ".json", ".sh", ".txt", ".cfg")


def test_nothing_cites_a_file_outside_the_repository():
    tracked = subprocess.run(["git", "ls-files"], cwd=CHECKOUT, capture_output=True,
                             text=True, check=True).stdout.splitlines()
    found = []
    for name in tracked:
        path = CHECKOUT / name
        if not name.endswith(TEXT) or not path.is_file() or name.startswith("tests/data/"):
            continue
        for number, line in enumerate(path.read_text(errors="replace").splitlines(), 1):
            if CITED_ELSEWHERE.search(line):
                found.append(f"{name}:{number}: {line.strip()}")
    assert found == []
