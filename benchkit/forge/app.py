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
from collections.abc import Awaitable, Callable

from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from . import githttp
from .context import Ctx, ForgeState
from .routes import ROUTES
from .store import ForgeStore, token_id
from .web import INT64_MAX, ApiError, RouteSpec, bind, respond

REPEATED_SLASHES = re.compile("/{2,}")
# (user or None, the token it authenticated with, deprecation warning, error)
Auth = tuple[dict | None, str | None, bytes | None, ApiError | None]


def endpoint(forge: ForgeState, spec: RouteSpec) -> Callable[[Request], Awaitable[Response]]:
    """The Starlette endpoint of one route: checks the token, binds the body, runs the handler
    in one transaction, and answers errors as Gitea does."""
    async def run(request: Request) -> Response:
        user = request.scope.get("forge.user")
        try:
            if spec.auth and user is None:
                raise ApiError(401, "token is required")
            if spec.admin and not (user is not None and user["is_admin"] and request.scope.get("forge.token_scope") == "all"):
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


def build_app(forge: ForgeState) -> "ForgeMiddleware":
    """The forge's ASGI app: the route table, then git's smart HTTP, inside the forge's
    middleware."""
    routes = [Route(spec.url_path, endpoint(forge, spec), methods=[spec.method]) for spec in ROUTES]
    routes += githttp.routes(forge.store, forge.git)  # after the API's, which never start with /OWNER/NAME

    async def missing(request: Request, exc: Exception) -> Response:
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

    def __init__(self, app: ASGIApp, forge: ForgeState) -> None:
        self.app, self.forge = app, forge

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            return await self.app(scope, receive, send)
        started, clock, sent_path = time.time(), time.perf_counter(), scope["path"]
        counts = {"in": 0, "out": 0, "status": 0, "logged": sent_path.startswith("/_forge")}
        # Before faults, so a request a fault answers is still known by its token.
        scope["forge.auth"] = self._authenticate(scope)
        token = scope["forge.auth"][1]

        def record() -> None:
            if counts["logged"]:
                return
            counts["logged"] = True
            self.forge.log.record(
                method=scope["method"], path=sent_path, status=counts["status"],
                user_agent=dict(scope["headers"]).get(b"user-agent", b"").decode("latin-1"),
                token_id=token_id(token) if token else None,
                bytes_in=counts["in"], bytes_out=counts["out"], started=started,
                duration=time.perf_counter() - clock)

        async def counting_receive() -> Message:
            message = await receive()
            counts["in"] += len(message.get("body", b""))
            return message

        async def counting_send(message: Message) -> None:
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

    async def _handle(self, scope: Scope, receive: Receive, send: Send) -> None:
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

    def _authenticate(self, scope: Scope) -> Auth:
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


def _basic_user(store: ForgeStore, value: str) -> tuple[dict | None, str | None]:
    """(user, token) from basic credentials, or (None, None)."""
    try:
        login, _, secret = base64.b64decode(value).decode().partition(":")
    except (binascii.Error, UnicodeDecodeError):
        return None, None
    user = store.user_by_token(secret) if secret else None
    if user is not None and user["login"].lower() == login.lower():
        return user, secret
    user = store.user_by_password(login, secret) if secret else None
    if user is not None:  # its password: the request is known by it, as by a token
        return user, f"{login}:{secret}"
    if secret in ("", "x-oauth-basic"):  # the token given as the user name
        user = store.user_by_token(login)
        return (user, login) if user else (None, None)
    return None, None


def _with_header(send: Send, name: bytes, value: bytes) -> Send:
    async def wrapped(message: Message) -> None:
        if message["type"] == "http.response.start":
            message = {**message, "headers": [*message.get("headers", []), (name, value)]}
        await send(message)
    return wrapped


async def _drop(receive: Receive, send: Send) -> None:
    """Close the connection without an answer (what a crashed or overloaded host does)."""
    cycle = getattr(receive, "__self__", None)
    transport = getattr(cycle, "transport", None)
    if transport is not None:
        transport.close()
        return
    # Not on uvicorn's protocol objects: promise a body and break it off.
    await send({"type": "http.response.start", "status": 200, "headers": [(b"content-length", b"100")]})
    raise ConnectionAbortedError("injected dropped connection")
