"""Routes for file contents: read a file or a directory, raw text, create and update a file."""

import base64
import binascii

from starlette.responses import Response

from .context import Ctx
from .render_git import UNSIGNED
from .repo_store import blob_sha
from .web import ApiError, F, invalid, not_found, respond, route, text


def tree_at(ctx: Ctx, repo: dict, ref: str | None) -> tuple[dict, str]:
    """(commit, ref) for a ref (the default branch when empty), else Gitea's 404."""
    ref = ref or repo["default_branch"]
    branch = ctx.store.branch(repo["id"], ref)
    commit = ctx.store.get_commit(repo["id"], branch["sha"] if branch else ref)
    if commit is None:
        raise not_found(f"object does not exist [id: {ref}, rel_path: ]")
    return commit, ref


def list_root(ctx: Ctx, owner: str, repo: str) -> Response:
    """The repository's top-level directory."""
    return get_contents(ctx, owner, repo, "")


def get_contents(ctx: Ctx, owner: str, repo: str, path: str) -> Response:
    """A file with its content, or a directory's entries without theirs."""
    row = ctx.repo(owner, repo)
    commit, ref = tree_at(ctx, row, ctx.query("ref"))
    path = path.strip("/")
    tree = commit["tree"]
    if path in tree:
        return respond(ctx.render.contents(row, commit, ref, path))
    prefix = f"{path}/" if path else ""
    children = sorted({p[len(prefix):].split("/", 1)[0] for p in tree if p.startswith(prefix)})
    if not children:
        raise not_found("GetContentsOrList", [f"object does not exist [id: , rel_path: {path}]"])
    return respond([ctx.render.contents(row, commit, ref, prefix + c, with_content=False) for c in children])


def get_raw(ctx: Ctx, owner: str, repo: str, path: str) -> Response:
    """A file's text, as it is."""
    row = ctx.repo(owner, repo)
    commit, _ = tree_at(ctx, row, ctx.query("ref"))
    if path not in commit["tree"]:
        raise not_found()
    return text(commit["tree"][path])


FILE_FIELDS = [F("content", required=True, go="ContentBase64"), F("message"), F("branch", go="BranchName"),
               F("new_branch", go="NewBranchName"), F("author", dict), F("committer", dict), F("dates", dict),
               F("signoff", bool), F("force_push", bool)]


def _decode(content: str) -> str:
    try:
        return base64.b64decode(content, validate=True).decode()
    except (binascii.Error, UnicodeDecodeError):
        raise invalid("illegal base64 data") from None


def _write_file(ctx: Ctx, owner: str, repo: str, path: str, *, create: bool) -> Response:
    row = ctx.repo(owner, repo, write=True)
    body = ctx.body
    store = ctx.store
    path = path.strip("/")
    base_name = body.get("branch") or row["default_branch"]
    target = body.get("new_branch") or base_name
    base = store.branch(row["id"], base_name)
    if base is None and (store.branches(row["id"]) or base_name != row["default_branch"]):
        raise not_found(f"branch does not exist [name: {base_name}]")
    if target != base_name and store.branch(row["id"], target):
        raise invalid(f"branch already exists [name: {target}]")
    parent = store.get_commit(row["id"], base["sha"]) if base else None
    tree = dict(parent["tree"]) if parent else {}
    if create and path in tree:
        raise invalid(f"repository file already exists [path: {path}]")
    if not create:
        if path not in tree:
            raise not_found(f"repository file does not exist [path: {path}]")
        if body.get("sha") != blob_sha(tree[path]):
            raise ApiError(409, f"sha does not match [given: {body.get('sha')}, expected: {blob_sha(tree[path])}]")
    tree[path] = _decode(body["content"])
    message = body.get("message") or f"{'Add' if create else 'Update'} {path}"
    commit = store.commit(row["id"], [parent["sha"]] if parent else [], tree, message, ctx.caller["id"])
    store.set_branch(row["id"], target, commit["sha"])
    data = {"content": ctx.render.contents(row, commit, target, path),
            "commit": ctx.render.file_commit(row, commit),
            "verification": UNSIGNED}
    return respond(data, 201 if create else 200)


def create_file(ctx: Ctx, owner: str, repo: str, path: str) -> Response:
    """Commit a new file (201); 422 when the path exists."""
    return _write_file(ctx, owner, repo, path, create=True)


def update_file(ctx: Ctx, owner: str, repo: str, path: str) -> Response:
    """Commit a changed file; the sha given must be the file's current one (409 otherwise)."""
    return _write_file(ctx, owner, repo, path, create=False)


ROUTES = (
    route("GET", "/repos/{owner}/{repo}/contents", list_root),
    route("GET", "/repos/{owner}/{repo}/contents/{path:path}", get_contents),
    route("GET", "/repos/{owner}/{repo}/raw/{path:path}", get_raw),
    route("POST", "/repos/{owner}/{repo}/contents/{path:path}", create_file, body=FILE_FIELDS,
          struct="CreateFileOptions"),
    route("PUT", "/repos/{owner}/{repo}/contents/{path:path}", update_file,
          body=[*FILE_FIELDS, F("sha", required=True, go="SHA")], struct="UpdateFileOptions"),
)
