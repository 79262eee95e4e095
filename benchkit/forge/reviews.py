"""Routes for a pull request's reviews: create, submit, list, delete, dismiss, and the
code comments a review carries."""


from starlette.responses import Response

from .context import Ctx
from .database import now
from .diffs import unified_diff
from .hunks import cut_around_line, unchanged_line_patch
from .pulls import find_pull, head_sha, pull_changes
from .web import INT64_MAX, ApiError, F, empty, invalid, listing, not_found, respond, route

REVIEW_EVENTS = ("APPROVED", "REQUEST_CHANGES", "COMMENT")


def find_review(ctx: Ctx, issue: dict, review_id: int) -> dict:
    """The pull request's review by id, else 404; another user's pending review is hidden."""
    review = ctx.store.review(issue["id"], review_id)
    if review is None or (review["state"] == "PENDING" and review["reviewer_id"] != (ctx.user or {}).get("id")):
        raise not_found("GetReviewByID", [f"review does not exist [id: {review_id}]"])
    return review


def list_reviews(ctx: Ctx, owner: str, repo: str, index: int) -> Response:
    """The pull request's reviews, but other users' pending ones."""
    row, issue, _ = find_pull(ctx, owner, repo, index)
    me = ctx.user["id"] if ctx.user else None
    rows = [r for r in ctx.store.reviews(issue["id"])
            if r["state"] != "PENDING" or r["reviewer_id"] == me]
    return listing(ctx, rows, lambda r: ctx.render.review(r, issue, row), link=False)


def review_state(ctx: Ctx, issue: dict, event: str, body: str, has_comments: bool) -> str:
    """Gitea's rules for a review event: exact names, self-review refused, bodies required."""
    sent, event = event, event if event in REVIEW_EVENTS else "PENDING"
    if event in ("APPROVED", "REQUEST_CHANGES"):
        if issue["poster_id"] == ctx.caller["id"] and not ctx.forge.self_review:
            verb = "approve" if event == "APPROVED" else "reject"
            raise invalid(f"{verb} your own pull is not allowed")
        if issue["state"] == "closed":
            raise invalid("cannot approve or reject a closed or merged pull request")
    if event == "COMMENT" and not body and not has_comments:
        raise invalid(f"review event {sent} requires a body or a comment")
    if event in ("REQUEST_CHANGES", "PENDING") and not body:
        raise invalid(f"review event {sent} requires a body")
    return event


def add_review_comments(ctx: Ctx, row: dict, pr: dict, review_id: int, issue: dict, commit_id: str,
                        comments: list) -> None:
    """Store the review's code comments, each with the diff hunk around its line."""
    stamp = now()
    for item in comments:
        if not isinstance(item, dict) or not item.get("body"):
            raise invalid("[Comments]: a review comment needs a body")
        new_position, old_position = position(item, "new_position"), position(item, "old_position")
        path = str(item.get("path") or "")
        line = -old_position if old_position > 0 else new_position
        ctx.store.insert("review_comments", review_id=review_id, issue_id=issue["id"], poster_id=ctx.caller["id"],
                         path=path, body=item["body"], new_position=new_position, old_position=old_position,
                         commit_id=commit_id, created=stamp, updated=stamp,
                         patch=comment_patch(ctx, row, pr, path, line, commit_id))


def position(item: dict, name: str) -> int:
    """A comment's line position from the body, refused as Go refuses a non-int64."""
    value = item.get(name) or 0
    if not isinstance(value, int) or isinstance(value, bool) or abs(value) > INT64_MAX:
        raise invalid(f"[]: json: cannot unmarshal number into Go struct field "
                      f"CreatePullReviewComment.comments.{name} of type int64")
    return value


def comment_patch(ctx: Ctx, row: dict, pr: dict, path: str, line: int, commit_id: str) -> str:
    """The diff a code comment keeps: its file's diff cut around the line, else the
    unchanged lines above it (as Gitea's CreateCodeComment makes it)."""
    changes = [c for c in pull_changes(ctx, row, pr) if c["filename"] == path]
    patch = cut_around_line(unified_diff(changes), abs(line), line < 0) if changes else ""
    if not patch and line:
        commit = ctx.store.get_commit(row["id"], commit_id) or ctx.store.get_commit(row["id"], head_sha(ctx, row, pr))
        patch = unchanged_line_patch((commit or {}).get("tree", {}).get(path), path, line)
    return patch


def submitted(ctx: Ctx, row: dict, issue: dict, review_id: int, state: str, body: str) -> None:
    """A review left pending stays private; a submitted one joins the timeline."""
    if state == "PENDING":
        return
    ctx.store.event(issue["id"], ctx.caller["id"], "review", body, review_id=review_id)
    # Only the latest approve or reject from a writer counts as official.
    if state in ("APPROVED", "REQUEST_CHANGES") and ctx.can_write(row):
        ctx.store.make_unofficial(issue["id"], ctx.caller["id"])
        ctx.store.update("reviews", {"id": review_id}, official=1)


REVIEW = [F("event"), F("body"), F("commit_id", go="CommitID"), F("comments", "any-list")]


def create_review(ctx: Ctx, owner: str, repo: str, index: int) -> Response:
    """Review a pull request (or add to the caller's pending review)."""
    row, issue, pr = find_pull(ctx, owner, repo, index)
    body = ctx.body
    comments = body.get("comments") or []
    state = review_state(ctx, issue, (body.get("event") or "").strip(), (body.get("body") or "").strip(),
                         bool(comments))
    commit_id = body.get("commit_id") or head_sha(ctx, row, pr)
    stamp = now()
    pending = ctx.store.pending_review(issue["id"], ctx.caller["id"])
    if pending:  # Gitea folds a new review into the reviewer's pending one
        review_id = pending["id"]
        ctx.store.update("reviews", {"id": review_id}, state=state, body=body.get("body") or "",
                         commit_id=commit_id, updated=stamp)
    else:
        review_id = ctx.store.insert("reviews", issue_id=issue["id"], reviewer_id=ctx.caller["id"], state=state,
                                     body=body.get("body") or "", commit_id=commit_id, created=stamp, updated=stamp)
    add_review_comments(ctx, row, pr, review_id, issue, commit_id, comments)
    submitted(ctx, row, issue, review_id, state, body.get("body") or "")
    ctx.store.touch(issue["id"])
    review = ctx.store.row("reviews", review_id)
    return respond(ctx.render.review(review, issue, row))


def get_review(ctx: Ctx, owner: str, repo: str, index: int, review_id: int) -> Response:
    """One review."""
    row, issue, _ = find_pull(ctx, owner, repo, index)
    return respond(ctx.render.review(find_review(ctx, issue, review_id), issue, row))


def submit_review(ctx: Ctx, owner: str, repo: str, index: int, review_id: int) -> Response:
    """Submit a pending review with an event."""
    row, issue, _ = find_pull(ctx, owner, repo, index)
    review = find_review(ctx, issue, review_id)
    if review["state"] != "PENDING":
        raise invalid("only a pending review can be submitted")
    has_comments = bool(ctx.store.review_comment_count(review_id))
    event = (ctx.body.get("event") or "").strip()
    state = review_state(ctx, issue, event, (ctx.body.get("body") or "").strip(), has_comments)
    if state == "PENDING":
        raise invalid("review event PENDING is not allowed when submitting a review")
    ctx.store.update("reviews", {"id": review_id}, state=state, body=ctx.body.get("body") or review["body"],
                     updated=now())
    submitted(ctx, row, issue, review_id, state, ctx.body.get("body") or review["body"])
    return respond(ctx.render.review(ctx.store.row("reviews", review_id), issue, row))


def delete_review(ctx: Ctx, owner: str, repo: str, index: int, review_id: int) -> Response:
    """Delete a review; its reviewer's or a site admin's right."""
    _, issue, _ = find_pull(ctx, owner, repo, index)
    review = find_review(ctx, issue, review_id)
    if review["reviewer_id"] != ctx.caller["id"] and not ctx.caller["is_admin"]:
        raise ApiError(403, "Must be repo admin")
    ctx.store.delete_review(issue["id"], review_id)
    return empty()


def review_comments(ctx: Ctx, owner: str, repo: str, index: int, review_id: int) -> Response:
    """A review's code comments."""
    row, issue, _ = find_pull(ctx, owner, repo, index)
    find_review(ctx, issue, review_id)
    rows = ctx.store.review_comments(review_id)
    return respond([ctx.render.review_comment(c, issue, row) for c in rows])


def _dismissal(ctx: Ctx, owner: str, repo: str, index: int, review_id: int, dismissed: bool) -> Response:
    row, issue, _ = find_pull(ctx, owner, repo, index, write=True)
    review = find_review(ctx, issue, review_id)
    if review["state"] not in ("APPROVED", "REQUEST_CHANGES"):
        raise ApiError(403, "not allow to dismiss a review which is not approve or reject")
    ctx.store.update("reviews", {"id": review_id}, dismissed=int(dismissed), updated=now())
    return respond(ctx.render.review(ctx.store.row("reviews", review_id), issue, row))


def dismiss_review(ctx: Ctx, owner: str, repo: str, index: int, review_id: int) -> Response:
    """Dismiss an approving or rejecting review."""
    return _dismissal(ctx, owner, repo, index, review_id, True)


def undismiss_review(ctx: Ctx, owner: str, repo: str, index: int, review_id: int) -> Response:
    """Take back a review's dismissal."""
    return _dismissal(ctx, owner, repo, index, review_id, False)


ROUTES = (
    route("GET", "/repos/{owner}/{repo}/pulls/{index:int}/reviews", list_reviews),
    route("POST", "/repos/{owner}/{repo}/pulls/{index:int}/reviews", create_review, body=REVIEW,
          struct="CreatePullReviewOptions"),
    route("GET", "/repos/{owner}/{repo}/pulls/{index:int}/reviews/{review_id:int}", get_review),
    route("POST", "/repos/{owner}/{repo}/pulls/{index:int}/reviews/{review_id:int}", submit_review,
          body=[F("event"), F("body")], struct="SubmitPullReviewOptions"),
    route("DELETE", "/repos/{owner}/{repo}/pulls/{index:int}/reviews/{review_id:int}", delete_review),
    route("GET", "/repos/{owner}/{repo}/pulls/{index:int}/reviews/{review_id:int}/comments", review_comments),
    route("POST", "/repos/{owner}/{repo}/pulls/{index:int}/reviews/{review_id:int}/dismissals",
          dismiss_review, body=[F("message"), F("priors", bool)], struct="DismissPullReviewOptions"),
    route("POST", "/repos/{owner}/{repo}/pulls/{index:int}/reviews/{review_id:int}/undismissals",
          undismiss_review),
)
