"""The isolation package's own error, raised by the bin directory, the skill look-up,
the assembly and the sandbox alike."""

from benchkit.errors import BenchkitError


# Not a HarnessError, though one in meaning: the cell runner records it under a failure
# class of its own ("isolation"), and as a HarnessError it would also be caught by every
# `except HarnessError` around a host call, a seed or a snapshot, which it never was.
class IsolationError(RuntimeError, BenchkitError):
    """The harness cannot isolate an arm (a binary or file missing): a harness error."""
