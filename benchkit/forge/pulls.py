"""Routes for pull requests: list, create, edit, merge, files, commits, diff."""

from collections.abc import Callable

from starlette.responses import Response

from .context import Ctx
from .database import now, present
from .diffs import changed_files, unified_diff
from .issues import CREATE_ISSUE, EDIT_ISSUE, apply_edit, new_issue
from .render import is_draft
from .render_base import ts
from .web import ApiError, F, empty, invalid, listing, not_found, respond, route, text

MERGE_STYLES = ("merge", "rebase", "rebase-merge", "squash", "fast-forward-only", "manually-merged")


def find_pull(ctx: Ctx, owner: str, repo: str, index: int, *, write: bool = False) -> tuple[dict, dict, dict]:
    """(repository, issue, pull) for a pull request's number, else 404 (an issue's number too)."""
    row = ctx.repo(owner, repo, write=write)
    issue = ctx.store.issue(row["id"], index)
    if issue is None or not issue["is_pull"]:
        raise not_found()
    return row, issue, ctx.store.pull(issue["id"])


def head_sha(ctx: Ctx, repo: dict, pr: dict) -> str:
    """The pull request's head: its branch's commit, or the last known one once the branch is
    gone."""
    branch = ctx.store.branch(repo["id"], pr["head"])
    return branch["sha"] if branch else pr["head_sha"]


def list_pulls(ctx: Ctx, owner: str, repo: str) -> Response:
    """The repository's pull requests the request's filters let through, in the order `sort`
    asks."""
    row = ctx.repo(owner, repo)
    state = ctx.query("state", "open")
    rows = ctx.store.pulls(row["id"])
    rows = [r for r in rows if state not in ("open", "closed") or r["state"] == state]
    for label_id in {int(v) for v in ctx.query_list("labels") if v.isdigit()}:
        labelled = ctx.store.labelled(label_id)
        rows = [r for r in rows if r["id"] in labelled]
    if ctx.query("poster"):
        poster = ctx.store.user_by_login(ctx.query("poster"))
        rows = [r for r in rows if poster and r["poster_id"] == poster["id"]]
    if ctx.query("base_branch"):
        rows = [r for r in rows if r["base"] == ctx.query("base_branch")]
    if ctx.query("milestone") not in ("", "0"):
        rows = [r for r in rows if str(r["milestone_id"]) == ctx.query("milestone")]
    rows.sort(key=sort_key(ctx, ctx.query("sort")))
    return listing(ctx, rows, lambda r: ctx.render.pull(r, row))


def sort_key(ctx: Ctx, sort: str) -> Callable[[dict], tuple]:
    """The sort key of a pull listing's `sort` (newest first by default)."""
    comments = ctx.render.comment_count
    return {
        "oldest": lambda r: (r["created"], r["id"]),
        "recentupdate": lambda r: (-r["updated"], -r["id"]),
        "leastupdate": lambda r: (r["updated"], r["id"]),
        "recentclose": lambda r: (-(r["closed_at"] or 0), -r["id"]),
        "mostcomment": lambda r: (-comments(r), -r["id"]),
        "leastcomment": lambda r: (comments(r), r["id"]),
    }.get(sort, lambda r: (-r["created"], -r["id"]))


CREATE_PULL = [F("head", required=True), F("base", required=True),
               *(f for f in CREATE_ISSUE if f.name not in ("closed", "ref")),
               F("reviewers", "strs"), F("team_reviewers", "strs"), F("allow_maintainer_edit", bool)]


def create_pull(ctx: Ctx, owner: str, repo: str) -> Response:
    """Open a pull request from head into base; 409 when an open one already joins them."""
    row = ctx.repo(owner, repo)
    store, body = ctx.store, ctx.body
    head_name = body["head"].split(":", 1)[-1]
    base_name = body["base"]
    if head_name == base_name:
        raise invalid("Invalid PullRequest: There are no changes between the head and the base")
    head, base = store.branch(row["id"], head_name), store.branch(row["id"], base_name)
    if head is None or base is None:
        raise not_found()
    existing = store.open_pull(row["id"], head_name, base_name)
    if existing:
        raise ApiError(409, f"pull request already exists for these targets [id: {existing['issue_id']}, "
                            f"issue_id: {existing['issue_id']}, head_repo_id: {row['id']}, "
                            f"base_repo_id: {row['id']}, head_branch: {head_name}, base_branch: {base_name}]")
    issue = new_issue(ctx, row, is_pull=True)
    store.insert("pulls", issue_id=issue["id"], head=head_name, base=base_name, head_sha=head["sha"],
                 merge_base=merge_base(ctx, row, base["sha"], head["sha"]),
                 # left out, it takes the repository's default, which is true
                 allow_maintainer_edit=int(body.get("allow_maintainer_edit") is not False))
    return respond(ctx.render.pull(issue, row), 201)


def merge_base(ctx: Ctx, repo: dict, base_sha: str, head_sha_: str) -> str:
    """The newest commit both shas reach, or the base when they share none."""
    ancestors = {c["sha"] for c in ctx.store.history(repo["id"], base_sha)}
    for commit in ctx.store.history(repo["id"], head_sha_):
        if commit["sha"] in ancestors:
            return commit["sha"]
    return base_sha


def get_pull(ctx: Ctx, owner: str, repo: str, index: int) -> Response:
    """One pull request."""
    row, issue, _ = find_pull(ctx, owner, repo, index)
    return respond(ctx.render.pull(issue, row))


EDIT_PULL = [*EDIT_ISSUE, F("base"), F("labels", "ints"), F("allow_maintainer_edit", bool)]


def edit_pull(ctx: Ctx, owner: str, repo: str, index: int) -> Response:
    """Edit a pull request: the issue's fields, its base, its labels; Gitea answers 201."""
    row, issue, pr = find_pull(ctx, owner, repo, index)
    body = ctx.body
    if body.get("base") and body["base"] != pr["base"]:
        if ctx.store.branch(row["id"], body["base"]) is None:
            raise not_found()
        ctx.store.update("pulls", {"issue_id": issue["id"]}, base=body["base"])
    issue = apply_edit(ctx, row, issue)
    if body.get("labels") is not None and ctx.can_write(row):
        labels = ctx.store.labels_by_ids(row["id"], body["labels"])
        for label in ctx.store.issue_labels(issue["id"]):
            if label["id"] not in {new["id"] for new in labels}:
                ctx.store.remove_label(issue["id"], label["id"], ctx.caller["id"])
        ctx.store.add_labels(issue["id"], labels, ctx.caller["id"])
    if body.get("allow_maintainer_edit") is not None:
        ctx.store.update("pulls", {"issue_id": issue["id"]}, allow_maintainer_edit=int(body["allow_maintainer_edit"]))
    return respond(ctx.render.pull(issue, row), 201)


# -- merging ------------------------------------------------------------------------
def is_merged(ctx: Ctx, owner: str, repo: str, index: int) -> Response:
    """204 when the pull request is merged, else 404."""
    _, _, pr = find_pull(ctx, owner, repo, index)
    if not pr["merged"]:
        raise not_found()
    return empty()


# Both spellings arrive: the Go SDK's (Do, MergeTitleField, ...) and the generated clients' (do, ...).
MERGE = [F("Do", go="Do"), F("do", go="Do"), F("MergeTitleField", go="MergeTitleField"),
         F("merge_title_field", go="MergeTitleField"), F("MergeMessageField", go="MergeMessageField"),
         F("merge_message_field", go="MergeMessageField"), F("MergeCommitID", go="MergeCommitID"),
         F("merge_commit_id", go="MergeCommitID"), F("head_commit_id", go="HeadCommitID"),
         F("delete_branch_after_merge", bool), F("force_merge", bool), F("merge_when_checks_succeed", bool)]


def merge_field(body: dict, go: str, snake: str) -> str:
    """A merge form field in either of the spellings clients send."""
    return body.get(go) or body.get(snake) or ""


def merge_pull(ctx: Ctx, owner: str, repo: str, index: int) -> Response:
    """Merge a pull request by the style asked, refusing as Gitea does (merged, closed, draft,
    stale head)."""
    row, issue, pr = find_pull(ctx, owner, repo, index)
    body, store = ctx.body, ctx.store
    style = merge_field(body, "Do", "do")
    if not style:
        raise invalid("[Do]: Required")
    if style not in MERGE_STYLES:
        raise invalid("[Do]: In")
    if pr["merged"]:
        raise ApiError(405, "The PR is already merged")
    if issue["state"] == "closed":
        raise not_found()
    if not ctx.can_write(row):
        raise ApiError(405, "User not allowed to merge PR")
    if is_draft(issue["title"]):
        raise ApiError(405, "The PR is a work in progress, can't merge")
    head = head_sha(ctx, row, pr)
    if body.get("head_commit_id") and body["head_commit_id"] != head:
        raise ApiError(409, "head out of date")
    merged_sha = perform_merge(ctx, row, issue, pr, style, head, body)
    stamp = now()
    store.update("pulls", {"issue_id": issue["id"]}, merged=1, merged_at=stamp, merged_by=ctx.caller["id"],
                 merge_commit_sha=merged_sha, head_sha=head)
    store.touch(issue["id"], state="closed", closed_at=stamp)
    store.event(issue["id"], ctx.caller["id"], "merge_pull", commit_sha=merged_sha)
    if body.get("delete_branch_after_merge") and pr["head"] != row["default_branch"]:
        store.delete_branch(row["id"], pr["head"])
    ctx.reindex(issue["id"])
    return empty(200)


def perform_merge(ctx: Ctx, repo: dict, issue: dict, pr: dict, style: str, head: str, body: dict) -> str:
    """Move the base branch as the merge style would; return the merge commit's sha."""
    store = ctx.store
    base_branch = store.branch(repo["id"], pr["base"])
    if style == "manually-merged":
        return merge_field(body, "MergeCommitID", "merge_commit_id") or head
    base_tip = present(base_branch, f"branch {pr['base']}")["sha"]
    if style in ("rebase", "fast-forward-only") and merge_base(ctx, repo, base_tip, head) == base_tip:
        store.set_branch(repo["id"], pr["base"], head)
        return head
    if style == "fast-forward-only":
        raise ApiError(405, "Merge style fast-forward-only is not possible: the base branch has moved")
    # Three-way at file level: the head's changes since the merge base, applied over the base.
    base_tree = dict(present(store.get_commit(repo["id"], base_tip), f"commit {base_tip}")["tree"])
    for change in changed_files(store, repo["id"], merge_base(ctx, repo, base_tip, head), head):
        if change["after"] is None:
            base_tree.pop(change["filename"], None)
        else:
            base_tree[change["filename"]] = change["after"]
    title = merge_field(body, "MergeTitleField", "merge_title_field") or \
        f"Merge pull request '{issue['title']}' (#{issue['number']}) from {pr['head']} into {pr['base']}"
    message = merge_field(body, "MergeMessageField", "merge_message_field")
    parents = [base_tip] if style == "squash" else [base_tip, head]
    commit = store.commit(repo["id"], parents, base_tree, f"{title}\n\n{message}".strip(), ctx.caller["id"])
    store.set_branch(repo["id"], pr["base"], commit["sha"])
    return commit["sha"]


# -- files, commits, diff -------------------------------------------------------------
def pull_changes(ctx: Ctx, row: dict, pr: dict) -> list[dict]:
    """The files the pull request changes, head against merge base."""
    return changed_files(ctx.store, row["id"], pr["merge_base"], head_sha(ctx, row, pr))


def pull_files(ctx: Ctx, owner: str, repo: str, index: int) -> Response:
    """The files the pull request changes, with their counts and links."""
    row, issue, pr = find_pull(ctx, owner, repo, index)
    full = ctx.render.full_name(row)
    sha = head_sha(ctx, row, pr)

    def render(change: dict) -> dict:
        name = change["filename"]
        return {"filename": name, "status": change["status"], "additions": change["additions"],
                "deletions": change["deletions"], "changes": change["changes"], "previous_filename": "",
                "html_url": f"{ctx.root}{full}/src/commit/{sha}/{name}",
                "contents_url": f"{ctx.root}api/v1/repos/{full}/contents/{name}?ref={sha}",
                "raw_url": f"{ctx.root}{full}/raw/commit/{sha}/{name}"}
    return listing(ctx, pull_changes(ctx, row, pr), render)


def pull_commit_list(ctx: Ctx, row: dict, pr: dict) -> list[dict]:
    """The head's commits that the merge base lacks, newest first."""
    behind = {c["sha"] for c in ctx.store.history(row["id"], pr["merge_base"])}
    return [c for c in ctx.store.history(row["id"], head_sha(ctx, row, pr)) if c["sha"] not in behind]


def pull_commits(ctx: Ctx, owner: str, repo: str, index: int) -> Response:
    """The commits the pull request adds, optionally without their file lists."""
    row, _, pr = find_pull(ctx, owner, repo, index)
    files = ctx.query("files", "true").lower() != "false"
    return listing(ctx, pull_commit_list(ctx, row, pr), lambda c: ctx.render.commit(row, c, files=files))


def pull_diff(ctx: Ctx, owner: str, repo: str, index: int) -> Response:
    """The pull request as a unified diff."""
    row, _, pr = find_pull(ctx, owner, repo, index)
    return text(unified_diff(pull_changes(ctx, row, pr)))


def pull_patch(ctx: Ctx, owner: str, repo: str, index: int) -> Response:
    """The pull request as a series of patches, one per commit, oldest first."""
    row, _, pr = find_pull(ctx, owner, repo, index)
    parts = []
    for commit in reversed(pull_commit_list(ctx, row, pr)):
        author = ctx.store.row("users", commit["author_id"])
        parent = commit["parents"][0] if commit["parents"] else None
        changes = changed_files(ctx.store, row["id"], parent, commit["sha"])
        parts.append(f"From {commit['sha']} Mon Sep 17 00:00:00 2001\nFrom: {author['login']} <{author['email']}>\n"
                     f"Date: {ts(commit['created'])}\nSubject: [PATCH] {commit['message']}\n\n---\n"
                     f"{unified_diff(changes)}")
    return text("".join(parts))


ROUTES = (
    route("GET", "/repos/{owner}/{repo}/pulls", list_pulls),
    route("POST", "/repos/{owner}/{repo}/pulls", create_pull, body=CREATE_PULL,
          struct="CreatePullRequestOption"),
    route("GET", "/repos/{owner}/{repo}/pulls/{index:int}", get_pull),
    route("PATCH", "/repos/{owner}/{repo}/pulls/{index:int}", edit_pull, body=EDIT_PULL,
          struct="EditPullRequestOption"),
    route("GET", "/repos/{owner}/{repo}/pulls/{index:int}/merge", is_merged),
    route("POST", "/repos/{owner}/{repo}/pulls/{index:int}/merge", merge_pull, body=MERGE,
          struct="MergePullRequestForm"),
    route("GET", "/repos/{owner}/{repo}/pulls/{index:int}/files", pull_files),
    route("GET", "/repos/{owner}/{repo}/pulls/{index:int}/commits", pull_commits),
    route("GET", "/repos/{owner}/{repo}/pulls/{index:int}.diff", pull_diff),
    route("GET", "/repos/{owner}/{repo}/pulls/{index:int}.patch", pull_patch),
)
