"""What dead runs left, swept by their journals (benchkit.journal): `benchkit gc` and
the start of the next `benchkit run` on the store. A journal whose run is alive is left
alone; a dead run's temp directories are removed (the CLI's holds the agent's token),
its users deleted with their repositories and its repositories deleted, through the
admin token of the host the journal names. One line each says what went.

A journal of another machine (a copy of the store, one shared between machines) is
dead only when the host it names says so: no live lease covers its users
(benchkit.gitea.lease); its temp directories were that machine's, never removed here.
One of a run that made no user (gateway-only containment) holds no lease: it is left.
A journal this machine cannot write (a read-only mount) is named in one line and left.
What a journal lists is a claim (a store may come from elsewhere): only a temp directory
named as a run names one is removed, and only a user or repository the host shows as
benchkit's (its full name or description; never an administrator) is deleted.
"""

from __future__ import annotations

import os
import re
from collections.abc import Callable

from benchkit import journal
from benchkit.errors import HarnessError
from benchkit.gitea import lease
from benchkit.gitea.client import Client, GiteaError
from benchkit.gitea.repos import delete_repo
from benchkit.gitea.runuser import delete_run_user

# How a run names its temp directories (journal.mkdtemp's `benchkit-KIND-` and an
# arm's `benchkit-ARM-`, then random hex digits): no other directory is removed.
TEMP_NAME = re.compile(r"benchkit-[a-z0-9._-]*[0-9a-f]{10,}")
# How every user and repository a run makes begins its full name or description.
MADE = "benchkit "


def same_host(a: str | None, b: str | None) -> bool:
    return bool(a and b) and a.rstrip("/") == b.rstrip("/")  # type: ignore[union-attr]


def sweep(stores: list[str | os.PathLike], admin: Client | None,
          say: Callable[[str], None], *, command: str = "benchkit gc --yes",
          registry: bool = True) -> int:
    """Sweep every dead run's journal of these stores (and the registry's); the number
    of things that could not be removed. `admin`: a client of the host with a token
    that may delete users (None: only temp directories go). `command`: what deletes
    the rest, for the line that says something was left. `registry`: also the dead
    journals of other stores that the machine's registry links."""
    failed = 0
    paths = (journal.every_journal(stores) if registry
             else [p for store in stores for p in journal.journals(store)])
    for path in paths:
        with journal.claim(path) as held:
            if held is None or _alive_elsewhere(held, admin, say, command):
                continue
            if held.pending.damaged:
                say(f"warning: {path}: {held.pending.damaged} damaged line(s) skipped (torn "
                    f"or zeroed by a crash)")
            if not held.writable:
                say(f"warning: cannot sweep {path}: its file system takes no write (read-only?); "
                    f"left as it is: `{command} --store DIR` where it is writable sweeps it")
                continue
            failed += _sweep_one(held, admin, say, command)
            held.finish()
    return failed


def _alive_elsewhere(held: journal.Claim, admin: Client | None, say: Callable[[str], None],
                     command: str) -> bool:
    """Whether a foreign journal's run may live: a live lease on its host covers it, or
    the host cannot be asked here (one line says which)."""
    pending = held.pending
    if not pending.foreign:
        return False
    run = f"run {pending.pid} of another machine"
    if pending.embedded:  # its forge was that machine's: nothing of it is here to sweep
        return True
    if not pending.users:  # it made no user (gateway-only), so it holds no lease
        say(f"{run} ({pending.path}) made no user to hold a lease: left to its own "
            f"machine, and to `{command}` by the host's age of what it made")
        return True
    if admin is None or not same_host(pending.host, admin.url):
        say(f"{run} ({held.pending.path}) has its lease on {pending.host}: "
            f"`{command} --host {pending.host}` asks it whether the run lives")
        return True
    try:
        live = lease.live_lease(admin, pending.users)
    except HarnessError as error:
        say(f"error: could not ask {admin.url} about {run}'s lease: {admin.scrub(str(error))}")
        return True
    if live:
        say(f"spared {run}: {live}")
    return live is not None


def _sweep_one(held: journal.Claim, admin: Client | None, say: Callable[[str], None],
               command: str) -> int:
    pending, failed = held.pending, 0
    run = f"run {pending.pid} (gone)"
    for directory in pending.tempdirs:
        if not pending.foreign:  # a foreign journal's are its machine's
            _remove_tempdir(directory, run, say)
        held.removed("tempdir", path=directory)
    if not (pending.users or pending.repos):
        return 0
    if pending.embedded:  # its forge, with every user and repository, died with it
        for login in pending.users:
            held.removed("user", login=login)
        for owner, name in pending.repos:
            held.removed("repo", owner=owner, name=name)
        return 0
    if admin is None or not same_host(pending.host, admin.url):
        say(f"{run} left {len(pending.users)} user(s) and {len(pending.repos)} "
            f"repository(ies) on {pending.host}: `{command} --host {pending.host}` deletes them")
        return 0
    for login in pending.users:
        try:
            other = _not_made(admin, f"/users/{login}", "full_name")
            if other is None:
                delete_run_user(admin, login)
        except HarnessError as error:
            failed += 1
            say(f"error: could not delete the user {login} of {run}: {admin.scrub(str(error))}")
            continue
        held.removed("user", login=login)
        say(f"left the user {login} ({other}), though {run}'s journal names it" if other
            else f"deleted user {login} of {run} and its repositories")
    gone = set(pending.users)
    for owner, name in pending.repos:
        if owner in gone:
            continue
        try:
            other = _not_made(admin, f"/repos/{owner}/{name}", "description")
            if other is None:
                delete_repo(admin, owner, name)
        except HarnessError as error:
            failed += 1
            say(f"error: could not delete {owner}/{name} of {run}: {admin.scrub(str(error))}")
            continue
        held.removed("repo", owner=owner, name=name)
        say(f"left the repository {owner}/{name} ({other}), though {run}'s journal names it"
            if other else f"deleted repository {owner}/{name} of {run}")
    return failed


def _remove_tempdir(directory: str, run: str, say: Callable[[str], None]) -> None:
    if not TEMP_NAME.fullmatch(os.path.basename(directory)):
        if os.path.lexists(directory):
            say(f"left {directory}, though {run}'s journal names it (no run names a temp "
                f"directory so)")
    elif journal.remove_tempdir(directory):
        say(f"removed {directory}, a temp directory of {run}")


def _not_made(admin: Client, path: str, field: str) -> str | None:
    """Why the host's record at `path` is none benchkit made (a journal may come from
    elsewhere: what it lists is a claim, the host's record the truth): an administrator,
    or a `field` (a user's full name, a repository's description) that does not say
    benchkit's. None when benchkit made it, or it is gone."""
    try:
        record = admin.get(path) or {}
    except GiteaError as error:
        if error.status == 404:
            return None
        raise
    said = str(record.get(field) or "")
    if record.get("is_admin"):
        return "a site administrator"
    if said.startswith(MADE):
        return None
    return f"its {field.replace('_', ' ')} {said[:40]!r} is not benchkit's"
