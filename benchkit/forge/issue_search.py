"""Listing and searching issues: a repository's, and across every repository the caller sees."""

from collections.abc import Callable

from starlette.responses import Response

from .context import Ctx
from .issue_store import IssueFilter
from .web import listing, not_found, parse_time, route


def user_id_named(ctx: Ctx, login: str) -> int:
    """The id of the user with this login, else Gitea's 404 naming it."""
    user = ctx.store.user_by_login(login)
    if user is None:
        raise not_found(errors=[f"user does not exist [uid: 0, name: {login}]"])
    return user["id"]


def filter_issues(ctx: Ctx, repo_ids: list[int], *, state: str, kind: str) -> list[dict]:
    """Issues of these repositories matching the request's filters, newest first."""
    if not repo_ids:
        return []
    rows = ctx.store.filter_issues(repo_ids, requested_filter(ctx, state, kind))
    if ctx.query("mentioned_by"):
        user_id_named(ctx, ctx.query("mentioned_by"))  # 404 for an unknown user
        mention = "@" + ctx.query("mentioned_by").lower()
        rows = [r for r in rows
                if mention in " ".join([r["body"], *(c["body"] for c in ctx.store.comments(r["id"]))]).lower()]
    keyword = ctx.query("q").strip()
    if keyword:  # keyword search goes through the (possibly lagging) indexer
        found = ctx.forge.indexer.search(keyword, [r["id"] for r in rows])
        rows = [r for r in rows if r["id"] in found or str(r["number"]) == keyword.lstrip("#")]
    return rows


def requested_filter(ctx: Ctx, state: str, kind: str) -> IssueFilter:
    """The request's filters; a bad time or an unknown user answers as Gitea does."""
    def listed(name: str) -> tuple[str, ...]:
        return tuple(item.strip() for item in ctx.query(name).split(",") if item.strip())

    since, before = parse_time(ctx.query("since")), parse_time(ctx.query("before"))
    poster = user_id_named(ctx, ctx.query("created_by")) if ctx.query("created_by") else None
    assignee = user_id_named(ctx, ctx.query("assigned_by")) if ctx.query("assigned_by") else None
    return IssueFilter(state=state, kind=kind, labels=listed("labels"), since=since, before=before,
                       poster_id=poster, assignee_id=assignee, milestones=listed("milestones"))


def render_issue(ctx: Ctx, repos: dict) -> Callable[[dict], dict]:
    """A renderer of issues from any of these repositories (id -> repository)."""
    return lambda row: ctx.render.issue(row, repos[row["repo_id"]])


def list_issues(ctx: Ctx, owner: str, repo: str) -> Response:
    """The repository's issues (and pull requests) the request's filters let through."""
    row = ctx.repo(owner, repo)
    rows = filter_issues(ctx, [row["id"]], state=ctx.query("state", "open"), kind=ctx.query("type"))
    return listing(ctx, rows, render_issue(ctx, {row["id"]: row}))


def search_issues(ctx: Ctx) -> Response:
    """Issues across every repository the caller may see, newest first, 20 a page."""
    repos = {r["id"]: r for r in ctx.store.repos()
             if not r["private"] or ctx.can_write(r)}
    if ctx.query("owner"):
        owner = ctx.store.user_by_login(ctx.query("owner"))
        repos = {k: r for k, r in repos.items() if owner and r["owner_id"] == owner["id"]}
    rows = filter_issues(ctx, list(repos), state=ctx.query("state", "open"), kind=ctx.query("type"))
    me = ctx.user["id"] if ctx.user else None
    flag = lambda name: ctx.query(name).lower() in ("1", "true")  # noqa: E731
    if me and flag("created"):
        rows = [r for r in rows if r["poster_id"] == me]
    if me and flag("assigned"):
        rows = [r for r in rows if any(u["id"] == me for u in ctx.store.assignees(r["id"]))]
    if me and flag("mentioned"):
        rows = [r for r in rows if f"@{ctx.caller['login']}".lower() in r["body"].lower()]
    if me and flag("reviewed"):
        rows = [r for r in rows if ctx.store.reviewed_by(r["id"], me)]
    if flag("review_requested"):
        rows = []
    return listing(ctx, rows, render_issue(ctx, repos), default=20)


ROUTES = (
    route("GET", "/repos/{owner}/{repo}/issues", list_issues),
    route("GET", "/repos/issues/search", search_issues),
)
