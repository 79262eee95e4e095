"""The readiness gate: an agent is released only when an independent reader sees the
seeded repository as the ground truth describes it.

A live Gitea can answer 404 to a fresh reader for a repository it just created, and
its issue indexer is asynchronous, so a search right after seeding may find nothing.
Either would be charged to the agent, so the gate polls (bounded by `timeout`) until
the repository answers, every seeded issue and pull request is listed in its seeded
state, and the search index returns a seeded issue and a seeded pull request.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from typing import Any

from benchkit.documents.expectation import seed_plan
from benchkit.errors import HostError, ReadinessError
from benchkit.gitea.client import Client, GiteaError
from benchkit.gitea.repos import Repo

log = logging.getLogger(__name__)

Probe = Callable[[Client, float], bool]  # (reader, request timeout) -> ready?


def wait_ready(url: str, token: str | None, repo: Repo | str, seed: Any, timeout: float = 60.0,
               *, interval: float = 0.5) -> None:
    """Return once `repo` (a Repo or "owner/name") is ready; raise `ReadinessError`
    naming what was not, by `timeout` seconds. A fresh session, as the agent's own
    process will be."""
    if isinstance(repo, str):
        repo = Repo(*repo.split("/", 1))
    deadline = time.monotonic() + timeout
    pending = _checks(repo, seed_plan(seed))
    last_error = ""
    with Client(url, token, retries=0) as reader:
        while True:
            while pending:
                what, probe = pending[0]
                remaining = deadline - time.monotonic()
                if remaining <= 0:
                    break
                ok, last_error = _attempt(probe, reader, min(reader.timeout, max(remaining, 0.05)))
                if not ok:
                    break  # later checks depend on this one
                log.debug("ready: %s", what)
                pending.pop(0)
            if not pending:
                return
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                missing = "; ".join(what for what, _ in pending)
                note = f" (last error: {last_error})" if last_error else ""
                raise ReadinessError(f"{repo.full_name} not ready after {timeout:g} s: "
                                     f"{missing}{note}")
            time.sleep(min(interval, remaining))


def _attempt(probe: Probe, reader: Client, timeout: float) -> tuple[bool, str]:
    """Run one probe; a 404, 5xx or dropped connection means "not yet"."""
    try:
        return probe(reader, timeout), ""
    except GiteaError as exc:
        if exc.status == 404 or exc.status >= 500:
            return False, str(exc)
        raise
    except HostError as exc:
        return False, str(exc)


def _checks(repo: Repo, plan: dict) -> list[tuple[str, Probe]]:
    """What must hold, in order: each check presumes the ones before it."""
    issues, pulls = plan["issues"], plan["pull_requests"]
    checks: list[tuple[str, Probe]] = [
        (f"repository {repo.full_name} does not answer",
         lambda reader, timeout: bool(reader.get(repo.path, timeout=timeout)))]
    if issues:
        checks.append((f"not all {len(issues)} seeded issues are listed in their seeded state",
                       _listed(repo, "issues", {"state": "all", "type": "issues"}, issues)))
    if pulls:
        checks.append((f"not all {len(pulls)} seeded pull requests are listed in their "
                       "seeded state", _listed(repo, "pulls", {"state": "all"}, pulls)))
    # The latest-created item is the last one the indexer's queue reaches.
    if issues:
        checks.append((f"search index does not return seeded issue #{issues[-1]['number']}",
                       _searchable(repo, "issues", issues[-1])))
    if pulls:
        checks.append((f"search index does not return seeded pull request "
                       f"#{pulls[-1]['number']}", _searchable(repo, "pulls", pulls[-1])))
    return checks


def _listed(repo: Repo, kind: str, params: dict, planned: list[dict]) -> Probe:
    want = {item["number"]: item["state"] for item in planned}

    def probe(reader: Client, timeout: float) -> bool:
        seen = {item["number"]: _state(item)
                for item in reader.paginate(f"{repo.path}/{kind}", params, timeout=timeout)}
        return all(seen.get(number) == state for number, state in want.items())
    return probe


def _searchable(repo: Repo, kind: str, item: dict) -> Probe:
    # The whole title: Gitea's indexers match it as a phrase (bleve) or substring (db).
    params = {"q": item["title"], "type": kind, "state": "all", "limit": 50}

    def probe(reader: Client, timeout: float) -> bool:
        found = reader.get(f"{repo.path}/issues", params, timeout=timeout) or []
        return any(hit.get("number") == item["number"] for hit in found)
    return probe


def _state(item: dict) -> str:
    """open, closed or merged, whether `item` is an Issue or a PullRequest object."""
    pull = item.get("pull_request") or {}
    return "merged" if item.get("merged") or pull.get("merged") else item.get("state", "")
