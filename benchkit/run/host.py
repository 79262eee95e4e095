"""The host a run uses (`benchkit run`, `benchkit validate --live`): the given or
discovered Gitea host (flags, then GITEA_URL / GITEA_TOKEN, then a tea login), else an
embedded forge started for the run and stopped when it ends.
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Callable, Iterator, Mapping

from benchkit.gitea import Credentials, CredentialsError, resolve_credentials

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
    from benchkit.forge import Forge
    with Forge() as forge:
        if note:
            note(f"no Gitea host given or discovered: running against an embedded forge "
                 f"at {forge.url}, stopped when the run ends")
        yield Credentials(forge.url, forge.api_url, forge.token, source=EMBEDDED)
