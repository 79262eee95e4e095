"""A run's own user: a throwaway, non-admin user of the host that owns the run's trial
repositories and whose token the gateway forwards with, so that the host's own
permissions bound what any request of an agent can reach (another repository of the
maintainer's account, another user's private one, an issue a closing keyword names
elsewhere), whatever the gateway lets through.

    problem = admin_problem(client)          # None: the maintainer's token can make one
    user = create_run_user(client, prefix)   # POST /admin/users, then its own token
    ... the run, as Client(url, user.token) ...
    delete_run_user(client, user.login)      # with every repository it owns

It is created restricted (Gitea shows a restricted user no repository it was not given,
public ones included) with a random password that only the harness knows, and a token
with the scopes the tools need. Its name is `<repo_prefix>run-<UTC stamp>-<hex>`, so
`benchkit gc` finds one a crash left behind. The same routes serve on the forge.
"""

from __future__ import annotations

import logging
import secrets
import time
from dataclasses import dataclass, field

from benchkit.errors import HostError
from benchkit.gitea.client import Client, GiteaError
from benchkit.gitea.repos import created_at, unique_name

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


def user_prefix(prefix: str) -> str:
    """What every run user's name starts with, for a suite's repository prefix."""
    return f"{prefix}run-"


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


def create_run_user(admin: Client, prefix: str) -> RunUser:
    """A new restricted user with a token of SCOPES; HostError when the host refuses
    (the user is deleted again if it was made)."""
    login = unique_name(user_prefix(prefix))
    if len(login) > MAX_LOGIN:
        raise HostError(f"cannot name a run user {login!r}: longer than {MAX_LOGIN} "
                        f"characters (shorten the suite's repo_prefix)")
    password = secrets.token_urlsafe(24)
    admin.post("/admin/users", {
        "username": login, "email": f"{login}@benchkit.invalid", "password": password,
        "must_change_password": False, "restricted": True, "visibility": "private",
        "full_name": "benchkit run (throwaway; `benchkit gc` deletes it)"})
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
    log.info("deleted run user %s", login)


def list_run_users(admin: Client, prefix: str, *, older_than: float = 0.0) -> list[str]:
    """The run users (named with the suite's `prefix`) older than `older_than` seconds,
    oldest first: what a crash left behind, spared while a run may still use them."""
    cutoff, found = time.time() - older_than, []
    for user in admin.paginate("/admin/users"):
        login = user.get("login") or ""
        born = created_at(login, user_prefix(prefix))
        if born is not None and born.timestamp() <= cutoff:
            found.append((born, login))
    return [login for _, login in sorted(found)]
