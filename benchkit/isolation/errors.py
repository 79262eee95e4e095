"""The isolation package's own error, raised by the bin directory, the skill look-up,
the assembly and the sandbox alike."""


class IsolationError(RuntimeError):
    """The harness cannot isolate an arm (a binary or file missing): a harness error."""
