"""The root of benchkit's exceptions, and the errors that belong to the harness, never
to an arm.

Every exception benchkit defines derives from `BenchkitError` (tests/house/test_house_rules.py
holds them to it; its allow-list names the few that must not and why), so the command
line ends on any of them with one `error: ...` line, never a traceback.

Anything derived from `HarnessError` (an unreachable host, a seed that would not take,
a repository the readiness gate never saw settle) is recorded as a harness error and
never scored as an agent failure, so no token budget is charged for it.
"""


class BenchkitError(Exception):
    """Base of every exception benchkit defines."""


class HarnessError(BenchkitError):
    """Base for every failure of benchkit's own machinery."""


class HostError(HarnessError):
    """The Gitea host could not be reached or refused a call the harness made."""


class SeedError(HarnessError):
    """A throwaway repository could not be provisioned and seeded."""


class ReadinessError(HarnessError):
    """A seeded repository did not become visible to an independent reader in time."""
