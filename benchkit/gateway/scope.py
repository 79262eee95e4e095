"""What of a trial's request the gateway forwards: an operation of the list
(benchkit/gateway/operations.yaml) on the trial's own repository, with the query
parameters it takes and a body read as the host reads it (benchkit.gateway.bodies), all
written anew. A request that would be such an operation but for an index that is not a
number (`issues/null`, a jq result that was null) is answered by the gateway as Gitea
answers it, 404: Gitea reads the index as 0, which names nothing. Everything else is
refused, whatever repository it names.

Beyond its route, an operation can still reach another repository through what it
carries, and those forms are refused too: a dependency (`issues/N/dependencies`,
`issues/N/blocks`) naming another owner or repository; a pull request whose `head` is
another owner's branch (`owner:branch`); text referring to an issue of
another repository (benchkit.gateway.crossrefs), in the body or in a path parameter (the
contents API's default commit message is "Add <path>"); a file written under `.gitea/` or
`.github/`, where the host reads a repository's own configuration (a merge-message
template, whose text the host commits unchecked and acts on, Actions workflows, code
owners). Gitea's global issue search answers every
repository the token sees, so it is answered from the repository's own issue list. Git
smart HTTP is fetch only: nothing the tasks need pushes, so neither push options nor
refs come into it.
"""

from __future__ import annotations

from dataclasses import dataclass
from urllib.parse import parse_qsl, urlencode

from benchkit.gateway.bodies import Refused, canonical
from benchkit.gateway.crossrefs import acts_elsewhere
from benchkit.gateway.operations import Found, Operation, catalogue, match, misshapen

GIT_UPLOAD = "application/x-git-upload-pack-request"
SEARCH_KEPT = ("q", "type", "state", "labels", "milestones", "since", "before", "page", "limit")
SEARCH_BY_USER = {"assigned": "assigned_by", "created": "created_by", "mentioned": "mentioned_by"}
SEARCH_DEFAULT_LIMIT = "20"  # the global search's default page size (the list's is 30)
HOST_CONFIG = (".gitea", ".github")  # top directories whose files the host acts on


@dataclass(frozen=True)
class Decision:
    scope: str                 # "repo", "git", "global", "confined", "answered" or "refused"
    path: str = ""             # the path to forward (canonical; rewritten when confined)
    query: str = ""            # the query to forward (canonical)
    reason: str = ""           # why it was refused
    empty: bool = False        # answered by the gateway with an empty list (no host call)
    status: int = 0            # answered by the gateway with this status (no host call)
    body: bytes = b""          # the body to forward (canonical)
    content_type: str = ""     # its Content-Type ("" for none)

    @property
    def allowed(self) -> bool:
        return self.scope != "refused"


def refuse(reason: str) -> Decision:
    return Decision("refused", reason=reason)


def decide(method: str, path: str, query: str, owner: str, repo: str, body: bytes = b"",
           user: str = "", content_type: str = "") -> Decision:
    """Whether (and as what) a request for `path?query` with `body` may reach the host on
    behalf of the trial whose repository is `owner/repo` (and whose host user is `user`).
    `query` has its token parameters out."""
    found = match(method, path, owner, repo)
    if found is None and (near := misshapen(method, path, owner, repo)):
        return Decision("answered", status=404, reason="an index that is not a number in "
                        f"{near.operation.route}: the host finds nothing by it")
    if found is None:
        return refuse(f"{method} {path[:120]} is no operation the gateway forwards "
                      "for this trial")
    operation = found.operation
    kept = _query(operation, query)
    if isinstance(kept, Decision):
        return kept
    if operation.confined:
        return _confined_search(query, owner, repo, user)
    if operation.git:
        return _git(found, kept, body, content_type)
    fields = catalogue().bodies.get(operation.body) if operation.body else None
    try:
        data, checked = canonical(body, content_type, fields, owner, repo)
    except Refused as error:
        return refuse(str(error))
    reason = (_names_another(operation, checked or {}, owner, repo) or _host_config(found)
              or _path_acting_elsewhere(found, owner, repo))
    if reason:
        return refuse(reason)
    scope = "repo" if "owner" in found.params else "global"
    return Decision(scope, found.path, kept, body=data,
                    content_type="application/json" if data else "")


def _query(operation: Operation, query: str) -> str | Decision:
    """The query to forward: the operation's parameters only. On a read another one is
    dropped (the host ignores what it does not know); on a write it is refused (Gitea
    binds a form-less write from its query string)."""
    pairs = parse_qsl(query, keep_blank_values=True)
    unknown = sorted({key for key, _ in pairs if key not in operation.query})
    if unknown and operation.write:
        return refuse(f"query parameters on a write ({', '.join(unknown)[:80]})")
    return urlencode([(key, value) for key, value in pairs if key in operation.query])


def _git(found: Found, query: str, body: bytes, content_type: str) -> Decision:
    if found.operation.method == "GET":
        if dict(parse_qsl(query)).get("service") != "git-upload-pack":
            return refuse("git's push or dumb protocol (only fetching is forwarded)")
        return Decision("git", found.path, query)
    if content_type.split(";")[0].strip().lower() != GIT_UPLOAD:
        return refuse("a git request that is not a fetch")
    return Decision("git", found.path, query, body=body, content_type=GIT_UPLOAD)


def _names_another(operation: Operation, body: dict, owner: str, repo: str) -> str:
    """Why an operation of the trial's repository would act on another one through its
    body ("" when it does not)."""
    mine = (owner.lower(), repo.lower())
    if operation.body == "IssueMeta":
        named = (str(body.get("owner") or owner).lower(), str(body.get("repo") or repo).lower())
        if named != mine:
            return "an issue dependency naming another repository"
    if operation.body == "CreatePullRequestOption":
        head = str(body.get("head") or "")
        if ":" in head and head.split(":", 1)[0].lower() not in (mine[0], "/".join(mine)):
            return "a pull request from another repository's branch"
    return ""


def _path_acting_elsewhere(found: Found, owner: str, repo: str) -> str:
    """Why a path parameter refers to an issue of another repository: Gitea writes a
    file's path into the commit message it makes when none is given."""
    for value in found.params.values():
        if reference := acts_elsewhere(value, owner, repo):
            return ("a path referring to an issue of another repository "
                    f"({reference[:40]!r})")
    return ""


def _host_config(found: Found) -> str:
    """Why a file written by the contents API would be read by the host as the
    repository's configuration ("" when it would not)."""
    path = found.params.get("path")
    if not found.operation.write or path is None:
        return ""
    top = path.strip("/").split("/")[0].strip().casefold()
    return f"a file under {top}/, which the host acts on" if top in HOST_CONFIG else ""


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
