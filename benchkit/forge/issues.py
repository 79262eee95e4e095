"""Routes for one issue: create, get and edit it (a pull request's issue side too)."""

from starlette.responses import Response

from .context import Ctx
from .database import now
from .web import ApiError, F, invalid, not_found, parse_deadline, respond, route


def resolve_assignees(ctx: Ctx, repo: dict, body: dict) -> list[int] | None:
    """User ids for `assignees` (and the older single `assignee`), or None if neither was sent."""
    if body.get("assignees") is None and body.get("assignee") is None:
        return None
    # As Gitea's MakeIDsFromAPIAssigneesToAdd: the single one unless listed, then the
    # list unless its first name is empty (the Go SDK, so tea, sends `[""]` for none).
    one, many = body.get("assignee") or "", list(body.get("assignees") or [])
    names = [one] if one and one not in many else []
    if many and many[0] != "":
        names += many
    ids = []
    for name in names:
        user = ctx.store.user_by_login(name)
        if user is None:
            raise invalid(f"Assignee does not exist: [name: user does not exist [uid: 0, name: {name}]]")
        if not (user["is_admin"] or user["id"] == repo["owner_id"]):
            raise invalid(f"user [{name}] cannot be assigned: no write access to the repository")
        ids.append(user["id"])
    return ids


def milestone_id(ctx: Ctx, repo: dict, value: int | None) -> int:
    """The milestone a body names, checked to be the repository's (404 otherwise); 0 for none."""
    if not value:
        return 0
    if not ctx.store.in_repo("milestones", repo["id"], "id", value):
        raise not_found()
    return value


CREATE_ISSUE = [F("title", required=True), F("body"), F("assignee"), F("assignees", "strs"),
                F("milestone", int), F("labels", "ints"), F("closed", bool), F("due_date", go="Deadline"), F("ref")]


def new_issue(ctx: Ctx, repo: dict, *, is_pull: bool) -> dict:
    """Create the issue row behind an issue or a pull request, from the bound body."""
    body, store, stamp = ctx.body, ctx.store, now()
    writer = ctx.can_write(repo)
    closed = bool(body.get("closed"))
    issue_id = store.insert("issues", repo_id=repo["id"], number=store.next_number(repo["id"]),
                            poster_id=ctx.caller["id"], title=body["title"].strip(), body=body.get("body") or "",
                            is_pull=int(is_pull), ref=body.get("ref") or "", created=stamp, updated=stamp,
                            state="closed" if closed else "open", closed_at=stamp if closed else None,
                            due_date=parse_deadline(body.get("due_date")),
                            milestone_id=milestone_id(ctx, repo, body.get("milestone")) if writer else 0)
    if writer:  # non-writers have labels, milestone and assignees silently dropped
        milestone = store.row("issues", issue_id)["milestone_id"]
        if milestone:  # Gitea notes the milestone before the labels
            store.event(issue_id, ctx.caller["id"], "milestone", milestone_id=milestone,
                        old_milestone_id=0)
        store.add_labels(issue_id, store.labels_by_ids(repo["id"], body.get("labels") or []), ctx.caller["id"])
        assignees = resolve_assignees(ctx, repo, body)
        if assignees:
            store.set_assignees(issue_id, assignees, ctx.caller["id"])
    if closed:
        store.event(issue_id, ctx.caller["id"], "close")
    ctx.reindex(issue_id)
    return store.row("issues", issue_id)


def create_issue(ctx: Ctx, owner: str, repo: str) -> Response:
    """Open an issue."""
    row = ctx.repo(owner, repo)
    return respond(ctx.render.issue(new_issue(ctx, row, is_pull=False), row), 201)


def get_issue(ctx: Ctx, owner: str, repo: str, index: int) -> Response:
    """One issue (or pull request, as an issue)."""
    row = ctx.repo(owner, repo)
    return respond(ctx.render.issue(ctx.issue(row, index), row))


EDIT_ISSUE = [F("title"), F("body"), F("state"), F("assignee"), F("assignees", "strs"), F("milestone", int),
              F("due_date", go="Deadline"), F("unset_due_date", bool, go="RemoveDeadline"), F("ref"),
              F("content_version", int)]


def apply_edit(ctx: Ctx, repo: dict, issue: dict) -> dict:
    """The edits an issue PATCH and a pull request PATCH share."""
    body, store = ctx.body, ctx.store
    writer = ctx.can_write(repo)
    if not (writer or issue["poster_id"] == ctx.caller["id"]):
        raise ApiError(403, body=False)
    changes, actor = {}, ctx.caller["id"]
    for field in ("title", "body", "ref"):
        # An empty title is "not changed" (Gitea: `len(form.Title) > 0`): the Go SDK,
        # and so tea, sends `"title": ""` with every edit, close and reopen.
        if body.get(field) is not None and (field != "title" or body[field]):
            changes[field] = body[field].strip() if field == "title" else body[field]
    if changes.get("title", issue["title"]) != issue["title"]:
        store.event(issue["id"], actor, "change_title", old_title=issue["title"], new_title=changes["title"])
    if "body" in changes and changes["body"] != issue["body"]:
        changes["content_version"] = issue["content_version"] + 1
    if body.get("due_date"):
        changes["due_date"] = parse_deadline(body["due_date"])
    if body.get("unset_due_date"):
        changes["due_date"] = None
    if writer and body.get("milestone") is not None:
        changes["milestone_id"] = milestone_id(ctx, repo, body["milestone"])
        if changes["milestone_id"] != issue["milestone_id"]:
            store.event(issue["id"], actor, "milestone", milestone_id=changes["milestone_id"],
                        old_milestone_id=issue["milestone_id"])
    state = body.get("state")
    if state is not None:
        if state not in ("open", "closed"):
            raise ApiError(412, f"unknown state: {state}")
        pull = store.pull(issue["id"]) if issue["is_pull"] else None
        if pull and pull["merged"] and state != issue["state"]:
            raise ApiError(412, "cannot change state of this pull request, it was already merged")
        if state != issue["state"]:
            changes["state"] = state
            changes["closed_at"] = now() if state == "closed" else None
            store.event(issue["id"], actor, "close" if state == "closed" else "reopen")
    if writer:
        assignees = resolve_assignees(ctx, repo, body)
        if assignees is not None:
            store.set_assignees(issue["id"], assignees, actor)
    store.touch(issue["id"], **changes)
    ctx.reindex(issue["id"])
    return store.row("issues", issue["id"])


def edit_issue(ctx: Ctx, owner: str, repo: str, index: int) -> Response:
    """Edit an issue; Gitea answers 201."""
    row = ctx.repo(owner, repo)
    issue = apply_edit(ctx, row, ctx.issue(row, index))
    return respond(ctx.render.issue(issue, row), 201)


ROUTES = (
    route("POST", "/repos/{owner}/{repo}/issues", create_issue, body=CREATE_ISSUE,
          struct="CreateIssueOption"),
    route("GET", "/repos/{owner}/{repo}/issues/{index:int}", get_issue),
    route("PATCH", "/repos/{owner}/{repo}/issues/{index:int}", edit_issue, body=EDIT_ISSUE,
          struct="EditIssueOption"),
)
