"""`benchkit seed`, `benchkit snapshot`, `benchkit gc`, and the `host_options` every
command that talks to a host shares (--host, --token, --login)."""

from __future__ import annotations

import functools
import json
from pathlib import Path

import click

from benchkit.documents import find_root, load_seed, load_suite
from benchkit.documents.task import seed_given
from benchkit.errors import HarnessError
from benchkit.exits import EXIT_FAILED, reported
from benchkit.gitea.admin import revoke_agent_token
from benchkit.gitea.client import Client
from benchkit.gitea.credentials import resolve_credentials
from benchkit.gitea.repos import delete_repo, list_leftovers, stale_agent_tokens
from benchkit.gitea.runuser import admin_problem, delete_run_user, list_run_users, user_prefix
from benchkit.gitea.seed import provision
from benchkit.gitea.snapshot import snapshot as take_snapshot
from benchkit.gitea.sweep import sweep
from benchkit.journal import claim, every_journal, live_users

FALLBACK_PREFIX = "benchkit-"


def host_options(func):
    """Add --host, --token and --login; the command receives them as keyword arguments
    `host`, `token`, `login` and passes them to `resolve_credentials` (or `host_client`)."""
    func = click.option("--login", metavar="NAME",
                        help="Use this tea login (default: tea's default login).")(func)
    func = click.option("--token", metavar="TOKEN", show_default=False,
                        help="Access token (default: GITEA_TOKEN, else the tea login).")(func)
    func = click.option("--host", metavar="URL",
                        help="Gitea root or /api/v1 URL (default: GITEA_URL, else the tea "
                             "login); `run` and `validate --live` also take `gitea`: a "
                             "throwaway pinned Gitea started for them.")(func)
    return func


def host_client(host: str | None, token: str | None, login: str | None) -> Client:
    return resolve_credentials(host=host, token=token, login=login).client()


def _reporting(func):
    """A host that cannot be used (none given, unreachable, a rejected token) as a
    one-line message, spec errors as FILE:LINE; exit 2 either way."""
    @functools.wraps(func)
    def wrapper(*args, **kwargs):
        with reported(HarnessError):
            return func(*args, **kwargs)
    return wrapper


def _prefix(prefix: str | None) -> str:
    """--prefix, else the suite's repo_prefix, else `benchkit-`."""
    if prefix:
        return prefix
    root = find_root(required=False)
    if root is None:
        return FALLBACK_PREFIX
    return load_suite(root / "suite.yaml").repo_prefix or FALLBACK_PREFIX


def _seed_file(seed_file: str | None) -> Path:
    """--seed as a file, else as a seed's name in the tree; default seeds/default.yaml."""
    if seed_file:
        root = find_root(required=False)
        path = seed_given(seed_file, (root or Path.cwd()) / "suite.yaml")
        if path is None:
            raise click.BadParameter(f"{seed_file!r} is neither a seed of the tree "
                                     f"(seeds/{seed_file}.yaml) nor a seed file",
                                     param_hint="--seed")
        return path
    root = find_root(required=False)
    if root is None:
        raise click.UsageError("no --seed given and no benchkit tree (suite.yaml) found")
    return root / "seeds" / "default.yaml"


prefix_option = click.option("--prefix", default=None,
                             help="Throwaway repository name prefix (default: the suite's "
                                  "repo_prefix, else benchkit-).")


@click.command()
@click.option("--seed", "seed_file", metavar="NAME|FILE",
              help="A seed's name (seeds/NAME.yaml) or file (default: seeds/default.yaml "
                   "of the benchkit tree).")
@prefix_option
@click.option("--gate-timeout", type=float, default=60.0, show_default=True,
              help="Seconds the readiness gate may wait for the host to settle.")
@host_options
@_reporting
def seed(seed_file, prefix, gate_timeout, host, token, login):
    """Provision and seed a throwaway repository; print {"owner", "repo", "url"}.

    Exit 0 seeded, 2 bad input or a host that cannot be used.

    \b
    Example:
      benchkit seed --host http://localhost:3000 --token "$T"
    """
    plan = load_seed(_seed_file(seed_file))
    with host_client(host, token, login) as client:
        repo = provision(client, plan, prefix=_prefix(prefix), gate_timeout=gate_timeout)
        click.echo(json.dumps({"owner": repo.owner, "repo": repo.name,
                               "url": repo.html_url(client)}))


@click.command()
@click.option("--repo", "full_name", required=True, metavar="OWNER/NAME",
              help="The repository to capture.")
@host_options
@_reporting
def snapshot(full_name, host, token, login):
    """Print a repository's whole state as RepoState JSON.

    Exit 0 printed, 2 bad input or a host that cannot be used.

    \b
    Example:
      benchkit snapshot --repo bench/benchkit-20260101-120000-abcdef > state.json
    """
    owner, _, name = full_name.partition("/")
    if not owner or not name or "/" in name:
        raise click.BadParameter("want OWNER/NAME", param_hint="--repo")
    with host_client(host, token, login) as client:
        click.echo(json.dumps(take_snapshot(client, owner, name), indent=2, ensure_ascii=False))


@click.command()
@click.option("--yes", is_flag=True, help="Delete them (default: only list them).")
@prefix_option
@click.option("--older-than", type=float, default=None, metavar="SECONDS",
              help="Spare what no dead run's journal lists if the host made it less than "
                   "this long ago by its own clock (a run may still be using it; default: "
                   "twice the suite's backstop, as a repository seeded ahead waits for one "
                   "trial before its own).")
@click.option("--store", "store_dir", type=click.Path(file_okay=False), default="results",
              show_default=True,
              help="The store whose dead runs' journals to sweep (besides every journal "
                   "this machine's runs registered).")
@host_options
@_reporting
@click.pass_context
def gc(ctx, yes, prefix, older_than, store_dir, host, token, login):
    """Delete what dead runs left (with --yes; else list it): first everything their
    journals list (temp directories, run and trial users with their repositories,
    repositories), at once; then, found by name on the host, leftover throwaway
    repositories of the token's user and run and trial users (a site administrator's
    token sees them) the host made more than --older-than ago, never a user a live
    run's journal lists; on the forge, the agent tokens of repositories that are gone.

    Exit 0 done, 1 some could not be deleted, 2 a host that cannot be used.

    \b
    Examples:
      benchkit gc                     # list them
      benchkit gc --yes --store results
      benchkit gc --yes --older-than 3600
    """
    prefix = _prefix(prefix)
    older_than = _backstop() * 2 if older_than is None else older_than
    failed = 0
    with host_client(host, token, login) as client:
        if yes:  # a dead run's journal is proof enough: no age to wait for
            failed += sweep([store_dir], client, click.echo)
        else:
            _list_journals(store_dir)
        leftovers = list_leftovers(client, prefix, older_than=older_than)
        for repo in leftovers:
            if not yes:
                click.echo(repo.full_name)
                continue
            try:
                delete_repo(client, repo.owner, repo.name)
                click.echo(f"deleted {repo.full_name}")
            except HarnessError as exc:
                failed += 1
                click.echo(f"error: {exc}", err=True)
        users = [] if admin_problem(client) else list_run_users(
            client, prefix, older_than=older_than, spare=live_users([store_dir]))
        for user in users:
            if not yes:
                click.echo(f"run user {user}")
                continue
            try:
                delete_run_user(client, user)
                click.echo(f"deleted run user {user} and its repositories")
            except HarnessError as exc:
                failed += 1
                click.echo(f"error: {exc}", err=True)
        tokens = stale_agent_tokens(client, prefix)
        for entry in tokens:
            if yes and not revoke(client, entry["token_id"]):
                failed += 1
                click.echo(f"error: could not revoke agent token {entry['token_id']}", err=True)
            else:
                click.echo(f"{'revoked' if yes else 'stale'} agent token {entry['token_id']} "
                           f"of {entry['repo']}")
    verb = "deleted" if yes else "found"
    click.echo(f"{verb} {len(leftovers)} leftover repositories named {prefix}*, {len(users)} "
               f"run or trial users named {user_prefix(prefix)}*/{user_prefix(prefix, 'trial')}* "
               f"(sparing those younger than {older_than:.0f}s by the host's clock, and live runs' users) and {len(tokens)} stale agent tokens"
               f"{f'; {failed} failed' if failed else ''}", err=True)
    if failed:
        ctx.exit(EXIT_FAILED)


def _list_journals(store_dir: str) -> None:
    """What dead runs' journals list, one line each (gc without --yes)."""
    for path in every_journal([store_dir]):
        with claim(path) as dead:
            if dead is None:
                continue
            pending, run = dead.pending, f"run {dead.pending.pid} (gone)"
            if pending.foreign:  # its lease on the host decides: `gc --yes` asks it
                click.echo(f"journal {path} of run {pending.pid} of another machine: "
                           f"swept by `gc --yes` once no live lease on {pending.host} covers it")
                continue
            for directory in pending.tempdirs:
                if Path(directory).exists():
                    click.echo(f"temp directory {directory} of {run}")
            if pending.embedded:
                continue  # its forge took them with it
            for login in pending.users:
                click.echo(f"user {login} of {run} on {pending.host}")
            for owner, name in pending.repos:
                click.echo(f"repository {owner}/{name} of {run} on {pending.host}")


def revoke(client: Client, token_id: str) -> bool:
    return revoke_agent_token(client.url, client.token, token_id)


def _backstop() -> float:
    """The suite's backstop (seconds), else the shipped suite's 300."""
    root = find_root(required=False)
    return float(load_suite(root / "suite.yaml").backstop_seconds) if root else 300.0
