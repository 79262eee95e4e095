"""The `benchkit` command line: a click group whose sub-commands live beside their stage.

Each command is imported only when invoked, so `benchkit guard` does not pay for the
forge, the SDK or the report templates. Every command ends with one of the EXIT codes.
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
    "show": "benchkit.report.show:show",
}

# The exit codes of every command (README, docs/contracts.md).
EXIT_OK = 0
EXIT_FAILED = 1        # a verdict of failure: a check failed, a command denied, a task unproved
EXIT_BAD_INPUT = 2     # bad input, or a host or tool that cannot be used; nothing was spent
EXIT_INTERRUPTED = 130  # Ctrl-C


def write_reports(store_dir, reports_dir, *, model=None) -> list:
    """Render a store's report, for a command that ends with one (`benchkit run`): the
    run stage does not depend on the report stage; the command line depends on both."""
    from benchkit.report import write_reports as render  # numpy, scipy, jinja: when rendered
    return render(store_dir, reports_dir, model=model)


class BadInput(click.ClickException):
    """A command's own `error: ...` line for bad input or an unusable host or tool: exit 2."""
    exit_code = EXIT_BAD_INPUT


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
    def invoke(self, ctx):
        try:
            return super().invoke(ctx)
        except KeyboardInterrupt:  # click would call it an abort and exit 1
            click.echo("interrupted", err=True)
            sys.exit(EXIT_INTERRUPTED)

    def list_commands(self, ctx):
        return list(COMMANDS)

    def get_command(self, ctx, name):
        target = COMMANDS.get(name)
        if target is None:
            return None
        module, attribute = target.split(":")
        return getattr(importlib.import_module(module), attribute)


@click.group(cls=LazyGroup, context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(package_name="benchkit")
def main():
    """Measure which tool lets a Claude agent drive Gitea for the fewest tokens.

    Exit codes, for every command: 0 ok; 1 a verdict of failure (a check failed, a
    command was denied, a task is unproved, a run had harness errors); 2 bad input or a
    host or tool that cannot be used (nothing spent); 130 interrupted.

    \b
    Examples:
      benchkit run arms.d/raw-api.yaml --driver replay   # the main job, no tokens
      benchkit show --outcome failed                     # why trials failed
      benchkit COMMAND -h                                # a command's options
    """


if __name__ == "__main__":
    main()
