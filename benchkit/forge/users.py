"""Routes for the server (its version and API settings) and its users, with Gitea's
admin routes for users and a user's own tokens (what a run's own user needs: created,
given a token for its basic credentials, its full name edited, deleted with its
repositories)."""

import re

from starlette.responses import Response

from benchkit.state import UNMODELLED_HEADER

from .context import Ctx
from .web import ApiError, F, empty, invalid, listing, not_found, respond, route

LOGIN = re.compile(r"^[A-Za-z0-9_.-]+$")
# What of a repository's state (benchkit.state) the forge has no route to change: a
# snapshot of a forge leaves them out, and a task that needs one runs on Gitea only.
UNMODELLED = ("topics", "protections", "webhooks", "collaborators", "deploy_keys", "wiki",
              "reactions", "subscribed", "tracked_times", "attachments", "locked")


def version(ctx: Ctx) -> Response:
    """The Gitea version the forge is held to, and what it does not model."""
    return respond({"version": ctx.forge.version}, headers={UNMODELLED_HEADER: ",".join(UNMODELLED)})


def api_settings(ctx: Ctx) -> Response:
    """Gitea's default API settings (paging and size limits)."""
    return respond({"max_response_items": 50, "default_paging_num": 30, "default_git_trees_per_page": 1000,
                    "default_max_blob_size": 10485760, "default_max_response_size": 104857600})


def current_user(ctx: Ctx) -> Response:
    """The caller."""
    return respond(ctx.render.user(ctx.user))


def search_users(ctx: Ctx) -> Response:
    """Users whose login or full name holds `q`."""
    keyword = ctx.query("q").lower()
    rows = [u for u in ctx.store.users() if keyword in u["login"].lower()
            or keyword in u["full_name"].lower()]
    return listing(ctx, rows, ctx.render.user, wrap=lambda data: {"ok": True, "data": data})


def get_user(ctx: Ctx, username: str) -> Response:
    """One user, by login."""
    user = ctx.store.user_by_login(username)
    if user is None:
        raise not_found()
    return respond(ctx.render.user(user))


def admin_list_users(ctx: Ctx) -> Response:
    """Every user (a site admin's route)."""
    return listing(ctx, ctx.store.users(), ctx.render.user)


CREATE_USER = [F("username", required=True), F("email", required=True), F("password"), F("full_name"),
               F("must_change_password", bool), F("restricted", bool), F("visibility"), F("login_name"),
               F("send_notify", bool)]


def admin_create_user(ctx: Ctx) -> Response:
    """A new user who signs in with the password given (a site admin's route)."""
    login, password = ctx.body["username"], ctx.body.get("password") or ""
    if not LOGIN.match(login) or len(login) > 40:
        raise invalid(f"[Username]: invalid user name {login!r}")
    if not password:
        raise ApiError(400, "PasswordIsRequired")
    user = ctx.store.register_user(login, ctx.body["email"], password, ctx.body.get("full_name") or "")
    if user is None:
        raise invalid(f"user already exists [name: {login}]")
    return respond(ctx.render.user(user), 201)


EDIT_USER = [F("login_name", required=True), F("source_id", int), F("full_name")]


def admin_edit_user(ctx: Ctx, username: str) -> Response:
    """Edit a user's full name (a site admin's route; Gitea wants the login name too, and
    holds a full name to 100 characters). A run's lease lives there (benchkit.gitea.lease)."""
    user = ctx.store.user_by_login(username)
    if user is None:
        raise not_found()
    full_name = ctx.body.get("full_name")
    if full_name is not None:
        if len(full_name) > 100:
            raise invalid("[FullName]: MaxSize")
        ctx.store.update("users", {"id": user["id"]}, full_name=full_name)
    return respond(ctx.render.user(ctx.store.row("users", user["id"])))


def admin_delete_user(ctx: Ctx, username: str) -> Response:
    """Delete a user; with `purge`, its repositories too (else 422 while it owns any)."""
    user = ctx.store.user_by_login(username)
    if user is None:
        raise not_found()
    if user["id"] == ctx.caller["id"]:
        raise invalid("you cannot delete yourself")
    owns = any(repo["owner_id"] == user["id"] for repo in ctx.store.repos())
    if owns and ctx.query("purge").lower() not in ("1", "true"):
        raise invalid(f"user still has ownership of repositories [uid: {user['id']}]")
    ctx.store.delete_user(user["id"])
    return empty()


def create_user_token(ctx: Ctx, username: str) -> Response:
    """A new token of the user, for its own basic credentials (as Gitea: a token never
    mints another); it never reaches the forge's /_forge routes."""
    if not ctx.request.headers.get("authorization", "").lower().startswith("basic "):
        raise ApiError(401, "auth required")
    if ctx.caller["login"].lower() != username.lower() and not ctx.caller["is_admin"]:
        raise ApiError(403, "reqSelfOrAdmin: not self or admin")
    token = ctx.store.create_token(ctx.caller["login"])
    return respond({"id": 0, "name": ctx.body["name"], "sha1": token, "token_last_eight": token[-8:],
                    "scopes": ctx.body.get("scopes") or []}, 201)


ROUTES = (
    route("GET", "/version", version),
    route("GET", "/settings/api", api_settings),
    route("GET", "/user", current_user, auth=True),
    route("GET", "/users/search", search_users),
    route("GET", "/users/{username}", get_user),
    route("GET", "/admin/users", admin_list_users, admin=True),
    route("POST", "/admin/users", admin_create_user, admin=True, body=CREATE_USER, struct="CreateUserOption"),
    route("PATCH", "/admin/users/{username}", admin_edit_user, admin=True, body=EDIT_USER,
          struct="EditUserOption"),
    route("DELETE", "/admin/users/{username}", admin_delete_user, admin=True),
    route("POST", "/users/{username}/tokens", create_user_token, auth=True,
          body=[F("name", required=True), F("scopes", "strs")], struct="CreateAccessTokenOption"),
)
