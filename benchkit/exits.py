"""What every command shares: the exit codes, and how a command ends on bad input.

A foundation module, so each stage's `commands.py` imports it without importing the
command line (`benchkit.cli`, which dispatches to them). Nothing here ends the process:
an error raises a click exception, and click ends the process with its exit code.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterable, Iterator, Sequence
from typing import NoReturn

import click

# The exit codes of every command (docs/contracts.md).
EXIT_OK = 0
EXIT_FAILED = 1        # a verdict of failure: a check failed, a command denied, a task unproved
EXIT_BAD_INPUT = 2     # bad input, or a host, tool, credential or store that cannot be used
EXIT_UNDECIDED = 3     # `benchkit gate`: no verdict within the budget
EXIT_INTERRUPTED = 130  # Ctrl-C


class BadInput(click.ClickException):
    """A command's own `error: ...` line for bad input or an unusable host or tool: exit 2."""
    exit_code = EXIT_BAD_INPUT


class Ended(click.ClickException):
    """A command ended by bad input: its lines on stderr as they are (not click's
    `Error: ...`), then exit 2. The code is the class's, as click declares it (a
    class variable since click 8.5): a command ending otherwise subclasses this."""
    exit_code = EXIT_BAD_INPUT

    def __init__(self, lines: Iterable[object]):
        self.lines = [str(line) for line in lines]
        super().__init__("\n".join(self.lines))

    def show(self, file: object = None) -> None:
        for line in self.lines:
            click.echo(line, err=True)


class BadDocuments(Exception):
    """Bad documents, with every problem found (each prints as a `FILE:LINE: message`
    line); the spec's SpecError is one."""

    problems: Sequence[object]

    def __init__(self, problems: Iterable[object]):
        self.problems = list(problems)
        super().__init__("\n".join(str(p) for p in self.problems))


def fail(problems: Iterable[object]) -> NoReturn:
    """Bad documents, as every command reports them: a `FILE:LINE: message` line each
    on stderr, exit 2."""
    raise Ended(problems)


@contextlib.contextmanager
def reported(errors: type[Exception] | tuple[type[Exception], ...] = ()) -> Iterator[None]:
    """Ends the command on an error raised in the block: bad documents through `fail`,
    one of `errors` (exception types) as an `error: ...` line and exit 2."""
    try:
        yield
    except BadDocuments as error:
        fail(error.problems)
    except errors as error:
        raise Ended([f"error: {error}"]) from None
