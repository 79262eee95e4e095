"""The `benchkit` command line: a click group whose sub-commands live beside their stage.

Each command is imported only when invoked, so `benchkit guard` does not pay for the
forge, the SDK or the report templates.
"""

import contextlib
import importlib
import sys
from typing import NoReturn

import click

# command name -> "module:attribute" of its click command, in pipeline order.
COMMANDS = {
    "validate": "benchkit.spec.commands:validate",
    "list": "benchkit.spec.commands:list_documents",
    "expect": "benchkit.scoring.commands:expect",
    "check": "benchkit.scoring.commands:check",
    "guard": "benchkit.isolation.commands:guard",
    "forge": "benchkit.forge.commands:forge",
    "seed": "benchkit.gitea.commands:seed",
    "snapshot": "benchkit.gitea.commands:snapshot",
    "gc": "benchkit.gitea.commands:gc",
    "run": "benchkit.run.commands:run",
    "report": "benchkit.report.commands:report",
}


EXIT_BAD_INPUT = 2


def fail(problems) -> NoReturn:
    """Bad documents, as every command reports them: a `FILE:LINE: message` line each
    on stderr, exit 2."""
    for problem in problems:
        click.echo(str(problem), err=True)
    sys.exit(EXIT_BAD_INPUT)


@contextlib.contextmanager
def reported(errors=(), status: int = EXIT_BAD_INPUT):
    """Ends the command on an error raised in the block: a SpecError through `fail`,
    one of `errors` (exception types) as an `error: ...` line and exit `status`."""
    from benchkit.spec.loader import SpecError
    try:
        yield
    except SpecError as error:
        fail(error.problems)
    except errors as error:
        click.echo(f"error: {error}", err=True)
        sys.exit(status)


class LazyGroup(click.Group):
    def list_commands(self, ctx):
        return list(COMMANDS)

    def get_command(self, ctx, name):
        target = COMMANDS.get(name)
        if target is None:
            return None
        module, attribute = target.split(":")
        return getattr(importlib.import_module(module), attribute)


@click.group(cls=LazyGroup)
@click.version_option(package_name="benchkit")
def main():
    """Measure which tool lets a Claude agent drive Gitea for the fewest tokens."""
