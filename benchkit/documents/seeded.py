"""The seed realised: the plan the seeder creates from, and the RepoState a freshly
seeded repository has (its ground truth), both from one walk of the seed, so the
seeder and the checker cannot disagree on a number, a file or a commit.

The seeder's commits are made at the host's clock (and the forge makes up its commit
ids), so a commit's id differs from trial to trial: the state keeps each branch's
files by content hash (git's blob id) and its number of commits, never an id.
"""

from __future__ import annotations

import hashlib

from benchkit.state import normalise

# The default branch's one commit when a seed names no files of its own.
DEFAULT_FILES = ({"path": "README.md",
                  "content": "# Seeded repository\n\nA throwaway repository for one trial.\n"},)
SEED_MESSAGE = "Seed the repository"


def blob_id(text: str) -> str:
    """The id git gives a file of this text (its content hash)."""
    data = text.encode()
    return hashlib.sha1(b"blob %d\0" % len(data) + data).hexdigest()


def seed_data(seed) -> dict:
    """A seed model's validated data, or a plain dict as is."""
    data = getattr(seed, "data", seed)
    if not isinstance(data, dict):
        raise TypeError(f"expected a seed (model or dict), got {type(seed).__name__}")
    return data


def seed_plan(seed) -> dict:
    """The seed as plain data with defaults filled and the number each item gets on the
    host: issues first, then pull requests, in plan order. The seeder creates from it
    and the ground truth is built from it, so the two cannot disagree on numbers."""
    data = seed_data(seed)
    issues = [{"state": "open", "labels": [], "assigned": False, "comments": [],
               "milestone": None, **item} for item in data.get("issues") or []]
    pulls = [{"state": "open", "labels": [], "assigned": False, "comments": [],
              "reviews": [], "milestone": None, **item} for item in data.get("pull_requests") or []]
    for number, item in enumerate(issues + pulls, start=1):
        item["number"] = number
    for pull in pulls:
        pull.setdefault("head", f"pull-{pull['number']}")  # a seed's schema requires one
    milestones = [{"description": "", "state": "open", "due_on": None, **item}
                  for item in data.get("milestones") or []]
    return {"labels": list(data.get("labels") or []), "milestones": milestones,
            "files": [dict(file) for file in data.get("files") or DEFAULT_FILES],
            "issues": issues, "pull_requests": pulls}


def ground_truth(seed, user: str, seeded: dict | None = None) -> dict:
    """The seed realised as a normalised RepoState for `user`. `seeded`: a state
    captured from the repository once seeded, whose `repository` settings (the
    host's defaults, not the seed's to say) the ground truth takes; without it the
    ground truth has none, and they are not compared."""
    plan = seed_plan(seed)
    issues = [_seeded(item, user) for item in plan["issues"]]
    pulls = [{**_seeded(item, user), "base": item.get("base") or "main", "head": item["head"],
              "allow_maintainer_edit": False, "requested_reviewers": [],
              "reviews": [review_record(review.get("kind", "comment"), review["body"],
                                        review.get("comments", []), user)
                          for review in item["reviews"]]}
             for item in plan["pull_requests"]]
    labels = [{"name": label["name"], "color": label.get("color", ""),
               "description": label.get("description", ""), "exclusive": False,
               "archived": False} for label in plan["labels"]]
    milestones = [{key: item[key] for key in ("title", "description", "state", "due_on")}
                  for item in plan["milestones"]]
    state = {"labels": labels, "issues": issues, "pull_requests": pulls,
             "milestones": milestones, "dependencies": [], "branches": seeded_branches(plan),
             "tags": [], "releases": [], "statuses": [], "protections": [], "webhooks": [],
             "collaborators": [], "deploy_keys": [], "wiki": []}
    if seeded and seeded.get("repository") is not None:
        state["repository"] = seeded["repository"]
    return normalise(state)


def default_files(plan: dict) -> dict[str, str]:
    """The default branch's files as seeded: path -> content hash."""
    return {file["path"]: blob_id(file["content"]) for file in plan["files"]}


def seeded_branches(plan: dict) -> list[dict]:
    """The default branch (a commit per seeded file) and each pull request's head
    (one more commit, its file, on the default branch as it was then), each with its
    files by content hash; a merged one's merge (with a merge commit) moves the
    default branch on before the next head is made."""
    commits, main = len(plan["files"]), default_files(plan)
    heads = []
    for pull in plan["pull_requests"]:
        file = pull_file(pull)
        files = {**main, file["path"]: blob_id(file["content"])}
        heads.append({"name": pull["head"], "commits": commits + 1, "files": files})
        if pull["state"] == "merged":
            commits, main = commits + 2, files
    return [{"name": "main", "commits": commits, "files": main}, *heads]


def pull_file(pull: dict) -> dict:
    """The one file a pull request's head branch adds."""
    return pull.get("file") or {"path": f"{pull['head'].replace('/', '-')}.txt",
                                "content": f"{pull['title']}\n"}


def review_record(kind, body, comments, user) -> dict:
    """A review with its inline comments (bodies, or a seed's {path, body}), compared by
    author and body."""
    return {"author": user, "kind": kind, "body": body, "dismissed": False,
            "comments": [{"author": user, "body": comment["body"] if isinstance(comment, dict)
                          else comment} for comment in comments]}


def comment_record(body, user) -> dict:
    return {"author": user, "body": body, "reactions": [], "attachments": []}


def issue_record(number, title, body, state, labels, assignees, comments=(),
                 milestone=None) -> dict:
    """An issue as its poster (the user the snapshot runs as) makes it: subscribed to
    it, none of its other fields set."""
    return {"number": number, "title": title, "body": body, "state": state,
            "labels": list(labels), "assignees": list(assignees), "comments": list(comments),
            "milestone": milestone, "due_date": None, "pin_order": 0, "locked": False,
            "ref": "", "tracked_times": [], "reactions": [], "subscribed": True,
            "attachments": []}


def _seeded(item, user) -> dict:
    return issue_record(item["number"], item["title"], item.get("body", ""), item["state"],
                        item["labels"], [user] if item["assigned"] else [],
                        [comment_record(body, user) for body in item["comments"]],
                        item["milestone"])
