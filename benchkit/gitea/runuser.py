"""A run's own user: a throwaway, non-admin user of the host that owns the run's trial
repositories and whose token the gateway forwards with, so that the host's own
permissions bound what any request of an agent can reach (another repository of the
maintainer's account, another user's private one, an issue a closing keyword names
elsewhere), whatever the gateway lets through.

    problem = admin_problem(client)          # None: the maintainer's token can make one
    user = create_run_user(client, prefix)   # POST /admin/users, then its own token
    ... the run, as Client(url, user.token) ...
    delete_run_user(client, user.login)      # with every repository it owns
    trial = create_run_user(client, prefix, role="trial")  # one trial's own, the same way

It is created restricted (Gitea shows a restricted user no repository it was not given,
public ones included) with a random password that only the harness knows, and a token
with the scopes the tools need. Its name is `<repo_prefix>run-<UTC stamp>-<hex>` (a
trial's: `<repo_prefix>trial-...`), so `benchkit gc` finds one a crash left behind; the
run's journal (benchkit.journal) lists it before it is made, so gc knows whether its run
is alive. Its age is the host's to tell (`created`, against the host's `Date`), never the
name's stamp nor this machine's clock; whether its run lives, its lease's
(benchkit.gitea.lease). The same routes serve on the forge.
"""

from __future__ import annotations

import logging
import secrets
from dataclasses import dataclass, field

from benchkit import journal
from benchkit.errors import HostError
from benchkit.gitea.client import Client, GiteaError
from benchkit.gitea.lease import covered
from benchkit.gitea.repos import host_now, old_enough, parse_time, unique_name

log = logging.getLogger(__name__)

# What the arms' tools and the harness need of the host: the repository and its issues,
# the user (Gitea creates a repository under /user, which wants write:user) and the
# server's settings; no admin, organisation, package or notification.
SCOPES = ("write:repository", "write:issue", "write:user", "read:misc")
MAX_LOGIN = 40  # Gitea's longest user name


@dataclass(frozen=True)
class RunUser:
    login: str
    token: str = field(repr=False)
    password: str = field(repr=False)

    @property
    def secrets(self) -> tuple[str, str]:
        return self.token, self.password

    @property
    def email(self) -> str:
        """Its own e-mail address, as made: a commit of its may name it."""
        return f"{self.login}@benchkit.invalid"


ROLES = ("run", "trial")


def user_prefix(prefix: str, role: str = "run") -> str:
    """What every run user's (or trial user's) name starts with, for a suite's
    repository prefix."""
    return f"{prefix}{role}-"


def admin_problem(client: Client) -> str | None:
    """Why the client's token cannot administer the host's users (None: it can), in
    plain words: its user is no site administrator, or the token lacks the admin scope."""
    try:
        me = client.get("/user") or {}
        if not me.get("is_admin"):
            return f"the token's user {me.get('login', '?')!r} is not a site administrator"
        client.get("/admin/users", {"limit": 1})
    except GiteaError as error:
        return f"the token cannot use the admin API ({error.method} {error.path}: HTTP {error.status})"
    return None


def create_run_user(admin: Client, prefix: str, *, role: str = "run",
                    full_name: str | None = None) -> RunUser:
    """A new restricted user with a token of SCOPES (`role`: a run's or one trial's),
    journalled before it is made; `full_name`: what it says there (a run's lease, a
    trial's run: benchkit.gitea.lease). HostError when the host refuses (the user is
    deleted again if it was made)."""
    login = unique_name(user_prefix(prefix, role))
    if len(login) > MAX_LOGIN:
        raise HostError(f"cannot name a run user {login!r}: longer than {MAX_LOGIN} "
                        f"characters (shorten the suite's repo_prefix)")
    password = secrets.token_urlsafe(24)
    journal.add("user", login=login)
    admin.post("/admin/users", {
        "username": login, "email": RunUser(login, "", "").email, "password": password,
        "must_change_password": False, "restricted": True, "visibility": "private",
        "full_name": full_name or f"benchkit {role} (throwaway; `benchkit gc` deletes it)"})
    try:
        # Gitea mints a user's token only for the user's own basic credentials.
        with Client(admin.url, None, retries=0) as own:
            own.session.auth = (login, password)
            made = own.post(f"/users/{login}/tokens",
                            {"name": "benchkit-run", "scopes": list(SCOPES)})
        token = (made or {}).get("sha1")
        if not token:
            raise HostError(f"the host made no token for the run user {login}")
    except BaseException:
        delete_run_user(admin, login)
        raise
    log.info("created run user %s", login)
    return RunUser(login, token, password)


def delete_run_user(admin: Client, login: str) -> None:
    """Delete a run user with every repository it owns; one already gone counts as
    deleted. HostError when the host refuses."""
    try:
        admin.delete(f"/admin/users/{login}", params={"purge": "true"})
    except GiteaError as error:
        if error.status != 404:
            raise
    journal.remove("user", login=login)
    log.info("deleted run user %s", login)


def list_run_users(admin: Client, prefix: str, *, older_than: float = 0.0,
                   spare: set[str] | frozenset[str] = frozenset()) -> list[str]:
    """The run and trial users (named with the suite's `prefix`) the host made more
    than `older_than` seconds ago by its own clock, oldest first, less those in `spare`
    (the users live runs' journals list) and those a live lease covers (a run alive on
    any machine: benchkit.gitea.lease): what a crash left behind."""
    now, found = host_now(admin), []
    starts = tuple(user_prefix(prefix, role) for role in ROLES)
    users = [user for user in admin.paginate("/admin/users")
             if (user.get("login") or "").startswith(starts)]
    leased = covered(users, now)
    for user in users:
        login = user.get("login") or ""
        if login in spare or login in leased:
            continue
        born = parse_time(user.get("created"))
        if born is not None and old_enough(now, born, older_than):
            found.append((born, login))
    return [login for _, login in sorted(found)]
