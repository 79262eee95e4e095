"""The snapshot's repository side: its settings (everything its edit call writes: the
description, website, visibility, default branch, archiving, template flag, units,
trackers and merge styles), its topics and whether it moved, its releases with their
attachments, webhooks, collaborators with their permission, deploy keys and wiki
pages (each page's text, or the digest of a long one).

Requests: the repository (which answers for its existence), its topics; releases,
webhooks, collaborators, deploy keys and wiki pages (paged); per collaborator its
permission and per wiki page its content.
"""

from __future__ import annotations

import base64
import binascii
from urllib.parse import quote

from benchkit.gitea.client import GiteaError
from benchkit.gitea.snapshot.fetch import Fetch
from benchkit.gitea.snapshot.reader import pages, read
from benchkit.state.values import is_digest

# Every field of Gitea's EditRepoOption that a repository shows back (name aside: a
# rename is `renamed_to`).
SETTINGS = (
    "description", "website", "private", "template", "internal", "archived", "default_branch",
    "has_code", "has_issues", "internal_tracker", "external_tracker", "has_wiki",
    "external_wiki", "has_pull_requests", "has_projects", "projects_mode", "has_releases",
    "has_packages", "has_actions", "ignore_whitespace_conflicts", "allow_merge_commits",
    "allow_rebase", "allow_rebase_explicit", "allow_squash_merge",
    "allow_fast_forward_only_merge", "allow_rebase_update", "allow_manual_merge",
    "autodetect_manual_merge", "default_delete_branch_after_merge", "default_merge_style",
    "default_allow_maintainer_edit", "mirror_interval")


def repository(fetch: Fetch) -> dict:
    """The repository's settings; the first call, so a missing repository is said here."""
    try:
        data = read(fetch.client, fetch.path) or {}
    except GiteaError as exc:
        if exc.status == 404:
            raise GiteaError(404, f"no repository {fetch.owner}/{fetch.name} (or no access to it)",
                             "GET", fetch.path) from None
        raise
    full = data.get("full_name") or f"{fetch.owner}/{fetch.name}"
    record: dict = {"settings": {key: data[key] for key in SETTINGS if key in data},
                    "renamed_to": None if full.lower() == f"{fetch.owner}/{fetch.name}".lower()
                    else full}
    if "topics" not in fetch.unmodelled:
        record["topics"] = (read(fetch.client, f"{fetch.path}/topics") or {}).get("topics") or []
    return record


def releases(fetch: Fetch) -> list[dict]:
    found = []
    for release in pages(fetch.client, f"{fetch.path}/releases"):
        record = {"tag": release["tag_name"], "name": release.get("name") or "",
                  "body": release.get("body") or "", "draft": bool(release.get("draft")),
                  "prerelease": bool(release.get("prerelease"))}
        if "attachments" not in fetch.unmodelled:
            record["attachments"] = [{"name": asset["name"], "size": asset.get("size") or 0}
                                     for asset in release.get("assets") or []]
        found.append(record)
    return found


def webhooks(fetch: Fetch) -> list[dict]:
    return [{"type": hook.get("type") or "", "url": (hook.get("config") or {}).get("url") or "",
             "content_type": (hook.get("config") or {}).get("content_type") or "",
             "events": hook.get("events") or [], "active": bool(hook.get("active")),
             "branch_filter": hook.get("branch_filter") or ""}
            for hook in pages(fetch.client, f"{fetch.path}/hooks")]


def collaborators(fetch: Fetch) -> list[dict]:
    logins = [user["login"] for user in pages(fetch.client, f"{fetch.path}/collaborators")]
    permissions = fetch.each(logins, lambda client, login: (read(
        client, f"{fetch.path}/collaborators/{login}/permission") or {}).get("permission"))
    return [{"login": login, "permission": permission or ""}
            for login, permission in zip(logins, permissions, strict=True)]


def deploy_keys(fetch: Fetch) -> list[dict]:
    return [{"title": key.get("title") or "", "key": key.get("key") or "",
             "read_only": bool(key.get("read_only"))}
            for key in pages(fetch.client, f"{fetch.path}/keys")]


def wiki(fetch: Fetch) -> list[dict]:
    """The wiki's pages and their text (none while the wiki has no page: a 404)."""
    try:
        listed = [(page["title"], page.get("sub_url") or page["title"])
                  for page in pages(fetch.client, f"{fetch.path}/wiki/pages")]
    except GiteaError as exc:
        if exc.status == 404:
            return []
        raise
    contents = fetch.each([sub for _, sub in listed], lambda client, sub: (read(
        client, f"{fetch.path}/wiki/page/{quote(sub, safe='')}") or {}).get("content_base64") or "")
    return [{"title": title, "content": _text(content)}
            for (title, _), content in zip(listed, contents, strict=True)]


def _text(content: str) -> str:
    if is_digest(content):
        return content
    try:
        return base64.b64decode(content).decode("utf-8", "replace")
    except (binascii.Error, ValueError):
        return content
