"""Routes for the server (its version and API settings) and its users."""

from starlette.responses import Response

from .context import Ctx
from .web import listing, not_found, respond, route


def version(ctx: Ctx) -> Response:
    """The Gitea version the forge is held to."""
    return respond({"version": ctx.forge.version})


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


ROUTES = (
    route("GET", "/version", version),
    route("GET", "/settings/api", api_settings),
    route("GET", "/user", current_user, auth=True),
    route("GET", "/users/search", search_users),
    route("GET", "/users/{username}", get_user),
)
