"""A watcher for hostile tests: what every other repository of a host looked like before
a test and after it, read with an admin's token, so that an effect the RepoState
snapshot does not show (a timeline entry, a dependency, a moved `updated_at`, a hook,
a key, a collaborator, a change of visibility) still fails the test.

    watch = Watch(host.url, host.token, ignore=lambda name: name == trial_repo)
    before = watch.take()
    ... the hostile trial ...
    assert watch.changes(before, watch.take()) == []

Or, for a block of code:

    with watching(host.url, host.token, ignore=...) as seen:
        ...
    assert seen.changes == []

What it reads of each repository, as the admin sees it: the repository itself, its
labels, milestones, branches, releases, topics, hooks, git hooks, deploy keys,
collaborators and pull requests, every issue and pull request (open and closed) and,
for each, its comments, timeline, dependencies, blocks and reactions. A route a host
does not serve is kept as its status and body like any other: it does not change
either. Repositories that appear or go are changes too, unless `ignore` says so (a
test's own throwaway repositories).
"""

from __future__ import annotations

import contextlib
import json
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from urllib.parse import quote

import requests

PAGE = 50
MAX_PAGES = 100
# Per repository, beside its issues: each route's own answer is part of the fingerprint.
REPO_ROUTES = ("", "/labels", "/milestones?state=all", "/branches", "/releases", "/topics",
               "/hooks", "/hooks/git", "/keys", "/collaborators", "/pulls?state=all")
ISSUE_ROUTES = ("", "/comments", "/timeline", "/dependencies", "/blocks", "/reactions")

Fingerprint = dict[str, dict[str, str]]  # repository -> route -> "status canonical-body"


class Watch:
    """Reads every repository of a host with an admin's token (see the module doc)."""

    def __init__(self, url: str, admin_token: str, *,
                 ignore: Callable[[str], bool] = lambda full_name: False, timeout: float = 30):
        self.api = url.rstrip("/") + "/api/v1"
        self.ignore, self.timeout = ignore, timeout
        self.session = requests.Session()
        self.session.headers["Authorization"] = f"token {admin_token}"

    def take(self) -> Fingerprint:
        """Every repository the admin can see (private ones of other users included),
        each route's answer in canonical form."""
        return {name: self.repository(name) for name in self.repositories()
                if not self.ignore(name)}

    def repositories(self) -> list[str]:
        """Every repository's OWNER/NAME (the admin's search shows private ones too)."""
        names = [repo["full_name"] for repo in self._pages("/repos/search", wrapped=True)]
        return sorted(set(names))

    def repository(self, full_name: str) -> dict[str, str]:
        owner, _, name = full_name.partition("/")
        base = f"/repos/{quote(owner, safe='')}/{quote(name, safe='')}"
        seen = {route or "/": self._read(base + route) for route in REPO_ROUTES}
        numbers = sorted(issue["number"] for issue in
                         self._pages(base + "/issues", {"state": "all", "type": ""}))
        for number in numbers:
            for route in ISSUE_ROUTES:
                seen[f"/issues/{number}{route}"] = self._read(f"{base}/issues/{number}{route}")
        return seen

    @staticmethod
    def changes(before: Fingerprint, after: Fingerprint) -> list[str]:
        """One line per difference: a repository that appeared or went, or a route of a
        repository whose answer changed (with the first keys that differ)."""
        lines = [f"{name}: appeared" for name in sorted(after.keys() - before.keys())]
        lines += [f"{name}: gone" for name in sorted(before.keys() - after.keys())]
        for name in sorted(before.keys() & after.keys()):
            old, new = before[name], after[name]
            for route in sorted(old.keys() | new.keys()):
                if old.get(route) != new.get(route):
                    lines.append(f"{name} {route}: {_difference(old.get(route), new.get(route))}")
        return lines

    def _read(self, path: str) -> str:
        response = self.session.get(self.api + path, timeout=self.timeout)
        try:
            body = json.dumps(response.json(), sort_keys=True)
        except ValueError:
            body = response.text
        return f"{response.status_code} {body}"

    def _pages(self, path: str, params: dict | None = None, *, wrapped: bool = False) -> Iterator[dict]:
        for page in range(1, MAX_PAGES + 1):
            response = self.session.get(self.api + path, timeout=self.timeout,
                                        params={**(params or {}), "page": page, "limit": PAGE})
            response.raise_for_status()
            data = response.json()
            items = (data.get("data") or []) if wrapped else data
            yield from items
            if len(items) < PAGE:
                return
        raise AssertionError(f"{path}: more than {MAX_PAGES} pages")


def _difference(old: str | None, new: str | None) -> str:
    """What changed in one route's answer, in a few words."""
    if old is None or new is None:
        return "appeared" if old is None else "gone"
    old_status, _, old_body = old.partition(" ")
    new_status, _, new_body = new.partition(" ")
    if old_status != new_status:
        return f"HTTP {old_status} -> {new_status}"
    try:
        a, b = json.loads(old_body), json.loads(new_body)
    except ValueError:
        return "body changed"
    if isinstance(a, dict) and isinstance(b, dict):
        keys = sorted(k for k in a.keys() | b.keys() if a.get(k) != b.get(k))
        return "changed " + ", ".join(keys[:6])
    if isinstance(a, list) and isinstance(b, list) and len(a) != len(b):
        return f"{len(a)} -> {len(b)} entries"
    return "body changed"


@dataclass
class Seen:
    """What `watching` found: the changes, once the block has ended."""

    before: Fingerprint
    changes: list[str] = field(default_factory=list)


@contextlib.contextmanager
def watching(url: str, admin_token: str, *,
             ignore: Callable[[str], bool] = lambda full_name: False) -> Iterator[Seen]:
    """Fingerprint every repository before the block and after it (see Watch)."""
    watch = Watch(url, admin_token, ignore=ignore)
    seen = Seen(watch.take())
    yield seen
    seen.changes = watch.changes(seen.before, watch.take())


def closed_by_then(client, path: str, deadline: float = 60.0) -> None:
    """Wait (bounded) until the issue at `path` is closed: the sign that the host has
    read a commit message whose last keyword closes it, and so acted on all before it."""
    end = time.monotonic() + deadline
    while client.get(path)["state"] != "closed":
        assert time.monotonic() < end, f"{path} was not closed in {deadline:g} s"
        time.sleep(0.2)
