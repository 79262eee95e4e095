"""Errors that belong to the harness, never to an arm.

Anything derived from `HarnessError` (an unreachable host, a seed that would not take,
a repository the readiness gate never saw settle) is recorded as a harness error and
never scored as an agent failure, so no token budget is charged for it.
"""


class HarnessError(Exception):
    """Base for every failure of benchkit's own machinery."""


class HostError(HarnessError):
    """The Gitea host could not be reached or refused a call the harness made."""


class SeedError(HarnessError):
    """A throwaway repository could not be provisioned and seeded."""


class ReadinessError(HarnessError):
    """A seeded repository did not become visible to an independent reader in time."""
