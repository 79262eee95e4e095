"""The arms' real tools as scripts/test-setup builds them from their pinned source
archives: each is the build tests run (first on PATH), and reports the pinned version,
the string every sample of its arm records."""

import re
import subprocess
from pathlib import Path

import pytest
from conftest import REAL_TOOLS, real_tool

from benchkit.gitea.tools import pin, read_versions

ANSI = re.compile(r"\x1b\[[0-9;]*m")
VERSION_FLAG = {"tea": "--version", "gitea-mcp": "-v", "gitea-axi": "--version"}


@pytest.mark.parametrize("name", REAL_TOOLS)
def test_the_pinned_build_is_first_on_path_and_reports_its_version(name):
    found = Path(real_tool(name))
    wanted = pin(name)
    if found != wanted.binary:
        pytest.skip(f"{name} on PATH is {found}, not the pinned build {wanted.binary}")
    printed = subprocess.run([str(found), VERSION_FLAG[name]], capture_output=True, text=True,
                             timeout=60, check=True).stdout
    assert wanted.version in ANSI.sub("", printed.splitlines()[0])


def test_every_arm_tool_is_pinned_to_an_archive_and_its_sha256():
    values = read_versions()
    for name in REAL_TOOLS:
        wanted = pin(name)
        prefix = name.upper().replace("-", "_")
        assert wanted.source == values[f"{prefix}_ARCHIVE"]
        assert re.fullmatch(r"[0-9a-f]{64}", values[f"{prefix}_SHA256"])
    assert pin("gitea-axi").binary.relative_to(pin("gitea-axi").directory) == Path("bin/gitea-axi")
