"""Routes for a repository's releases (publishing one makes its tag: benchkit.forge.trees)."""

from starlette.responses import Response

from .context import Ctx
from .database import now
from .web import ApiError, F, empty, listing, not_found, respond, route


def list_releases(ctx: Ctx, owner: str, repo: str) -> Response:
    """The repository's releases, newest first."""
    row = ctx.repo(owner, repo)
    rows = ctx.store.releases(row["id"])
    return listing(ctx, rows, lambda r: ctx.render.release(r, row))


RELEASE = [F("tag_name", required=True, go="TagName"), F("target_commitish", go="Target"), F("name", go="Title"),
           F("body", go="Note"), F("draft", bool, go="IsDraft"), F("prerelease", bool, go="IsPrerelease"),
           F("tag_message")]


def create_release(ctx: Ctx, owner: str, repo: str) -> Response:
    """Create a release at a branch or commit; 409 for a tag already released."""
    row = ctx.repo(owner, repo, write=True)
    body = ctx.body
    if ctx.store.in_repo("releases", row["id"], "tag_name", body["tag_name"]):
        raise ApiError(409, f"release tag already exist [tag_name: {body['tag_name']}]")
    target = body.get("target_commitish") or row["default_branch"]
    branch = ctx.store.branch(row["id"], target)
    if not branch and not ctx.store.get_commit(row["id"], target):
        raise not_found(f"target couldn't be found [ref: {target}]")
    if not body.get("draft"):  # a published release tags its target (a draft waits)
        ctx.store.add_tag(row["id"], body["tag_name"], branch["sha"] if branch else target)
    rid = ctx.store.insert("releases", repo_id=row["id"], tag_name=body["tag_name"], target=target,
                           name=body.get("name") or body["tag_name"], body=body.get("body") or "",
                           draft=int(bool(body.get("draft"))), prerelease=int(bool(body.get("prerelease"))),
                           author_id=ctx.caller["id"], created=now())
    return respond(ctx.render.release(ctx.store.row("releases", rid), row), 201)


def get_release(ctx: Ctx, owner: str, repo: str, release_id: int) -> Response:
    """One release, by id."""
    row = ctx.repo(owner, repo)
    release = ctx.store.in_repo("releases", row["id"], "id", release_id)
    if release is None:
        raise not_found()
    return respond(ctx.render.release(release, row))


def delete_release(ctx: Ctx, owner: str, repo: str, release_id: int) -> Response:
    """Delete a release."""
    row = ctx.repo(owner, repo, write=True)
    if not ctx.store.in_repo("releases", row["id"], "id", release_id):
        raise not_found()
    ctx.store.delete_release(release_id)
    return empty()


ROUTES = (
    route("GET", "/repos/{owner}/{repo}/releases", list_releases),
    route("POST", "/repos/{owner}/{repo}/releases", create_release, body=RELEASE,
          struct="CreateReleaseOption"),
    route("GET", "/repos/{owner}/{repo}/releases/{release_id:int}", get_release),
    route("DELETE", "/repos/{owner}/{repo}/releases/{release_id:int}", delete_release),
)
