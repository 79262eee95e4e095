"""The JSON shapes of git content: branches, commits, file contents, commit statuses and
releases, as Gitea returns them.
"""

import base64
import hashlib

from .database import present
from .diffs import commit_changes
from .render_base import ZERO_TIME, RenderBase, ts
from .repo_store import blob_sha

UNSIGNED = {"verified": False, "reason": "gpg.error.not_signed_commit", "signature": "",
            "signer": None, "payload": ""}


class GitShapes(RenderBase):
    """Git content for one viewer."""

    def commit_user(self, commit: dict) -> dict:
        """A commit's author as Gitea's CommitUser."""
        author = self.store.row("users", commit["author_id"])
        return {"name": author["login"], "email": author["email"], "date": ts(commit["created"])}

    def commit_meta(self, repo: dict, sha: str, created: int | None = None) -> dict:
        """A commit as Gitea's CommitMeta (a reference to it)."""
        return {"url": f"{self.api}/repos/{self.full_name(repo)}/git/commits/{sha}", "sha": sha,
                "created": ts(created) if created else ZERO_TIME}

    def payload_commit(self, repo: dict, commit: dict) -> dict:
        """A commit as Gitea's PayloadCommit (a branch's head)."""
        author = self.store.row("users", commit["author_id"])
        person = {"name": author["login"], "email": author["email"], "username": author["login"]}
        # Gitea's branch payload leaves the file lists out (null).
        return {"id": commit["sha"], "message": git_message(commit),
                "url": f"{self.root}{self.full_name(repo)}/commit/{commit['sha']}",
                "author": person, "committer": person, "verification": UNSIGNED,
                "timestamp": ts(commit["created"]), "added": None, "removed": None, "modified": None}

    def branch(self, repo: dict, row: dict) -> dict:
        """A branch as Gitea's Branch; no branch is protected on the forge."""
        commit = present(self.store.get_commit(repo["id"], row["sha"]), f"commit {row['sha']}")
        writer = self.can_write(repo)
        return {"name": row["name"], "commit": self.payload_commit(repo, commit), "protected": False,
                "required_approvals": 0, "enable_status_check": False, "status_check_contexts": [],
                "user_can_push": writer, "user_can_merge": writer, "effective_branch_protection_name": ""}

    def commit(self, repo: dict, commit: dict, *, files: bool = True, verification: bool = True) -> dict:
        """A commit as Gitea's Commit, with its changed files unless `files` is false and
        its (never a) signature unless `verification` is."""
        full = self.full_name(repo)
        person = self.commit_user(commit)
        author = self.user_id(commit["author_id"], public=True)
        data = {
            "url": f"{self.api}/repos/{full}/git/commits/{commit['sha']}", "sha": commit["sha"],
            "created": ts(commit["created"]), "html_url": f"{self.root}{full}/commit/{commit['sha']}",
            "commit": {"url": f"{self.api}/repos/{full}/git/commits/{commit['sha']}", "author": person,
                       "committer": person, "message": git_message(commit),
                       "tree": self.commit_meta(repo, tree_sha(commit["tree"]), commit["created"]),
                       "verification": UNSIGNED if verification else None},
            "author": author, "committer": author,
            "parents": [self.commit_meta(repo, p) for p in commit["parents"]],
            "files": None, "stats": None,
        }
        if files:
            changes = commit_changes(self.store, repo["id"], commit)
            data["files"] = [{"filename": f["filename"], "status": f["status"]} for f in changes]
            adds = sum(f["additions"] for f in changes)
            dels = sum(f["deletions"] for f in changes)
            data["stats"] = {"total": adds + dels, "additions": adds, "deletions": dels}
        return data

    def file_commit(self, repo: dict, commit: dict) -> dict:
        """The commit a file write made, as Gitea's FileCommitResponse."""
        full = self.full_name(repo)
        person = self.commit_user(commit)
        return {"url": f"{self.api}/repos/{full}/git/commits/{commit['sha']}", "sha": commit["sha"],
                "created": ts(commit["created"]), "html_url": f"{self.root}{full}/commit/{commit['sha']}",
                "author": person, "committer": person,
                "parents": [self.commit_meta(repo, p) for p in commit["parents"]],
                "message": git_message(commit),
                "tree": self.commit_meta(repo, tree_sha(commit["tree"]), commit["created"])}

    def contents(self, repo: dict, commit: dict, ref: str, path: str, *, with_content: bool = True) -> dict:
        """A file or directory entry as Gitea's ContentsResponse."""
        full = self.full_name(repo)
        tree = commit["tree"]
        is_file = path in tree
        sha = blob_sha(tree[path]) if is_file else tree_sha({p: c for p, c in tree.items()
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
            "encoding": "base64" if content is not None and with_content else None,
            "content": base64.b64encode(content.encode()).decode() if content is not None and with_content else None,
            "target": None, "url": self_url, "html_url": html_url, "git_url": git_url,
            "download_url": f"{self.root}{full}/raw/branch/{ref}/{path}" if is_file else None,
            "submodule_git_url": None, "lfs_oid": None, "lfs_size": None,
            "_links": {"self": self_url, "git": git_url, "html": html_url},
        }

    def commit_status(self, row: dict, repo: dict) -> dict:
        """A status as Gitea's CommitStatus."""
        return {"id": row["id"], "status": row["state"], "target_url": row["target_url"],
                "description": row["description"], "context": row["context"],
                "url": f"{self.api}/repos/{self.full_name(repo)}/statuses/{row['sha']}",
                "creator": self.user_id(row["creator_id"], public=True), "created_at": ts(row["created"]),
                "updated_at": ts(row["created"])}

    def combined_status(self, repo: dict, sha: str, rows: list) -> dict:
        """A commit's statuses as Gitea's CombinedStatus."""
        # The worst state wins; with no statuses at all Gitea leaves the state empty.
        order = ["error", "failure", "warning", "pending", "success"]
        states = [r["state"] for r in rows]
        state = next((s for s in order if s in states), "")
        full = self.full_name(repo)
        return {"state": state, "sha": sha, "total_count": len(rows),
                "statuses": [self.commit_status(r, repo) for r in rows], "repository": self.repo(repo),
                "commit_url": f"{self.api}/repos/{full}/commits/{sha}",
                "url": f"{self.api}/repos/{full}/commits/{sha}/status"}

    def tag(self, repo: dict, row: dict) -> dict:
        """A lightweight tag as Gitea's Tag: its id is its commit's, its message the commit's."""
        full = self.full_name(repo)
        commit = present(self.store.get_commit(repo["id"], row["sha"]), f"commit {row['sha']}")
        return {"name": row["name"], "message": commit["message"].rstrip("\n"), "id": row["sha"],
                "commit": self.commit_meta(repo, row["sha"], commit["created"]),
                "zipball_url": f"{self.root}{full}/archive/{row['name']}.zip",
                "tarball_url": f"{self.root}{full}/archive/{row['name']}.tar.gz"}

    def release(self, row: dict, repo: dict) -> dict:
        """A release as Gitea's Release (no assets)."""
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


def tree_sha(tree: dict) -> str:
    """A stable id for a tree (the forge's own, not git's)."""
    return hashlib.sha1(repr(sorted(tree.items())).encode()).hexdigest()
