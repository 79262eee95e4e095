"""Provisioning: a fresh throwaway repository, seeded so issue and pull-request numbers
match the ground truth exactly, and released only once the readiness gate has seen it.

Seeding makes one request per thing it creates (plus a PATCH per closed issue or PR
and one per merge), and never GET-probes before a create: the repository is new, so
nothing can be there already. A seed that fails half-way is discarded and started
over in a new repository; an agent never sees a half-seeded one.
"""

from __future__ import annotations

import base64
import logging
from typing import Any
from urllib.parse import quote

from benchkit.documents.expectation import seed_plan
from benchkit.documents.seeded import DEFAULT_FILES, SEED_MESSAGE, pull_file
from benchkit.errors import HostError, ReadinessError, SeedError
from benchkit.gitea.client import Client
from benchkit.gitea.ready import wait_ready
from benchkit.gitea.repos import Repo, create_repo, discard

log = logging.getLogger(__name__)

REVIEW_EVENTS = {"comment": "COMMENT", "approved": "APPROVED",
                 "request-changes": "REQUEST_CHANGES"}


def provision(client: Client, seed: Any, *, prefix: str = "benchkit-",
              gate_timeout: float = 60.0, attempts: int = 2) -> Repo:
    """A seeded throwaway repository under the token's user, behind the readiness gate.

    Raises `SeedError` when every attempt failed, `ReadinessError` when the gate timed
    out, `HostError` when the host is unreachable; the repository is deleted in each
    case (or named in the error if even that failed, for `benchkit gc`).
    """

    plan = seed_plan(seed)
    _ = client.user  # a dead host or a bad token fails here, before anything is created
    failures = []
    for attempt in range(1, attempts + 1):
        repo = None
        try:
            repo, branch = create_repo(client, prefix)
            seed_repo(client, repo, plan, branch=branch)
        except (HostError, SeedError) as exc:
            where = repo.full_name if repo else "repository creation"
            failures.append(f"attempt {attempt} ({where}): {exc}{discard(client, repo)}")
            log.warning("seeding failed, %s", failures[-1])
            continue
        except BaseException:
            discard(client, repo)
            raise
        try:
            wait_ready(client.url, client.token, repo, plan, timeout=gate_timeout)
        except ReadinessError as exc:
            raise ReadinessError(f"{exc}{discard(client, repo)}") from None
        except BaseException:
            discard(client, repo)
            raise
        return repo
    raise SeedError(f"could not seed a repository in {attempts} attempt(s): "
                    + "; ".join(failures))


def seed_repo(client: Client, repo: Repo, plan: dict, *, branch: str = "main") -> None:
    """Create the plan's files (the default branch's first commits), labels,
    milestones, issues and pull requests in a new, empty repository."""
    user = client.user
    for file in plan.get("files") or DEFAULT_FILES:  # the default branch: the repository is empty
        _put_file(client, repo, file, SEED_MESSAGE, branch=branch)
    label_ids = {}
    for label in plan["labels"]:
        created = client.post(f"{repo.path}/labels", {
            "name": label["name"], "color": label["color"],
            "description": label.get("description") or ""})
        label_ids[label["name"]] = created["id"]
    milestone_ids = {}
    for milestone in plan.get("milestones") or []:
        created = client.post(f"{repo.path}/milestones", {
            "title": milestone["title"], "description": milestone["description"],
            "state": milestone["state"]})
        milestone_ids[milestone["title"]] = created["id"]
    ids = (label_ids, milestone_ids)
    for issue in plan["issues"]:
        created = client.post(f"{repo.path}/issues", _entry(issue, ids, user))
        _expect_number(created, issue)
        _finish(client, repo, "issues", issue)
    for pull in plan["pull_requests"]:
        _push_branch(client, repo, pull, branch)
        created = client.post(f"{repo.path}/pulls", {
            **_entry(pull, ids, user), "head": pull["head"],
            "base": pull.get("base") or branch, "allow_maintainer_edit": False})
        _expect_number(created, pull)
        for review in pull["reviews"]:
            client.post(f"{repo.path}/pulls/{pull['number']}/reviews", _review(review))
        _finish(client, repo, "pulls", pull)


def _entry(item: dict, ids: tuple[dict, dict], user: str) -> dict:
    """Create-call body: labels and milestone (ids) and assignees travel with the
    create itself."""
    label_ids, milestone_ids = ids
    wanted = [("label", name, label_ids) for name in item["labels"]]
    if item.get("milestone"):
        wanted.append(("milestone", item["milestone"], milestone_ids))
    for kind, name, defined in wanted:
        if name not in defined:
            raise SeedError(f"{item['title']!r} uses {kind} {name!r}, which the seed does "
                            "not define")
    body = {"title": item["title"], "body": item.get("body") or "",
            "labels": [label_ids[name] for name in item["labels"]],
            "assignees": [user] if item["assigned"] else []}
    if item.get("milestone"):
        body["milestone"] = milestone_ids[item["milestone"]]
    return body


def _expect_number(created: dict, item: dict) -> None:
    if created.get("number") != item["number"]:
        raise SeedError(f"{item['title']!r} became #{created.get('number')}, "
                        f"the ground truth says #{item['number']}")


def _finish(client: Client, repo: Repo, kind: str, item: dict) -> None:
    """Comments, then the final state (closed by PATCH, merged by the merge call)."""
    number = item["number"]
    for body in item["comments"]:
        client.post(f"{repo.path}/issues/{number}/comments", {"body": body})
    if item["state"] == "closed":
        # Closing is idempotent, so a 5xx on it may safely be retried.
        client.patch(f"{repo.path}/{kind}/{number}", {"state": "closed"}, idempotent=True)
    elif item["state"] == "merged":
        client.post(f"{repo.path}/pulls/{number}/merge", {"Do": "merge"})


def _push_branch(client: Client, repo: Repo, pull: dict, branch: str) -> None:
    """The PR's head branch, carrying its one file, in a single contents-API call."""
    _put_file(client, repo, pull_file(pull), pull["title"], branch=pull.get("base") or branch,
              new_branch=pull["head"])


def _put_file(client: Client, repo: Repo, file: dict, message: str, *, branch: str,
              new_branch: str | None = None) -> None:
    """One file in one commit (on an empty repository, its first: the branch with it)."""
    body = {"content": base64.b64encode(file["content"].encode()).decode(),
            "message": message, "branch": branch}
    if new_branch:
        body["new_branch"] = new_branch
    client.post(f"{repo.path}/contents/{quote(file['path'], safe='/')}", body)


def _review(review: dict) -> dict:
    kind = review.get("kind", "comment")
    if kind not in REVIEW_EVENTS:
        raise SeedError(f"unknown review kind {kind!r} (want one of {sorted(REVIEW_EVENTS)})")
    body = {"event": REVIEW_EVENTS[kind], "body": review.get("body") or ""}
    if review.get("comments"):
        body["comments"] = [{"path": c["path"], "body": c["body"],
                             "new_position": c.get("line", 1)} for c in review["comments"]]
    return body
