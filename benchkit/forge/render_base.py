"""The shapes every other embeds: users and repositories as one viewer sees them, and
Gitea's time format. `Render` (render.py) builds on this base.
"""

import hashlib
import time

from .store import ForgeStore

ZERO_TIME = "0001-01-01T00:00:00Z"
EPOCH = "1970-01-01T00:00:00Z"


def ts(seconds: int | None) -> str | None:
    """Unix seconds as Gitea's RFC 3339 time (UTC), or None."""
    return None if seconds is None else time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(seconds))


class RenderBase:
    """Renders rows for one viewer (the token's user, or None when anonymous)."""

    def __init__(self, store: ForgeStore, root: str, viewer: dict | None) -> None:
        self.store, self.root, self.viewer = store, root, viewer
        self.api = f"{root}api/v1"
        self._users: dict = {}
        self._repos: dict = {}

    # -- people -----------------------------------------------------------------
    def user(self, row: dict | None, *, public: bool = False) -> dict | None:
        """A user as the viewer sees them; `public` as nobody in particular does, which is
        how Gitea renders assignees, comment posters, mergers, commit authors and owners."""
        if row is None:
            return None
        cached = self._users.get((row["id"], public))
        if cached is None:
            cached = self._users[(row["id"], public)] = self._user(row, public)
        return cached

    def user_id(self, uid: int | None, *, public: bool = False) -> dict | None:
        """The user with this id, rendered; None for none (id 0)."""
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
        """Whether the viewer may write to the repository: its owner or a site admin."""
        viewer = self.viewer
        return viewer is not None and bool(viewer["is_admin"] or viewer["id"] == repo["owner_id"])

    def repo(self, row: dict) -> dict:
        """A repository as Gitea's Repository (rendered once per request)."""
        cached = self._repos.get(row["id"])
        if cached is None:
            cached = self._repos[row["id"]] = self._repo(row)
        return cached

    def _repo(self, row: dict) -> dict:
        store = self.store
        owner = store.row("users", row["owner_id"])
        full = f"{owner['login']}/{row['name']}"
        html = f"{self.root}{full}"
        counts = store.open_counts(row["id"])
        branch_count = store.branch_count(row["id"])
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
            "release_counter": store.release_count(row["id"]),
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
        """A repository as Gitea's RepositoryMeta (inside an issue)."""
        owner = self.store.row("users", row["owner_id"])["login"]
        return {"id": row["id"], "name": row["name"], "owner": owner, "full_name": f"{owner}/{row['name']}"}

    def full_name(self, repo: dict) -> str:
        """The repository's OWNER/NAME."""
        return f"{self.store.row('users', repo['owner_id'])['login']}/{repo['name']}"
