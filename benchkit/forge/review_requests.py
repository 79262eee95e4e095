"""Requesting and withdrawing reviews of a pull request: a request is a review
placeholder in state REQUEST_REVIEW until the reviewer submits one."""

from starlette.responses import Response

from .context import Ctx
from .database import now
from .pulls import find_pull, head_sha
from .web import ApiError, F, empty, respond, route

REQUEST = [F("reviewers", "strs"), F("team_reviewers", "strs")]


def reviewers_named(ctx: Ctx, names: list[str]) -> list[dict]:
    """The users named by login or e-mail; 404 for any unknown."""
    users = []
    for name in names:
        user = (ctx.store.user_by_email(name) if "@" in name
                else ctx.store.user_by_login(name))
        if user is None:
            raise ApiError(404, f"User '{name}' not exist")
        users.append(user)
    return users


def check_reviewer(ctx: Ctx, row: dict, issue: dict, reviewer: dict) -> None:
    """Gitea's IsValidReviewRequest, for the cases a forge repository has."""
    where = f"[user_id: {ctx.caller['id']}, repo_id: {row['id']}]"
    if row["private"] and not (reviewer["is_admin"] or reviewer["id"] == row["owner_id"]):
        raise ApiError(422, f"Reviewer can't read {where}")
    if reviewer["id"] == issue["poster_id"]:
        raise ApiError(422, f"poster of pr can't be reviewer {where}")


def request_reviews(ctx: Ctx, owner: str, repo: str, index: int) -> Response:
    """Request reviews; each new request is a placeholder review and a timeline event."""
    row, issue, pr = find_pull(ctx, owner, repo, index)
    created = []
    for reviewer in reviewers_named(ctx, ctx.body.get("reviewers") or []):
        if issue["state"] == "closed":
            raise ApiError(403, "pull request is closed")
        check_reviewer(ctx, row, issue, reviewer)
        if ctx.store.review_requested(issue["id"], reviewer["id"]):
            continue  # already requested: Gitea makes no new placeholder
        stamp = now()
        review_id = ctx.store.insert("reviews", issue_id=issue["id"], reviewer_id=reviewer["id"],
                                     state="REQUEST_REVIEW", body="", commit_id=head_sha(ctx, row, pr),
                                     created=stamp, updated=stamp)
        ctx.store.event(issue["id"], ctx.caller["id"], "review_request", assignee_id=reviewer["id"], removed=False)
        created.append(ctx.store.row("reviews", review_id))
    return respond([ctx.render.review(review, issue, row) for review in created], 201)


def withdraw_reviews(ctx: Ctx, owner: str, repo: str, index: int) -> Response:
    """Withdraw review requests; each withdrawn is a timeline event."""
    row, issue, _ = find_pull(ctx, owner, repo, index)
    for reviewer in reviewers_named(ctx, ctx.body.get("reviewers") or []):
        if issue["state"] == "closed":
            raise ApiError(403, "pull request is closed")
        if ctx.store.review_requested(issue["id"], reviewer["id"]):
            ctx.store.withdraw_review_request(issue["id"], reviewer["id"])
            ctx.store.event(issue["id"], ctx.caller["id"], "review_request", assignee_id=reviewer["id"], removed=True)
    return empty()


ROUTES = (
    route("POST", "/repos/{owner}/{repo}/pulls/{index:int}/requested_reviewers", request_reviews,
          body=REQUEST, struct="PullReviewRequestOptions"),
    route("DELETE", "/repos/{owner}/{repo}/pulls/{index:int}/requested_reviewers", withdraw_reviews,
          body=REQUEST, struct="PullReviewRequestOptions"),
)
