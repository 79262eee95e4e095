"""`benchkit forge`: serve the embedded host in the foreground."""

import sys

import click

from benchkit.exits import BadInput

from . import Forge


@click.command()
@click.option("--port", type=int, default=3000, show_default=True, help="TCP port on 127.0.0.1 (0: any free port).")
@click.option("--user", default="bench", show_default=True, help="The admin user's login.")
@click.option("--token", default=None, help="A fixed token for the user (default: a random one).")
@click.option("--db", default=":memory:", show_default=True, help="SQLite database file, or :memory:.")
@click.option("--index-lag", type=float, default=0.0, show_default=True,
              help="Seconds before keyword search (q=) sees a write, as Gitea's queued indexer lags.")
@click.option("--self-review", is_flag=True,
              help="Let users approve or reject their own pull requests (Gitea refuses it).")
def forge(port: int, user: str, token: str | None, db: str, index_lag: float, self_review: bool) -> None:
    """Serve the embedded Gitea-compatible host until interrupted.

    \b
    Examples:
      benchkit forge --port 3000 --token secret     # then --host http://127.0.0.1:3000
      benchkit forge --db forge.sqlite --self-review
    """
    try:
        host = Forge(user=user, token=token, db=db, port=port, index_lag=index_lag, self_review=self_review)
    except OSError as error:
        raise BadInput(f"cannot listen on 127.0.0.1:{port}: {error.strerror}") from None
    except Exception as error:  # a database file that is not SQLite, an unwritable path
        raise BadInput(f"cannot open the forge database {db}: {error}") from None
    # The token is printed once, to the terminal that asked for it, so clients can be configured.
    click.echo(f"url: {host.url}\nuser: {host.user}\ntoken: {host.token}")
    sys.stdout.flush()  # a parent process reads these lines before the server blocks
    host.serve_forever()
