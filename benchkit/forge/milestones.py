"""Routes for a repository's milestones."""

from starlette.responses import Response

from .context import Ctx
from .database import now
from .web import F, empty, listing, parse_deadline, respond, route


def find_milestone(ctx: Ctx, repo: dict, key: str) -> dict:
    """The repository's milestone by id or title, else 404."""
    return ctx.find("milestones", repo, key, "title")


def list_milestones(ctx: Ctx, owner: str, repo: str) -> Response:
    """The repository's milestones in a state (open by default), optionally by name."""
    row = ctx.repo(owner, repo)
    state = ctx.query("state", "open")
    rows = ctx.store.milestones(row["id"])
    rows = [m for m in rows if state == "all" or m["state"] == state]
    if ctx.query("name"):
        rows = [m for m in rows if ctx.query("name").lower() in m["title"].lower()]
    return listing(ctx, rows, ctx.render.milestone)


MILESTONE = [F("title", required=True), F("description"), F("due_on", go="Deadline"), F("state")]


def create_milestone(ctx: Ctx, owner: str, repo: str) -> Response:
    """Create a milestone."""
    row = ctx.repo(owner, repo, write=True)
    body, stamp = ctx.body, now()
    state = "closed" if body.get("state") == "closed" else "open"
    mid = ctx.store.insert("milestones", repo_id=row["id"], title=body["title"],
                           description=body.get("description") or "", state=state,
                           due_on=parse_deadline(body.get("due_on")), created=stamp, updated=stamp,
                           closed_at=stamp if state == "closed" else None)
    return respond(ctx.render.milestone(ctx.store.row("milestones", mid)), 201)


def get_milestone(ctx: Ctx, owner: str, repo: str, key: str) -> Response:
    """One milestone, by id or title."""
    return respond(ctx.render.milestone(find_milestone(ctx, ctx.repo(owner, repo), key)))


def edit_milestone(ctx: Ctx, owner: str, repo: str, key: str) -> Response:
    """Edit a milestone; closing it stamps its closing time."""
    row = ctx.repo(owner, repo, write=True)
    milestone = find_milestone(ctx, row, key)
    changes = {k: v for k, v in ctx.body.items() if v is not None}
    if "due_on" in changes:
        changes["due_on"] = parse_deadline(changes["due_on"])
    if "state" in changes:
        changes["state"] = "closed" if changes["state"] == "closed" else "open"
        changes["closed_at"] = now() if changes["state"] == "closed" else None
    ctx.store.update("milestones", {"id": milestone["id"]}, updated=now(), **changes)
    return respond(ctx.render.milestone(ctx.store.row("milestones", milestone["id"])))


def delete_milestone(ctx: Ctx, owner: str, repo: str, key: str) -> Response:
    """Delete a milestone; its issues keep no milestone."""
    milestone = find_milestone(ctx, ctx.repo(owner, repo, write=True), key)
    ctx.store.delete_milestone(milestone["id"])
    return empty()


ROUTES = (
    route("GET", "/repos/{owner}/{repo}/milestones", list_milestones),
    route("POST", "/repos/{owner}/{repo}/milestones", create_milestone, body=MILESTONE,
          struct="CreateMilestoneOption"),
    route("GET", "/repos/{owner}/{repo}/milestones/{key}", get_milestone),
    route("PATCH", "/repos/{owner}/{repo}/milestones/{key}", edit_milestone,
          body=[F(f.name, go=f.go) for f in MILESTONE], struct="EditMilestoneOption"),
    route("DELETE", "/repos/{owner}/{repo}/milestones/{key}", delete_milestone),
)
