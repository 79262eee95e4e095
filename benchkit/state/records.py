"""The small records a RepoState compares as multisets (a comment posted twice is
there twice): comments, reviews, reactions, attachments, tracked times, and the
records of the sections that have no name to key them by (dependencies, commit
statuses, webhooks, deploy keys). Each kind normalises an entry and describes one in
a difference; `record_key` is the one identity multisets count by.

A field a record may lack (an older capture has comments without reactions) is left
out of the normalised record, and the checker compares only the fields both sides
carry.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass

from .values import (
    StateError,
    as_list,
    flag,
    names,
    normalise_name,
    normalise_text,
    number,
    require,
)

REVIEW_KINDS = ("comment", "approved", "request-changes")
# Gitea's review verbs (and GitHub's) as a snapshot may carry them.
_REVIEW_KIND_ALIASES = {
    "comment": "comment", "commented": "comment",
    "approved": "approved", "approve": "approved",
    "request-changes": "request-changes", "request_changes": "request-changes",
    "changes_requested": "request-changes", "changes-requested": "request-changes",
}


@dataclass(frozen=True)
class Kind:
    """One kind of record: how an entry is normalised and how a difference names it."""

    normalise: Callable[[dict, str], dict]
    describe: Callable[[dict], str]


def record_key(record: dict) -> str:
    """A record's identity in a multiset: every field it carries."""
    return json.dumps(record, sort_keys=True, ensure_ascii=False)


def normalise_all(kind: Kind, items: list, where: str) -> list[dict]:
    """Every entry normalised, in one canonical order (a multiset's order carries nothing)."""
    return sorted((kind.normalise(item, f"{where}[{i}]") for i, item in enumerate(items)),
                  key=record_key)


def _optional(item: dict, record: dict, key: str, value: Callable[[], object]) -> None:
    if key in item:
        record[key] = value()


def _reaction(item, where) -> dict:
    require(item, where, "user", "content")
    return {"user": str(item["user"]), "content": str(item["content"])}


def _attachment(item, where) -> dict:
    require(item, where, "name", "size")
    return {"name": normalise_name(item["name"]), "size": number(item["size"], f"{where}.size")}


def _time(item, where) -> dict:
    require(item, where, "user", "seconds")
    return {"user": str(item["user"]), "seconds": number(item["seconds"], f"{where}.seconds")}


REACTION = Kind(_reaction, lambda r: f"reaction {r['content']} by {r['user']}")
ATTACHMENT = Kind(_attachment, lambda a: f"attachment {quote(a['name'])} ({a['size']} bytes)")
TRACKED_TIME = Kind(_time, lambda t: f"{t['seconds']} s tracked by {t['user']}")


def _comment(item, where) -> dict:
    require(item, where, "author")
    record = {"author": str(item["author"]), "body": normalise_text(item.get("body"))}
    _optional(item, record, "reactions", lambda: normalise_all(
        REACTION, as_list(item, "reactions", where), f"{where}.reactions"))
    _optional(item, record, "attachments", lambda: normalise_all(
        ATTACHMENT, as_list(item, "attachments", where), f"{where}.attachments"))
    return record


def _describe_comment(comment) -> str:
    extra = ""
    if comment.get("reactions"):
        extra += f" with {len(comment['reactions'])} reactions"
    if comment.get("attachments"):
        extra += f" with {len(comment['attachments'])} attachments"
    return f"comment by {comment['author']}{extra}: {quote(comment['body'])}"


COMMENT = Kind(_comment, _describe_comment)


def _review(item, where) -> dict:
    require(item, where, "author", "kind")
    kind = _REVIEW_KIND_ALIASES.get(str(item["kind"]).lower())
    if kind is None:
        raise StateError(f"{where}: review kind {item['kind']!r} is not one of {', '.join(REVIEW_KINDS)}")
    record = {"author": str(item["author"]), "kind": kind,
              "body": normalise_text(item.get("body")),
              "comments": normalise_all(COMMENT, as_list(item, "comments", where),
                                        f"{where}.comments")}
    _optional(item, record, "dismissed", lambda: flag(item["dismissed"], f"{where}.dismissed"))
    return record


def _describe_review(review) -> str:
    inline = f" with {len(review['comments'])} inline comments" if review["comments"] else ""
    dismissed = " (dismissed)" if review.get("dismissed") else ""
    return f"{review['kind']} review by {review['author']}{inline}{dismissed}: {quote(review['body'])}"


REVIEW = Kind(_review, _describe_review)


def _dependency(item, where) -> dict:
    require(item, where, "blocked", "blocker")
    return {"blocked": str(item["blocked"]), "blocker": str(item["blocker"])}


def _status(item, where) -> dict:
    require(item, where, "commit", "context", "state")
    return {"commit": normalise_name(item["commit"]), "context": normalise_name(item["context"]),
            "state": str(item["state"]), "description": normalise_text(item.get("description")),
            "target_url": normalise_name(item.get("target_url"))}


def _webhook(item, where) -> dict:
    require(item, where, "type", "url")
    return {"type": str(item["type"]), "url": normalise_name(item["url"]),
            "content_type": str(item.get("content_type") or ""),
            "events": names(item, "events", where), "active": bool(item.get("active")),
            "branch_filter": normalise_name(item.get("branch_filter"))}


def _deploy_key(item, where) -> dict:
    require(item, where, "title", "key")
    return {"title": normalise_name(item["title"]), "key": normalise_name(item["key"]),
            "read_only": bool(item.get("read_only"))}


DEPENDENCY = Kind(_dependency, lambda d: f"dependency: {d['blocked']} depends on {d['blocker']}")
STATUS = Kind(_status, lambda s: f"commit status {quote(s['context'])} ({s['state']}) on the "
                                 f"commit {quote(s['commit'])}")
WEBHOOK = Kind(_webhook, lambda h: f"webhook {quote(h['url'])} ({h['type']}, "
                                   f"{'active' if h['active'] else 'inactive'})")
DEPLOY_KEY = Kind(_deploy_key, lambda k: f"deploy key {quote(k['title'])}"
                                         f"{' (read-only)' if k['read_only'] else ' (read-write)'}")


def quote(text, limit=120) -> str:
    """A text as a difference shows it: JSON-quoted, cut at `limit` characters."""
    text = str(text)
    if len(text) > limit:
        text = text[: limit - 1] + "…"
    return json.dumps(text, ensure_ascii=False)

