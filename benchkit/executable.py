"""A script written to be run at once, while other threads start processes.

A file still open for writing cannot be executed (ETXTBSY). A process another thread
forks while this one writes the file inherits the open descriptor and holds it until
its own exec or exit, so the script's first run fails now and then: a CI run of the
whole suite saw the Claude CLI's wrapper refused so once (a test reproduces it about
7 times in 400 when written in-process). The file is written by a short child
process instead: no process of ours ever holds it open for writing, so when the child
is gone nobody does.
"""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

_WRITE = 'umask 077 && cat > "$1" && chmod 700 "$1"'


def write_executable(path: Path, text: str) -> None:
    """`path` holds `text`, executable by its owner alone, and nobody writes it."""
    subprocess.run(["/bin/sh", "-c", _WRITE, "sh", str(path)], input=text.encode(),
                   check=True, env={"PATH": os.defpath})
