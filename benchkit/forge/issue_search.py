"""Listing and searching issues: a repository's, and across every repository the caller sees."""

from collections.abc import Callable

from starlette.responses import Response

from .context import Ctx
from .web import listing, not_found, parse_time, route


def user_id_named(ctx: Ctx, login: str) -> int:
    user = ctx.store.user_by_login(login)
    if user is None:
        raise not_found(errors=[f"user does not exist [uid: 0, name: {login}]"])
    return user["id"]


def filter_issues(ctx: Ctx, repo_ids: list[int], *, state: str, kind: str) -> list[dict]:
    """Issues of these repositories matching the request's filters, newest first."""
    if not repo_ids:
        return []
    marks = ",".join("?" * len(repo_ids))
    sql = f"SELECT * FROM issues WHERE repo_id IN ({marks})"
    args: list = list(repo_ids)
    if state in ("open", "closed"):
        sql += " AND state = ?"
        args.append(state)
    if kind in ("issues", "pulls"):
        sql += " AND is_pull = ?"
        args.append(int(kind == "pulls"))
    names = [n.strip() for n in ctx.query("labels").split(",") if n.strip()]
    known = ctx.store.all(f"SELECT DISTINCT name FROM labels WHERE repo_id IN ({marks}) AND name IN "
                          f"({','.join('?' * len(names))})", *repo_ids, *names) if names else []
    for label in known:  # every named label must be on the issue; unknown names drop out
        sql += " AND id IN (SELECT issue_id FROM issue_labels JOIN labels ON labels.id = label_id WHERE name = ?)"
        args.append(label["name"])
    since, before = parse_time(ctx.query("since")), parse_time(ctx.query("before"))
    if since is not None:
        sql += " AND updated >= ?"
        args.append(since)
    if before is not None:
        sql += " AND updated <= ?"
        args.append(before)
    if ctx.query("created_by"):
        sql += " AND poster_id = ?"
        args.append(user_id_named(ctx, ctx.query("created_by")))
    if ctx.query("assigned_by"):
        sql += " AND id IN (SELECT issue_id FROM issue_assignees WHERE user_id = ?)"
        args.append(user_id_named(ctx, ctx.query("assigned_by")))
    if ctx.query("milestones"):
        titles = [m.strip() for m in ctx.query("milestones").split(",") if m.strip()]
        ids = [m["id"] for m in ctx.store.all(f"SELECT * FROM milestones WHERE repo_id IN ({marks})", *repo_ids)
               if m["title"] in titles or str(m["id"]) in titles]
        if ids:  # unknown milestones are discarded: if none is known, the filter vanishes
            sql += f" AND milestone_id IN ({','.join('?' * len(ids))})"
            args.extend(ids)
    rows = ctx.store.all(sql + " ORDER BY created DESC, id DESC", *args)
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


def render_issue(ctx: Ctx, repos: dict) -> Callable[[dict], dict]:
    return lambda row: ctx.render.issue(row, repos[row["repo_id"]])


def list_issues(ctx: Ctx, owner: str, repo: str) -> Response:
    row = ctx.repo(owner, repo)
    rows = filter_issues(ctx, [row["id"]], state=ctx.query("state", "open"), kind=ctx.query("type"))
    return listing(ctx, rows, render_issue(ctx, {row["id"]: row}))


def search_issues(ctx: Ctx) -> Response:
    repos = {r["id"]: r for r in ctx.store.all("SELECT * FROM repos ORDER BY id")
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
        rows = [r for r in rows if ctx.store.one("SELECT 1 FROM reviews WHERE issue_id = ? AND reviewer_id = ?",
                                                 r["id"], me)]
    if flag("review_requested"):
        rows = []
    return listing(ctx, rows, render_issue(ctx, repos), default=20)


ROUTES = (
    route("GET", "/repos/{owner}/{repo}/issues", list_issues),
    route("GET", "/repos/issues/search", search_issues),
)
