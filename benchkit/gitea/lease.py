"""A run's lease on its host: whether a run lives is the host's to tell, not a pid's.

    name = lease_name(admin)            # "benchkit run, live until 2026-01-01T12:10:00Z"
    create_run_user(admin, prefix, full_name=name)
    with Renewing(url, token, login):   # the full name renewed every RENEW seconds
        ...                             # a trial user's full name names its run
    covered(users, host_now(admin))     # the logins a live lease covers

A run's own user carries its lease in its full name: the time, by the host's clock (its
`Date` header), until which the run is alive, TERM seconds past the last renewal; each
trial user's full name names the run it belongs to. `benchkit gc` on any machine (one
holding a copy of the store, another sharing the host) spares every user a live lease
covers, so a pid and a lock on one machine are never all it knows. An agent cannot
extend a lease (its token is not an administrator's), and a longer one only spares.
"""

from __future__ import annotations

import logging
import re
import threading
from collections.abc import Iterable
from datetime import UTC, datetime, timedelta

from benchkit.errors import HarnessError
from benchkit.gitea.client import Client, GiteaError
from benchkit.gitea.repos import host_now

log = logging.getLogger(__name__)

TERM = 600.0   # seconds a lease runs past its last renewal (ten missed renewals)
RENEW = 60.0   # seconds between renewals
JOIN = 5.0     # seconds a run's end waits for a renewal under way
RUN = "benchkit run, live until "
TRIAL = "benchkit trial of "
STAMP = "%Y-%m-%dT%H:%M:%SZ"
LEASE = re.compile(re.escape(RUN) + r"(\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ)$")


def lease_name(admin: Client) -> str:
    """A run user's full name holding a lease of TERM seconds from the host's now."""
    until = host_now(admin) + timedelta(seconds=TERM)
    return RUN + until.astimezone(UTC).strftime(STAMP)


def trial_name(run_login: str) -> str:
    """A trial user's full name: the run whose lease covers it."""
    return TRIAL + run_login


def expiry(full_name: str) -> datetime | None:
    """Until when a full name's lease runs (None: it holds none)."""
    found = LEASE.match(full_name or "")
    return datetime.strptime(found[1], STAMP).replace(tzinfo=UTC) if found else None


def covered(users: Iterable[dict], now: datetime) -> set[str]:
    """The logins among `users` (the host's user records) that a live lease covers: a
    run user whose lease runs past `now` (the host's), and the trial users naming it."""
    names = {user.get("login") or "": user.get("full_name") or "" for user in users}
    live = {login for login, name in names.items()
            if (until := expiry(name)) is not None and until > now}
    return live | {login for login, name in names.items()
                   if name.startswith(TRIAL) and name[len(TRIAL):] in live}


def live_lease(admin: Client, logins: Iterable[str]) -> str | None:
    """Whether a live lease covers any of these users, asked of the host itself (each
    looked up; one gone covers nothing): the line that says so, else None."""
    users = []
    for login in logins:
        try:
            users.append(admin.get(f"/users/{login}") or {})
        except GiteaError as error:
            if error.status != 404:
                raise
    now = host_now(admin)
    live = covered(users, now)
    until = [expiry(u.get("full_name") or "") for u in users if u.get("login") in live]
    shown = max((t for t in until if t is not None), default=None)
    return (f"its lease on {admin.url} runs until {shown.strftime(STAMP)}" if shown
            else f"a live lease on {admin.url} covers {', '.join(sorted(live))}") if live else None


def renew(admin: Client, login: str) -> None:
    """Renew the lease in the run user's full name (Gitea's admin edit of a user wants
    its login name and source)."""
    admin.patch(f"/admin/users/{login}", {"login_name": login, "source_id": 0,
                                          "full_name": lease_name(admin)})


class Renewing:
    """The lease of the run user `login` renewed every RENEW seconds while the block
    runs, on a thread of its own with a client of its own (a failed renewal is logged:
    ten in a row let the lease lapse)."""

    def __init__(self, url: str, token: str, login: str, *, every: float = RENEW):
        self.url, self.token, self.login, self.every = url, token, login, every
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._renew, name=f"lease-{login}", daemon=True)

    def __enter__(self) -> Renewing:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join(JOIN)  # a renewal a hung host holds ends with its client

    def _renew(self) -> None:
        with Client(self.url, self.token, retries=1) as admin:
            while not self._stop.wait(self.every):
                try:
                    renew(admin, self.login)
                except HarnessError as error:
                    log.warning("could not renew the lease of %s: %s", self.login,
                                admin.scrub(str(error)))
