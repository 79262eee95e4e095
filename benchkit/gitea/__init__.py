"""Talking to a Gitea host: client, credentials, provisioning and seeding, the readiness
gate, snapshots, deletion and gc. Written for a live Gitea 1.20+, tested on the forge."""

from benchkit.errors import HarnessError, HostError, ReadinessError, SeedError
from benchkit.gitea.client import Client, GiteaError
from benchkit.gitea.credentials import Credentials, CredentialsError, resolve_credentials
from benchkit.gitea.probe import probe_self_review
from benchkit.gitea.ready import wait_ready
from benchkit.gitea.repos import Repo, delete_repo, list_leftovers
from benchkit.gitea.seed import provision, seed_repo
from benchkit.gitea.snapshot import settings as seeded_settings
from benchkit.gitea.snapshot import snapshot

__all__ = [
    "Client", "Credentials", "CredentialsError", "GiteaError", "HarnessError", "HostError",
    "ReadinessError", "Repo", "SeedError", "delete_repo", "list_leftovers",
    "probe_self_review", "provision", "resolve_credentials", "seed_repo",
    "seeded_settings", "snapshot", "wait_ready",
]
