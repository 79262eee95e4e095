"""Routes between issues and on an issue as a whole: dependencies ("blocked by") and
their inverse ("blocks"), pins, and deleting an issue."""

from collections.abc import Callable

from starlette.responses import Response

from .context import Ctx
from .issue_search import render_issue
from .web import ApiError, F, Handler, empty, listing, not_found, respond, route

META = [F("owner"), F("repo", go="Name"), F("index", int)]  # Gitea's IssueMeta


def meta_issue(ctx: Ctx, row: dict) -> tuple[dict, dict]:
    """The issue a body names by owner, repo and index. Gitea compares both names with
    the path's repository exactly and otherwise looks the named one up: an owner left
    out names no repository (404)."""
    body = ctx.body
    other, owner, name = row, body.get("owner") or "", body.get("repo") or ""
    if owner != ctx.store.row("users", row["owner_id"])["login"] or name != row["name"]:
        found = ctx.store.repo(owner, name)
        if found is None or (found["private"] and not ctx.can_write(found)):
            raise not_found("IsErrRepoNotExist",
                            [f"repository does not exist [id: 0, uid: 0, owner_name: {owner}, name: {name}]"])
        other = found
    return other, path_issue(ctx, other, body.get("index") or 0)


def path_issue(ctx: Ctx, row: dict, index: int) -> dict:
    """An issue these handlers look up themselves: a miss names the error kind."""
    issue = ctx.store.issue(row["id"], index)
    if issue is None:
        raise missing_issue(row, index)
    return issue


def missing_issue(row: dict, index: int, message: str = "IsErrIssueNotExist") -> ApiError:
    """Gitea's 404 for an issue the path or body names and the repository lacks."""
    return not_found(message, [f"issue does not exist [id: 0, repo_id: {row['id']}, index: {index}]"])


def may_link(ctx: Ctx, target_repo: dict) -> None:
    """Gitea answers 404, not 403, to a caller who cannot write to the dependent issue."""
    if not ctx.can_write(target_repo):
        raise not_found()


def link(ctx: Ctx, target: dict, dependency: dict) -> None:
    """Gitea answers 500 to a link that exists or would close a loop of two (an issue
    may depend on itself)."""
    store = ctx.store
    where = f"[issue id: {target['id']}, dependency id: {dependency['id']}]"
    if store.depends(target["id"], dependency["id"]):
        raise ApiError(500, f"issue dependency does already exist {where}")
    if store.depends(dependency["id"], target["id"]):
        raise ApiError(500, f"circular dependencies exists (two issues blocking each other) {where}")
    store.add_dependency(target["id"], dependency["id"])
    store.event(target["id"], ctx.caller["id"], "add_dependency", dependent_issue_id=dependency["id"])


def unlink(ctx: Ctx, target: dict, dependency: dict) -> None:
    """Remove the dependency; Gitea answers 500 when there is none."""
    store = ctx.store
    if not store.depends(target["id"], dependency["id"]):
        raise ApiError(500, f"issue dependency does not exist [issue id: {target['id']}, "
                            f"dependency id: {dependency['id']}]")
    store.remove_dependency(target["id"], dependency["id"])
    store.event(target["id"], ctx.caller["id"], "remove_dependency", dependent_issue_id=dependency["id"])


def path_issue_id(ctx: Ctx, owner: str, repo: str, index: int) -> int:
    """The id of the path's issue, which the dependency listings start from."""
    return path_issue(ctx, ctx.repo(owner, repo), index)["id"]


def repos_of(ctx: Ctx, rows: list[dict]) -> dict:
    """The repository of each row (id -> repository)."""
    return {r["repo_id"]: ctx.store.row("repos", r["repo_id"]) for r in rows}


# -- dependencies: the issues this one is blocked by -------------------------------------
def list_dependencies(ctx: Ctx, owner: str, repo: str, index: int) -> Response:
    """The issues this one is blocked by, one page of them."""
    rows = ctx.store.blockers(path_issue_id(ctx, owner, repo, index))
    return listing(ctx, rows, render_issue(ctx, repos_of(ctx, rows)))


def relate(ctx: Ctx, owner: str, repo: str, index: int, *, blocks: bool,
           change: Callable[[Ctx, dict, dict], None]) -> Response:
    """Add or remove (`change` is link or unlink) one dependency. On .../dependencies the
    path's issue depends on the body's; on .../blocks the body's depends on the path's.
    Gitea answers 201 with the path's issue either way."""
    row = ctx.repo(owner, repo)
    path = path_issue(ctx, row, index)
    other_repo, other = meta_issue(ctx, row)
    target, dependency = (other, path) if blocks else (path, other)
    may_link(ctx, other_repo if blocks else row)
    change(ctx, target, dependency)
    return respond(ctx.render.issue(ctx.store.row("issues", path["id"]), row), 201)


def relating(*, blocks: bool, change: Callable[[Ctx, dict, dict], None]) -> Handler:
    """The handler of one dependency route: adding or removing, on .../blocks or
    .../dependencies."""
    return lambda ctx, owner, repo, index: relate(ctx, owner, repo, index, blocks=blocks, change=change)


# -- blocks: the issues this one blocks ----------------------------------------------------
def list_blocks(ctx: Ctx, owner: str, repo: str, index: int) -> Response:
    """The issues this one blocks, newest first, paged by hand as Gitea does."""
    rows = ctx.store.blocked(path_issue_id(ctx, owner, repo, index))
    # Gitea pages this list by hand and sends no paging headers; a limit of 1 means the default.
    page = max(ctx.query_int("page"), 1)
    limit = ctx.query_int("limit")
    limit = 30 if limit <= 1 else limit
    repos = repos_of(ctx, rows)
    return respond([ctx.render.issue(r, repos[r["repo_id"]]) for r in rows[(page - 1) * limit: page * limit]])


# -- pins ------------------------------------------------------------------------------------
MAX_PINNED = 3  # setting.Repository.Issue.MaxPinned


def repo_admin(ctx: Ctx, owner: str, repo: str) -> dict:
    """Gitea's reqAdmin: a repository admin (here: its owner or a site admin), else 403."""
    row = ctx.repo(owner, repo)
    if not (ctx.caller["is_admin"] or ctx.caller["id"] == row["owner_id"]):
        raise ApiError(403, "user should be an owner or a collaborator with admin write of a repository")
    return row


def pin_issue(ctx: Ctx, owner: str, repo: str, index: int) -> Response:
    """Pin an issue (at most three per kind); a repository admin's right."""
    row = repo_admin(ctx, owner, repo)
    issue = ctx.issue(row, index)
    pins = ctx.store.pins(row["id"], issue["is_pull"])
    if len(pins) >= MAX_PINNED:
        raise ApiError(500, "the max number of pinned issues has been readched")  # sic
    if any(p["issue_id"] == issue["id"] for p in pins):
        raise ApiError(500, "UNIQUE constraint failed: issue_pin.repo_id, issue_pin.issue_id")
    ctx.store.insert("issue_pins", issue_id=issue["id"], repo_id=row["id"], is_pull=issue["is_pull"],
                     pin_order=max([p["pin_order"] for p in pins], default=0) + 1)
    ctx.store.event(issue["id"], ctx.caller["id"], "pin")
    return empty()


def unpin_issue(ctx: Ctx, owner: str, repo: str, index: int) -> Response:
    """Unpin an issue; unpinning one that is not pinned does nothing."""
    row = repo_admin(ctx, owner, repo)
    issue = ctx.issue(row, index)
    if ctx.store.unpin(issue["id"]):
        ctx.store.event(issue["id"], ctx.caller["id"], "unpin")
    return empty()


# -- deleting an issue ------------------------------------------------------------------------
def delete_issue(ctx: Ctx, owner: str, repo: str, index: int) -> Response:
    """Delete an issue and all that hangs on it; a repository admin's right."""
    row = repo_admin(ctx, owner, repo)
    issue = ctx.store.issue(row["id"], index)
    if issue is None:
        raise missing_issue(row, index, "not found")
    ctx.store.delete_issue(issue["id"])
    ctx.forge.indexer.index(issue["id"], None)
    return empty()


ISSUE = "/repos/{owner}/{repo}/issues/{index:int}"
ROUTES = (
    route("GET", ISSUE + "/dependencies", list_dependencies),
    route("POST", ISSUE + "/dependencies", relating(blocks=False, change=link), body=META, struct="IssueMeta"),
    route("POST", ISSUE + "/blocks", relating(blocks=True, change=link), body=META, struct="IssueMeta"),
    route("DELETE", ISSUE + "/dependencies", relating(blocks=False, change=unlink), body=META,
          struct="IssueMeta"),
    route("DELETE", ISSUE + "/blocks", relating(blocks=True, change=unlink), body=META, struct="IssueMeta"),
    route("GET", ISSUE + "/blocks", list_blocks),
    route("POST", ISSUE + "/pin", pin_issue),
    route("DELETE", ISSUE + "/pin", unpin_issue),
    route("DELETE", ISSUE, delete_issue),
)
