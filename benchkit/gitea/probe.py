"""Self-review probe: may the token's user approve (or request changes on) a pull
request of their own on this host? Gitea says no (422); other hosts may say yes. The
suite picks each review task's variant from the answer, found once per host on a
throwaway repository and cached in `~/.cache/benchkit/hosts.json`, keyed by host URL.
"""

from __future__ import annotations

import json
import logging
from datetime import UTC, datetime
from pathlib import Path

from filelock import FileLock

from benchkit import cache_dir
from benchkit.gitea.client import Client, GiteaError
from benchkit.gitea.repos import create_repo, discard
from benchkit.gitea.seed import seed_repo

log = logging.getLogger(__name__)

PROBE_PLAN = {"labels": [], "issues": [], "pull_requests": [{
    "number": 1, "title": "benchkit self-review probe", "body": "", "state": "open",
    "labels": [], "assigned": False, "comments": [], "reviews": [],
    "head": "benchkit-probe", "file": {"path": "probe.txt", "content": "probe\n"}}]}


def cache_path() -> Path:
    """`$BENCHKIT_CACHE_DIR/hosts.json`, else under `$XDG_CACHE_HOME` or `~/.cache`."""
    return cache_dir() / "hosts.json"


def probe_self_review(client: Client, *, cache: bool = True,
                      path: str | Path | None = None, prefix: str = "benchkit-") -> bool:
    """True when the host lets a user approve their own pull request."""
    file = Path(path) if path else cache_path()
    if cache:
        known = _read(file).get(client.url, {}).get("self_review")
        if isinstance(known, bool):
            return known
    allowed = _probe(client, prefix)
    if cache:
        _remember(file, client.url, {"self_review": allowed, "user": client.user,
                                     "probed_at": datetime.now(UTC).isoformat()})
    return allowed


def _probe(client: Client, prefix: str) -> bool:
    repo, branch = create_repo(client, prefix)
    try:
        seed_repo(client, repo, PROBE_PLAN, branch=branch)
        try:
            client.post(f"{repo.path}/pulls/1/reviews",
                        {"event": "APPROVED", "body": "benchkit self-review probe"})
        except GiteaError as exc:
            if exc.status == 422:  # "approve your own pull is not allowed"
                return False
            raise
        return True
    finally:
        discard(client, repo)


def _read(file: Path) -> dict:
    try:
        data = json.loads(file.read_text())
    except (OSError, ValueError):
        return {}  # a missing or broken cache only costs one probe
    return data if isinstance(data, dict) else {}


def _remember(file: Path, url: str, entry: dict) -> None:
    try:
        file.parent.mkdir(parents=True, exist_ok=True)
        with FileLock(str(file) + ".lock", timeout=10):
            data = _read(file)
            data[url] = entry
            tmp = file.with_suffix(".tmp")
            tmp.write_text(json.dumps(data, indent=2, sort_keys=True) + "\n")
            tmp.replace(file)
    except OSError as exc:
        log.warning("could not cache the self-review answer in %s: %s", file, exc)
