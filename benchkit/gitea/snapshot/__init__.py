"""Snapshot: a repository's whole state as RepoState JSON (docs/contracts.md), with no
volatile identifiers or timestamps: its settings, labels, milestones, every issue and
pull request in every state with every field an agent can write, their comments and
reviews, the dependencies between them, every branch's files and length, the tags,
releases, commit statuses, branch protections, webhooks, collaborators, deploy keys
and wiki pages.

Read in bounded memory (benchkit.gitea.snapshot.reader: every answer streamed, a long
text digested as it passes), with the many small per-issue and per-commit calls a few
at once (benchkit.gitea.snapshot.fetch). A kind the host says it does not model is left
out of the state, and the checker does not compare it.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from benchkit.gitea.client import Client
from benchkit.gitea.snapshot import code, issues, repository
from benchkit.gitea.snapshot.fetch import Fetch, unmodelled_by

__all__ = ["settings", "snapshot"]


def settings(client: Client, owner: str, name: str) -> dict:
    """The repository's settings alone, as a RepoState fragment: taken once it is seeded,
    they are what the checker holds its settings to (the host's defaults are not the
    seed's to say)."""
    fetch = Fetch(client, owner, name, unmodelled_by(client))
    try:
        return {"repository": repository.repository(fetch)}
    finally:
        fetch.close()


def snapshot(client: Client, owner: str, name: str) -> dict:
    """The RepoState of `owner/name`."""
    fetch = Fetch(client, owner, name, unmodelled_by(client))
    try:
        settings = repository.repository(fetch)  # first: it says when there is no repository
        readings: dict[str, Callable[[], Any]] = {
            "labels": lambda: issues.labels(fetch),
            "issues": lambda: issues.issues_and_pulls(fetch),
            "milestones": lambda: issues.milestones(fetch),
            "code": lambda: code.code(fetch),
            "releases": lambda: repository.releases(fetch),
            "protections": lambda: code.protections(fetch),
            "webhooks": lambda: repository.webhooks(fetch),
            "collaborators": lambda: repository.collaborators(fetch),
            "deploy_keys": lambda: repository.deploy_keys(fetch),
            "wiki": lambda: repository.wiki(fetch)}
        found: dict[str, Any] = fetch.together({section: read for section, read in readings.items()
                                                if section not in fetch.unmodelled})
    finally:
        fetch.close()
    found["issues"], found["pull_requests"], found["dependencies"] = found["issues"]
    found["branches"], found["tags"], found["statuses"] = found.pop("code")
    state = {"labels": found["labels"], "issues": found["issues"],
             "pull_requests": found["pull_requests"], "repository": settings}
    state.update((section, value) for section, value in found.items() if section not in state)
    return {section: value for section, value in state.items() if section not in fetch.unmodelled}
