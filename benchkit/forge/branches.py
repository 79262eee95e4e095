"""Routes for a repository's branches."""

from starlette.responses import Response

from .context import Ctx
from .database import now, present
from .web import ApiError, F, empty, listing, not_found, respond, route


def list_branches(ctx: Ctx, owner: str, repo: str) -> Response:
    """The repository's branches, the most recently committed first."""
    row = ctx.repo(owner, repo)
    return listing(ctx, ctx.store.branches(row["id"]), lambda b: ctx.render.branch(row, b))


def get_branch(ctx: Ctx, owner: str, repo: str, branch: str) -> Response:
    """One branch, with its head commit."""
    row = ctx.repo(owner, repo)
    found = ctx.store.branch(row["id"], branch)
    if found is None:
        raise not_found()
    return respond(ctx.render.branch(row, found))


CREATE_BRANCH = [F("new_branch_name", required=True, go="BranchName"), F("old_branch_name"), F("old_ref_name")]


def create_branch(ctx: Ctx, owner: str, repo: str) -> Response:
    """A new branch at another branch, a commit, or the default branch."""
    row = ctx.repo(owner, repo, write=True)
    name = ctx.body["new_branch_name"]
    source = ctx.body.get("old_ref_name") or ctx.body.get("old_branch_name") or row["default_branch"]
    source = source.removeprefix("refs/heads/")
    if ctx.store.branch(row["id"], name):
        raise ApiError(409, f"The branch {name} already exists.")
    base = ctx.store.branch(row["id"], source)
    sha = base["sha"] if base else (source if ctx.store.get_commit(row["id"], source) else None)
    if sha is None:
        raise not_found(f"The old branch {source} does not exist")
    ctx.store.set_branch(row["id"], name, sha)
    return respond(ctx.render.branch(row, present(ctx.store.branch(row["id"], name), f"branch {name}")), 201)


def delete_branch(ctx: Ctx, owner: str, repo: str, branch: str) -> Response:
    """Delete a branch; never the default one. The open pull requests from or into it
    are closed, as Gitea closes them (CloseBranchPulls)."""
    row = ctx.repo(owner, repo, write=True)
    if ctx.store.branch(row["id"], branch) is None:
        raise not_found()
    if branch == row["default_branch"]:
        raise ApiError(403, "can not delete default branch")
    ctx.store.delete_branch(row["id"], branch)
    for issue in ctx.store.open_pulls_on(row["id"], branch):
        ctx.store.touch(issue["id"], state="closed", closed_at=now())
        ctx.store.event(issue["id"], ctx.caller["id"], "close")
    return empty()


ROUTES = (
    route("GET", "/repos/{owner}/{repo}/branches", list_branches),
    route("GET", "/repos/{owner}/{repo}/branches/{branch:path}", get_branch),
    route("POST", "/repos/{owner}/{repo}/branches", create_branch, body=CREATE_BRANCH,
          struct="CreateBranchRepoOption"),
    route("DELETE", "/repos/{owner}/{repo}/branches/{branch:path}", delete_branch),
)
