"""What of a trial's request the gateway forwards: an operation of the list
(benchkit/gateway/operations.yaml) on the trial's own repository, with the query
parameters it takes and a body read as the host reads it (benchkit.gateway.bodies), all
written anew. A request that would be such an operation but for an index that is not a
number (`issues/null`, a jq result that was null) is answered by the gateway as Gitea
answers it, 404: Gitea reads the index as 0, which names nothing. Everything else is
refused, whatever repository it names.

Beyond its route, an operation can still reach another repository or user through what
it carries, and those forms are refused too: a value that names a user, a team or a
repository other than the trial's own (benchkit.gateway.names: assignees, reviewers, the
lists' user filters, a dependency's repository, a pull request's base and head, a
commit's author and committer); text
referring to an issue of another repository (benchkit.gateway.crossrefs), in the body or
in a path parameter (the contents API's default commit message is "Add <path>"), or
mentioning another user (benchkit.gateway.mentions); a file written where the host reads
a repository's own configuration and acts on it (benchkit.gateway.hostfiles: code
owners, templates, workflows, ...); text, lists and a query that would cost the host
superlinear work (benchkit.gateway.hostwork). Gitea's global issue search answers every
repository the token sees, so it is answered from the repository's own issue list. Git
smart HTTP is fetch only: nothing the tasks need pushes, so neither push options nor
refs come into it.
"""

from __future__ import annotations

from dataclasses import dataclass
from urllib.parse import parse_qsl, urlencode

from benchkit.gateway.bodies import Refused, canonical
from benchkit.gateway.crossrefs import acts_elsewhere
from benchkit.gateway.hostfiles import host_reads
from benchkit.gateway.hostwork import query_too_costly, text_too_costly
from benchkit.gateway.names import body_names_outside, head_param_outside, query_names_outside
from benchkit.gateway.operations import MatchedOperation, Operation, catalogue, match, misshapen

GIT_UPLOAD = "application/x-git-upload-pack-request"
SEARCH_KEPT = ("q", "type", "state", "labels", "milestones", "since", "before", "page", "limit")
SEARCH_BY_USER = {"assigned": "assigned_by", "created": "created_by", "mentioned": "mentioned_by"}
SEARCH_DEFAULT_LIMIT = "20"  # the global search's default page size (the list's is 30)


@dataclass(frozen=True)
class ScopeDecision:
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


def refuse(reason: str) -> ScopeDecision:
    return ScopeDecision("refused", reason=reason)


def decide(method: str, path: str, query: str, owner: str, repo: str, body: bytes = b"",
           user: str = "", content_type: str = "", email: str = "") -> ScopeDecision:
    """Whether (and as what) a request for `path?query` with `body` may reach the host on
    behalf of the trial whose repository is `owner/repo` (and whose host user is `user`,
    with the e-mail address `email`). `query` has its token parameters out."""
    found = match(method, path, owner, repo)
    if found is None and (near := misshapen(method, path, owner, repo)):
        return ScopeDecision("answered", status=404, reason="an index that is not a number in "
                             f"{near.operation.route}: the host finds nothing by it")
    if found is None:
        return refuse(f"{method} {path[:120]} is no operation the gateway forwards "
                      "for this trial")
    operation = found.operation
    kept = _query(operation, query)
    if isinstance(kept, ScopeDecision):
        return kept
    if reason := (query_names_outside(parse_qsl(kept), owner, user)
                  or query_too_costly(parse_qsl(kept), kept)):
        return refuse(reason)
    if operation.confined:
        return _confined_search(query, owner, repo, user)
    if operation.git:
        return _git(found, kept, body, content_type)
    fields = catalogue().bodies.get(operation.body) if operation.body else None
    try:
        data, checked = canonical(body, content_type, fields, owner, repo, user)
    except Refused as error:
        return refuse(str(error))
    reason = (_path_too_costly(found)
              or body_names_outside(operation.body, checked or {}, owner, repo, user, email)
              or _host_config(found, checked or {}) or _path_acting_elsewhere(found, owner, repo, user))
    if reason:
        return refuse(reason)
    scope = "repo" if "owner" in found.params else "global"
    return ScopeDecision(scope, found.path, kept, body=data,
                         content_type="application/json" if data else "")


def _query(operation: Operation, query: str) -> str | ScopeDecision:
    """The query to forward: the operation's parameters only. On a read another one is
    dropped (the host ignores what it does not know); on a write it is refused (Gitea
    binds a form-less write from its query string)."""
    pairs = parse_qsl(query, keep_blank_values=True)
    unknown = sorted({key for key, _ in pairs if key not in operation.query})
    if unknown and operation.write:
        return refuse(f"query parameters on a write ({', '.join(unknown)[:80]})")
    return urlencode([(key, value) for key, value in pairs if key in operation.query])


def _git(found: MatchedOperation, query: str, body: bytes, content_type: str) -> ScopeDecision:
    if found.operation.method == "GET":
        if dict(parse_qsl(query)).get("service") != "git-upload-pack":
            return refuse("git's push or dumb protocol (only fetching is forwarded)")
        return ScopeDecision("git", found.path, query)
    if content_type.split(";")[0].strip().lower() != GIT_UPLOAD:
        return refuse("a git request that is not a fetch")
    return ScopeDecision("git", found.path, query, body=body, content_type=GIT_UPLOAD)


def _path_acting_elsewhere(found: MatchedOperation, owner: str, repo: str, user: str) -> str:
    """Why a path parameter refers to an issue of another repository (Gitea writes a
    file's path into the commit message it makes when none is given) or names another
    repository's branch."""
    for value in found.params.values():
        if reference := acts_elsewhere(value, owner, repo):
            return ("a path referring to an issue of another repository "
                    f"({reference[:40]!r})")
    if "head" in found.params:
        return head_param_outside(found.params["head"], owner, repo, user)
    return ""


def _path_too_costly(found: MatchedOperation) -> str:
    """Why a path parameter would cost the host too much as text (the contents API
    writes a file's path into the commit message it makes when none is given)."""
    for name, value in found.params.items():
        if name not in ("owner", "repo") and (reason := text_too_costly(value, f"the path's {name}")):
            return reason
    return ""


def _host_config(found: MatchedOperation, body: dict) -> str:
    """Why a file written by the contents API would be read by the host and acted on
    ("" when it would not): its path, or the path it is moved from."""
    if not found.operation.write or "path" not in found.params:
        return ""
    for path in (found.params["path"], body.get("from_path")):
        if isinstance(path, str) and (entry := host_reads(path)):
            return f"a file at {entry}, which the host reads and acts on"
    return ""


def _confined_search(query: str, owner: str, repo: str, user: str) -> ScopeDecision:
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
            return ScopeDecision("confined", f"/api/v1/repos/{owner}/{repo}/issues", "", empty=True)
        elif key == "team" and value:
            return ScopeDecision("confined", f"/api/v1/repos/{owner}/{repo}/issues", "", empty=True)
    if not any(k == "limit" for k, _ in kept):
        kept.append(("limit", SEARCH_DEFAULT_LIMIT))
    if reason := query_too_costly(kept, urlencode(kept)):
        return refuse(reason)
    return ScopeDecision("confined", f"/api/v1/repos/{owner}/{repo}/issues", urlencode(kept))
