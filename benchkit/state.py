"""RepoState: the comparable shape of a repository, and its normalisation.

A snapshot of a live host, a forge, or the expectation interpreter all go through
`normalise` before the checker compares them, so the comparison only ever sees what
the RepoState contract (docs/contracts.md) names: volatile ids, urls and timestamps are dropped wherever
they appear, colours are lower-case without `#`, text loses surrounding whitespace
and CR line ends, label and assignee lists are sorted sets, comments and reviews are
sorted multisets (a comment posted twice stays twice).

A foundation module, not the scorer's: the spec's expectation interpreter builds
RepoStates as well as the checker compares them.
"""

ISSUE_STATES = ("open", "closed")
PULL_STATES = ("open", "closed", "merged")
REVIEW_KINDS = ("comment", "approved", "request-changes")

# Gitea's review verbs (and GitHub's) as a snapshot may carry them.
_REVIEW_KIND_ALIASES = {
    "comment": "comment", "commented": "comment",
    "approved": "approved", "approve": "approved",
    "request-changes": "request-changes", "request_changes": "request-changes",
    "changes_requested": "request-changes", "changes-requested": "request-changes",
}


class StateError(ValueError):
    """A RepoState that does not have the contract's shape."""


def normalise(state) -> dict:
    """The canonical RepoState of `state` (a dict as a snapshot or `expect` prints it)."""
    if not isinstance(state, dict):
        raise StateError(f"RepoState must be an object, got {type(state).__name__}")
    labels = [_label(item, f"labels[{i}]") for i, item in enumerate(_list(state, "labels", "state"))]
    issues = [_issue(item, f"issues[{i}]", ISSUE_STATES)
              for i, item in enumerate(_list(state, "issues", "state"))]
    pulls = [_issue(item, f"pull_requests[{i}]", PULL_STATES, pull=True)
             for i, item in enumerate(_list(state, "pull_requests", "state"))]
    return {
        "labels": sorted(labels, key=lambda label: label["name"]),
        "issues": _by_number(issues, "issue"),
        "pull_requests": _by_number(pulls, "pull request"),
    }


def normalise_color(color) -> str:
    return str(color or "").strip().lstrip("#").lower()


def normalise_text(text) -> str:
    """Bodies and comments: surrounding whitespace and CR line ends carry no meaning."""
    return str(text or "").replace("\r\n", "\n").replace("\r", "\n").strip()


def comment_key(comment) -> tuple:
    return comment["author"], comment["body"]


def review_key(review) -> tuple:
    return (review["author"], review["kind"], review["body"],
            tuple(comment_key(c) for c in review["comments"]))


def _label(item, where) -> dict:
    _require(item, where, "name")
    return {
        "name": str(item["name"]),
        "color": normalise_color(item.get("color")),
        "description": normalise_text(item.get("description")),
    }


def _issue(item, where, states, pull=False) -> dict:
    _require(item, where, "number", "title", "state")
    state = str(item["state"]).lower()
    if state not in states:
        raise StateError(f"{where}: state {item['state']!r} is not one of {', '.join(states)}")
    issue = {
        "number": _number(item["number"], where),
        "title": str(item["title"]).strip(),
        "body": normalise_text(item.get("body")),
        "state": state,
        "labels": _names(item, "labels", where),
        "assignees": _names(item, "assignees", where),
        "comments": _comments(_list(item, "comments", where), f"{where}.comments"),
    }
    if pull:
        reviews = [_review(review, f"{where}.reviews[{i}]")
                   for i, review in enumerate(_list(item, "reviews", where))]
        issue["reviews"] = sorted(reviews, key=review_key)
    return issue


def _review(item, where) -> dict:
    _require(item, where, "author", "kind")
    kind = _REVIEW_KIND_ALIASES.get(str(item["kind"]).lower())
    if kind is None:
        raise StateError(f"{where}: review kind {item['kind']!r} is not one of {', '.join(REVIEW_KINDS)}")
    return {
        "author": str(item["author"]),
        "kind": kind,
        "body": normalise_text(item.get("body")),
        "comments": _comments(_list(item, "comments", where), f"{where}.comments"),
    }


def _comments(items, where) -> list:
    comments = []
    for i, item in enumerate(items):
        _require(item, f"{where}[{i}]", "author")
        comments.append({"author": str(item["author"]), "body": normalise_text(item.get("body"))})
    return sorted(comments, key=comment_key)


def _names(item, key, where) -> list:
    names = _list(item, key, where)
    for name in names:
        if not isinstance(name, str):
            raise StateError(f"{where}.{key} must list names, got {name!r}")
    return sorted(set(names))


def _by_number(items, noun) -> list:
    seen = set()
    for item in items:
        if item["number"] in seen:
            raise StateError(f"{noun} #{item['number']} appears twice")
        seen.add(item["number"])
    return sorted(items, key=lambda item: item["number"])


def _list(container, key, where) -> list:
    value = container.get(key)
    if value is None:
        return []
    if not isinstance(value, list):
        raise StateError(f"{where}.{key} must be a list, got {type(value).__name__}")
    return value


def _require(item, where, *keys):
    if not isinstance(item, dict):
        raise StateError(f"{where} must be an object, got {type(item).__name__}")
    missing = [key for key in keys if key not in item]
    if missing:
        raise StateError(f"{where} lacks {', '.join(missing)}")


def _number(value, where) -> int:
    if isinstance(value, bool) or not isinstance(value, (int, str)) or not str(value).isdigit():
        raise StateError(f"{where}: number {value!r} is not a positive integer")
    return int(value)
