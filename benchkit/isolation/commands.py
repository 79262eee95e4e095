"""`benchkit guard ARM_YAML -- COMMAND`: the guard's decision for one shell command."""

import json
import shlex
import sys

import click

from benchkit.documents import load_arm
from benchkit.exits import EXIT_FAILED, EXIT_OK, reported

from .guard import Guard

EXIT_ALLOWED, EXIT_DENIED = EXIT_OK, EXIT_FAILED


@click.command(context_settings={"ignore_unknown_options": True})
@click.argument("arm_yaml", type=click.Path(dir_okay=False))
@click.argument("command", nargs=-1, type=click.UNPROCESSED)
@click.pass_context
def guard(ctx: click.Context, arm_yaml: str, command: tuple[str, ...]) -> None:
    """Decide whether the arm's agent may run COMMAND.

    COMMAND is one argument holding the whole line (quote it), or several that are
    joined as a shell would have received them; with none it is read from stdin (for
    multi-line scripts). Prints {"allowed", "reason", "binaries"} as JSON; exit 0
    allowed, 1 denied, 2 bad input.

    \b
    Examples:
      benchkit guard arms.d/raw-api.yaml -- 'curl -sS "$GITEA_URL/api/v1/version"'
      benchkit guard arms.d/tea.yaml -- tea api /version          # denied, exit 1
    """
    with reported():
        arm = load_arm(arm_yaml)
    if len(command) == 1:
        line = command[0]
    elif command:
        line = shlex.join(command)
    else:
        line = sys.stdin.read()
    decision = Guard.for_tool(arm.id, arm.tool).decide(line)
    click.echo(json.dumps({"allowed": decision.allowed, "reason": decision.reason,
                           "binaries": list(decision.binaries)}, ensure_ascii=False))
    ctx.exit(EXIT_ALLOWED if decision.allowed else EXIT_DENIED)
