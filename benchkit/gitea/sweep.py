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
"""

from __future__ import annotations

import os
from collections.abc import Callable

from benchkit import journal
from benchkit.errors import HarnessError
from benchkit.gitea import lease
from benchkit.gitea.client import Client
from benchkit.gitea.repos import delete_repo
from benchkit.gitea.runuser import delete_run_user


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
        if not pending.foreign and journal.remove_tempdir(directory):
            say(f"removed {directory}, a temp directory of {run}")
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
            delete_run_user(admin, login)
        except HarnessError as error:
            failed += 1
            say(f"error: could not delete the user {login} of {run}: {admin.scrub(str(error))}")
            continue
        held.removed("user", login=login)
        say(f"deleted user {login} of {run} and its repositories")
    gone = set(pending.users)
    for owner, name in pending.repos:
        if owner in gone:
            continue
        try:
            delete_repo(admin, owner, name)
        except HarnessError as error:
            failed += 1
            say(f"error: could not delete {owner}/{name} of {run}: {admin.scrub(str(error))}")
            continue
        held.removed("repo", owner=owner, name=name)
        say(f"deleted repository {owner}/{name} of {run}")
    return failed
