"""A pull request found by its branches, and updating its head branch from its base
(the "Update branch" button): what gitea-axi calls before opening or checking out one."""

from starlette.responses import Response

from .context import Ctx
from .database import present
from .pulls import find_pull, head_sha, merge_base
from .web import ApiError, empty, not_found, respond, route


def pull_by_branches(ctx: Ctx, owner: str, repo: str, base: str, head: str) -> Response:
    """`head` is a branch, `owner:branch` or `owner/repo:branch` (Gitea's GetPullRequestByBaseHead)."""
    row = ctx.repo(owner, repo)
    head_repo = row
    if ":" in head:
        where, head = head.split(":", 1)
        head_owner, _, head_name = where.partition("/")
        found = ctx.store.repo(head_owner, head_name or row["name"])
        if found is None:
            raise not_found("not found")
        head_repo = found
    if head_repo["id"] != row["id"]:
        raise not_found("not found")  # the forge has no forks
    issue = ctx.store.pull_by_branches(row["id"], base, head)
    if issue is None:
        raise not_found("not found")
    return respond(ctx.render.pull(issue, row))


def update_pull(ctx: Ctx, owner: str, repo: str, index: int) -> Response:
    """Bring the base's changes into the head branch (a merge commit, or with style=rebase one
    on the base)."""
    row, issue, pr = find_pull(ctx, owner, repo, index)
    if pr["merged"] or issue["state"] == "closed":
        raise ApiError(422, "%!s(<nil>)")  # Gitea formats a nil error here
    if not ctx.can_write(row):
        raise ApiError(403, body=False)
    base = present(ctx.store.branch(row["id"], pr["base"]), f"branch {pr['base']}")
    head = head_sha(ctx, row, pr)
    if merge_base(ctx, row, base["sha"], head) == base["sha"]:
        raise ApiError(500, f"HeadBranch of PR {issue['number']} is up to date")
    tree = dict(present(ctx.store.get_commit(row["id"], base["sha"]), f"commit {base['sha']}")["tree"])
    # the head's files win: no conflicts here
    tree.update(present(ctx.store.get_commit(row["id"], head), f"commit {head}")["tree"])
    if ctx.query("style") == "rebase":
        commit = ctx.store.commit(row["id"], [base["sha"]], tree, issue["title"], ctx.caller["id"])
    else:
        commit = ctx.store.commit(row["id"], [head, base["sha"]], tree,
                                  f"Merge branch '{pr['base']}' into {pr['head']}", ctx.caller["id"])
    ctx.store.set_branch(row["id"], pr["head"], commit["sha"])
    ctx.store.update("pulls", {"issue_id": issue["id"]}, head_sha=commit["sha"], merge_base=base["sha"])
    ctx.store.touch(issue["id"])
    return empty(200)


ROUTES = (
    route("GET", "/repos/{owner}/{repo}/pulls/{base}/{head:path}", pull_by_branches,
          summary="`head` is a branch, `owner:branch` or `owner/repo:branch` (Gitea's GetPullRequestByBaseHead)."),
    route("POST", "/repos/{owner}/{repo}/pulls/{index:int}/update", update_pull),
)
