"""Git's smart HTTP protocol, read side: enough for `git clone` and `git fetch` of a
forge repository (gitea-axi's `pr checkout` fetches one). The forge keeps commits as
JSON trees, so each request materialises them into a real bare repository with
`git fast-import` (deterministic dates, so the same state always gives the same git
hashes; they differ from the API's commit ids, which the forge makes up) and lets
`git upload-pack --stateless-rpc` answer. Pushing is refused.
"""

import gzip
import hashlib
import json
import shutil
import subprocess
import threading
from pathlib import Path

from starlette.concurrency import run_in_threadpool
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

from benchkit import journal

from .store import ForgeStore

SERVICE = "git-upload-pack"
TEXT = "text/plain; charset=utf-8"
SCRATCH = "refs/forge/import"  # where fast-import builds commits; deleted after


class Materialiser:
    """Bare git repositories built from the store, cached by the state they show."""

    def __init__(self, store: ForgeStore) -> None:
        self.store = store
        self.root: Path | None = None  # made on the first clone: most forges never see one
        self.lock = threading.Lock()
        self.built: dict[int, tuple[str, Path]] = {}  # repo id -> (fingerprint, directory)

    def close(self) -> None:
        """Remove every clone built."""
        with self.lock:
            if self.root is not None:
                shutil.rmtree(self.root, ignore_errors=True)
                self.root = None

    def bare(self, repo: dict) -> Path:
        """The repository as a bare git directory, rebuilt only when its branches have moved."""
        branches = self.store.branches(repo["id"])
        fingerprint = hashlib.sha256(json.dumps(sorted((b["name"], b["sha"]) for b in branches)).encode()).hexdigest()
        with self.lock:
            cached = self.built.get(repo["id"])
            if cached and cached[0] == fingerprint:
                return cached[1]
            if self.root is None:
                self.root = Path(journal.mkdtemp("benchkit-forge-git-"))  # journalled: a kill leaves none
            target = self.root / f"{repo['id']}-{fingerprint[:12]}.git"
            if not target.exists():
                self._build(target, repo, branches)
            if cached:
                shutil.rmtree(cached[1], ignore_errors=True)
            self.built[repo["id"]] = (fingerprint, target)
            return target

    def _build(self, target: Path, repo: dict, branches: list[dict]) -> None:
        subprocess.run(["git", "init", "-q", "--bare", "-b", repo["default_branch"], str(target)], check=True)
        stream = fast_import_stream(self.store, repo["id"], branches)
        subprocess.run(["git", "fast-import", "--quiet"], cwd=target, input=stream, check=True)
        subprocess.run(["git", "update-ref", "-d", SCRATCH], cwd=target, check=False)


def fast_import_stream(store: ForgeStore, repo_id: int, branches: list[dict]) -> bytes:
    """A fast-import stream of every commit reachable from the branches, parents first."""
    marks: dict[str, int] = {}
    order: list[dict] = []

    def visit(sha: str) -> None:
        stack = [(sha, False)]
        while stack:
            current, expanded = stack.pop()
            if current in marks:
                continue
            commit = store.get_commit(repo_id, current)
            if commit is None:
                continue
            if expanded:
                marks[current] = len(marks) + 1
                order.append(commit)
                continue
            stack.append((current, True))
            stack.extend((parent, False) for parent in commit["parents"] if parent not in marks)
    for branch in branches:
        visit(branch["sha"])
    out = []
    for commit in order:
        author = store.user_by_id(commit["author_id"]) or {"login": "forge", "email": "forge@localhost"}
        message = commit["message"].encode()
        who = f"{author['login']} <{author['email']}> {commit['created']} +0000"
        parents = [p for p in commit["parents"] if p in marks]
        out.append(f"commit {SCRATCH}\nmark :{marks[commit['sha']]}\n"
                   f"author {who}\ncommitter {who}\ndata {len(message)}\n".encode() + message + b"\n")
        if parents:
            out.append(f"from :{marks[parents[0]]}\n".encode())
            out.extend(f"merge :{marks[p]}\n".encode() for p in parents[1:])
        out.append(b"deleteall\n")
        for path, content in sorted(commit["tree"].items()):
            data = content.encode()
            out.append(f"M 100644 inline {path}\ndata {len(data)}\n".encode() + data + b"\n")
        out.append(b"\n")
    for branch in branches:
        if branch["sha"] in marks:
            out.append(f"reset refs/heads/{branch['name']}\nfrom :{marks[branch['sha']]}\n\n".encode())
    return b"".join(out)


def pkt_line(text: str) -> bytes:
    """One line of git's pkt-line framing: its length in four hex digits, then the text."""
    return f"{len(text) + 4:04x}{text}".encode()


def routes(store: ForgeStore, materialiser: Materialiser) -> list[Route]:
    """The smart HTTP routes, at Gitea's clone URL (`/OWNER/NAME.git/...`, `.git` optional)."""

    def repository(request: Request) -> dict | Response:
        """The repository the caller may read, or an error response (401 asks git for credentials)."""
        user, _, _, error = request.scope["forge.auth"]
        if error is not None:
            return _unauthorised()
        name = request.path_params["repo"].removesuffix(".git")
        repo = store.repo(request.path_params["owner"], name)
        if repo is not None and (not repo["private"] or (
                user is not None and (user["is_admin"] or user["id"] == repo["owner_id"]))):
            return repo
        return _unauthorised() if user is None else Response(b"Repository not found\n", 404, media_type=TEXT)

    async def info_refs(request: Request) -> Response:
        if request.query_params.get("service") != SERVICE:
            return Response(b"only git-upload-pack is served\n", 403, media_type=TEXT)
        repo = repository(request)
        if isinstance(repo, Response):
            return repo
        bare = await run_in_threadpool(materialiser.bare, repo)
        advert = await run_in_threadpool(_git, ["upload-pack", "--stateless-rpc", "--advertise-refs", str(bare)], b"")
        body = pkt_line(f"# service={SERVICE}\n") + b"0000" + advert
        return Response(body, 200, {"Cache-Control": "no-cache"},
                        media_type=f"application/x-{SERVICE}-advertisement")

    async def upload_pack(request: Request) -> Response:
        repo = repository(request)
        if isinstance(repo, Response):
            return repo
        body = await request.body()
        if request.headers.get("content-encoding") == "gzip":
            body = gzip.decompress(body)
        bare = await run_in_threadpool(materialiser.bare, repo)
        result = await run_in_threadpool(_git, ["upload-pack", "--stateless-rpc", str(bare)], body)
        return Response(result, 200, {"Cache-Control": "no-cache"}, media_type=f"application/x-{SERVICE}-result")

    return [Route("/{owner}/{repo}/info/refs", info_refs, methods=["GET"]),
            Route("/{owner}/{repo}/git-upload-pack", upload_pack, methods=["POST"])]


def _git(args: list[str], stdin: bytes) -> bytes:
    return subprocess.run(["git", *args], input=stdin, capture_output=True, check=True).stdout


def _unauthorised() -> Response:
    return Response(b"Unauthorized\n", 401, {"WWW-Authenticate": 'Basic realm="Gitea"'}, media_type=TEXT)
