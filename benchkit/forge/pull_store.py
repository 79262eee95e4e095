"""The store's pull requests and their reviews. A pull request is an issue with a row of
pulls beside it; a requested review is a review in state REQUEST_REVIEW until the
reviewer submits one."""

import json

from .database import Database, present


class PullStore(Database):
    """Pull requests, reviews and review comments."""

    # -- pull requests ------------------------------------------------------------------
    def pull(self, issue_id: int) -> dict:
        """The pull request behind an issue that is one."""
        return present(self.one("SELECT * FROM pulls WHERE issue_id = ?", issue_id), f"pull of issue {issue_id}")

    def pulls(self, repo_id: int) -> list[dict]:
        """The repository's pull requests, as issues with their base branch."""
        return self.all("SELECT issues.*, pulls.base FROM issues JOIN pulls ON pulls.issue_id = issues.id "
                        "WHERE repo_id = ? AND is_pull = 1", repo_id)

    def open_pull(self, repo_id: int, head: str, base: str) -> dict | None:
        """The open pull request from head into base, if there is one."""
        return self.one("SELECT pulls.* FROM pulls JOIN issues ON issues.id = pulls.issue_id WHERE repo_id = ? "
                        "AND state = 'open' AND head = ? AND base = ?", repo_id, head, base)

    def open_pulls_on(self, repo_id: int, branch: str) -> list[dict]:
        """The open pull requests whose head or base is the branch, as issues."""
        return self.all("SELECT issues.* FROM issues JOIN pulls ON pulls.issue_id = issues.id WHERE repo_id = ? "
                        "AND state = 'open' AND (head = ? OR base = ?) ORDER BY issues.id", repo_id, branch, branch)

    def pull_by_branches(self, repo_id: int, base: str, head: str) -> dict | None:
        """The issue of the newest pull request from head into base, open or not."""
        return self.one("SELECT issues.* FROM issues JOIN pulls ON pulls.issue_id = issues.id WHERE repo_id = ? "
                        "AND base = ? AND head = ? ORDER BY issues.id DESC", repo_id, base, head)

    # -- reviews -------------------------------------------------------------------------
    def review(self, issue_id: int, review_id: int) -> dict | None:
        """The pull request's review with this id, if any."""
        return self.one("SELECT * FROM reviews WHERE id = ? AND issue_id = ?", review_id, issue_id)

    def reviews(self, issue_id: int) -> list[dict]:
        """The pull request's reviews, oldest first (pending ones too)."""
        return self.all("SELECT * FROM reviews WHERE issue_id = ? ORDER BY id", issue_id)

    def pending_review(self, issue_id: int, reviewer_id: int) -> dict | None:
        """The reviewer's review not yet submitted, if there is one."""
        return self.one("SELECT * FROM reviews WHERE issue_id = ? AND reviewer_id = ? AND state = 'PENDING'",
                        issue_id, reviewer_id)

    def reviewed_by(self, issue_id: int, reviewer_id: int) -> bool:
        """Whether the user has a review of any state on the pull request."""
        return bool(self.one("SELECT 1 FROM reviews WHERE issue_id = ? AND reviewer_id = ?", issue_id, reviewer_id))

    def review_requested(self, issue_id: int, reviewer_id: int) -> bool:
        """Whether a review by the user is requested and not yet given."""
        return bool(self.one("SELECT 1 FROM reviews WHERE issue_id = ? AND reviewer_id = ? "
                             "AND state = 'REQUEST_REVIEW'", issue_id, reviewer_id))

    def withdraw_review_request(self, issue_id: int, reviewer_id: int) -> None:
        """Withdraw the request for the user's review."""
        self.execute("DELETE FROM reviews WHERE issue_id = ? AND reviewer_id = ? AND state = 'REQUEST_REVIEW'",
                     issue_id, reviewer_id)

    def make_unofficial(self, issue_id: int, reviewer_id: int) -> None:
        """None of the reviewer's reviews counts as official (a newer one is to)."""
        self.execute("UPDATE reviews SET official = 0 WHERE issue_id = ? AND reviewer_id = ?", issue_id, reviewer_id)

    def standing_reviewers(self, issue_id: int) -> list[int]:
        """The ids of everyone whose latest counted review stands (Gitea's GetReviewsByIssueID):
        requested, approving, rejecting or commenting, not dismissed; by that review's age."""
        return [row["reviewer_id"] for row in self.all(
            "SELECT reviewer_id, MAX(id) AS latest FROM reviews WHERE issue_id = ? AND dismissed = 0 AND state IN "
            "('REQUEST_REVIEW', 'APPROVED', 'REQUEST_CHANGES', 'COMMENT') GROUP BY reviewer_id ORDER BY latest",
            issue_id)]

    def review_events(self, issue_id: int) -> int:
        """How many submitted reviews the pull request's timeline holds."""
        return self.value("SELECT COUNT(*) FROM comments WHERE issue_id = ? AND type = 'review'", issue_id)

    def delete_review(self, issue_id: int, review_id: int) -> None:
        """The review, its comments and its timeline event."""
        with self.tx():
            self.execute("DELETE FROM review_comments WHERE review_id = ?", review_id)
            self.execute("DELETE FROM comments WHERE type = 'review' AND issue_id = ? AND data = ?",
                         issue_id, json.dumps({"review_id": review_id}))
            self.execute("DELETE FROM reviews WHERE id = ?", review_id)

    # -- review comments ------------------------------------------------------------------
    def review_comments(self, review_id: int) -> list[dict]:
        """The review's comments, oldest first."""
        return self.all("SELECT * FROM review_comments WHERE review_id = ? ORDER BY id", review_id)

    def review_comment_count(self, review_id: int) -> int:
        """How many code comments the review carries."""
        return self.value("SELECT COUNT(*) FROM review_comments WHERE review_id = ?", review_id)
