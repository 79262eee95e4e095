"""What the trial gateway forwards: a request that stays inside the trial's repository.

    decide(method, path, query, owner, repo)  -> Decision (forward as is, forward
                                                 rewritten, or refuse and why)

In scope: the repository's own API routes (`/api/v1/repos/{owner}/{repo}[/...]`), its
git smart HTTP (`/{owner}/{repo}[.git]/info/refs`, `git-upload-pack`,
`git-receive-pack`), and a short named allowlist of read-only global routes the real
tools ask for (GLOBAL_READS). Inside the repository, the routes that would move it out
of reach or make another repository (delete, rename, transfer, fork, generate) are
refused. Gitea's global issue search answers every repository the token sees, so it is
forwarded only rewritten to the repository's own issue list. Owner and repository
names match case-insensitively, as Gitea matches them.

A route of the repository can name another repository in its body or path, and those
forms are refused too: a dependency (`issues/N/dependencies`, `issues/N/blocks`) whose
body names another owner or repository, or whose body is not JSON; a pull request whose
`head` is another owner's branch (`owner:branch`) or that names a `head_repo`; a compare
whose range names another owner's branch. Not prevented: text that merely mentions
another repository (`owner/other#N` in an issue or a comment) is stored by the host as
it would be for any user of the token, and the host may link it.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from urllib.parse import parse_qsl, unquote, urlencode

READS = frozenset({"GET", "HEAD"})
# Global routes a tool may read: the host's version and settings, the token's own user,
# the API description. None of them names another repository.
GLOBAL_READS = frozenset({
    "/api/v1/version", "/api/v1/user", "/api/v1/settings/api", "/api/v1/settings/ui",
    "/api/v1/settings/repository", "/api/v1/settings/attachment", "/swagger.v1.json",
    "/api/swagger",
})
GLOBAL_SEARCH = "/api/v1/repos/issues/search"
# Repository routes that would take the repository out of the trial's reach or make
# another one: refused whatever the method.
ESCAPES = frozenset({"transfer", "generate", "forks", "mirror-sync", "push_mirrors"})
GIT_SERVICES = ("git-upload-pack", "git-receive-pack")
# Query parameters of the global issue search the repository's issue list takes too.
SEARCH_KEPT = ("q", "type", "state", "labels", "milestones", "since", "before", "page", "limit")
SEARCH_BY_USER = {"assigned": "assigned_by", "created": "created_by", "mentioned": "mentioned_by"}
SEARCH_DEFAULT_LIMIT = "20"  # the global search's default page size (the list's is 30)
_ENCODED = re.compile(r"%(2f|5c|2e|00)", re.IGNORECASE)


@dataclass(frozen=True)
class Decision:
    scope: str                 # "repo", "git", "global", "confined" or "refused"
    path: str = ""             # the path to forward (rewritten when confined)
    query: str = ""            # the query to forward (the token parameters are gone)
    reason: str = ""           # why it was refused
    empty: bool = False        # answered by the gateway with an empty list (no host call)

    @property
    def allowed(self) -> bool:
        return self.scope != "refused"


def refuse(reason: str) -> Decision:
    return Decision("refused", reason=reason)


def decide(method: str, path: str, query: str, owner: str, repo: str, body: bytes = b"",
           user: str = "") -> Decision:
    """Whether (and as what) a request for `path?query` (with `body`) may reach the host on
    behalf of the trial whose repository is `owner/repo` (and whose host user is `user`).
    `query` has its token parameters out."""
    if not path.startswith("/") or _ENCODED.search(path) or "\\" in path:
        return refuse("a path the gateway does not forward (encoded separators)")
    parts = [unquote(p) for p in path.split("/")[1:]]
    if any(p in ("", ".", "..") for p in parts[:-1]) or parts[-1] in (".", ".."):
        return refuse("a path the gateway does not forward (empty or dot segments)")
    mine = (owner.lower(), repo.lower())
    if parts[:3] == ["api", "v1", "repos"] and len(parts) >= 5:
        if (parts[3].lower(), parts[4].lower()) == mine:
            return _repo_route(method, path, query, parts[5:], body, mine)
    if path == GLOBAL_SEARCH and method in READS:
        return _confined_search(query, owner, repo, user)
    if path.rstrip("/") in GLOBAL_READS:
        if method in READS:
            return Decision("global", path, query)
        return refuse(f"{method} on a global route (only reads are forwarded)")
    if len(parts) >= 3 and parts[0].lower() == mine[0] and _git_repo(parts[1]) == mine[1]:
        return _git_route(method, path, query, parts[2:])
    return refuse("outside the trial's repository")


def _repo_route(method: str, path: str, query: str, rest: list[str], body: bytes,
                mine: tuple[str, str]) -> Decision:
    if not rest or rest == [""]:
        if method in READS:
            return Decision("repo", path, query)
        return refuse(f"{method} on the repository itself (delete, rename)")
    if rest[0].lower() in ESCAPES:  # whatever case a host routes
        return refuse(f"/{rest[0]} would reach beyond the trial's repository")
    reason = _names_another(method, rest, body, mine)
    if reason:
        return refuse(reason)
    return Decision("repo", path, query)


def _names_another(method: str, rest: list[str], body: bytes, mine: tuple[str, str]) -> str:
    """Why a route of the trial's repository would act on another one through its body
    or its compare range ("" when it does not)."""
    if rest[0] == "compare" and ":" in "/".join(rest[1:]):
        # base...head where either side is `owner:branch` (or `owner/repo:branch`)
        sides = re.split(r"\.\.\.?", "/".join(rest[1:]))
        if any(":" in side and side.split(":", 1)[0].lower() not in (mine[0], "/".join(mine))
               for side in sides):
            return "a compare with another owner's branch"
    if method in READS:
        return ""
    if len(rest) == 3 and rest[0] == "issues" and rest[2] in ("dependencies", "blocks"):
        meta = _json(body)
        if not isinstance(meta, dict):
            return f"an issue {rest[2]} body the gateway cannot read (JSON expected)"
        named = (str(meta.get("owner") or mine[0]).lower(), str(meta.get("repo") or mine[1]).lower())
        if named != mine:
            return f"an issue {rest[2]} naming another repository"
    if rest == ["pulls"] and method == "POST":
        meta = _json(body)
        if not isinstance(meta, dict):
            return "a pull request body the gateway cannot read (JSON expected)"
        head = str(meta.get("head") or "")
        if meta.get("head_repo") or meta.get("head_repo_id") or (
                ":" in head and head.split(":", 1)[0].lower() not in (mine[0], "/".join(mine))):
            return "a pull request from another repository's branch"
    return ""


def _json(body: bytes) -> object:
    try:
        return json.loads(body or b"null")
    except (ValueError, UnicodeDecodeError):
        return None


def _git_repo(segment: str) -> str:
    name = segment.lower()
    return name[:-4] if name.endswith(".git") else name


def _git_route(method: str, path: str, query: str, rest: list[str]) -> Decision:
    if rest == ["info", "refs"] and method in READS:
        service = dict(parse_qsl(query)).get("service", "")
        if service in GIT_SERVICES:
            return Decision("git", path, query)
        return refuse("git's dumb HTTP protocol (only smart HTTP is forwarded)")
    if len(rest) == 1 and rest[0] in GIT_SERVICES and method == "POST":
        return Decision("git", path, query)
    return refuse("a web page or git route the gateway does not forward")


def _confined_search(query: str, owner: str, repo: str, user: str) -> Decision:
    """Gitea's global issue search, as the repository's own issue list: the same filters
    and paging, and the answer (rows, X-Total-Count, Link) is the repository's alone.
    `assigned`/`created`/`mentioned` become the list's filters by the host user; an
    `owner` or `team` other than the trial's owner answers nothing (an empty page)."""
    given = parse_qsl(query, keep_blank_values=True)
    kept = [(k, v) for k, v in given if k in SEARCH_KEPT]
    for key, value in given:
        if key in SEARCH_BY_USER and value.lower() == "true":
            if not user:
                return refuse(f"the issue search's {key} filter (the host user is unknown)")
            kept.append((SEARCH_BY_USER[key], user))
        elif key in ("review_requested", "reviewed") and value.lower() == "true":
            return refuse(f"the issue search's {key} filter (not confined to the repository)")
        elif key == "owner" and value and value.lower() != owner.lower():
            return Decision("confined", f"/api/v1/repos/{owner}/{repo}/issues", "", empty=True)
        elif key == "team" and value:
            return Decision("confined", f"/api/v1/repos/{owner}/{repo}/issues", "", empty=True)
    if not any(k == "limit" for k, _ in kept):
        kept.append(("limit", SEARCH_DEFAULT_LIMIT))
    return Decision("confined", f"/api/v1/repos/{owner}/{repo}/issues", urlencode(kept))
