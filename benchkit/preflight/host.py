"""The host a run uses (`benchkit run`, `benchkit validate --live`): the given or
discovered Gitea host (flags, then GITEA_URL / GITEA_TOKEN, then a tea login), else a
throwaway host started for the run and removed when it ends: the embedded forge, or
with `--host gitea` (the word, not a URL) the pinned Gitea (benchkit.gitea.server, with
an admin of its own; `bash scripts/setup --host gitea` builds it); whom the run acts as on
it (Access: the run's own user, created for the run and deleted with its repositories
when it ends, or with gateway-only containment the maintainer); and what the run must
know of it (HostFacts), probed once.
"""

from __future__ import annotations

import contextlib
import logging
import os
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field

from benchkit import journal
from benchkit.errors import HarnessError
from benchkit.gitea import (
    Client,
    Credentials,
    CredentialsError,
    probe_self_review,
    resolve_credentials,
)
from benchkit.gitea.admin import fetch_request_log
from benchkit.gitea.lease import Renewing, lease_name
from benchkit.gitea.runuser import create_run_user, delete_run_user
from benchkit.gitea.server import Gitea
from benchkit.sample import Containment, Host
from benchkit.stopping import shielded

log = logging.getLogger(__name__)

HOST_ENV = ("GITEA_URL", "GITEA_TOKEN")
EMBEDDED = "embedded forge"  # the source of an embedded forge's credentials
GITEA = "gitea"  # --host gitea: the pinned Gitea, started for the run
THROWAWAY_GITEA = "throwaway Gitea"  # the source of its credentials


def throwaway(host: str | None) -> str:
    """The kind of host a run starts for itself when no live one is named: "gitea" for
    `--host gitea`, else "forge"."""
    return GITEA if host == GITEA else "forge"


def host_requested(host, token, login, environ: Mapping[str, str] = os.environ) -> bool:
    """Whether the maintainer named a host (flags or GITEA_*), so that failing to use it
    is an error rather than a reason to start an embedded forge."""
    return bool(host or token or login or any((environ.get(k) or "").strip() for k in HOST_ENV))


def discover(host=None, token=None, login=None,
             environ: Mapping[str, str] = os.environ) -> Credentials | None:
    """The given or discovered host's credentials; None when nothing names one, or
    `--host gitea` (the run then starts a throwaway host: `throwaway`). CredentialsError
    when a named host's are unusable."""
    if host == GITEA:
        if token or login:
            raise CredentialsError("--host gitea starts a throwaway Gitea with an admin of "
                                   "its own: it takes no --token or --login")
        return None
    try:
        return resolve_credentials(host=host, token=token, login=login, env=environ)
    except CredentialsError:
        if host_requested(host, token, login, environ):
            raise
        return None


@contextlib.contextmanager
def open_host(credentials: Credentials | None, note: Callable[[str], None] | None = None,
              kind: str = "forge") -> Iterator[Credentials]:
    """These credentials, or (None) those of a throwaway host of `kind` (`throwaway`:
    the embedded forge, or the pinned Gitea) for as long as the block runs, removed when
    it ends; `note` is told when one starts."""
    if credentials is not None:
        yield credentials
        return
    if kind == GITEA:
        with Gitea() as gitea:  # its process and work directory go with the run
            if note:
                note(f"--host gitea: running against a throwaway Gitea {gitea.version} at "
                     f"{gitea.url} (its own admin), stopped and removed when the run ends")
            yield Credentials(gitea.url, gitea.api_url, gitea.token or "",
                              source=THROWAWAY_GITEA)
        return
    # Lazy: the forge adds 0.13 s to start-up (measured: python -X importtime), which a run on a
    # given host and `run --dry-run` do not need.
    from benchkit.forge import Forge
    with Forge() as forge:
        if note:
            note(f"no Gitea host given or discovered: running against an embedded forge "
                 f"at {forge.url}, stopped when the run ends")
        yield Credentials(forge.url, forge.api_url, forge.token, source=EMBEDDED)


@dataclass(frozen=True)
class Access:
    """Whom a run acts as on its host. `token` owns the trial repositories and is the
    one the gateway forwards with: the run's own user's (`run_user`), or, with
    gateway-only containment, the maintainer's. `admin_token` is the maintainer's: the
    forge's admin routes (minting, the request log) and deleting the run user."""

    url: str
    token: str = field(repr=False)
    admin_token: str = field(repr=False)
    run_user: str | None = None
    password: str = field(default="", repr=False)

    @property
    def containment(self) -> Containment:
        """What bounds an agent's requests: the host's permissions of a user of the
        trial's own (made with the admin token, as the run user is) behind the gateway,
        or the gateway alone."""
        return "trial-user" if self.run_user else "gateway"

    @property
    def secrets(self) -> list[str]:
        return [s for s in (self.token, self.admin_token, self.password) if s]


@contextlib.contextmanager
def run_access(where: Credentials, prefix: str, *, own_user: bool,
               note: Callable[[str], None] | None = None) -> Iterator[Access]:
    """Access for a run on `where`: with `own_user`, a run user made now (named with
    the suite's `prefix`, holding the run's lease on the host, renewed while the block
    runs: benchkit.gitea.lease) and deleted, with its repositories, when the block ends
    however it ends (a failure to delete is noted: `benchkit gc` finds it); without,
    the maintainer's own token. HarnessError when the host will not make the user."""
    if not own_user:
        yield Access(where.url, where.token, where.token)
        return
    with where.client(retries=1) as admin:
        with shielded():  # a stop waits for the user, so that it is deleted
            user = create_run_user(admin, prefix, full_name=lease_name(admin))
        try:
            with Renewing(where.url, where.token, user.login):  # its lease, while it lives
                yield Access(where.url, user.token, where.token, user.login, user.password)
        finally:
            try:
                with shielded():
                    delete_run_user(admin, user.login)
            except HarnessError as error:
                log.warning("could not delete the run user %s: %s", user.login, error)
                if note:  # the run's journal lists it: its last line says what deletes it
                    note(f"warning: the run user {user.login} could not be deleted "
                         f"({admin.scrub(str(error))})")


@dataclass
class Journaled:
    """A run's journal (benchkit.journal) and, once it is closed, what it still lists."""

    file: journal.Journal
    host: str | None = None
    embedded: bool = False
    left: journal.Pending | None = None

    def on(self, url: str, *, embedded: bool) -> None:
        """The host the run's users and repositories are made on."""
        self.host, self.embedded = url, embedded
        self.file.add("host", url=url, embedded=embedded)

    @property
    def leftover(self) -> bool:
        return self.left is not None and not self.left.empty


@contextlib.contextmanager
def journaled(store_dir: str, note: Callable[[str], None]) -> Iterator[Journaled]:
    """The run's journal beside its store for as long as the block runs. When the block
    ends, however, a user or repository the run could not delete is named, with the
    command that deletes it now (the journal's run is then over)."""
    held = Journaled(journal.Journal.open(store_dir))
    try:
        yield held
    finally:
        held.left = left = held.file.close(embedded=held.embedded)
        if held.leftover:
            things = [f"user {login}" for login in left.users] + [
                f"repository {owner}/{name}" for owner, name in left.repos]
            where = f" --host {held.host}" if held.host else ""
            note(f"warning: this run left {', '.join(things)} behind: `benchkit gc --yes "
                 f"--store {store_dir}{where}` deletes them now")


@dataclass(frozen=True)
class HostFacts:
    """What every trial on a host shares and the host decides: whether a user may
    review their own pull request (which variant of the review tasks runs), and what
    kind of host it is (a forge keeps a request log and mints agent tokens)."""

    self_review: bool
    host: Host

    @property
    def forge(self) -> bool:
        return self.host.kind == "forge"


def probe_host(client: Client, prefix: str, admin_token: str | None = None) -> HostFacts:
    """Ask the host once (a throwaway repository for the self-review probe, named with
    the suite's `prefix`, of the client's user; the forge's admin routes with
    `admin_token`, default the client's). HarnessError when it cannot answer."""
    self_review = probe_self_review(client, prefix=prefix)
    version = str(client.get("/version").get("version", "unknown"))
    forge = fetch_request_log(client.url, admin_token or client.token) is not None
    return HostFacts(self_review, Host("forge" if forge else "gitea", version))
