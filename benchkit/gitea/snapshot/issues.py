"""The snapshot's issue side: labels, milestones, every issue and pull request in
every state with each field the API writes (labels, assignees, milestone, due date,
pin, lock, reference, tracked time, reactions, the snapshot's user's subscription,
attachments; a time estimate only the web interface sets is left out), their
comments, reviews and review comments and review requests, and the dependencies
between issues.

Requests: labels, milestones, issues, pull requests, comments and tracked times, each
a paged list; per pull request its reviews and, per review with inline comments, one
call; per issue or pull request its reactions, subscription and dependencies, and per
comment its reactions, these fetched side by side (benchkit.gitea.snapshot.fetch).
Kinds the host says it does not model are not asked for.
"""

from __future__ import annotations

import re
from collections import defaultdict

from benchkit.gitea.snapshot.fetch import Fetch
from benchkit.gitea.snapshot.reader import pages, read

REVIEW_KINDS = {"APPROVED": "approved", "REQUEST_CHANGES": "request-changes",
                "COMMENT": "comment"}
# A review request is a placeholder (the pull request's requested reviewers), and a
# pending review is an unsubmitted draft only its author sees: neither is a review.
REQUESTED, PENDING = "REQUEST_REVIEW", "PENDING"
# Comment URLs are HTML URLs ending in /issues/N or /pulls/N.
NUMBER_AT_END = re.compile(r"/(?:issues|pulls)/(\d+)/?$")


def labels(fetch: Fetch) -> list[dict]:
    return [{"name": label["name"], "color": label["color"],
             "description": label.get("description") or "",
             "exclusive": bool(label.get("exclusive")), "archived": bool(label.get("is_archived"))}
            for label in pages(fetch.client, f"{fetch.path}/labels")]


def milestones(fetch: Fetch) -> list[dict]:
    return [{"title": m["title"], "description": m.get("description") or "", "state": m["state"],
             "due_on": m.get("due_on")}
            for m in pages(fetch.client, f"{fetch.path}/milestones", {"state": "all"})]


def issues_and_pulls(fetch: Fetch) -> tuple[list[dict], list[dict], list[dict]]:
    """(issues, pull requests, dependencies): every one in every state, by number."""
    comments = _comments_by_number(fetch)
    times = _times_by_number(fetch) if "tracked_times" not in fetch.unmodelled else {}
    entries = {item["number"]: _entry(fetch, item, comments, times)
               for item in pages(fetch.client, f"{fetch.path}/issues", {"state": "all", "type": ""})}
    pulls = {pull["number"]: pull for pull in pages(fetch.client, f"{fetch.path}/pulls",
                                                    {"state": "all"})}
    extras = fetch.each(sorted(entries), lambda client, number: _extras(fetch, client, number))
    dependencies: set[tuple[str, str]] = set()
    for number, (found, blocked) in zip(sorted(entries), extras, strict=True):
        entries[number].update(found)
        dependencies |= {(f"#{number}", blocker) for blocker in blocked}
    reviews = fetch.each(sorted(pulls), lambda client, number: _reviews(fetch, client, number))
    issues, out = [], []
    for number in sorted(entries):
        if number not in pulls:
            issues.append(entries[number])
    for number, (submitted, requested) in zip(sorted(pulls), reviews, strict=True):
        pull = pulls[number]
        out.append({**entries.get(number, {"number": number, "title": pull["title"]}),
                    "state": "merged" if pull.get("merged") else pull["state"],
                    "base": pull["base"]["ref"], "head": pull["head"]["label"],
                    "allow_maintainer_edit": bool(pull.get("allow_maintainer_edit")),
                    "reviews": submitted, "requested_reviewers": requested})
    return issues, out, [{"blocked": a, "blocker": b} for a, b in sorted(dependencies)]


def _entry(fetch: Fetch, item: dict, comments: dict, times: dict) -> dict:
    entry = {"number": item["number"], "title": item["title"], "body": item.get("body") or "",
             "state": item["state"],
             "labels": sorted(label["name"] for label in item.get("labels") or []),
             "assignees": sorted(user["login"] for user in item.get("assignees") or []),
             "comments": comments.get(item["number"], []),
             "milestone": (item.get("milestone") or {}).get("title"),
             "due_date": item.get("due_date"), "pin_order": item.get("pin_order") or 0,
             "locked": bool(item.get("is_locked")), "ref": item.get("ref") or "",
             "tracked_times": times.get(item["number"], []),
             "attachments": _attachments(item)}
    return {key: value for key, value in entry.items() if key not in fetch.unmodelled}


def _attachments(item: dict) -> list[dict]:
    return [{"name": asset["name"], "size": asset.get("size") or 0}
            for asset in item.get("assets") or []]


def _extras(fetch: Fetch, client, number: int) -> tuple[dict, list[str]]:
    """An issue's reactions and its user's subscription, and the issues it depends on
    (`#N`, or `owner/name#N` in another repository). What it blocks is every other
    issue's dependency; only one in another repository would be missed, and the
    gateway refuses those."""
    base = f"{fetch.path}/issues/{number}"
    found: dict = {}
    if "reactions" not in fetch.unmodelled:
        found["reactions"] = _reactions(client, f"{base}/reactions")
    if "subscribed" not in fetch.unmodelled:
        found["subscribed"] = bool((read(client, f"{base}/subscriptions/check") or {})
                                   .get("subscribed"))
    blocked = [fetch.issue_ref(other) for other in pages(client, f"{base}/dependencies")]
    return found, blocked


def _reactions(client, path: str, paged: bool = True) -> list[dict]:
    found = pages(client, path) if paged else (read(client, path) or [])
    return [{"user": (r.get("user") or {}).get("login", ""), "content": r["content"]}
            for r in found]


def _comments_by_number(fetch: Fetch) -> dict[int, list[dict]]:
    """Every plain comment in the repository, keyed by issue number."""
    found = []
    for comment in pages(fetch.client, f"{fetch.path}/issues/comments"):
        match = NUMBER_AT_END.search(comment.get("issue_url") or comment.get("pull_request_url")
                                     or "")
        if match:
            record = _authored(comment)
            if "attachments" not in fetch.unmodelled:
                record["attachments"] = _attachments(comment)
            found.append((int(match.group(1)), comment["id"], record))
    if "reactions" not in fetch.unmodelled:
        reactions = fetch.each([c[1] for c in found], lambda client, comment_id: _reactions(
            client, f"{fetch.path}/issues/comments/{comment_id}/reactions", paged=False))
        for (_, _, record), found_reactions in zip(found, reactions, strict=True):
            record["reactions"] = found_reactions
    grouped = defaultdict(list)
    for number, _, record in found:
        grouped[number].append(record)
    return grouped


def _times_by_number(fetch: Fetch) -> dict[int, list[dict]]:
    grouped = defaultdict(list)
    for entry in pages(fetch.client, f"{fetch.path}/times"):
        number = (entry.get("issue") or {}).get("number")
        if number is not None:
            grouped[number].append({"user": entry.get("user_name") or "",
                                    "seconds": entry.get("time") or 0})
    return grouped


def _reviews(fetch: Fetch, client, number: int) -> tuple[list[dict], list[str]]:
    """(the submitted reviews, the users asked for one)."""
    reviews, requested = [], []
    for review in pages(client, f"{fetch.path}/pulls/{number}/reviews"):
        state = str(review.get("state") or "")
        if state == REQUESTED:
            requested.append((review.get("user") or {}).get("login", ""))
            continue
        if state == PENDING:
            continue
        inline = []
        if review.get("comments_count"):
            inline = [_authored(c) for c in read(
                client, f"{fetch.path}/pulls/{number}/reviews/{review['id']}/comments") or []]
        reviews.append({**_authored(review), "kind": REVIEW_KINDS.get(state, state.lower()),
                        "dismissed": bool(review.get("dismissed")), "comments": inline})
    return reviews, sorted(requested)


def _authored(item: dict) -> dict:
    return {"author": (item.get("user") or {}).get("login", ""), "body": item.get("body") or ""}
