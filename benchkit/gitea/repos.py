"""Throwaway repositories: unique recognisable names, creation, deletion, and finding
the ones a crash left behind (`benchkit gc`): recognised by name, dated by the host's
own clock (its `created_at` against its `Date` header), never by the name's stamp or
this machine's clock. Each is journalled (benchkit.journal) before it is made."""

from __future__ import annotations

import logging
import re
import secrets
from dataclasses import dataclass
from datetime import UTC, datetime
from email.utils import parsedate_to_datetime

from benchkit import journal
from benchkit.errors import HostError
from benchkit.gitea.admin import list_agent_tokens
from benchkit.gitea.client import Client, GiteaError, repo_path

log = logging.getLogger(__name__)

STAMP = "%Y%m%d-%H%M%S"
# prefix + UTC timestamp + random suffix: unique across parallel runs, and recognisable,
# so gc never touches a repository of the user's that merely shares the prefix.
SUFFIX = re.compile(r"(\d{8}-\d{6})-[0-9a-f]{6}")
DESCRIPTION = "benchkit throwaway repository (safe to delete; `benchkit gc` sweeps it)"


@dataclass(frozen=True)
class Repo:
    owner: str
    name: str

    @property
    def full_name(self) -> str:
        return f"{self.owner}/{self.name}"

    @property
    def path(self) -> str:
        """The API path of the repository, for `Client` calls."""
        return repo_path(self.owner, self.name)

    def html_url(self, client: Client) -> str:
        return f"{client.url}{self.owner}/{self.name}"


def unique_name(prefix: str) -> str:
    stamp = datetime.now(UTC).strftime(STAMP)
    return f"{prefix}{stamp}-{secrets.token_hex(3)}"


def ours(name: str, prefix: str) -> bool:
    """Whether `name` is a throwaway repository's (the prefix, a stamp, a suffix)."""
    return name.startswith(prefix) and SUFFIX.fullmatch(name[len(prefix):]) is not None


def parse_time(value: object) -> datetime | None:
    """A time the host reported (RFC 3339), or None."""
    if not isinstance(value, str) or not value:
        return None
    try:
        parsed = datetime.fromisoformat(value.replace("Z", "+00:00"))
    except ValueError:
        return None
    return parsed if parsed.tzinfo else parsed.replace(tzinfo=UTC)


def old_enough(now: datetime, born: datetime, older_than: float) -> bool:
    """Whether the host made it `older_than` seconds ago or more by its clock; 0 takes
    everything (a Date header may lag its own `created` by up to a second)."""
    return older_than <= 0 or (now - born).total_seconds() >= older_than


def host_now(client: Client) -> datetime:
    """The host's own current time, from its `Date` header: ages are the host's to
    tell. A host (or a proxy before it) may send several: the earliest that parses is
    taken, as the one that calls the fewest things old. HostError when none parses."""
    response = client.request("GET", "/version")
    raw = getattr(response.raw, "headers", None)
    getlist = getattr(raw, "getlist", None)  # urllib3 keeps repeated headers apart
    values = getlist("Date") if getlist else [response.headers.get("Date") or ""]
    found = [when for value in values for when in [_http_date(value)] if when is not None]
    if not found:
        raise HostError(f"{client.url} sent no usable Date header: cannot tell a "
                        f"leftover's age by its clock")
    return min(found)


def _http_date(value: str) -> datetime | None:
    """An HTTP date, always with its zone (a date without one is UTC, as HTTP's are)."""
    try:
        when = parsedate_to_datetime(value)
    except (TypeError, ValueError, IndexError):
        return None
    return when if when.tzinfo else when.replace(tzinfo=UTC)


def create_repo(client: Client, prefix: str) -> tuple[Repo, str]:
    """A new empty private repository (the seeder makes its first commit, so that its
    files are the seed's, not a README naming the repository); (repo, default branch)."""
    name = unique_name(prefix)
    journal.add("repo", owner=client.user, name=name)
    try:
        data = client.post("/user/repos", {
            "name": name, "description": DESCRIPTION, "private": True, "auto_init": False,
            "default_branch": "main"})
    except GiteaError:
        raise
    except HostError as exc:  # the host may have created it before the line went down
        raise HostError(f"{exc}{discard(client, Repo(client.user, name))}") from None
    owner = (data.get("owner") or {}).get("login") or client.user
    log.info("created %s/%s", owner, data["name"])
    return Repo(owner, data["name"]), data.get("default_branch") or "main"


def delete_repo(client: Client, owner: str, name: str) -> None:
    """Delete a repository; one that is already gone counts as deleted."""
    try:
        client.delete(repo_path(owner, name))
    except GiteaError as exc:
        if exc.status != 404:
            raise
    journal.remove("repo", owner=owner, name=name)
    log.info("deleted %s/%s", owner, name)


def discard(client: Client, repo: Repo | None) -> str:
    """Delete a repository that must not reach an agent. Never raises: it returns a
    note for the error message when even that failed, since the original error matters
    more and `benchkit gc` can still find the repository by its name."""
    if repo is None:
        return ""
    try:
        delete_repo(client, repo.owner, repo.name)
        return ""
    except Exception as exc:
        log.warning("could not delete %s: %s", repo.full_name, exc)
        return f" [could not delete {repo.full_name}; `benchkit gc` will find it]"


def stale_agent_tokens(client: Client, prefix: str) -> list[dict]:
    """The forge's agent tokens bound to a throwaway repository (named with `prefix`)
    that no longer exists: a crash left them unrevoked. None on a live Gitea. The
    repository may be a run user's: each is looked up by name (the admin sees all)."""
    tokens = list_agent_tokens(client.url, client.token) or []
    bound = [t for t in tokens if t.get("repo") and t["repo"].partition("/")[2].startswith(prefix)]
    return [t for t in bound if not _exists(client, *t["repo"].split("/", 1))]


def _exists(client: Client, owner: str, name: str) -> bool:
    try:
        client.get(repo_path(owner, name))
    except GiteaError as exc:
        if exc.status == 404:
            return False
        raise
    return True


def list_leftovers(client: Client, prefix: str, *, older_than: float = 0.0) -> list[Repo]:
    """The token owner's throwaway repositories named with `prefix` that the host made
    more than `older_than` seconds ago by its own clock, oldest first (a run in
    progress may still be using a younger one)."""
    if not prefix:
        raise ValueError("a gc prefix must not be empty")
    now, found = host_now(client), []
    for data in client.paginate("/user/repos"):
        owner, name = (data.get("owner") or {}).get("login"), data.get("name") or ""
        born = parse_time(data.get("created_at"))
        if (owner == client.user and ours(name, prefix) and born is not None
                and old_enough(now, born, older_than)):
            found.append((born, Repo(owner, name)))
    return [repo for _, repo in sorted(found, key=lambda pair: (pair[0], pair[1].name))]
