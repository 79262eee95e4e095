"""The store's issues (pull requests are issues too) and what hangs on them: timeline
events, assignees, comments, dependencies and pins, and the filters a listing applies.

As in Gitea, an issue's timeline events (close, label, review, ...) are rows of the
comments table with their own type; only type 'comment' is a plain comment.
"""

import json
from dataclasses import dataclass

from .database import Database, now


@dataclass(frozen=True)
class IssueFilter:
    """What an issue listing asks of the issues it shows; an empty field asks nothing."""
    state: str = ""                    # "open" or "closed"
    kind: str = ""                     # "issues" or "pulls"
    labels: tuple[str, ...] = ()       # names, each on the issue; names no repository has drop out
    since: int | None = None           # updated at or after
    before: int | None = None          # updated at or before
    poster_id: int | None = None
    assignee_id: int | None = None
    milestones: tuple[str, ...] = ()   # titles or ids; unknown ones drop out, and with them the filter


class IssueStore(Database):
    """Issues and what hangs on them, but labels and milestones (label_store.py)."""

    def issue(self, repo_id: int, number: int) -> dict | None:
        """The repository's issue (or pull request) with this number, if any."""
        return self.one("SELECT * FROM issues WHERE repo_id = ? AND number = ?", repo_id, number)

    def issue_by_id(self, issue_id: int) -> dict | None:
        """The issue with this id, if any."""
        return self.get("issues", issue_id)

    def touch(self, issue_id: int, **values: object) -> None:
        """Mark the issue updated now, setting `values` too."""
        self.update("issues", {"id": issue_id}, updated=now(), **values)

    def event(self, issue_id: int, actor_id: int, kind: str, body: str = "", **data: object) -> None:
        """Record a timeline event of the issue (a comment row of another type)."""
        stamp = now()
        self.insert("comments", issue_id=issue_id, poster_id=actor_id, body=body, created=stamp, updated=stamp,
                    type=kind, data=json.dumps(data))

    def issue_ids(self, repo_id: int | None = None) -> list[int]:
        """The ids of the repository's issues, or of every issue."""
        if repo_id is None:
            return [row["id"] for row in self.all("SELECT id FROM issues")]
        return [row["id"] for row in self.all("SELECT id FROM issues WHERE repo_id = ?", repo_id)]

    def assignees(self, issue_id: int) -> list[dict]:
        """The issue's assignees, as user rows."""
        return self.all("SELECT users.* FROM issue_assignees JOIN users ON users.id = issue_assignees.user_id "
                        "WHERE issue_id = ? ORDER BY users.id", issue_id)

    def set_assignees(self, issue_id: int, user_ids: list[int], actor_id: int) -> None:
        """Replace the assignees; each one added or removed is a timeline event."""
        before = [u["id"] for u in self.assignees(issue_id)]
        after = list(dict.fromkeys(user_ids))
        for uid in before:
            if uid not in after:
                self.execute("DELETE FROM issue_assignees WHERE issue_id = ? AND user_id = ?", issue_id, uid)
                self.event(issue_id, actor_id, "assignees", assignee_id=uid, removed=True)
        for uid in after:
            if uid not in before:
                self.execute("INSERT INTO issue_assignees (issue_id, user_id) VALUES (?, ?)", issue_id, uid)
                self.event(issue_id, actor_id, "assignees", assignee_id=uid, removed=False)

    def comments(self, issue_id: int) -> list[dict]:
        """The issue's plain comments, oldest first."""
        return self.all("SELECT * FROM comments WHERE issue_id = ? AND type = 'comment' ORDER BY id", issue_id)

    def timeline(self, issue_id: int) -> list[dict]:
        """The issue's comments and events, oldest first."""
        return self.all("SELECT * FROM comments WHERE issue_id = ? ORDER BY created, id", issue_id)

    def repo_comments(self, repo_id: int) -> list[dict]:
        """The plain comments on every issue of the repository, oldest first."""
        return self.all("SELECT comments.* FROM comments JOIN issues ON issues.id = comments.issue_id "
                        "WHERE issues.repo_id = ? AND comments.type = 'comment' ORDER BY comments.id", repo_id)

    def comment_count(self, issue_id: int) -> int:
        """The issue's plain comments (Gitea 1.26 counts no other kind)."""
        return self.value("SELECT COUNT(*) FROM comments WHERE issue_id = ? AND type = 'comment'", issue_id)

    def delete_comment(self, comment_id: int) -> None:
        """Delete one comment."""
        self.execute("DELETE FROM comments WHERE id = ?", comment_id)

    # -- dependencies and pins ----------------------------------------------------
    def depends(self, issue_id: int, blocker_id: int) -> bool:
        """Whether the issue is blocked by the other."""
        return bool(self.one("SELECT 1 FROM issue_dependencies WHERE issue_id = ? AND blocker_id = ?",
                             issue_id, blocker_id))

    def add_dependency(self, issue_id: int, blocker_id: int) -> None:
        """The issue is now blocked by the other."""
        self.execute("INSERT INTO issue_dependencies (issue_id, blocker_id) VALUES (?, ?)", issue_id, blocker_id)

    def remove_dependency(self, issue_id: int, blocker_id: int) -> None:
        """The issue is no longer blocked by the other."""
        self.execute("DELETE FROM issue_dependencies WHERE issue_id = ? AND blocker_id = ?", issue_id, blocker_id)

    def blockers(self, issue_id: int) -> list[dict]:
        """The issues this one is blocked by, oldest first."""
        return self.all("SELECT issues.* FROM issue_dependencies JOIN issues ON issues.id = blocker_id "
                        "WHERE issue_id = ? ORDER BY issues.id", issue_id)

    def blocked(self, issue_id: int) -> list[dict]:
        """The issues this one blocks, newest first."""
        return self.all("SELECT issues.* FROM issue_dependencies JOIN issues ON issues.id = "
                        "issue_dependencies.issue_id WHERE blocker_id = ? "
                        "ORDER BY issues.created DESC, issues.id DESC", issue_id)

    def pins(self, repo_id: int, is_pull: int) -> list[dict]:
        """The repository's pinned issues, or its pinned pull requests."""
        return self.all("SELECT * FROM issue_pins WHERE repo_id = ? AND is_pull = ?", repo_id, is_pull)

    def pin_order(self, issue_id: int) -> int:
        """The issue's place among the pinned ones, 0 when it is not pinned."""
        return self.value("SELECT pin_order FROM issue_pins WHERE issue_id = ?", issue_id) or 0

    def unpin(self, issue_id: int) -> bool:
        """Unpin the issue; whether it was pinned."""
        with self.tx():
            if not self.one("SELECT 1 FROM issue_pins WHERE issue_id = ?", issue_id):
                return False
            self.execute("DELETE FROM issue_pins WHERE issue_id = ?", issue_id)
            return True

    # -- listing ------------------------------------------------------------------------
    def filter_issues(self, repo_ids: list[int], wanted: IssueFilter) -> list[dict]:
        """The issues of these repositories that `wanted` lets through, newest first."""
        if not repo_ids:
            return []
        marks = ",".join("?" * len(repo_ids))
        sql = f"SELECT * FROM issues WHERE repo_id IN ({marks})"
        args: list = list(repo_ids)
        if wanted.state in ("open", "closed"):
            sql += " AND state = ?"
            args.append(wanted.state)
        if wanted.kind in ("issues", "pulls"):
            sql += " AND is_pull = ?"
            args.append(int(wanted.kind == "pulls"))
        names = wanted.labels
        known = self.all(f"SELECT DISTINCT name FROM labels WHERE repo_id IN ({marks}) AND name IN "
                         f"({','.join('?' * len(names))})", *repo_ids, *names) if names else []
        for label in known:
            sql += " AND id IN (SELECT issue_id FROM issue_labels JOIN labels ON labels.id = label_id WHERE name = ?)"
            args.append(label["name"])
        if wanted.since is not None:
            sql += " AND updated >= ?"
            args.append(wanted.since)
        if wanted.before is not None:
            sql += " AND updated <= ?"
            args.append(wanted.before)
        if wanted.poster_id is not None:
            sql += " AND poster_id = ?"
            args.append(wanted.poster_id)
        if wanted.assignee_id is not None:
            sql += " AND id IN (SELECT issue_id FROM issue_assignees WHERE user_id = ?)"
            args.append(wanted.assignee_id)
        if wanted.milestones:
            ids = [m["id"] for m in self.all(f"SELECT * FROM milestones WHERE repo_id IN ({marks})", *repo_ids)
                   if m["title"] in wanted.milestones or str(m["id"]) in wanted.milestones]
            if ids:
                sql += f" AND milestone_id IN ({','.join('?' * len(ids))})"
                args.extend(ids)
        return self.all(sql + " ORDER BY created DESC, id DESC", *args)
