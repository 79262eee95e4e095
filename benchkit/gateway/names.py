"""Values that name a user, a team or a repository: allowed only when they name the
trial's own user (its repository's owner, or the host user behind its token) or the
trial's own repository. Gitea looks a named user up before it checks access, so any
other name tells whether that user exists (`created_by=x` answers 200 against 404,
`assignees: [x]` answers 422 with the user's id) or acts on them (an assignment or a
review request notifies the site administrator); names are case-insensitive there.

The fields, from the operations of benchkit/gateway/operations.yaml (Gitea 1.26's API):
- a body's `assignee`, `assignees`, `reviewers` (users) and `team_reviewers` (teams:
  the trial's owner is a user and has none, so any team is refused);
- the issue and pull lists' `created_by`, `assigned_by`, `mentioned_by`, `poster`;
- an issue dependency's `owner` and `repo` (IssueMeta);
- a new pull request's `base` and `head`: Gitea reads `base + ".." + head` as a
  comparison (routers/common/compare.go ParseCompareRouterParam: cut at the first
  `...`, else `..`; the head is `[owner[/repo]:]branch`), so an `owner/repo:` written
  into either names the head repository;
- the pull-by-branches route's `{head}` (`owner[/repo]:branch`);
- a commit's `author` and `committer` (the contents API): Gitea matches the e-mail
  address to a user, a private one's hidden address included, and its answer names
  them (login and id). Only the trial's own user's address, or the fixed BOT_EMAIL.
Mentions in text are benchkit.gateway.mentions'.
"""

from __future__ import annotations

from collections.abc import Iterable

USERS = ("assignee", "assignees", "reviewers")   # body fields naming users
TEAMS = ("team_reviewers",)                      # body fields naming teams
QUERY_USERS = ("created_by", "assigned_by", "mentioned_by", "poster")
IDENTITIES = ("author", "committer")             # body fields naming a commit's people
BOT_EMAIL = "agent@benchkit.invalid"  # a commit's fixed identity that names no user


def allowed_users(owner: str, user: str) -> frozenset[str]:
    """The trial's own user's names, lower case: its repository's owner and the host
    user behind its token (the same on a run of its own user)."""
    return frozenset(name.strip().lower() for name in (owner, user) if name.strip())


def body_names_outside(body_kind: str | None, body: dict, owner: str, repo: str,
                       user: str, email: str = "") -> str:
    """Why a body names a user, team or repository other than the trial's ("" when it
    does not). `email`: the trial's own user's address."""
    mine = allowed_users(owner, user)
    for field in IDENTITIES:
        given = body.get(field)
        address = str(given.get("email") or "") if isinstance(given, dict) else ""
        if address.strip() and address.strip().lower() not in {BOT_EMAIL, email.lower()} - {""}:
            return (f"a commit's {field} with an e-mail address other than the trial's own "
                    f"or {BOT_EMAIL} ({address[:40]!r})")
    for field in USERS:
        for name in _strings(body.get(field)):
            if name.strip() and name.strip().lower() not in mine:  # "": nobody
                return f"{field} naming a user other than the trial's own ({name[:40]!r})"
    for field in TEAMS:
        for name in _strings(body.get(field)):
            if name.strip():
                return f"{field} naming a team ({name[:40]!r}); the trial's user has none"
    if body_kind == "IssueMeta":
        named = (str(body.get("owner") or owner).lower(), str(body.get("repo") or repo).lower())
        if named != (owner.lower(), repo.lower()):
            return "an issue dependency naming another repository"
    if body_kind == "CreatePullRequestOption":
        head_owner, head_repo = compared_head(str(body.get("base") or ""),
                                              str(body.get("head") or ""))
        if not _ours(head_owner, head_repo, mine, repo):
            return "a pull request from another repository's branch (its base or head " \
                   f"names {head_owner[:40]!r})"
    return ""


def query_names_outside(pairs: Iterable[tuple[str, str]], owner: str, user: str) -> str:
    """Why a query names a user other than the trial's ("" when it does not)."""
    mine = allowed_users(owner, user)
    for key, value in pairs:
        if key in QUERY_USERS and value.strip() and value.strip().lower() not in mine:
            return f"the filter {key} naming a user other than the trial's own ({value[:40]!r})"
    return ""


def head_param_outside(head: str, owner: str, repo: str, user: str) -> str:
    """Why the pull-by-branches route's `{head}` names another repository (Gitea's
    GetPullRequestByBaseHead: `owner:branch` or `owner/repo:branch`)."""
    head_owner, head_repo = _split_head(head)
    if _ours(head_owner, head_repo, allowed_users(owner, user), repo):
        return ""
    return f"a pull request's head in another repository ({head[:40]!r})"


def compared_head(base: str, head: str) -> tuple[str, str]:
    """(owner, repository) of the head Gitea reads from a new pull request's `base` and
    `head` ("" for the base repository's own)."""
    param = f"{base}..{head}"
    _, sep, head_part = param.partition("...")
    if not sep:
        _, _, head_part = param.partition("..")
    return _split_head(head_part)


def _split_head(head: str) -> tuple[str, str]:
    """Gitea's parseHead: `[owner[/repo]:]branch` -> (owner, repo)."""
    if ":" not in head:
        return "", ""
    owner_repo = head.split(":", 1)[0]
    owner, _, name = owner_repo.partition("/")
    return owner, name


def _ours(head_owner: str, head_repo: str, mine: frozenset[str], repo: str) -> bool:
    return ((not head_owner or head_owner.lower() in mine)
            and (not head_repo or head_repo.lower() in (repo.lower(), repo.lower() + ".git")))


def _strings(value: object) -> list[str]:
    if isinstance(value, str):
        return [value]
    if isinstance(value, list):
        return [item for item in value if isinstance(item, str)]
    return []
