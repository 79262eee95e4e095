"""Snapshot: a repository's whole state as RepoState JSON (docs/contracts.md), with no volatile
identifiers or timestamps: label definitions, and every issue and pull request in
every state with its labels, assignees, comments, reviews and review comments.

Requests: labels, issues, pulls and the repository-wide comment list (each paged),
one review list per pull request, and one call per review that has inline comments.
"""

from __future__ import annotations

import re
from collections import defaultdict

from benchkit.gitea.client import Client, GiteaError, repo_path

REVIEW_KINDS = {"APPROVED": "approved", "REQUEST_CHANGES": "request-changes",
                "COMMENT": "comment"}
# A review request is a placeholder, and a pending review is an unsubmitted draft only
# its author sees: neither is a review of the pull request.
NOT_A_REVIEW = {"REQUEST_REVIEW", "PENDING"}
# Comment URLs are HTML URLs ending in /issues/N or /pulls/N.
NUMBER_AT_END = re.compile(r"/(?:issues|pulls)/(\d+)/?$")


def snapshot(client: Client, owner: str, name: str) -> dict:
    """The RepoState of `owner/name`. Order carries no meaning where the contract says
    so (labels by name, issues and pull requests by number, label and assignee names
    sorted); comments and reviews stay in posting order."""
    path = repo_path(owner, name)
    try:
        labels = sorted(client.paginate(f"{path}/labels"), key=lambda label: label["name"])
    except GiteaError as exc:
        if exc.status == 404:  # the first call answers for the repository itself
            raise GiteaError(404, f"no repository {owner}/{name} (or no access to it)",
                             "GET", path) from None
        raise
    comments = _comments_by_number(client, path)
    issues = client.paginate(f"{path}/issues", {"state": "all", "type": "issues"})
    pulls = client.paginate(f"{path}/pulls", {"state": "all"})
    return {
        "labels": [{"name": label["name"], "color": label["color"].lstrip("#").lower(),
                    "description": label.get("description") or ""} for label in labels],
        "issues": [{**_common(issue, comments), "state": issue["state"]}
                   for issue in sorted(issues, key=_number)],
        "pull_requests": [{**_common(pull, comments),
                           "state": "merged" if pull.get("merged") else pull["state"],
                           "reviews": _reviews(client, path, pull["number"])}
                          for pull in sorted(pulls, key=_number)],
    }


def _number(item: dict) -> int:
    return item["number"]


def _common(item: dict, comments: dict) -> dict:
    return {"number": item["number"], "title": item["title"], "body": item.get("body") or "",
            "labels": sorted(label["name"] for label in item.get("labels") or []),
            "assignees": sorted(user["login"] for user in item.get("assignees") or []),
            "comments": comments.get(item["number"], [])}


def _comments_by_number(client: Client, path: str) -> dict[int, list[dict]]:
    """Every plain comment in the repository, in posting order, keyed by issue number."""
    grouped = defaultdict(list)
    for comment in sorted(client.paginate(f"{path}/issues/comments"), key=lambda c: c["id"]):
        match = NUMBER_AT_END.search(comment.get("issue_url") or comment.get("pull_request_url")
                                     or "")
        if match:
            grouped[int(match.group(1))].append(_authored(comment))
    return grouped


def _reviews(client: Client, path: str, number: int) -> list[dict]:
    reviews = []
    for review in client.paginate(f"{path}/pulls/{number}/reviews"):
        if review.get("state") in NOT_A_REVIEW:
            continue
        inline = []
        if review.get("comments_count"):
            inline = [_authored(c) for c in client.get(
                f"{path}/pulls/{number}/reviews/{review['id']}/comments") or []]
        state = str(review.get("state") or "")
        reviews.append({**_authored(review), "kind": REVIEW_KINDS.get(state, state.lower()),
                        "comments": inline})
    return reviews


def _authored(item: dict) -> dict:
    return {"author": (item.get("user") or {}).get("login", ""), "body": item.get("body") or ""}
