"""The forge's ASGI application: Starlette routes from the route table, wrapped in the
forge's own middleware (request log, fault injection, Gitea's authentication).
"""

import asyncio
import base64
import binascii
import re
import sys
import time
import traceback

from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

# These register their routes on import; pull_branches comes last, so that its
# /pulls/{base}/{head} shadows none of the /pulls/{index}/... routes.
from . import (  # noqa: F401
    admin,
    githttp,
    issues,
    pull_branches,
    pulls,
    relations,
    repos,
    review_requests,
    swagger,
)
from .faults import Faults
from .indexer import Indexer
from .render import Render
from .requestlog import RequestLog
from .store import Store, token_id
from .web import GITEA_VERSION, INT64_MAX, ROUTES, ApiError, bind, not_found, respond

REPEATED_SLASHES = re.compile("/{2,}")


class ForgeState:
    """Everything one forge instance holds; the app and the Python API share it."""

    def __init__(self, store: Store, root: str = "http://127.0.0.1/", index_lag: float = 0.0,
                 self_review: bool = False):
        self.store = store
        self.root = root
        self.self_review = self_review  # Gitea refuses it; a test host may allow it
        self.version = GITEA_VERSION
        self.indexer = Indexer(index_lag)
        self.faults = Faults()
        self.log = RequestLog()
        self.git = None  # the smart HTTP materialiser, once the app is built
        self._reindex_all()

    def _reindex_all(self):
        # A forge reopened on a database file starts with its issues already indexed.
        for issue in self.store.all("SELECT id FROM issues"):
            self.reindex(issue["id"], settled=True)

    def reindex(self, issue_id: int, *, settled: bool = False):
        """Queue the issue's title, body and comments for keyword search."""
        issue = self.store.issue_by_id(issue_id)
        text = None
        if issue is not None:
            text = "\n".join([issue["title"], issue["body"], *(c["body"] for c in self.store.comments(issue_id))])
        self.indexer.index(issue_id, text, settled=settled)


class Ctx:
    """What a handler sees: the request, the caller, the bound body, the store."""

    def __init__(self, forge: ForgeState, request: Request, user: dict | None, body):
        self.forge, self.request, self.user, self.body = forge, request, user, body
        self.store = forge.store
        self.root = forge.root
        self.render = Render(self.store, self.root, user)

    def query(self, name: str, default: str = "") -> str:
        return self.request.query_params.get(name, default)

    def query_int(self, name: str) -> int:
        """Gitea's FormInt64: 0 for a missing or unparsable value."""
        try:
            value = int(self.query(name, "0") or 0)
        except ValueError:
            return 0
        return value if abs(value) <= INT64_MAX else 0

    def query_list(self, name: str) -> list[str]:
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
        return self.render.can_write(repo)

    def issue(self, repo: dict, number: int) -> dict:
        issue = self.store.issue(repo["id"], number)
        if issue is None:
            raise not_found()
        return issue

    def reindex(self, issue_id: int):
        self.forge.reindex(issue_id)


def endpoint(forge: ForgeState, spec):
    async def run(request: Request) -> Response:
        user = request.scope.get("forge.user")
        try:
            if spec.auth and user is None:
                raise ApiError(401, "token is required")
            if spec.admin and not (user["is_admin"] and request.scope.get("forge.token_scope") == "all"):
                raise ApiError(403, "You do not have the required permission: the forge's admin routes")
            body = await bind(request, spec.body, spec.struct) if spec.body is not None else None
            ctx = Ctx(forge, request, user, body)
            with forge.store.tx():
                return spec.handler(ctx, **path_ids(request.path_params))
        except ApiError as error:
            return error.response(forge.root)
        except Exception:  # a bug of ours: answer as Gitea's production 500 does, and say why on stderr
            traceback.print_exc(file=sys.stderr)
            return respond({"message": "", "url": f"{forge.root}api/swagger"}, 500)
    return run


def path_ids(params: dict) -> dict:
    """Gitea reads a path id with ParsePathParamInt64, which clamps a number outside int64
    to its maximum (and ignores the error): no row has that id, so it is not found."""
    return {k: INT64_MAX if isinstance(v, int) and v > INT64_MAX else v for k, v in params.items()}


def build_app(forge: ForgeState):
    routes = [Route(spec.url_path, endpoint(forge, spec), methods=[spec.method]) for spec in ROUTES]
    routes += githttp.routes(forge)  # after the API's, which never start with /OWNER/NAME

    async def missing(request, exc):
        status = getattr(exc, "status_code", 404)
        if status == 405:
            return Response(b"", 405)
        # Gitea's router answers an unknown route with Go's plain-text 404 page.
        return Response(b"404 page not found\n", 404, media_type="text/plain; charset=utf-8")

    app = Starlette(routes=routes, exception_handlers={404: missing, 405: missing})
    return ForgeMiddleware(app, forge)


def reaches(token_scope: str | None, method: str, path: str) -> bool:
    """Whether a token bound to one repository (scope `api:OWNER/NAME`, an agent's own
    trial) may make this request: anything on that repository, and reads outside
    /repos/ (the user, the version, settings); never another repository, never a write
    elsewhere (creating or deleting repositories)."""
    if not token_scope or not token_scope.startswith("api:"):
        return True
    own = f"/api/v1/repos/{token_scope[4:]}".lower()
    lowered = path.lower()
    if lowered == own or lowered.startswith(own + "/"):
        return True
    reading = method in ("GET", "HEAD")
    searches = ("/api/v1/repos/search", "/api/v1/repos/issues/search")
    return reading and (not lowered.startswith("/api/v1/repos/") or lowered in searches)


class ForgeMiddleware:
    """Request log, then faults, then authentication, around the Starlette app. The log
    names the token a request authenticated with by its identity (token_id), never
    the token, so an audit can take exactly the requests one token made."""

    def __init__(self, app, forge: ForgeState):
        self.app, self.forge = app, forge

    async def __call__(self, scope, receive, send):
        if scope["type"] != "http":
            return await self.app(scope, receive, send)
        started, clock, sent_path = time.time(), time.perf_counter(), scope["path"]
        counts = {"in": 0, "out": 0, "status": 0, "logged": sent_path.startswith("/_forge")}
        # Before faults, so a request a fault answers is still known by its token.
        scope["forge.auth"] = self._authenticate(scope)
        token = scope["forge.auth"][1]

        def record():
            if counts["logged"]:
                return
            counts["logged"] = True
            self.forge.log.record(
                method=scope["method"], path=sent_path, status=counts["status"],
                user_agent=dict(scope["headers"]).get(b"user-agent", b"").decode("latin-1"),
                token_id=token_id(token) if token else None,
                bytes_in=counts["in"], bytes_out=counts["out"], started=started,
                duration=time.perf_counter() - clock)

        async def counting_receive():
            message = await receive()
            counts["in"] += len(message.get("body", b""))
            return message

        async def counting_send(message):
            if message["type"] == "http.response.start":
                counts["status"] = message["status"]
            elif message["type"] == "http.response.body":
                counts["out"] += len(message.get("body", b""))
                if not message.get("more_body"):
                    record()  # before the last byte leaves: a client that has its answer finds it logged
            await send(message)

        scope["forge.raw_receive"] = receive  # uvicorn's own, whose transport a dropped fault closes
        try:
            await self._handle(scope, counting_receive, counting_send)
        finally:
            record()  # a dropped connection or a crash still leaves its entry

    async def _handle(self, scope, receive, send):
        # Gitea routes "/issues/" and "//issues" as "/issues" (its stripSlashes middleware).
        scope["path"] = REPEATED_SLASHES.sub("/", scope["path"]).rstrip("/") or "/"
        fault = self.forge.faults.take(scope["method"], scope["path"])
        if fault is not None:
            if fault.delay:
                await asyncio.sleep(fault.delay)
            if fault.drop:
                return await _drop(scope["forge.raw_receive"], send)
            if fault.status is not None:
                body = {"message": "injected fault", "url": f"{self.forge.root}api/swagger"}
                return await respond(body, fault.status)(scope, receive, send)
        if scope["path"].startswith("/api/") or scope["path"].startswith("/_forge"):
            user, token, warning, error = scope["forge.auth"]
            if error is not None:
                return await error.response(self.forge.root)(scope, receive, send)
            scope["forge.user"] = user
            scope["forge.token_scope"] = self.forge.store.token_scope(token) if token else None
            if not reaches(scope["forge.token_scope"], scope["method"], scope["path"]):
                body = {"message": "token does not have access to this resource: it is bound to "
                                   f"the repository {scope['forge.token_scope'][4:]}"}
                return await respond(body, 403)(scope, receive, send)
            if warning:
                send = _with_header(send, b"x-gitea-warning", warning)
        await self.app(scope, receive, send)

    def _authenticate(self, scope):
        """(user or None, the token it authenticated with, deprecation warning, error)
        from Gitea's accepted credentials."""
        store = self.forge.store
        headers = dict(scope["headers"])
        bad = (None, None, None, ApiError(401, "invalid username, password or token"))
        header = headers.get(b"authorization", b"").decode("latin-1").strip()
        if header:
            scheme, _, value = header.partition(" ")
            scheme, value = scheme.lower(), value.strip()
            if scheme in ("token", "bearer"):
                user = store.user_by_token(value)
                return (user, value, None, None) if user else bad
            if scheme == "basic":
                user, token = _basic_user(store, value)
                return (user, token, None, None) if user else bad
        query = Request(scope).query_params
        token = query.get("token") or query.get("access_token")
        if token:
            user = store.user_by_token(token)
            if user is None:
                return bad
            return user, token, b"token and access_token API authentication is deprecated", None
        return None, None, None, None


def _basic_user(store: Store, value: str):
    """(user, token) from basic credentials, or (None, None)."""
    try:
        login, _, secret = base64.b64decode(value).decode().partition(":")
    except (binascii.Error, UnicodeDecodeError):
        return None, None
    user = store.user_by_token(secret) if secret else None
    if user is not None and user["login"].lower() == login.lower():
        return user, secret
    if secret in ("", "x-oauth-basic"):  # the token given as the user name
        user = store.user_by_token(login)
        return (user, login) if user else (None, None)
    return None, None


def _with_header(send, name: bytes, value: bytes):
    async def wrapped(message):
        if message["type"] == "http.response.start":
            message = {**message, "headers": [*message.get("headers", []), (name, value)]}
        await send(message)
    return wrapped


async def _drop(receive, send):
    """Close the connection without an answer (what a crashed or overloaded host does)."""
    cycle = getattr(receive, "__self__", None)
    transport = getattr(cycle, "transport", None)
    if transport is not None:
        transport.close()
        return
    # Not on uvicorn's protocol objects: promise a body and break it off.
    await send({"type": "http.response.start", "status": 200, "headers": [(b"content-length", b"100")]})
    raise ConnectionAbortedError("injected dropped connection")
