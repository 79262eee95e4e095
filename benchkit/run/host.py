"""The host a run uses (`benchkit run`, `benchkit validate --live`): the given or
discovered Gitea host (flags, then GITEA_URL / GITEA_TOKEN, then a tea login), else an
embedded forge started for the run and stopped when it ends; and what the run must
know of it (HostFacts), probed once.
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass

from benchkit.gitea import (
    Client,
    Credentials,
    CredentialsError,
    probe_self_review,
    resolve_credentials,
)
from benchkit.gitea.admin import fetch_request_log
from benchkit.sample import Host

HOST_ENV = ("GITEA_URL", "GITEA_TOKEN")
EMBEDDED = "embedded forge"  # the source of an embedded forge's credentials


def host_requested(host, token, login, environ: Mapping[str, str] = os.environ) -> bool:
    """Whether the maintainer named a host (flags or GITEA_*), so that failing to use it
    is an error rather than a reason to start an embedded forge."""
    return bool(host or token or login or any((environ.get(k) or "").strip() for k in HOST_ENV))


def discover(host=None, token=None, login=None,
             environ: Mapping[str, str] = os.environ) -> Credentials | None:
    """The given or discovered host's credentials; None when nothing names one (the run
    then starts an embedded forge). CredentialsError when a named host's are unusable."""
    try:
        return resolve_credentials(host=host, token=token, login=login, env=environ)
    except CredentialsError:
        if host_requested(host, token, login, environ):
            raise
        return None


@contextlib.contextmanager
def open_host(credentials: Credentials | None,
              note: Callable[[str], None] | None = None) -> Iterator[Credentials]:
    """These credentials, or (None) an embedded forge's for as long as the block runs;
    `note` is told when a forge starts."""
    if credentials is not None:
        yield credentials
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
class HostFacts:
    """What every trial on a host shares and the host decides: whether a user may
    review their own pull request (which variant of the review tasks runs), and what
    kind of host it is (a forge keeps a request log and mints agent tokens)."""

    self_review: bool
    host: Host

    @property
    def forge(self) -> bool:
        return self.host.kind == "forge"


def probe_host(client: Client, prefix: str) -> HostFacts:
    """Ask the host once (a throwaway repository for the self-review probe, named with
    the suite's `prefix`). HarnessError when it cannot answer."""
    self_review = probe_self_review(client, prefix=prefix)
    version = str(client.get("/version").get("version", "unknown"))
    forge = fetch_request_log(client.url, client.token) is not None
    return HostFacts(self_review, Host("forge" if forge else "gitea", version))
