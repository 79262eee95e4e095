"""The README is what a newcomer needs on one screen, and every link of it and of docs/
leads somewhere: the two set-up commands and what they do come first, the test command
says how long it takes and names a quick subset that selects tests, and every relative
link names a file of the checkout and, with an anchor, one of its headings."""

import re
import shlex

import pytest
from conftest import CHECKOUT

README = (CHECKOUT / "README.md").read_text(encoding="utf-8")
DOCUMENTS = [CHECKOUT / "README.md", *sorted((CHECKOUT / "docs").glob("*.md"))]
LINK = re.compile(r"\]\(([^)\s]+)\)")
SCREEN_LINES, SCREEN_WORDS = 50, 450


def headings(path) -> set[str]:
    """The GitHub anchors of a Markdown file's headings (fenced code left out)."""
    found, fenced = set(), False
    for line in path.read_text(encoding="utf-8").splitlines():
        if line.startswith("```"):
            fenced = not fenced
        elif not fenced and line.startswith("#"):
            text = line.lstrip("#").strip().lower()
            found.add(re.sub(r"[^\w\- ]", "", text).replace(" ", "-"))
    return found


def test_the_readme_fits_one_screen_and_opens_with_the_two_commands():
    lines = README.splitlines()
    assert len(lines) <= SCREEN_LINES and len(README.split()) <= SCREEN_WORDS
    block = README.split("```sh\n", 1)[1].split("```", 1)[0].splitlines()
    assert [line.split(" && ")[0] for line in block if not line.startswith("#")] == [
        "bash scripts/setup", "bash scripts/test-setup"]
    comments = [line for line in block if line.startswith("#")]
    assert comments[0].startswith("# Main job:") and "about 55 minutes on 2 cores" in comments[1]
    before = README.index("```sh")
    assert README[:before].count("\n") < 10  # nothing long comes before them
    said = README[README.index("```", before + 5):]
    assert "**`scripts/setup`**" in said and "**`scripts/test-setup`**" in said


def test_the_quick_subset_the_readme_names_selects_tests():
    """Its -k terms each name test files or folders (pytest matches them against the
    names of a test's module and folders), and docs/testing.md gives the same command
    with its time."""
    command = re.search(r"`(\.venv/bin/python -m pytest [^`]*)`", README)[1]
    words = shlex.split(command)
    assert words[words.index("-m", 3) + 1] == "not slow"
    terms = words[words.index("-k") + 1].split(" or ")
    modules = [name for path in (CHECKOUT / "tests").glob("*/test_*.py")
               for name in (path.stem, path.parent.name)]
    for term in terms:
        assert any(term in module for module in modules), term
    assert command in (CHECKOUT / "docs" / "testing.md").read_text(encoding="utf-8")


@pytest.mark.parametrize("path", DOCUMENTS, ids=lambda p: p.name)
def test_every_relative_link_leads_somewhere(path):
    text = path.read_text(encoding="utf-8")
    for target in LINK.findall(text):
        if re.match(r"[a-z]+:", target) or target.startswith("/"):
            continue  # a URL, or a host's path an example shows
        file, _, anchor = target.partition("#")
        where = (path.parent / file).resolve() if file else path
        assert where.exists(), f"{path.name}: {target} names no file"
        if anchor:
            assert anchor in headings(where), f"{path.name}: {target} names no heading"
