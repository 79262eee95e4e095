"""An issue's timeline: its comments and events together."""

from starlette.responses import Response

from .comments import comment_times
from .context import Ctx
from .web import listing, route


def timeline(ctx: Ctx, owner: str, repo: str, index: int) -> Response:
    """An issue's comments and events, oldest first."""
    row = ctx.repo(owner, repo)
    issue = ctx.issue(row, index)
    rows = comment_times(ctx, ctx.store.timeline(issue["id"]))
    return listing(ctx, rows, lambda c: ctx.render.timeline_comment(c, issue, row))


ROUTES = (
    route("GET", "/repos/{owner}/{repo}/issues/{index:int}/timeline", timeline),
)
