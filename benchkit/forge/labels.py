"""Routes for a repository's labels."""

import re

from starlette.responses import Response

from .context import Ctx
from .web import F, empty, invalid, listing, respond, route

COLOR = re.compile(r"^#?([0-9a-fA-F]{6}|[0-9a-fA-F]{3})$")


def normalise_color(value: str) -> str:
    """A colour as Gitea keeps it: six lower-case hex digits, no '#'; 422 for anything else."""
    match = COLOR.match(value.strip())
    if not match:
        raise invalid(f"invalid color: {value if value.startswith('#') else '#' + value}")
    digits = match.group(1).lower()
    return "".join(c * 2 for c in digits) if len(digits) == 3 else digits


def find_label(ctx: Ctx, repo: dict, key: str, *, by_name: bool = False) -> dict:
    """The repository's label by id (or, `by_name`, by name), else 404."""
    return ctx.find("labels", repo, key, "name" if by_name else None)


def list_labels(ctx: Ctx, owner: str, repo: str) -> Response:
    """The repository's labels, by name."""
    row = ctx.repo(owner, repo)
    labels = ctx.store.labels(row["id"])
    return listing(ctx, labels, lambda label: ctx.render.label(label, row), link=False)


LABEL = [F("name", required=True), F("color", required=True), F("description"), F("exclusive", bool),
         F("is_archived", bool)]


def create_label(ctx: Ctx, owner: str, repo: str) -> Response:
    """Create a label."""
    row = ctx.repo(owner, repo, write=True)
    body = ctx.body
    label_id = ctx.store.insert("labels", repo_id=row["id"], name=body["name"], color=normalise_color(body["color"]),
                                description=body.get("description") or "", exclusive=int(bool(body.get("exclusive"))),
                                is_archived=int(bool(body.get("is_archived"))))
    label = ctx.store.row("labels", label_id)
    return respond(ctx.render.label(label, row), 201)


def get_label(ctx: Ctx, owner: str, repo: str, key: str) -> Response:
    """One label, by id or name."""
    row = ctx.repo(owner, repo)
    return respond(ctx.render.label(find_label(ctx, row, key, by_name=True), row))


def edit_label(ctx: Ctx, owner: str, repo: str, key: str) -> Response:
    """Edit a label; leaving is_archived out un-archives it, as on Gitea."""
    row = ctx.repo(owner, repo, write=True)
    label = find_label(ctx, row, key)
    changes = {k: v for k, v in ctx.body.items() if v is not None and k != "is_archived"}
    if "color" in changes:
        changes["color"] = normalise_color(changes["color"])
    if "exclusive" in changes:
        changes["exclusive"] = int(changes["exclusive"])
    # Gitea's edit form treats a missing is_archived as false: leaving it out un-archives.
    changes["is_archived"] = int(bool(ctx.body.get("is_archived")))
    ctx.store.update("labels", {"id": label["id"]}, **changes)
    return respond(ctx.render.label(ctx.store.row("labels", label["id"]), row))


def delete_label(ctx: Ctx, owner: str, repo: str, key: str) -> Response:
    """Delete a label, off every issue it was on."""
    row = ctx.repo(owner, repo, write=True)
    label = find_label(ctx, row, key)
    ctx.store.delete_label(label["id"])
    return empty()


ROUTES = (
    route("GET", "/repos/{owner}/{repo}/labels", list_labels),
    route("POST", "/repos/{owner}/{repo}/labels", create_label, body=LABEL, struct="CreateLabelOption"),
    route("GET", "/repos/{owner}/{repo}/labels/{key}", get_label),
    route("PATCH", "/repos/{owner}/{repo}/labels/{key}", edit_label,
          body=[F(f.name, f.kind) for f in LABEL], struct="EditLabelOption"),
    route("DELETE", "/repos/{owner}/{repo}/labels/{key}", delete_label),
)
