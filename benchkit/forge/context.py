"""What a forge instance holds (ForgeState) and what one request's handler sees (Ctx):
the seam between the app, which builds them, and the resource modules, which use them.
"""

from starlette.requests import Request

from .faults import Faults
from .githttp import Materialiser
from .indexer import Indexer
from .render import Render
from .requestlog import RequestLog
from .store import ForgeStore
from .web import GITEA_VERSION, INT64_MAX, ApiError, Body, not_found


class ForgeState:
    """Everything one forge instance holds; the app and the Python API share it."""

    def __init__(self, store: ForgeStore, root: str = "http://127.0.0.1/", index_lag: float = 0.0,
                 self_review: bool = False) -> None:
        self.store = store
        self.root = root
        self.self_review = self_review  # Gitea refuses it; a test host may allow it
        self.version = GITEA_VERSION
        self.indexer = Indexer(index_lag)
        self.faults = Faults()
        self.log = RequestLog()
        self.git = Materialiser(store)  # clones: it makes no directory until the first one
        self._reindex_all()

    def close(self) -> None:
        """Close the database and remove the git clones."""
        self.store.close()
        self.git.close()

    def _reindex_all(self) -> None:
        # A forge reopened on a database file starts with its issues already indexed.
        for issue_id in self.store.issue_ids():
            self.reindex(issue_id, settled=True)

    def reindex(self, issue_id: int, *, settled: bool = False) -> None:
        """Queue the issue's title, body and comments for keyword search."""
        issue = self.store.issue_by_id(issue_id)
        text = None
        if issue is not None:
            text = "\n".join([issue["title"], issue["body"], *(c["body"] for c in self.store.comments(issue_id))])
        self.indexer.index(issue_id, text, settled=settled)


class Ctx:
    """What a handler sees: the request, the caller, the bound body, the store."""

    def __init__(self, forge: ForgeState, request: Request, user: dict | None, body: Body | None) -> None:
        self.forge, self.request, self.user = forge, request, user
        self.body = body if body is not None else Body({}, set())  # a route that binds none reads none
        self.store = forge.store
        self.root = forge.root
        self.render = Render(self.store, self.root, user)

    @property
    def caller(self) -> dict:
        """The authenticated user, on a route that requires a token (every write does)."""
        if self.user is None:
            raise ApiError(401, "token is required")
        return self.user

    def query(self, name: str, default: str = "") -> str:
        """A query parameter, or `default` when the request has none."""
        return self.request.query_params.get(name, default)

    def query_int(self, name: str) -> int:
        """Gitea's FormInt64: 0 for a missing or unparsable value."""
        try:
            value = int(self.query(name, "0") or 0)
        except ValueError:
            return 0
        return value if abs(value) <= INT64_MAX else 0

    def query_list(self, name: str) -> list[str]:
        """Every value of a repeated query parameter."""
        return self.request.query_params.getlist(name)

    def repo(self, owner: str, name: str, *, write: bool = False) -> dict:
        """The repository, or 404 when it is missing or hidden from the caller."""
        repo = self.store.repo(owner, name)
        if repo is None or (repo["private"] and not self.render.can_write(repo)):
            raise not_found()
        if write and not self.render.can_write(repo):
            raise ApiError(403, "user should have permission to write to the repository")
        return repo

    def can_write(self, repo: dict) -> bool:
        """Whether the caller may write to the repository."""
        return self.render.can_write(repo)

    def find(self, table: str, repo: dict, key: str, name_column: str | None = None) -> dict:
        """The repository's row of `table` whose id is `key`, else (with `name_column`) whose
        name is; 404 when there is none."""
        row = None
        if key.isdigit() and int(key) <= INT64_MAX:
            row = self.store.in_repo(table, repo["id"], "id", int(key))
        if row is None and name_column:
            row = self.store.in_repo(table, repo["id"], name_column, key)
        if row is None:
            raise not_found()
        return row

    def issue(self, repo: dict, number: int) -> dict:
        """The repository's issue (or pull request) by number, else 404."""
        issue = self.store.issue(repo["id"], number)
        if issue is None:
            raise not_found()
        return issue

    def reindex(self, issue_id: int) -> None:
        """Queue the issue for keyword search again after a write."""
        self.forge.reindex(issue_id)
