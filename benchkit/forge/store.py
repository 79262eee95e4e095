"""The forge's storage: one SQLite database (a file, or in memory) behind one lock,
and every query the forge makes, as methods of one ForgeStore. Its parts, one per idea:
database.py (the connection and generic access), repo_store.py (repositories and
their content), issue_store.py (issues and what hangs on them), label_store.py
(labels and milestones), pull_store.py (pull requests and reviews); this module adds
users and tokens, and deleting what spans them all.
"""

import hashlib
import secrets

from .database import now
from .label_store import LabelStore
from .pull_store import PullStore
from .repo_store import RepoStore

PASSWORD = "password"  # the scope of a user's password, kept (hashed) among its tokens


def token_hash(token: str) -> str:
    """The SHA-256 of a token: tokens are kept only as hashes, so a database file never
    holds one in clear."""
    return hashlib.sha256(token.encode()).hexdigest()


def token_id(token: str) -> str:
    """A token's identity in the request log: the first 12 hex digits of its SHA-256,
    which tell tokens apart and never give one away."""
    return token_hash(token)[:12]


class ForgeStore(LabelStore, PullStore, RepoStore):
    """The forge's storage: every row the forge serves, and the queries it serves them by."""

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

    def register_user(self, login: str, email: str, password: str, full_name: str = "") -> dict | None:
        """A new (non-admin) user who signs in with `password` (basic auth only, as a
        password on Gitea); None when the login is taken."""
        with self.tx():
            if self.user_by_login(login) is not None:
                return None
            uid = self.insert("users", login=login, email=email, full_name=full_name, created=now())
            self.execute("INSERT INTO tokens (hash, user_id, name, scope) VALUES (?, ?, ?, ?)",
                         token_hash(f"{login}:{password}"), uid, "password", PASSWORD)
            return self.row("users", uid)

    def user_by_password(self, login: str, password: str) -> dict | None:
        """The user `login` if `password` is its password."""
        return self.one("SELECT users.* FROM tokens JOIN users ON users.id = tokens.user_id "
                        "WHERE hash = ? AND scope = ?", token_hash(f"{login}:{password}"), PASSWORD)

    def delete_user(self, uid: int) -> None:
        """A user, its tokens, and (purged) every repository it owns."""
        with self.tx():
            for repo in self.all("SELECT id FROM repos WHERE owner_id = ?", uid):
                self.delete_repo(repo["id"])
            self.execute("DELETE FROM tokens WHERE user_id = ?", uid)
            self.execute("DELETE FROM users WHERE id = ?", uid)

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
        """The scope of a token ('all', 'api' or 'api:OWNER/NAME'), or None for no token."""
        return self.value("SELECT scope FROM tokens WHERE hash = ?", token_hash(token))

    def user_by_login(self, login: str) -> dict | None:
        """The user with this login (without case), if any."""
        return self.one("SELECT * FROM users WHERE login = ?", login)

    def user_by_id(self, uid: int) -> dict | None:
        """The user with this id, if any."""
        return self.get("users", uid)

    def user_by_token(self, token: str) -> dict | None:
        """The user a token belongs to, if any."""
        return self.one("SELECT users.* FROM tokens JOIN users ON users.id = tokens.user_id WHERE hash = ? "
                        "AND scope != ?", token_hash(token), PASSWORD)

    def user_by_email(self, email: str) -> dict | None:
        """The user with this e-mail (without case), if any."""
        return self.one("SELECT * FROM users WHERE email = ? COLLATE NOCASE", email)

    def users(self) -> list[dict]:
        """Every user, oldest first."""
        return self.all("SELECT * FROM users ORDER BY id")

    # -- deleting what spans the parts ---------------------------------------------
    def delete_repo(self, repo_id: int) -> None:
        """A repository and everything in it."""
        with self.tx():
            issue_ids = "SELECT id FROM issues WHERE repo_id = ?"
            for table, column in (("issue_labels", "issue_id"), ("issue_assignees", "issue_id"),
                                  ("issue_dependencies", "issue_id"), ("comments", "issue_id"),
                                  ("pulls", "issue_id"), ("reviews", "issue_id"),
                                  ("review_comments", "issue_id"), ("issue_pins", "issue_id")):
                self.execute(f"DELETE FROM {table} WHERE {column} IN ({issue_ids})", repo_id)
            for table in ("issues", "labels", "milestones", "branches", "commits", "releases", "commit_statuses",
                          "tags"):
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
