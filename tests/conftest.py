"""Fixtures shared across areas. Keep them generic."""

import pytest


@pytest.fixture
def forge():
    """A fresh embedded forge on a loopback port, its own in-memory database."""
    from benchkit.forge import Forge
    with Forge() as running:
        yield running
