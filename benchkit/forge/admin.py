"""The forge's own admin routes under /_forge (an admin's token only): the request log,
users and tokens, fault injection and the indexer lag, for harnesses in other processes.
"""

from starlette.responses import Response

from .context import Ctx
from .store import token_id
from .web import ApiError, F, invalid, respond, route


def request_log(ctx: Ctx) -> Response:
    """The request log after the sequence number `since`: what an audit reads."""
    try:
        since = int(ctx.query("since", "0") or 0)
    except ValueError:
        raise invalid("since must be a sequence number") from None
    entries = ctx.forge.log.entries(since)
    identity = ctx.query("token_id")  # one token's requests only (an agent's audit)
    return respond([e for e in entries if e["token_id"] == identity] if identity else entries)


def create_user(ctx: Ctx) -> Response:
    """Create (or reuse) a user and answer with a new token for it."""
    user, token = ctx.store.create_user(ctx.body["name"], is_admin=bool(ctx.body.get("admin")))
    return respond({"login": user["login"], "token": token}, 201)


def list_tokens(ctx: Ctx) -> Response:
    """The API-only tokens (never their values): what `benchkit gc` may revoke."""
    return respond(ctx.store.api_tokens())


def create_token(ctx: Ctx) -> Response:
    """An API-only token for a user (the caller by default), e.g. one agent's own: the
    log then tells its requests apart, and it cannot reach these admin routes; with
    `repo` (OWNER/NAME) it reaches that repository alone (an agent's own trial)."""
    login = ctx.body.get("user") or ctx.caller["login"]
    try:
        token = ctx.store.create_token(login, ctx.body.get("repo") or None)
    except KeyError:
        raise invalid(f"user {login!r} does not exist") from None
    return respond({"login": login, "token": token, "token_id": token_id(token)}, 201)


def revoke_token(ctx: Ctx, identity: str) -> Response:
    """Revoke an API-only token by its identity (the token_id the log shows)."""
    if not ctx.store.revoke_token(identity):
        raise ApiError(404, f"no API-only token {identity}")
    return respond({"ok": True})


FAULT = [F("method"), F("path", required=True), F("status", int), F("delay", str), F("drop", bool),
         F("times", int)]


def inject_fault(ctx: Ctx) -> Response:
    """Arm a fault on the requests a method and a path pattern match."""
    body = ctx.body
    try:
        delay = float(body.get("delay") or 0)
    except ValueError:
        raise invalid("delay must be a number of seconds") from None
    status = None if body.get("drop") or (delay and body.get("status") is None) else body.get("status") or 500
    ctx.forge.faults.inject(body.get("method") or "*", body["path"], status=status, delay=delay,
                            drop=bool(body.get("drop")), times=body.get("times") or 1)
    return respond({"ok": True}, 201)


def clear_faults(ctx: Ctx) -> Response:
    """Disarm every injected fault."""
    ctx.forge.faults.clear()
    return respond({"ok": True})


def set_index_lag(ctx: Ctx) -> Response:
    """Set how long a write takes to reach keyword search."""
    try:
        ctx.forge.indexer.set_lag(float(ctx.body["seconds"]))
    except ValueError:
        raise invalid("seconds must be a number") from None
    return respond({"seconds": ctx.forge.indexer.lag})


ROUTES = (
    route("GET", "/_forge/requests", request_log, absolute=True, admin=True),
    route("POST", "/_forge/users", create_user, absolute=True, admin=True,
          body=[F("name", required=True), F("admin", bool)], struct="ForgeUser"),
    route("GET", "/_forge/tokens", list_tokens, absolute=True, admin=True),
    route("POST", "/_forge/tokens", create_token, absolute=True, admin=True, body=[F("user"), F("repo")],
          struct="ForgeToken"),
    route("DELETE", "/_forge/tokens/{identity}", revoke_token, absolute=True, admin=True),
    route("POST", "/_forge/faults", inject_fault, absolute=True, admin=True, body=FAULT, struct="ForgeFault"),
    route("DELETE", "/_forge/faults", clear_faults, absolute=True, admin=True),
    route("PUT", "/_forge/index-lag", set_index_lag, absolute=True, admin=True,
          body=[F("seconds", str, required=True)], struct="ForgeIndexLag"),
)
