"""Routes for git's trees and tags: a commit's whole tree listed (recursively, paged, as
Gitea's /git/trees does, with git's own blob and tree ids), and a repository's tags
(made by publishing a release, lightweight, as Gitea makes them).
"""

import hashlib

from starlette.responses import Response

from .context import Ctx
from .repo_store import blob_sha
from .web import ApiError, listing, paging, respond, route


def tree_entries(files: dict[str, str]) -> list[dict]:
    """Every entry of a tree, as `git ls-tree -r -t` orders them: each directory before
    what it holds, with git's ids (a directory's is its tree object's)."""
    root: dict = {}
    for path, text in files.items():
        node = root
        *folders, name = path.split("/")
        for folder in folders:
            node = node.setdefault(folder + "/", {})
        node[name] = text
    entries: list[dict] = []
    _walk(root, "", entries)
    return entries


def _walk(node: dict, prefix: str, out: list[dict]) -> str:
    """Append `node`'s entries (depth first, git's order) and answer its tree id."""
    raw = b""
    # git orders a tree's entries by name, a directory's name compared with a "/" after it.
    for key in sorted(node):
        name = key.rstrip("/")
        if key.endswith("/"):
            at = len(out)
            out.append({})
            sha = _walk(node[key], f"{prefix}{name}/", out)
            out[at] = {"path": prefix + name, "mode": "040000", "type": "tree", "size": 0, "sha": sha}
            raw += b"40000 " + name.encode() + b"\0" + bytes.fromhex(sha)
        else:
            data = node[key].encode()
            sha = blob_sha(node[key])
            out.append({"path": prefix + name, "mode": "100644", "type": "blob", "size": len(data),
                        "sha": sha})
            raw += b"100644 " + name.encode() + b"\0" + bytes.fromhex(sha)
    return hashlib.sha1(b"tree %d\0" % len(raw) + raw).hexdigest()


def get_tree(ctx: Ctx, owner: str, repo: str, sha: str) -> Response:
    """A commit's (or branch's) tree: its top level, or with `recursive` every entry."""
    row = ctx.repo(owner, repo)
    branch = ctx.store.branch(row["id"], sha)
    commit = ctx.store.get_commit(row["id"], branch["sha"] if branch else sha)
    if commit is None:
        raise ApiError(400, f"sha not found [{sha}]")
    entries = tree_entries(commit["tree"])
    if ctx.query("recursive").lower() not in ("1", "true"):
        entries = [entry for entry in entries if "/" not in entry["path"]]
    page, _ = paging(ctx.request)
    per_page = min(max(ctx.query_int("per_page") or 1000, 1), 1000)
    chunk = entries[(page - 1) * per_page: page * per_page]
    api = f"{ctx.render.api}/repos/{ctx.render.full_name(row)}/git"
    for entry in chunk:
        entry["url"] = f"{api}/{'trees' if entry['type'] == 'tree' else 'blobs'}/{entry['sha']}"
    return respond({"sha": commit["sha"], "url": f"{api}/trees/{commit['sha']}", "tree": chunk,
                    "truncated": page * per_page < len(entries), "page": page,
                    "total_count": len(entries)},
                   headers={"X-Total-Count": str(len(entries)),
                            "Access-Control-Expose-Headers": "X-Total-Count"})


def list_tags(ctx: Ctx, owner: str, repo: str) -> Response:
    """The repository's tags, newest first."""
    row = ctx.repo(owner, repo)
    return listing(ctx, ctx.store.tags(row["id"]), lambda tag: ctx.render.tag(row, tag))


ROUTES = (
    route("GET", "/repos/{owner}/{repo}/git/trees/{sha}", get_tree),
    route("GET", "/repos/{owner}/{repo}/tags", list_tags),
)
