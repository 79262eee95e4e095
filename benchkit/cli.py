"""The `benchkit` command line: a click group whose sub-commands live beside their stage.

Each command is imported only when invoked, so `benchkit guard` does not pay for the
forge, the SDK or the report templates. Every command ends with one of the EXIT codes
(benchkit.exits).
"""

import importlib
import signal
import sys

import click

from benchkit.exits import EXIT_INTERRUPTED

# command name -> "module:attribute" of its click command, in pipeline order.
COMMANDS = {
    "validate": "benchkit.run.validate:validate",
    "list": "benchkit.spec.commands:list_documents",
    "expect": "benchkit.scoring.commands:expect",
    "check": "benchkit.scoring.commands:check",
    "guard": "benchkit.isolation.commands:guard",
    "forge": "benchkit.forge.commands:forge",
    "seed": "benchkit.gitea.commands:seed",
    "snapshot": "benchkit.gitea.commands:snapshot",
    "gc": "benchkit.gitea.commands:gc",
    "run": "benchkit.run.commands:command",  # takes the report renderer
    "report": "benchkit.report.commands:report",
    "show": "benchkit.report.show:show",
}


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
        # Imported on demand, not at the top: importing every command module took
        # 0.96 s (measured: the forge, the SDK, numpy, the templates) on each
        # invocation, against 0.15 s for `validate` or `list` alone.
        target = COMMANDS.get(name)
        if target is None:
            return None
        module, attribute = target.split(":")
        found = getattr(importlib.import_module(module), attribute)
        # A command that ends with a report is made with the renderer passed in.
        return found if isinstance(found, click.Command) else found(write_reports)


def write_reports(store_dir, reports_dir, *, model=None) -> list:
    """Render a store's report, for a command that ends with one (`benchkit run`): the
    run stage may not import the report stage (docs/layout.md), the command line may,
    and passes this to the command it makes."""
    # Imported here, measured: numpy and the templates cost ~0.3 s a run without a
    # report (--no-report, --dry-run) never needs.
    from benchkit.report import ReportOptions
    from benchkit.report import write_reports as render
    return render(store_dir, reports_dir, ReportOptions(model=model))


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
      benchkit show --outcome failures                   # the trials that did not pass
      benchkit COMMAND -h                                # a command's options
    """
    # Ctrl-C ends every command with 130 however it was started: a shell without job
    # control (a script's `&`, many CI runners) starts background commands ignoring
    # SIGINT, and Python would keep ignoring it (the forge then never stopped).
    signal.signal(signal.SIGINT, signal.default_int_handler)


if __name__ == "__main__":
    main()
