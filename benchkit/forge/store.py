"""The forge's storage: one SQLite database (a file, or in memory) behind one lock.

Rows are plain dicts. Times are integer Unix seconds (Gitea's API shows whole seconds).
As in Gitea, an issue's timeline events (close, label, review, ...) are rows of the
comments table with their own type; only type 'comment' is a plain comment.
Repository content follows git's model closely enough for the API: a commit holds its
whole tree (path -> text) and its parents, a branch names a commit, so a pull request's
files, commits and diff derive from its head versus the merge base.
"""

import hashlib
import json
import secrets
import sqlite3
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from .schema import SCHEMA


def present(row: dict | None, what: str) -> dict:
    """A row the caller knows exists: it has just written or checked it, or reaches it by
    a foreign key (a missing one is a bug of ours, answered as a 500)."""
    if row is None:
        raise LookupError(f"{what} is missing")
    return row


def now() -> int:
    return int(time.time())


def token_hash(token: str) -> str:
    # Tokens are kept only as hashes, so a database file never holds one in clear.
    return hashlib.sha256(token.encode()).hexdigest()


def token_id(token: str) -> str:
    """A token's identity in the request log: the first 12 hex digits of its SHA-256,
    which tell tokens apart and never give one away."""
    return token_hash(token)[:12]


def blob_sha(text: str) -> str:
    data = text.encode()
    return hashlib.sha1(b"blob %d\0" % len(data) + data).hexdigest()


class Store:
    def __init__(self, path: str = ":memory:") -> None:
        self.lock = threading.RLock()
        self.db = sqlite3.connect(path, check_same_thread=False, isolation_level=None)
        self.db.row_factory = _dict_row
        if path != ":memory:":
            self.db.execute("PRAGMA journal_mode=WAL")
            self.db.execute("PRAGMA synchronous=NORMAL")
        self.db.executescript(SCHEMA)
        if "scope" not in {c["name"] for c in self.db.execute("PRAGMA table_info(tokens)")}:
            # A database file from before token scopes: its tokens keep every right.
            self.db.execute("ALTER TABLE tokens ADD COLUMN scope TEXT NOT NULL DEFAULT 'all'")
        if "patch" not in {c["name"] for c in self.db.execute("PRAGMA table_info(review_comments)")}:
            # A database file from before review comments kept their diff hunk.
            self.db.execute("ALTER TABLE review_comments ADD COLUMN patch TEXT NOT NULL DEFAULT ''")

    def close(self) -> None:
        with self.lock:
            self.db.close()

    @contextmanager
    def tx(self) -> Iterator["Store"]:
        """One atomic unit of work under the lock (re-entrant: nested calls join it)."""
        with self.lock:
            if self.db.in_transaction:
                yield self
                return
            self.db.execute("BEGIN")
            try:
                yield self
            except BaseException:
                self.db.execute("ROLLBACK")
                raise
            self.db.execute("COMMIT")

    # -- generic access -------------------------------------------------------
    def one(self, sql: str, *args: object) -> dict | None:
        with self.lock:
            return self.db.execute(sql, args).fetchone()

    def get(self, table: str, row_id: int) -> dict | None:
        """The row of `table` with this id, if there is one."""
        return self.one(f"SELECT * FROM {table} WHERE id = ?", row_id)

    def row(self, table: str, row_id: int) -> dict:
        """The row of `table` with this id, which the caller knows exists (it has just
        written it, or reaches it by a foreign key)."""
        return present(self.get(table, row_id), f"{table} row {row_id}")

    def must(self, sql: str, *args: object) -> dict:
        """The one row a query certainly yields (an aggregate's, say)."""
        return present(self.one(sql, *args), "the row of an aggregate")

    def all(self, sql: str, *args: object) -> list[dict]:
        with self.lock:
            return self.db.execute(sql, args).fetchall()

    def value(self, sql: str, *args: object) -> Any:
        row = self.one(sql, *args)
        return next(iter(row.values())) if row else None

    def insert(self, table: str, **values: object) -> int:
        cols = ", ".join(values)
        marks = ", ".join("?" * len(values))
        with self.lock:
            cur = self.db.execute(f"INSERT INTO {table} ({cols}) VALUES ({marks})", tuple(values.values()))
            return cur.lastrowid or 0  # an INSERT always sets it

    def update(self, table: str, key: dict, **values: object) -> None:
        if not values:
            return
        sets = ", ".join(f"{c} = ?" for c in values)
        where = " AND ".join(f"{c} = ?" for c in key)
        with self.lock:
            self.db.execute(f"UPDATE {table} SET {sets} WHERE {where}", (*values.values(), *key.values()))

    def execute(self, sql: str, *args: object) -> None:
        with self.lock:
            self.db.execute(sql, args)

    # -- users and tokens -----------------------------------------------------
    def create_user(self, login: str, *, is_admin: bool = False, token: str | None = None) -> tuple[dict, str]:
        """Create (or reuse) a user and give it a token: the one given, else a random one."""
        with self.tx():
            user = self.user_by_login(login)
            if user is None:
                uid = self.insert("users", login=login, email=f"{login.lower()}@forge.local",
                                  is_admin=int(is_admin), created=now())
                user = self.row("users", uid)
            token = token or secrets.token_hex(20)
            self.execute("INSERT OR REPLACE INTO tokens (hash, user_id, name) VALUES (?, ?, ?)",
                         token_hash(token), user["id"], f"forge-{now()}")
            return user, token

    def create_token(self, login: str, repo: str | None = None) -> str:
        """A new API-only token for an existing user: it reaches the Gitea API, never
        the forge's own /_forge routes (a harness gives one to each agent, which must
        not read or steer the log that audits it); with `repo` (OWNER/NAME), only that
        repository's routes and read-only routes outside /repos (scope `api:OWNER/NAME`)."""
        with self.tx():
            user = self.user_by_login(login)
            if user is None:
                raise KeyError(login)
            token = secrets.token_hex(20)
            self.execute("INSERT INTO tokens (hash, user_id, name, scope) VALUES (?, ?, ?, ?)",
                         token_hash(token), user["id"], f"agent-{now()}",
                         f"api:{repo}" if repo else "api")
            return token

    def revoke_token(self, identity: str) -> bool:
        """Delete the API-only token with this identity (token_id); whether one went."""
        with self.tx():
            found = self.value("SELECT COUNT(*) FROM tokens WHERE substr(hash, 1, 12) = ? "
                               "AND scope LIKE 'api%'", identity)
            self.execute("DELETE FROM tokens WHERE substr(hash, 1, 12) = ? AND scope LIKE 'api%'",
                         identity)
            return bool(found)

    def api_tokens(self) -> list[dict]:
        """Every API-only token: its identity, user and the repository it is bound to."""
        rows = self.all("SELECT substr(t.hash, 1, 12) AS token_id, u.login AS login, t.scope "
                        "AS scope FROM tokens t JOIN users u ON u.id = t.user_id "
                        "WHERE t.scope LIKE 'api%' ORDER BY t.rowid")
        return [{"token_id": r["token_id"], "login": r["login"],
                 "repo": r["scope"][4:] or None} for r in rows]

    def token_scope(self, token: str) -> str | None:
        return self.value("SELECT scope FROM tokens WHERE hash = ?", token_hash(token))

    def user_by_login(self, login: str) -> dict | None:
        return self.one("SELECT * FROM users WHERE login = ?", login)

    def user_by_id(self, uid: int) -> dict | None:
        return self.get("users", uid)

    def user_by_token(self, token: str) -> dict | None:
        return self.one("SELECT users.* FROM tokens JOIN users ON users.id = tokens.user_id WHERE hash = ?",
                        token_hash(token))

    # -- repositories ---------------------------------------------------------
    def repo(self, owner: str, name: str) -> dict | None:
        return self.one("SELECT repos.* FROM repos JOIN users ON users.id = repos.owner_id "
                        "WHERE users.login = ? AND repos.name = ?", owner, name)

    def delete_repo(self, repo_id: int) -> None:
        with self.tx():
            issue_ids = "SELECT id FROM issues WHERE repo_id = ?"
            for table, column in (("issue_labels", "issue_id"), ("issue_assignees", "issue_id"),
                                  ("issue_dependencies", "issue_id"), ("comments", "issue_id"),
                                  ("pulls", "issue_id"), ("reviews", "issue_id"),
                                  ("review_comments", "issue_id"), ("issue_pins", "issue_id")):
                self.execute(f"DELETE FROM {table} WHERE {column} IN ({issue_ids})", repo_id)
            for table in ("issues", "labels", "milestones", "branches", "commits", "releases", "commit_statuses"):
                self.execute(f"DELETE FROM {table} WHERE repo_id = ?", repo_id)
            self.execute("DELETE FROM repos WHERE id = ?", repo_id)

    def delete_issue(self, issue_id: int) -> None:
        """An issue (or pull request) and everything hanging on it; its number is not reused."""
        with self.tx():
            for table in ("issue_labels", "issue_assignees", "comments", "pulls", "reviews", "review_comments",
                          "issue_pins"):
                self.execute(f"DELETE FROM {table} WHERE issue_id = ?", issue_id)
            self.execute("DELETE FROM issue_dependencies WHERE issue_id = ? OR blocker_id = ?", issue_id, issue_id)
            self.execute("DELETE FROM issues WHERE id = ?", issue_id)

    def next_number(self, repo_id: int) -> int:
        number = self.value("SELECT next_number FROM repos WHERE id = ?", repo_id)
        self.update("repos", {"id": repo_id}, next_number=number + 1, updated=now())
        return number

    # -- content: commits, trees, branches --------------------------------------
    def commit(self, repo_id: int, parents: list[str], tree: dict, message: str, author_id: int) -> dict:
        created = now()
        payload = json.dumps([parents, tree, message, author_id, created, secrets.token_hex(4)])
        sha = hashlib.sha1(payload.encode()).hexdigest()
        row = dict(sha=sha, repo_id=repo_id, parents=json.dumps(parents), message=message,
                   author_id=author_id, created=created, tree=json.dumps(tree, sort_keys=True))
        self.insert("commits", **row)
        return present(self.get_commit(repo_id, sha), f"commit {sha}")

    def get_commit(self, repo_id: int, sha: str) -> dict | None:
        row = self.one("SELECT * FROM commits WHERE repo_id = ? AND sha = ?", repo_id, sha)
        if row:
            row["parents"] = json.loads(row["parents"])
            row["tree"] = json.loads(row["tree"])
        return row

    def branch(self, repo_id: int, name: str) -> dict | None:
        return self.one("SELECT * FROM branches WHERE repo_id = ? AND name = ?", repo_id, name)

    def branches(self, repo_id: int) -> list[dict]:
        # Gitea lists the most recently committed branch first, and branches committed in
        # the same second by name (models/git/branch_list.go: commit_time DESC, name ASC).
        return self.all("SELECT branches.* FROM branches LEFT JOIN commits ON commits.repo_id = branches.repo_id "
                        "AND commits.sha = branches.sha WHERE branches.repo_id = ? "
                        "ORDER BY commits.created DESC, branches.name ASC", repo_id)

    def set_branch(self, repo_id: int, name: str, sha: str) -> None:
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

    # -- issues -----------------------------------------------------------------
    def issue(self, repo_id: int, number: int) -> dict | None:
        return self.one("SELECT * FROM issues WHERE repo_id = ? AND number = ?", repo_id, number)

    def issue_by_id(self, issue_id: int) -> dict | None:
        return self.get("issues", issue_id)

    def touch(self, issue_id: int, **values: object) -> None:
        self.update("issues", {"id": issue_id}, updated=now(), **values)

    def event(self, issue_id: int, actor_id: int, kind: str, body: str = "", **data: object) -> None:
        """Record a timeline event of the issue (a comment row of another type)."""
        stamp = now()
        self.insert("comments", issue_id=issue_id, poster_id=actor_id, body=body, created=stamp, updated=stamp,
                    type=kind, data=json.dumps(data))

    def issue_labels(self, issue_id: int) -> list[dict]:
        return self.all("SELECT labels.* FROM issue_labels JOIN labels ON labels.id = issue_labels.label_id "
                        "WHERE issue_id = ? ORDER BY labels.name", issue_id)

    def add_labels(self, issue_id: int, labels: list[dict], actor_id: int | None = None) -> None:
        """Attach labels; with an actor, each newly added one is a timeline event."""
        present = {label["id"] for label in self.issue_labels(issue_id)}
        for label in labels:
            if label["exclusive"] and "/" in label["name"]:
                self._drop_scope(issue_id, label, actor_id)
            if label["id"] not in present:
                self.execute("INSERT INTO issue_labels (issue_id, label_id) VALUES (?, ?)", issue_id, label["id"])
                present.add(label["id"])
                if actor_id:
                    self.event(issue_id, actor_id, "label", "1", label_id=label["id"])
        self.touch(issue_id)

    def remove_label(self, issue_id: int, label_id: int, actor_id: int) -> None:
        if self.one("SELECT 1 FROM issue_labels WHERE issue_id = ? AND label_id = ?", issue_id, label_id):
            self.execute("DELETE FROM issue_labels WHERE issue_id = ? AND label_id = ?", issue_id, label_id)
            self.event(issue_id, actor_id, "label", "", label_id=label_id)
        self.touch(issue_id)

    def _drop_scope(self, issue_id: int, label: dict, actor_id: int | None) -> None:
        # An exclusive scoped label (scope/value) replaces the issue's others in its scope.
        scope = label["name"].rsplit("/", 1)[0] + "/"
        for other in self.issue_labels(issue_id):
            if other["id"] != label["id"] and other["name"].startswith(scope):
                self.remove_label(issue_id, other["id"], actor_id or 0)

    def clear_labels(self, issue_id: int, actor_id: int) -> None:
        for label in self.issue_labels(issue_id):
            self.remove_label(issue_id, label["id"], actor_id)

    def assignees(self, issue_id: int) -> list[dict]:
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
        return self.all("SELECT * FROM comments WHERE issue_id = ? ORDER BY created, id", issue_id)

    def pull(self, issue_id: int) -> dict:
        """The pull request behind an issue that is one."""
        return present(self.one("SELECT * FROM pulls WHERE issue_id = ?", issue_id), f"pull of issue {issue_id}")


def _dict_row(cursor: sqlite3.Cursor, row: tuple) -> dict:
    return {col[0]: value for col, value in zip(cursor.description, row, strict=True)}
