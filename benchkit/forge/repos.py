"""Routes for the server, users, repositories, branches and file contents."""

import base64
import binascii
import re
from typing import Any

from starlette.responses import Response

from .context import Ctx
from .render_git import UNSIGNED
from .store import blob_sha, now, present
from .web import ApiError, F, empty, invalid, listing, not_found, respond, route, text

REPO_NAME = re.compile(r"^[A-Za-z0-9_.-]+$")
RESERVED = {".", "..", "-", "assets", "api", "avatars", "user", "org", "explore", "repo", "swagger"}


# -- server and users -------------------------------------------------------------
@route("GET", "/version")
def version(ctx: Ctx) -> Response:
    return respond({"version": ctx.forge.version})


@route("GET", "/settings/api")
def api_settings(ctx: Ctx) -> Response:
    return respond({"max_response_items": 50, "default_paging_num": 30, "default_git_trees_per_page": 1000,
                    "default_max_blob_size": 10485760, "default_max_response_size": 104857600})


@route("GET", "/user", auth=True)
def current_user(ctx: Ctx) -> Response:
    return respond(ctx.render.user(ctx.user))


@route("GET", "/users/search")
def search_users(ctx: Ctx) -> Response:
    keyword = ctx.query("q").lower()
    rows = [u for u in ctx.store.all("SELECT * FROM users ORDER BY id") if keyword in u["login"].lower()
            or keyword in u["full_name"].lower()]
    return listing(ctx, rows, ctx.render.user, wrap=lambda data: {"ok": True, "data": data})


@route("GET", "/users/{username}")
def get_user(ctx: Ctx, username: str) -> Response:
    user = ctx.store.user_by_login(username)
    if user is None:
        raise not_found()
    return respond(ctx.render.user(user))


# -- repositories -----------------------------------------------------------------
def visible_repos(ctx: Ctx, owner_id: int | None = None) -> list:
    rows = ctx.store.all("SELECT * FROM repos ORDER BY id")
    return [r for r in rows if (owner_id is None or r["owner_id"] == owner_id)
            and (not r["private"] or ctx.can_write(r))]


@route("GET", "/user/repos", auth=True)
def my_repos(ctx: Ctx) -> Response:
    return listing(ctx, visible_repos(ctx, ctx.caller["id"]), ctx.render.repo)


@route("GET", "/users/{username}/repos")
def user_repos(ctx: Ctx, username: str) -> Response:
    user = ctx.store.user_by_login(username)
    if user is None:
        raise not_found()
    return listing(ctx, visible_repos(ctx, user["id"]), ctx.render.repo)


@route("GET", "/repos/search")
def search_repos(ctx: Ctx) -> Response:
    keyword = ctx.query("q").lower()
    uid = ctx.query_int("uid")
    rows = [r for r in visible_repos(ctx, uid or None) if keyword in r["name"].lower()
            or (ctx.query("includeDesc") in ("1", "true") and keyword in r["description"].lower())]
    return listing(ctx, rows, ctx.render.repo, wrap=lambda data: {"ok": True, "data": data})


CREATE_REPO = [F("name", str, required=True), F("description"), F("private", bool), F("auto_init", bool),
               F("default_branch"), F("readme"), F("gitignores"), F("license"), F("issue_labels"),
               F("template", bool), F("trust_model"), F("object_format_name")]


@route("POST", "/user/repos", body=CREATE_REPO, struct="CreateRepoOption")
def create_repo(ctx: Ctx) -> Response:
    body = ctx.body
    name = body["name"]
    if len(name) > 100 or not REPO_NAME.match(name):
        raise invalid("[Name]: AlphaDashDot")
    if name.lower() in RESERVED or name.lower().endswith((".git", ".wiki")):
        raise invalid(f"name is reserved [name: {name}]")
    if ctx.store.repo(ctx.caller["login"], name):
        raise ApiError(409, "The repository with the same name already exists.")
    stamp = now()
    repo_id = ctx.store.insert("repos", owner_id=ctx.caller["id"], name=name,
                               description=body.get("description") or "", private=int(bool(body.get("private"))),
                               template=int(bool(body.get("template"))),
                               default_branch=body.get("default_branch") or "main", created=stamp, updated=stamp)
    repo = ctx.store.row("repos", repo_id)
    if body.get("auto_init"):
        readme = f"# {name}\n\n{repo['description']}"
        commit = ctx.store.commit(repo_id, [], {"README.md": readme}, "Initial commit", ctx.caller["id"])
        ctx.store.set_branch(repo_id, repo["default_branch"], commit["sha"])
    return respond(ctx.render.repo(repo), 201)


@route("GET", "/repos/{owner}/{repo}")
def get_repo(ctx: Ctx, owner: str, repo: str) -> Response:
    return respond(ctx.render.repo(ctx.repo(owner, repo)))


EDIT_REPO = [F("name"), F("description"), F("website"), F("private", bool), F("template", bool),
             F("archived", bool), F("default_branch")]


@route("PATCH", "/repos/{owner}/{repo}", body=EDIT_REPO, struct="EditRepoOption")
def edit_repo(ctx: Ctx, owner: str, repo: str) -> Response:
    row = ctx.repo(owner, repo, write=True)
    changes: dict[str, Any] = {k: (int(v) if isinstance(v, bool) else v) for k, v in ctx.body.items() if v is not None}
    if "name" in changes and changes["name"].lower() != row["name"].lower() \
            and ctx.store.repo(owner, changes["name"]):
        raise ApiError(409, "The repository with the same name already exists.")
    if "default_branch" in changes and ctx.store.branches(row["id"]) \
            and not ctx.store.branch(row["id"], changes["default_branch"]):
        raise not_found()
    ctx.store.update("repos", {"id": row["id"]}, updated=now(), **changes)
    return respond(ctx.render.repo(ctx.store.row("repos", row["id"])))


@route("DELETE", "/repos/{owner}/{repo}")
def delete_repo(ctx: Ctx, owner: str, repo: str) -> Response:
    row = ctx.repo(owner, repo)
    if not ctx.can_write(row):
        raise ApiError(403, "Given user is not owner of organization.")
    issue_ids = [i["id"] for i in ctx.store.all("SELECT id FROM issues WHERE repo_id = ?", row["id"])]
    ctx.store.delete_repo(row["id"])
    for issue_id in issue_ids:
        ctx.reindex(issue_id)
    return empty()


# -- branches ---------------------------------------------------------------------
@route("GET", "/repos/{owner}/{repo}/branches")
def list_branches(ctx: Ctx, owner: str, repo: str) -> Response:
    row = ctx.repo(owner, repo)
    return listing(ctx, ctx.store.branches(row["id"]), lambda b: ctx.render.branch(row, b))


@route("GET", "/repos/{owner}/{repo}/branches/{branch:path}")
def get_branch(ctx: Ctx, owner: str, repo: str, branch: str) -> Response:
    row = ctx.repo(owner, repo)
    found = ctx.store.branch(row["id"], branch)
    if found is None:
        raise not_found()
    return respond(ctx.render.branch(row, found))


CREATE_BRANCH = [F("new_branch_name", required=True, go="BranchName"), F("old_branch_name"), F("old_ref_name")]


@route("POST", "/repos/{owner}/{repo}/branches", body=CREATE_BRANCH, struct="CreateBranchRepoOption")
def create_branch(ctx: Ctx, owner: str, repo: str) -> Response:
    row = ctx.repo(owner, repo, write=True)
    name = ctx.body["new_branch_name"]
    source = ctx.body.get("old_ref_name") or ctx.body.get("old_branch_name") or row["default_branch"]
    source = source.removeprefix("refs/heads/")
    if ctx.store.branch(row["id"], name):
        raise ApiError(409, f"The branch {name} already exists.")
    base = ctx.store.branch(row["id"], source)
    sha = base["sha"] if base else (source if ctx.store.get_commit(row["id"], source) else None)
    if sha is None:
        raise not_found(f"The old branch {source} does not exist")
    ctx.store.set_branch(row["id"], name, sha)
    return respond(ctx.render.branch(row, present(ctx.store.branch(row["id"], name), f"branch {name}")), 201)


@route("DELETE", "/repos/{owner}/{repo}/branches/{branch:path}")
def delete_branch(ctx: Ctx, owner: str, repo: str, branch: str) -> Response:
    row = ctx.repo(owner, repo, write=True)
    if ctx.store.branch(row["id"], branch) is None:
        raise not_found()
    if branch == row["default_branch"]:
        raise ApiError(403, "can not delete default branch")
    ctx.store.execute("DELETE FROM branches WHERE repo_id = ? AND name = ?", row["id"], branch)
    return empty()


# -- contents ---------------------------------------------------------------------
def tree_at(ctx: Ctx, repo: dict, ref: str | None) -> tuple[dict, str]:
    ref = ref or repo["default_branch"]
    branch = ctx.store.branch(repo["id"], ref)
    commit = ctx.store.get_commit(repo["id"], branch["sha"] if branch else ref)
    if commit is None:
        raise not_found(f"object does not exist [id: {ref}, rel_path: ]")
    return commit, ref


@route("GET", "/repos/{owner}/{repo}/contents")
def list_root(ctx: Ctx, owner: str, repo: str) -> Response:
    return get_contents(ctx, owner, repo, "")


@route("GET", "/repos/{owner}/{repo}/contents/{path:path}")
def get_contents(ctx: Ctx, owner: str, repo: str, path: str) -> Response:
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


@route("GET", "/repos/{owner}/{repo}/raw/{path:path}")
def get_raw(ctx: Ctx, owner: str, repo: str, path: str) -> Response:
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


@route("POST", "/repos/{owner}/{repo}/contents/{path:path}", body=FILE_FIELDS, struct="CreateFileOptions")
def create_file(ctx: Ctx, owner: str, repo: str, path: str) -> Response:
    return _write_file(ctx, owner, repo, path, create=True)


@route("PUT", "/repos/{owner}/{repo}/contents/{path:path}", body=[*FILE_FIELDS, F("sha", required=True, go="SHA")],
       struct="UpdateFileOptions")
def update_file(ctx: Ctx, owner: str, repo: str, path: str) -> Response:
    return _write_file(ctx, owner, repo, path, create=False)


# -- commits and their statuses (the "checks" a pull request shows) ------------------
def resolve_sha(ctx: Ctx, repo: dict, ref: str) -> str:
    branch = ctx.store.branch(repo["id"], ref.removeprefix("refs/heads/"))
    sha = branch["sha"] if branch else ref
    if ctx.store.get_commit(repo["id"], sha) is None:
        raise not_found(f"object does not exist [id: {ref}, rel_path: ]")
    return sha


@route("GET", "/repos/{owner}/{repo}/commits")
def list_commits(ctx: Ctx, owner: str, repo: str) -> Response:
    row = ctx.repo(owner, repo)
    if not ctx.store.branches(row["id"]):
        raise ApiError(409, "Git Repository is empty.")
    commits = ctx.store.history(row["id"], resolve_sha(ctx, row, ctx.query("sha") or row["default_branch"]))
    if ctx.query("path"):
        commits = [c for c in commits if ctx.query("path") in c["tree"]]
    files = ctx.query("files", "true").lower() != "false"
    return listing(ctx, commits, lambda c: ctx.render.commit(row, c, files=files))


@route("GET", "/repos/{owner}/{repo}/git/commits/{sha}")
def get_commit(ctx: Ctx, owner: str, repo: str, sha: str) -> Response:
    row = ctx.repo(owner, repo)
    found = resolve_sha(ctx, row, sha)
    return respond(ctx.render.commit(row, present(ctx.store.get_commit(row["id"], found), f"commit {found}")))


def statuses_of(ctx: Ctx, row: dict, sha: str) -> list:
    # Only the newest status per context counts, as in Gitea.
    rows = ctx.store.all("SELECT * FROM commit_statuses WHERE repo_id = ? AND sha = ? ORDER BY id DESC",
                         row["id"], sha)
    latest: dict[str, dict] = {}
    for status in rows:
        latest.setdefault(status["context"], status)
    return list(latest.values())


@route("GET", "/repos/{owner}/{repo}/commits/{ref:path}/status")
def combined_status(ctx: Ctx, owner: str, repo: str, ref: str) -> Response:
    row = ctx.repo(owner, repo)
    sha = resolve_sha(ctx, row, ref)
    return respond(ctx.render.combined_status(row, sha, statuses_of(ctx, row, sha)))


@route("GET", "/repos/{owner}/{repo}/commits/{ref:path}/statuses")
def list_statuses(ctx: Ctx, owner: str, repo: str, ref: str) -> Response:
    row = ctx.repo(owner, repo)
    sha = resolve_sha(ctx, row, ref)
    rows = ctx.store.all("SELECT * FROM commit_statuses WHERE repo_id = ? AND sha = ? ORDER BY id DESC",
                         row["id"], sha)
    return listing(ctx, rows, lambda r: ctx.render.commit_status(r, row))


STATUS = [F("state", required=True), F("target_url"), F("description"), F("context")]


@route("POST", "/repos/{owner}/{repo}/statuses/{sha}", body=STATUS, struct="CreateStatusOption")
def create_status(ctx: Ctx, owner: str, repo: str, sha: str) -> Response:
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


# -- releases ---------------------------------------------------------------------
@route("GET", "/repos/{owner}/{repo}/releases")
def list_releases(ctx: Ctx, owner: str, repo: str) -> Response:
    row = ctx.repo(owner, repo)
    rows = ctx.store.all("SELECT * FROM releases WHERE repo_id = ? ORDER BY id DESC", row["id"])
    return listing(ctx, rows, lambda r: ctx.render.release(r, row))


RELEASE = [F("tag_name", required=True, go="TagName"), F("target_commitish", go="Target"), F("name", go="Title"),
           F("body", go="Note"), F("draft", bool, go="IsDraft"), F("prerelease", bool, go="IsPrerelease"),
           F("tag_message")]


@route("POST", "/repos/{owner}/{repo}/releases", body=RELEASE, struct="CreateReleaseOption")
def create_release(ctx: Ctx, owner: str, repo: str) -> Response:
    row = ctx.repo(owner, repo, write=True)
    body = ctx.body
    if ctx.store.one("SELECT 1 FROM releases WHERE repo_id = ? AND tag_name = ?", row["id"], body["tag_name"]):
        raise ApiError(409, f"release tag already exist [tag_name: {body['tag_name']}]")
    target = body.get("target_commitish") or row["default_branch"]
    if not ctx.store.branch(row["id"], target) and not ctx.store.get_commit(row["id"], target):
        raise not_found(f"target couldn't be found [ref: {target}]")
    rid = ctx.store.insert("releases", repo_id=row["id"], tag_name=body["tag_name"], target=target,
                           name=body.get("name") or body["tag_name"], body=body.get("body") or "",
                           draft=int(bool(body.get("draft"))), prerelease=int(bool(body.get("prerelease"))),
                           author_id=ctx.caller["id"], created=now())
    return respond(ctx.render.release(ctx.store.row("releases", rid), row), 201)


@route("GET", "/repos/{owner}/{repo}/releases/{release_id:int}")
def get_release(ctx: Ctx, owner: str, repo: str, release_id: int) -> Response:
    row = ctx.repo(owner, repo)
    release = ctx.store.one("SELECT * FROM releases WHERE repo_id = ? AND id = ?", row["id"], release_id)
    if release is None:
        raise not_found()
    return respond(ctx.render.release(release, row))


@route("DELETE", "/repos/{owner}/{repo}/releases/{release_id:int}")
def delete_release(ctx: Ctx, owner: str, repo: str, release_id: int) -> Response:
    row = ctx.repo(owner, repo, write=True)
    if not ctx.store.one("SELECT 1 FROM releases WHERE repo_id = ? AND id = ?", row["id"], release_id):
        raise not_found()
    ctx.store.execute("DELETE FROM releases WHERE id = ?", release_id)
    return empty()
