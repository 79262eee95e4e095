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

from benchkit.errors import BenchkitError

# The exit codes of every command; MEANINGS says what each means.
EXIT_OK = 0
EXIT_FAILED = 1
EXIT_BAD_INPUT = 2
EXIT_UNDECIDED = 3
EXIT_INTERRUPTED = 130

# What each exit code means, in the one place it is written: `benchkit --help` says each
# code's words before the first colon, and every exit table of the README and docs/
# (docs/contracts.md has one) is these rows word for word (tests/house/test_house_rules.py
# holds them, and every EXIT_ code here, to it).
MEANINGS = {
    EXIT_OK: "ok",
    EXIT_FAILED: "a verdict of failure: `check` failed, `guard` denied, `validate --live` "
                 "found a task unsolvable, mis-scored, ambiguous or unproved, a run had "
                 "harness errors, halted, could run nothing on its host or left a user or "
                 "repository behind, `gc` could not delete a repository, `gate` found the "
                 "build worse; or an error of benchkit's that no command caught (its "
                 "one `error:` line)",
    EXIT_BAD_INPUT: "bad input, or a host, tool, credential or store that cannot be used: a "
                    "broken document, a state that is not a RepoState, an unknown task or "
                    "arm, nothing runnable, a budget that fits no trial, a version to compare "
                    "against that the store lacks; no host given, or "
                    "one unreachable; a rejected token or credential; a missing binary; a "
                    "store or reports directory that cannot be written (one line: "
                    "`read-only file system: cannot write PATH`, `no space left on DEVICE "
                    "writing PATH`). Found before the trials, nothing is spent (a run "
                    "checks its store and `--reports` directory before any host starts); "
                    "found in them (the model service refusing the credentials, the store "
                    "refusing a sample, as on a full disk), the run stops and keeps what "
                    "ran, nothing half written",
    EXIT_UNDECIDED: "undecided: `benchkit gate` reached no verdict within its budget",
    EXIT_INTERRUPTED: "interrupted: Ctrl-C; `run` and `report`: 143 for SIGTERM, 129 for "
                      "SIGHUP, each the same clean stop",
}


def summary() -> str:
    """Every exit code in a line, as `benchkit --help` says it: `0 ok; 1 ...`."""
    return "; ".join(f"{code} {meaning.split(': ')[0]}"
                     for code, meaning in sorted(MEANINGS.items()))


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


class BadDocuments(BenchkitError):
    """Bad documents, with every problem found (each prints as a `FILE:LINE: message`
    line); benchkit.documents' DocumentError is one."""

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
