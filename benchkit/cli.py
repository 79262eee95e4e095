"""The `benchkit` command line: a click group whose sub-commands live beside their stage.

Each command is imported only when invoked, so `benchkit guard` does not pay for the
forge, the SDK or the report templates. Every command ends with one of the EXIT codes
(benchkit.exits).
"""

import importlib
import signal
import sys

import click

from benchkit.errors import BenchkitError
from benchkit.exits import EXIT_FAILED, EXIT_INTERRUPTED, summary

# command name -> ("module:attribute" of its click command, its one-line help), in
# pipeline order. The help is the command's own (the first sentence of its docstring),
# held here so that `benchkit --help` imports no command module: importing them all took
# 0.6 s. tests/cli/test_cli_contract.py holds the two to agreement.
COMMANDS = {
    "validate": ("benchkit.proving.validate:validate",
                 "Validate YAML documents: files, directories or trees (default: the whole "
                 "tree)."),
    "list": ("benchkit.documents.commands:list_documents",
             "List the tree's tasks or arms (whether each arm's tool is installed)."),
    "expect": ("benchkit.scoring.commands:expect",
               "Print TASK_YAML's expected end state (mutations) or answer key (reads: "
               "required and forbidden facts) as JSON; with --untouched, or with no task, the seed's ground truth RepoState."),
    "check": ("benchkit.scoring.commands:check",
              "Score a captured state and answer against TASK_YAML."),
    "guard": ("benchkit.isolation.commands:guard",
              "Decide whether the arm's agent may run COMMAND."),
    "forge": ("benchkit.forge.commands:forge",
              "Serve the embedded Gitea-compatible host until interrupted."),
    "seed": ("benchkit.gitea.commands:seed",
             'Provision and seed a throwaway repository; print {"owner", "repo", "url"}.'),
    "snapshot": ("benchkit.gitea.commands:snapshot",
                 "Print a repository's whole state as RepoState JSON."),
    "gc": ("benchkit.gitea.commands:gc",
           "Delete what dead runs left (with --yes; else list it): first everything their "
           "journals list (temp directories, run and trial users with their repositories, "
           "repositories), at once; then, found by name on the host, leftover throwaway "
           "repositories of the token's user and run and trial users (a site "
           "administrator's token sees them) the host made more than --older-than ago, "
           "never a user a live run's journal lists; on the forge, the agent tokens of "
           "repositories that are gone."),
    "run": ("benchkit.run.commands:run",  # renders with ctx.obj, the report renderer
            "Run trials of the cells ARM_YAML x chosen tasks and append their samples."),
    "merge": ("benchkit.run.merge:merge_command",
              "Merge stores (a sweep's shards) into one: samples unioned by id."),
    "report": ("benchkit.report.commands:report",
               "Aggregate the store into the report: what was run, headline per arm with 95% "
               "intervals, verdicts per pair of arms, tiers, token components, per-task "
               "tables, replay estimates apart, bonus operations, coverage; the HTML links "
               "every cell to its trials."),
    "gate": ("benchkit.report.gate:gate",
             "Compare the installed build of the arm's tool with an earlier version in the "
             "store until a verdict or the budget, and write a summary for the pull "
             "request."),
    "show": ("benchkit.report.show:show",
             "List the store's trials, newest first, or show one trial (ID: its sample id or "
             "a unique prefix): outcome, failure class, the checker's differences, tokens per "
             "component, turns, the failure replay's verdict, the transcript as a "
             "conversation (tool calls, their output, the guard's denials) and the path of "
             "its page in the HTML report."),
}


class LazyGroup(click.Group):
    def invoke(self, ctx):
        try:
            return super().invoke(ctx)
        except KeyboardInterrupt:  # click would call it an abort and exit 1
            click.echo("interrupted", err=True)
            sys.exit(EXIT_INTERRUPTED)
        except BenchkitError as error:
            # One no command caught: its line, not a traceback, and exit 1 as an uncaught
            # exception would.
            click.echo(f"error: {error}", err=True)
            sys.exit(EXIT_FAILED)

    def list_commands(self, ctx):
        return list(COMMANDS)

    def format_commands(self, ctx, formatter):
        """The commands and their one-line help from COMMANDS, cut and laid out as click
        does it (a bare command holding the help cuts it as the real one would)."""
        limit = formatter.width - 6 - max(map(len, COMMANDS))
        with formatter.section("Commands"):
            formatter.write_dl([(name, click.Command(name, help=short).get_short_help_str(limit))
                                for name, (_, short) in COMMANDS.items()])

    def get_command(self, ctx, name):
        # Imported on demand, not at the top: importing every command module took
        # 0.96 s (measured: the forge, the SDK, numpy, the templates) on each
        # invocation, against 0.15 s for `validate` or `list` alone.
        if name not in COMMANDS:
            return None
        module, attribute = COMMANDS[name][0].split(":")
        return getattr(importlib.import_module(module), attribute)


def write_reports(store_dir, reports_dir, *, model=None) -> list:
    """Render a store's report, for a command that ends with one (`benchkit run`): the
    run stage may not import the report stage (docs/layout.md), the command line may,
    and hands this down as click's context object."""
    # Imported here, measured: numpy and the templates cost ~0.3 s a run without a
    # report (--no-report, --dry-run) never needs.
    from benchkit.report import ReportOptions
    from benchkit.report import write_reports as render
    return render(store_dir, reports_dir, ReportOptions(model=model))


# `benchkit --help`: its exit codes said as benchkit.exits writes them.
HELP = f"""Measure which tool lets a Claude agent drive Gitea for the fewest tokens.

Exit codes, for every command: {summary()}.

\b
Examples:
  benchkit run arms.d/raw-api.yaml --driver replay   # the main job, no tokens
  benchkit show --outcome failures                   # the trials that did not pass
  benchkit COMMAND -h                                # a command's options
"""


@click.group(cls=LazyGroup, help=HELP,
             context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(package_name="benchkit")
@click.pass_context
def main(ctx: click.Context):
    # Ctrl-C ends every command with 130 however it was started: a shell without job
    # control (a script's `&`, many CI runners) starts background commands ignoring
    # SIGINT, and Python would keep ignoring it (the forge then never stopped).
    signal.signal(signal.SIGINT, signal.default_int_handler)
    ctx.obj = write_reports


if __name__ == "__main__":
    main()
