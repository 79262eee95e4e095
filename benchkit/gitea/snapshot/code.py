"""The snapshot's code side: every branch with its number of commits and its files by
content hash, every tag (its annotation, and the files of the commit it names), the
commit statuses on every commit of a branch's history and on every tagged one, and
the branch protections.

Commit ids are not kept: the seeder's commits are made at the host's clock (the forge
makes its ids up), so they differ from trial to trial; the files a commit holds and a
branch's length do not. A file is its git blob id, from the host's tree listing: no
file is ever downloaded. The paths kept are bounded (FILES_BUDGET over the whole
snapshot): a tree past it is kept as one digest of its entries, still compared.

Requests: branches and tags (paged); per branch its history (paged: its length, and
the commits whose statuses are read); per distinct commit at a branch or tag its tree
(paged); per commit reached its statuses (paged); the protections (one list).
"""

from __future__ import annotations

import hashlib

from benchkit.gitea.snapshot.fetch import Fetch
from benchkit.gitea.snapshot.reader import pages, read

FILES_BUDGET = 50_000  # paths kept, summed over every tree of a snapshot
TREE_PAGE = 1000  # Gitea's default_git_trees_per_page
_REGULAR = "100644"
_VOLATILE_PROTECTION = ("created_at", "updated_at", "rule_name", "branch_name")


def code(fetch: Fetch) -> tuple[list[dict], list[dict], list[dict]]:
    """(branches, tags, statuses)."""
    branches = [(b["name"], (b.get("commit") or {}).get("id", "")) for b in
                pages(fetch.client, f"{fetch.path}/branches")]
    tags = [(t["name"], (t.get("commit") or {}).get("sha", ""),
             t.get("message") or "" if t.get("id") != (t.get("commit") or {}).get("sha") else "")
            for t in pages(fetch.client, f"{fetch.path}/tags")]
    histories = fetch.each([name for name, _ in branches],
                           lambda client, name: _history(fetch, client, name))
    heads = sorted({sha for _, sha in branches} | {sha for _, sha, _ in tags})
    budget = _Budget(FILES_BUDGET)
    trees = dict(zip(heads, fetch.each(heads, lambda client, sha: _files(fetch, client, sha, budget)),
                     strict=True))
    subjects: dict[str, str] = {}
    for _, commits in histories:
        subjects.update(commits)
    for sha in heads:
        subjects.setdefault(sha, "")
    found = fetch.each(sorted(subjects), lambda client, sha: _statuses(fetch, client, sha))
    statuses = [{**status, "commit": subjects[sha] or sha} for sha, listed in
                zip(sorted(subjects), found, strict=True) for status in listed]
    return ([{"name": name, "commits": count, "files": trees[sha]}
             for (name, sha), (count, _) in zip(branches, histories, strict=True)],
            [{"name": name, "message": message, "files": trees[sha]} for name, sha, message in tags],
            statuses)


def protections(fetch: Fetch) -> list[dict]:
    return [{"rule": rule.get("rule_name") or rule.get("branch_name") or "",
             "settings": {key: value for key, value in rule.items()
                          if key not in _VOLATILE_PROTECTION}}
            for rule in read(fetch.client, f"{fetch.path}/branch_protections") or []]


def _history(fetch: Fetch, client, branch: str) -> tuple[int, dict[str, str]]:
    """(the branch's number of commits, each of its commits' subject line)."""
    subjects: dict[str, str] = {}
    for commit in pages(client, f"{fetch.path}/commits", {
            "sha": branch, "stat": "false", "verification": "false", "files": "false"}):
        message = (commit.get("commit") or {}).get("message") or ""
        subjects[commit["sha"]] = message.split("\n", 1)[0].strip()
    return len(subjects), subjects


class _Budget:
    """Paths the snapshot may still keep (trees are read side by side)."""

    def __init__(self, paths: int):
        self.left = paths

    def take(self, paths: int) -> bool:
        if paths > self.left:
            return False
        self.left -= paths
        return True


def _files(fetch: Fetch, client, sha: str, budget: _Budget) -> dict[str, str]:
    """The commit's files: path -> blob id (its mode first unless 100644); past the
    budget, one entry `*` holding the digest of every path, mode and id in turn."""
    files: dict[str, str] | None = {}
    digest, count = hashlib.sha256(), 0
    for page in range(1, 100_000):
        tree = read(client, f"{fetch.path}/git/trees/{sha}", {
            "recursive": "true", "page": page, "per_page": TREE_PAGE}) or {}
        entries = [entry for entry in tree.get("tree") or [] if entry.get("type") != "tree"]
        if files is not None and not budget.take(len(entries)):
            for path, value in (files or {}).items():
                digest.update(f"{path}\0{value}\n".encode())
            files = None
        for entry in entries:
            value = entry["sha"] if entry.get("mode") == _REGULAR else f"{entry.get('mode')} {entry['sha']}"
            count += 1
            if files is None:
                digest.update(f"{entry['path']}\0{value}\n".encode())
            else:
                files[entry["path"]] = value
        if not tree.get("truncated"):
            break
    return files if files is not None else {"*": f"[{count} files, sha256 {digest.hexdigest()}]"}


def _statuses(fetch: Fetch, client, sha: str) -> list[dict]:
    return [{"context": status.get("context") or "", "state": status.get("status") or
             status.get("state") or "", "description": status.get("description") or "",
             "target_url": status.get("target_url") or ""}
            for status in pages(client, f"{fetch.path}/commits/{sha}/statuses")]
