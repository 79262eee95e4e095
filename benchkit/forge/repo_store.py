"""The store's repositories and their content: git's model, closely enough for the API.
A commit holds its whole tree (path -> text) and its parents, a branch or a tag names
a commit, so a pull request's files, commits and diff derive from its head versus the
merge base. Commit statuses and releases hang on a repository too.
"""

import hashlib
import json
import secrets

from .database import Database, now, present


def blob_sha(text: str) -> str:
    """The id git gives a file of this text."""
    data = text.encode()
    return hashlib.sha1(b"blob %d\0" % len(data) + data).hexdigest()


class RepoStore(Database):
    """Repositories, their commits and branches, commit statuses and releases."""

    # -- repositories ---------------------------------------------------------
    def repo(self, owner: str, name: str) -> dict | None:
        """The repository OWNER/NAME, if any (names compare without case)."""
        return self.one("SELECT repos.* FROM repos JOIN users ON users.id = repos.owner_id "
                        "WHERE users.login = ? AND repos.name = ?", owner, name)

    def repos(self) -> list[dict]:
        """Every repository, oldest first (the caller leaves out what a viewer may not see)."""
        return self.all("SELECT * FROM repos ORDER BY id")

    def next_number(self, repo_id: int) -> int:
        """Take the repository's next issue number (issues and pulls share them)."""
        number = self.value("SELECT next_number FROM repos WHERE id = ?", repo_id)
        self.update("repos", {"id": repo_id}, next_number=number + 1, updated=now())
        return number

    def open_counts(self, repo_id: int) -> dict:
        """The repository's open issues and open pull requests: {"issues": n, "pulls": n}
        (None for a repository without any)."""
        return self.must("SELECT SUM(is_pull = 0 AND state = 'open') AS issues, SUM(is_pull = 1 AND state = 'open') "
                         "AS pulls FROM issues WHERE repo_id = ?", repo_id)

    # -- content: commits, trees, branches --------------------------------------
    def commit(self, repo_id: int, parents: list[str], tree: dict, message: str, author_id: int) -> dict:
        """Store a new commit of the whole tree; its row."""
        created = now()
        payload = json.dumps([parents, tree, message, author_id, created, secrets.token_hex(4)])
        sha = hashlib.sha1(payload.encode()).hexdigest()
        row = dict(sha=sha, repo_id=repo_id, parents=json.dumps(parents), message=message,
                   author_id=author_id, created=created, tree=json.dumps(tree, sort_keys=True))
        self.insert("commits", **row)
        return present(self.get_commit(repo_id, sha), f"commit {sha}")

    def get_commit(self, repo_id: int, sha: str) -> dict | None:
        """The commit with its parents and tree decoded, if the repository has it."""
        row = self.one("SELECT * FROM commits WHERE repo_id = ? AND sha = ?", repo_id, sha)
        if row:
            row["parents"] = json.loads(row["parents"])
            row["tree"] = json.loads(row["tree"])
        return row

    def branch(self, repo_id: int, name: str) -> dict | None:
        """The repository's branch by name, if any."""
        return self.one("SELECT * FROM branches WHERE repo_id = ? AND name = ?", repo_id, name)

    def branches(self, repo_id: int) -> list[dict]:
        """The repository's branches, the most recently committed first."""
        # Gitea lists the most recently committed branch first, and branches committed in
        # the same second by name (models/git/branch_list.go: commit_time DESC, name ASC).
        return self.all("SELECT branches.* FROM branches LEFT JOIN commits ON commits.repo_id = branches.repo_id "
                        "AND commits.sha = branches.sha WHERE branches.repo_id = ? "
                        "ORDER BY commits.created DESC, branches.name ASC", repo_id)

    def set_branch(self, repo_id: int, name: str, sha: str) -> None:
        """Point the branch at the commit, creating it if need be."""
        self.execute("INSERT OR REPLACE INTO branches (repo_id, name, sha) VALUES (?, ?, ?)", repo_id, name, sha)

    def history(self, repo_id: int, sha: str | None) -> list[dict]:
        """Commits reachable from sha, newest first (first-parent order is enough here)."""
        seen, out, queue = set(), [], [sha] if sha else []
        while queue:
            current = queue.pop(0)
            if current in seen:
                continue
            seen.add(current)
            commit = self.get_commit(repo_id, current)
            if commit:
                out.append(commit)
                queue.extend(commit["parents"])
        return out

    def branch_count(self, repo_id: int) -> int:
        """How many branches the repository has."""
        return self.value("SELECT COUNT(*) FROM branches WHERE repo_id = ?", repo_id)

    def delete_branch(self, repo_id: int, name: str) -> None:
        """Delete the branch (its commits stay)."""
        self.execute("DELETE FROM branches WHERE repo_id = ? AND name = ?", repo_id, name)

    # -- commit statuses and releases -------------------------------------------
    def statuses(self, repo_id: int, sha: str) -> list[dict]:
        """The commit's statuses, newest first."""
        return self.all("SELECT * FROM commit_statuses WHERE repo_id = ? AND sha = ? ORDER BY id DESC", repo_id, sha)

    def releases(self, repo_id: int) -> list[dict]:
        """The repository's releases, newest first."""
        return self.all("SELECT * FROM releases WHERE repo_id = ? ORDER BY id DESC", repo_id)

    def tags(self, repo_id: int) -> list[dict]:
        """The repository's tags, newest first."""
        return self.all("SELECT * FROM tags WHERE repo_id = ? ORDER BY created DESC, name DESC", repo_id)

    def add_tag(self, repo_id: int, name: str, sha: str) -> None:
        """A lightweight tag at the commit, unless the name is taken (a tag never moves)."""
        self.execute("INSERT OR IGNORE INTO tags (repo_id, name, sha, created) VALUES (?, ?, ?, ?)",
                     repo_id, name, sha, now())

    def release_count(self, repo_id: int) -> int:
        """How many releases the repository has published (drafts are not counted)."""
        return self.value("SELECT COUNT(*) FROM releases WHERE repo_id = ? AND draft = 0", repo_id)

    def delete_release(self, release_id: int) -> None:
        """Delete the release."""
        self.execute("DELETE FROM releases WHERE id = ?", release_id)
