"""Routes for commits and their statuses (the "checks" a pull request shows)."""

from starlette.responses import Response

from .context import Ctx
from .database import now, present
from .web import ApiError, F, invalid, listing, not_found, respond, route


def resolve_sha(ctx: Ctx, repo: dict, ref: str) -> str:
    """The commit a ref names (a branch, refs/heads/..., or a sha), else Gitea's 404."""
    branch = ctx.store.branch(repo["id"], ref.removeprefix("refs/heads/"))
    sha = branch["sha"] if branch else ref
    if ctx.store.get_commit(repo["id"], sha) is None:
        raise not_found(f"object does not exist [id: {ref}, rel_path: ]")
    return sha


def list_commits(ctx: Ctx, owner: str, repo: str) -> Response:
    """The history from `sha` (the default branch when absent); 409 for an empty repository."""
    row = ctx.repo(owner, repo)
    if not ctx.store.branches(row["id"]):
        raise ApiError(409, "Git Repository is empty.")
    commits = ctx.store.history(row["id"], resolve_sha(ctx, row, ctx.query("sha") or row["default_branch"]))
    if ctx.query("path"):
        commits = [c for c in commits if ctx.query("path") in c["tree"]]
    files = ctx.query("files", "true").lower() != "false"
    signed = ctx.query("verification", "true").lower() != "false"
    return listing(ctx, commits, lambda c: ctx.render.commit(row, c, files=files, verification=signed))


def get_commit(ctx: Ctx, owner: str, repo: str, sha: str) -> Response:
    """One commit, by sha or branch."""
    row = ctx.repo(owner, repo)
    found = resolve_sha(ctx, row, sha)
    return respond(ctx.render.commit(row, present(ctx.store.get_commit(row["id"], found), f"commit {found}")))


def statuses_of(ctx: Ctx, row: dict, sha: str) -> list:
    """The newest status of each context at the commit."""
    # Only the newest status per context counts, as in Gitea.
    rows = ctx.store.statuses(row["id"], sha)
    latest: dict[str, dict] = {}
    for status in rows:
        latest.setdefault(status["context"], status)
    return list(latest.values())


def combined_status(ctx: Ctx, owner: str, repo: str, ref: str) -> Response:
    """The commit's combined status: the worst state among its contexts' newest."""
    row = ctx.repo(owner, repo)
    sha = resolve_sha(ctx, row, ref)
    return respond(ctx.render.combined_status(row, sha, statuses_of(ctx, row, sha)))


def list_statuses(ctx: Ctx, owner: str, repo: str, ref: str) -> Response:
    """Every status of the commit, newest first."""
    row = ctx.repo(owner, repo)
    sha = resolve_sha(ctx, row, ref)
    rows = ctx.store.statuses(row["id"], sha)
    return listing(ctx, rows, lambda r: ctx.render.commit_status(r, row))


STATUS = [F("state", required=True), F("target_url"), F("description"), F("context")]


def create_status(ctx: Ctx, owner: str, repo: str, sha: str) -> Response:
    """Record a status (a check) on a commit."""
    row = ctx.repo(owner, repo, write=True)
    sha = resolve_sha(ctx, row, sha)
    state = ctx.body["state"]
    if state not in ("pending", "success", "error", "failure", "warning"):
        raise invalid(f"invalid commit status state: {state}")
    sid = ctx.store.insert("commit_statuses", repo_id=row["id"], sha=sha, state=state,
                           context=ctx.body.get("context") or "default", description=ctx.body.get("description") or "",
                           target_url=ctx.body.get("target_url") or "", creator_id=ctx.caller["id"], created=now())
    return respond(ctx.render.commit_status(ctx.store.row("commit_statuses", sid), row),
                   201)


ROUTES = (
    route("GET", "/repos/{owner}/{repo}/commits", list_commits),
    route("GET", "/repos/{owner}/{repo}/git/commits/{sha}", get_commit),
    route("GET", "/repos/{owner}/{repo}/commits/{ref:path}/status", combined_status),
    route("GET", "/repos/{owner}/{repo}/commits/{ref:path}/statuses", list_statuses),
    route("POST", "/repos/{owner}/{repo}/statuses/{sha}", create_status, body=STATUS,
          struct="CreateStatusOption"),
)
