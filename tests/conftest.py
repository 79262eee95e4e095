"""Fixtures shared across areas. Keep them generic."""

import shutil
import socket
from pathlib import Path

import pytest

CHECKOUT = Path(__file__).resolve().parent.parent


@pytest.fixture
def forge():
    """A fresh embedded forge on a loopback port, its own in-memory database."""
    from benchkit.forge import Forge
    with Forge() as running:
        yield running


@pytest.fixture
def dead_url():
    """A loopback URL that nothing listens on (a host that is down)."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    return f"http://127.0.0.1:{port}/"


@pytest.fixture
def tree_copy(tmp_path):
    """A temporary copy of the shipped tree (suite.yaml, seeds/, tasks.d/, arms.d/,
    refs.d/), to break or extend freely; returns its root. Point BENCHKIT_ROOT at it,
    or chdir into it, to make commands use it."""
    root = tmp_path / "tree"
    root.mkdir()
    for name in ("suite.yaml", "seeds", "tasks.d", "arms.d", "refs.d"):
        source = CHECKOUT / name
        if source.is_dir():
            shutil.copytree(source, root / name)
        elif source.is_file():
            shutil.copy2(source, root / name)
    return root
