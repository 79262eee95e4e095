"""Routes for an issue's plain comments."""

from starlette.responses import Response

from .context import Ctx
from .database import now
from .web import ApiError, F, empty, listing, not_found, parse_time, respond, route


def comment_times(ctx: Ctx, rows: list) -> list:
    """The rows the request's `since` and `before` let through (by update time)."""
    since, before = parse_time(ctx.query("since")), parse_time(ctx.query("before"))
    return [c for c in rows if (since is None or c["updated"] >= since) and (before is None or c["updated"] <= before)]


def list_comments(ctx: Ctx, owner: str, repo: str, index: int) -> Response:
    """An issue's plain comments, oldest first, all of them (the route takes no page)."""
    row = ctx.repo(owner, repo)
    issue = ctx.issue(row, index)
    rows = comment_times(ctx, ctx.store.comments(issue["id"]))
    return respond([ctx.render.comment(c, issue, row) for c in rows], 200, {"X-Total-Count": str(len(rows))})


def list_repo_comments(ctx: Ctx, owner: str, repo: str) -> Response:
    """The plain comments on every issue of the repository, one page of them."""
    row = ctx.repo(owner, repo)
    rows = comment_times(ctx, ctx.store.repo_comments(row["id"]))
    return listing(ctx, rows, lambda c: ctx.render.comment(c, ctx.store.row("issues", c["issue_id"]), row))


COMMENT = [F("body", required=True)]


def create_comment(ctx: Ctx, owner: str, repo: str, index: int) -> Response:
    """Comment on an issue; a locked one takes comments from writers only."""
    row = ctx.repo(owner, repo)
    issue = ctx.issue(row, index)
    if issue["is_locked"] and not ctx.can_write(row):
        raise ApiError(403, "issue is locked")
    stamp = now()
    cid = ctx.store.insert("comments", issue_id=issue["id"], poster_id=ctx.caller["id"], body=ctx.body["body"],
                           created=stamp, updated=stamp)
    ctx.store.touch(issue["id"])
    ctx.reindex(issue["id"])
    comment = ctx.store.row("comments", cid)
    return respond(ctx.render.comment(comment, issue, row), 201)


def find_comment(ctx: Ctx, row: dict, comment_id: int) -> tuple[dict, dict]:
    """(comment, its issue) in this repository, else Gitea's 404."""
    comment = ctx.store.get("comments", comment_id)
    issue = ctx.store.issue_by_id(comment["issue_id"]) if comment else None
    if comment is None or issue is None or issue["repo_id"] != row["id"]:
        raise not_found(errors=[f"comment does not exist [id: {comment_id}, issue_id: 0]"])
    if comment["type"] != "comment":  # a timeline event: Gitea answers 204, no body
        raise ApiError(204, body=False)
    return comment, issue


def may_change(ctx: Ctx, row: dict, comment: dict) -> None:
    """A comment changes only by its poster or a writer of the repository (403 otherwise)."""
    if not (ctx.can_write(row) or comment["poster_id"] == ctx.caller["id"]):
        raise ApiError(403, body=False)


def get_comment(ctx: Ctx, owner: str, repo: str, comment_id: int) -> Response:
    """One comment of the repository, by id."""
    row = ctx.repo(owner, repo)
    comment, issue = find_comment(ctx, row, comment_id)
    return respond(ctx.render.comment(comment, issue, row))


def _edit_comment(ctx: Ctx, owner: str, repo: str, comment_id: int) -> Response:
    row = ctx.repo(owner, repo)
    comment, issue = find_comment(ctx, row, comment_id)
    may_change(ctx, row, comment)
    ctx.store.update("comments", {"id": comment_id}, body=ctx.body["body"], updated=now())
    ctx.reindex(issue["id"])
    return respond(ctx.render.comment(ctx.store.row("comments", comment_id), issue, row))


def _delete_comment(ctx: Ctx, owner: str, repo: str, comment_id: int) -> Response:
    row = ctx.repo(owner, repo)
    comment, issue = find_comment(ctx, row, comment_id)
    may_change(ctx, row, comment)
    ctx.store.delete_comment(comment_id)
    ctx.reindex(issue["id"])
    return empty()


ROUTES = (
    route("GET", "/repos/{owner}/{repo}/issues/{index:int}/comments", list_comments),
    route("GET", "/repos/{owner}/{repo}/issues/comments", list_repo_comments),
    route("POST", "/repos/{owner}/{repo}/issues/{index:int}/comments", create_comment, body=COMMENT,
          struct="CreateIssueCommentOption"),
    route("GET", "/repos/{owner}/{repo}/issues/comments/{comment_id:int}", get_comment),
    route("PATCH", "/repos/{owner}/{repo}/issues/comments/{comment_id:int}", _edit_comment, body=COMMENT,
          struct="EditIssueCommentOption"),
    route("DELETE", "/repos/{owner}/{repo}/issues/comments/{comment_id:int}", _delete_comment),
    # The deprecated per-issue spellings, which some clients still use.
    route("PATCH", "/repos/{owner}/{repo}/issues/{index:int}/comments/{comment_id:int}",
          lambda ctx, owner, repo, index, comment_id: _edit_comment(ctx, owner, repo, comment_id),
          body=COMMENT, struct="EditIssueCommentOption"),
    route("DELETE", "/repos/{owner}/{repo}/issues/{index:int}/comments/{comment_id:int}",
          lambda ctx, owner, repo, index, comment_id: _delete_comment(ctx, owner, repo, comment_id)),
)
