"""Routes for the labels on an issue."""

from starlette.responses import Response

from .context import Ctx
from .web import ApiError, F, empty, invalid, respond, route


def labels_from_body(ctx: Ctx, repo: dict) -> list[dict]:
    """`labels` as all ids or (since Gitea 1.22) all names; unknown ones drop out."""
    values = ctx.body.get("labels") or []
    ids = [v for v in values if isinstance(v, int) and not isinstance(v, bool)]
    names = [v for v in values if isinstance(v, str)]
    if "form" in ctx.request.headers.get("content-type", ""):  # form values are all strings
        ids, names = [int(v) for v in names if v.isdigit()], [v for v in names if not v.isdigit()]
    if ids and names:
        raise ApiError(400, "labels should be an array of strings or integers")
    if names:
        return ctx.store.labels_named(repo["id"], names)
    return ctx.store.labels_by_ids(repo["id"], ids)


def labelled(ctx: Ctx, owner: str, repo: str, index: int, *, replace: bool) -> Response:
    """Add the body's labels to the issue (or, with `replace`, make them its only ones); the
    issue's labels after."""
    row = ctx.repo(owner, repo)
    issue = ctx.issue(row, index)
    labels = labels_from_body(ctx, row)
    if not ctx.can_write(row):
        raise ApiError(403, body=False)
    keep = {label["id"] for label in labels}
    if replace:
        for label in ctx.store.issue_labels(issue["id"]):
            if label["id"] not in keep:
                ctx.store.remove_label(issue["id"], label["id"], ctx.caller["id"])
    ctx.store.add_labels(issue["id"], labels, ctx.caller["id"])
    return respond([ctx.render.label(label, row) for label in ctx.store.issue_labels(issue["id"])])


ISSUE_LABELS = [F("labels", "any-list")]


def get_issue_labels(ctx: Ctx, owner: str, repo: str, index: int) -> Response:
    """The labels on an issue, by name."""
    row = ctx.repo(owner, repo)
    issue = ctx.issue(row, index)
    return respond([ctx.render.label(label, row) for label in ctx.store.issue_labels(issue["id"])])


def add_issue_labels(ctx: Ctx, owner: str, repo: str, index: int) -> Response:
    """Add labels to an issue; its labels after."""
    return labelled(ctx, owner, repo, index, replace=False)


def replace_issue_labels(ctx: Ctx, owner: str, repo: str, index: int) -> Response:
    """Make the body's labels the issue's only ones."""
    return labelled(ctx, owner, repo, index, replace=True)


def remove_issue_label(ctx: Ctx, owner: str, repo: str, index: int, label_id: int) -> Response:
    """Take one label off an issue; 422 for a label the repository lacks."""
    row = ctx.repo(owner, repo)
    issue = ctx.issue(row, index)
    if not ctx.can_write(row):
        raise ApiError(403, body=False)
    if not ctx.store.in_repo("labels", row["id"], "id", label_id):
        raise invalid(f"label does not exist [label_id: {label_id}]")
    ctx.store.remove_label(issue["id"], label_id, ctx.caller["id"])
    return empty()


def clear_issue_labels(ctx: Ctx, owner: str, repo: str, index: int) -> Response:
    """Take every label off an issue."""
    row = ctx.repo(owner, repo)
    issue = ctx.issue(row, index)
    if not ctx.can_write(row):
        raise ApiError(403, body=False)
    ctx.store.clear_labels(issue["id"], ctx.caller["id"])
    return empty()


ROUTES = (
    route("GET", "/repos/{owner}/{repo}/issues/{index:int}/labels", get_issue_labels),
    route("POST", "/repos/{owner}/{repo}/issues/{index:int}/labels", add_issue_labels, body=ISSUE_LABELS,
          struct="IssueLabelsOption"),
    route("PUT", "/repos/{owner}/{repo}/issues/{index:int}/labels", replace_issue_labels, body=ISSUE_LABELS,
          struct="IssueLabelsOption"),
    route("DELETE", "/repos/{owner}/{repo}/issues/{index:int}/labels/{label_id:int}", remove_issue_label),
    route("DELETE", "/repos/{owner}/{repo}/issues/{index:int}/labels", clear_issue_labels),
)
