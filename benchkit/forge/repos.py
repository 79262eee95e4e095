"""Routes for repositories: list, search, create, get, edit, delete."""

import re
from typing import Any

from starlette.responses import Response

from .context import Ctx
from .database import now
from .web import ApiError, F, empty, invalid, listing, not_found, respond, route

REPO_NAME = re.compile(r"^[A-Za-z0-9_.-]+$")
RESERVED = {".", "..", "-", "assets", "api", "avatars", "user", "org", "explore", "repo", "swagger"}


def visible_repos(ctx: Ctx, owner_id: int | None = None) -> list:
    """The repositories the caller may see (of one owner, if given), oldest first."""
    rows = ctx.store.repos()
    return [r for r in rows if (owner_id is None or r["owner_id"] == owner_id)
            and (not r["private"] or ctx.can_write(r))]


def my_repos(ctx: Ctx) -> Response:
    """The caller's repositories."""
    return listing(ctx, visible_repos(ctx, ctx.caller["id"]), ctx.render.repo)


def user_repos(ctx: Ctx, username: str) -> Response:
    """A user's repositories the caller may see."""
    user = ctx.store.user_by_login(username)
    if user is None:
        raise not_found()
    return listing(ctx, visible_repos(ctx, user["id"]), ctx.render.repo)


def search_repos(ctx: Ctx) -> Response:
    """Repositories the caller may see whose name (or description) holds `q`."""
    keyword = ctx.query("q").lower()
    uid = ctx.query_int("uid")
    rows = [r for r in visible_repos(ctx, uid or None) if keyword in r["name"].lower()
            or (ctx.query("includeDesc") in ("1", "true") and keyword in r["description"].lower())]
    return listing(ctx, rows, ctx.render.repo, wrap=lambda data: {"ok": True, "data": data})


CREATE_REPO = [F("name", str, required=True), F("description"), F("private", bool), F("auto_init", bool),
               F("default_branch"), F("readme"), F("gitignores"), F("license"), F("issue_labels"),
               F("template", bool), F("trust_model"), F("object_format_name")]


def create_repo(ctx: Ctx) -> Response:
    """Create a repository for the caller, checking its name as Gitea does."""
    body = ctx.body
    name = body["name"]
    if len(name) > 100 or not REPO_NAME.match(name):
        raise invalid("[Name]: AlphaDashDot")
    if name.lower() in RESERVED or name.lower().endswith((".git", ".wiki")):
        raise invalid(f"name is reserved [name: {name}]")
    if ctx.store.repo(ctx.caller["login"], name):
        raise ApiError(409, "The repository with the same name already exists.")
    stamp = now()
    repo_id = ctx.store.insert("repos", owner_id=ctx.caller["id"], name=name,
                               description=body.get("description") or "", private=int(bool(body.get("private"))),
                               template=int(bool(body.get("template"))),
                               default_branch=body.get("default_branch") or "main", created=stamp, updated=stamp)
    repo = ctx.store.row("repos", repo_id)
    if body.get("auto_init"):
        readme = f"# {name}\n\n{repo['description']}"
        commit = ctx.store.commit(repo_id, [], {"README.md": readme}, "Initial commit", ctx.caller["id"])
        ctx.store.set_branch(repo_id, repo["default_branch"], commit["sha"])
    return respond(ctx.render.repo(repo), 201)


def get_repo(ctx: Ctx, owner: str, repo: str) -> Response:
    """One repository."""
    return respond(ctx.render.repo(ctx.repo(owner, repo)))


EDIT_REPO = [F("name"), F("description"), F("website"), F("private", bool), F("template", bool),
             F("archived", bool), F("default_branch")]


def edit_repo(ctx: Ctx, owner: str, repo: str) -> Response:
    """Edit a repository's settings; 409 for a name already taken."""
    row = ctx.repo(owner, repo, write=True)
    changes: dict[str, Any] = {k: (int(v) if isinstance(v, bool) else v) for k, v in ctx.body.items() if v is not None}
    if "name" in changes and changes["name"].lower() != row["name"].lower() \
            and ctx.store.repo(owner, changes["name"]):
        raise ApiError(409, "The repository with the same name already exists.")
    if "default_branch" in changes and ctx.store.branches(row["id"]) \
            and not ctx.store.branch(row["id"], changes["default_branch"]):
        raise not_found()
    ctx.store.update("repos", {"id": row["id"]}, updated=now(), **changes)
    return respond(ctx.render.repo(ctx.store.row("repos", row["id"])))


def delete_repo(ctx: Ctx, owner: str, repo: str) -> Response:
    """Delete a repository and all it holds; its issues leave keyword search."""
    row = ctx.repo(owner, repo)
    if not ctx.can_write(row):
        raise ApiError(403, "Given user is not owner of organization.")
    issue_ids = ctx.store.issue_ids(row["id"])
    ctx.store.delete_repo(row["id"])
    for issue_id in issue_ids:
        ctx.reindex(issue_id)
    return empty()


ROUTES = (
    route("GET", "/user/repos", my_repos, auth=True),
    route("GET", "/users/{username}/repos", user_repos),
    route("GET", "/repos/search", search_repos),
    route("POST", "/user/repos", create_repo, body=CREATE_REPO, struct="CreateRepoOption"),
    route("GET", "/repos/{owner}/{repo}", get_repo),
    route("PATCH", "/repos/{owner}/{repo}", edit_repo, body=EDIT_REPO, struct="EditRepoOption"),
    route("DELETE", "/repos/{owner}/{repo}", delete_repo),
)
