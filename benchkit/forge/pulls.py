"""Routes for pull requests: list, create, edit, merge, files, commits, diff, reviews."""

import difflib
import json

from .hunks import cut_around_line, unchanged_line_patch
from .issues import CREATE_ISSUE, EDIT_ISSUE, apply_edit, labels_by_ids, new_issue
from .render import changed_files, is_draft, ts
from .store import blob_sha, now
from .web import INT64_MAX, ApiError, F, empty, invalid, listing, not_found, respond, route, text

MERGE_STYLES = ("merge", "rebase", "rebase-merge", "squash", "fast-forward-only", "manually-merged")
REVIEW_EVENTS = ("APPROVED", "REQUEST_CHANGES", "COMMENT")


def find_pull(ctx, owner, repo, index, *, write: bool = False) -> tuple[dict, dict, dict]:
    row = ctx.repo(owner, repo, write=write)
    issue = ctx.store.issue(row["id"], index)
    if issue is None or not issue["is_pull"]:
        raise not_found()
    return row, issue, ctx.store.pull(issue["id"])


def head_sha(ctx, repo: dict, pr: dict) -> str:
    branch = ctx.store.branch(repo["id"], pr["head"])
    return branch["sha"] if branch else pr["head_sha"]


@route("GET", "/repos/{owner}/{repo}/pulls")
def list_pulls(ctx, owner, repo):
    row = ctx.repo(owner, repo)
    state = ctx.query("state", "open")
    rows = ctx.store.all("SELECT issues.*, pulls.base FROM issues JOIN pulls ON pulls.issue_id = issues.id "
                         "WHERE repo_id = ? AND is_pull = 1", row["id"])
    rows = [r for r in rows if state not in ("open", "closed") or r["state"] == state]
    for label_id in {int(v) for v in ctx.query_list("labels") if v.isdigit()}:
        labelled = {i["issue_id"] for i in ctx.store.all("SELECT issue_id FROM issue_labels WHERE label_id = ?",
                                                         label_id)}
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


def sort_key(ctx, sort: str):
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


@route("POST", "/repos/{owner}/{repo}/pulls", body=CREATE_PULL, struct="CreatePullRequestOption")
def create_pull(ctx, owner, repo):
    row = ctx.repo(owner, repo)
    store, body = ctx.store, ctx.body
    head_name = body["head"].split(":", 1)[-1]
    base_name = body["base"]
    if head_name == base_name:
        raise invalid("Invalid PullRequest: There are no changes between the head and the base")
    head, base = store.branch(row["id"], head_name), store.branch(row["id"], base_name)
    if head is None or base is None:
        raise not_found()
    existing = store.one("SELECT pulls.* FROM pulls JOIN issues ON issues.id = pulls.issue_id WHERE repo_id = ? "
                         "AND state = 'open' AND head = ? AND base = ?", row["id"], head_name, base_name)
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


def merge_base(ctx, repo: dict, base_sha: str, head_sha_: str) -> str:
    ancestors = {c["sha"] for c in ctx.store.history(repo["id"], base_sha)}
    for commit in ctx.store.history(repo["id"], head_sha_):
        if commit["sha"] in ancestors:
            return commit["sha"]
    return base_sha


@route("GET", "/repos/{owner}/{repo}/pulls/{index:int}")
def get_pull(ctx, owner, repo, index):
    row, issue, _ = find_pull(ctx, owner, repo, index)
    return respond(ctx.render.pull(issue, row))


EDIT_PULL = [*EDIT_ISSUE, F("base"), F("labels", "ints"), F("allow_maintainer_edit", bool)]


@route("PATCH", "/repos/{owner}/{repo}/pulls/{index:int}", body=EDIT_PULL, struct="EditPullRequestOption")
def edit_pull(ctx, owner, repo, index):
    row, issue, pr = find_pull(ctx, owner, repo, index)
    body = ctx.body
    if body.get("base") and body["base"] != pr["base"]:
        if ctx.store.branch(row["id"], body["base"]) is None:
            raise not_found()
        ctx.store.update("pulls", {"issue_id": issue["id"]}, base=body["base"])
    issue = apply_edit(ctx, row, issue)
    if body.get("labels") is not None and ctx.can_write(row):
        labels = labels_by_ids(ctx, row, body["labels"])
        for label in ctx.store.issue_labels(issue["id"]):
            if label["id"] not in {new["id"] for new in labels}:
                ctx.store.remove_label(issue["id"], label["id"], ctx.user["id"])
        ctx.store.add_labels(issue["id"], labels, ctx.user["id"])
    if body.get("allow_maintainer_edit") is not None:
        ctx.store.update("pulls", {"issue_id": issue["id"]}, allow_maintainer_edit=int(body["allow_maintainer_edit"]))
    return respond(ctx.render.pull(issue, row), 201)


# -- merging ------------------------------------------------------------------------
@route("GET", "/repos/{owner}/{repo}/pulls/{index:int}/merge")
def is_merged(ctx, owner, repo, index):
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
    return body.get(go) or body.get(snake) or ""


@route("POST", "/repos/{owner}/{repo}/pulls/{index:int}/merge", body=MERGE, struct="MergePullRequestForm")
def merge_pull(ctx, owner, repo, index):
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
    store.update("pulls", {"issue_id": issue["id"]}, merged=1, merged_at=stamp, merged_by=ctx.user["id"],
                 merge_commit_sha=merged_sha, head_sha=head)
    store.touch(issue["id"], state="closed", closed_at=stamp)
    store.event(issue["id"], ctx.user["id"], "merge_pull", commit_sha=merged_sha)
    if body.get("delete_branch_after_merge") and pr["head"] != row["default_branch"]:
        store.execute("DELETE FROM branches WHERE repo_id = ? AND name = ?", row["id"], pr["head"])
    ctx.reindex(issue["id"])
    return empty(200)


def perform_merge(ctx, repo: dict, issue: dict, pr: dict, style: str, head: str, body: dict) -> str:
    """Move the base branch as the merge style would; return the merge commit's sha."""
    store = ctx.store
    base_branch = store.branch(repo["id"], pr["base"])
    if style == "manually-merged":
        return merge_field(body, "MergeCommitID", "merge_commit_id") or head
    base_tip = base_branch["sha"]
    if style in ("rebase", "fast-forward-only") and merge_base(ctx, repo, base_tip, head) == base_tip:
        store.set_branch(repo["id"], pr["base"], head)
        return head
    if style == "fast-forward-only":
        raise ApiError(405, "Merge style fast-forward-only is not possible: the base branch has moved")
    # Three-way at file level: the head's changes since the merge base, applied over the base.
    base_tree = dict(store.get_commit(repo["id"], base_tip)["tree"])
    for change in changed_files(store, repo["id"], merge_base(ctx, repo, base_tip, head), head):
        if change["after"] is None:
            base_tree.pop(change["filename"], None)
        else:
            base_tree[change["filename"]] = change["after"]
    title = merge_field(body, "MergeTitleField", "merge_title_field") or \
        f"Merge pull request '{issue['title']}' (#{issue['number']}) from {pr['head']} into {pr['base']}"
    message = merge_field(body, "MergeMessageField", "merge_message_field")
    parents = [base_tip] if style == "squash" else [base_tip, head]
    commit = store.commit(repo["id"], parents, base_tree, f"{title}\n\n{message}".strip(), ctx.user["id"])
    store.set_branch(repo["id"], pr["base"], commit["sha"])
    return commit["sha"]


# -- files, commits, diff -------------------------------------------------------------
def pull_changes(ctx, row, pr) -> list[dict]:
    return changed_files(ctx.store, row["id"], pr["merge_base"], head_sha(ctx, row, pr))


@route("GET", "/repos/{owner}/{repo}/pulls/{index:int}/files")
def pull_files(ctx, owner, repo, index):
    row, issue, pr = find_pull(ctx, owner, repo, index)
    full = ctx.render.full_name(row)
    sha = head_sha(ctx, row, pr)

    def render(change):
        name = change["filename"]
        return {"filename": name, "status": change["status"], "additions": change["additions"],
                "deletions": change["deletions"], "changes": change["changes"], "previous_filename": "",
                "html_url": f"{ctx.root}{full}/src/commit/{sha}/{name}",
                "contents_url": f"{ctx.root}api/v1/repos/{full}/contents/{name}?ref={sha}",
                "raw_url": f"{ctx.root}{full}/raw/commit/{sha}/{name}"}
    return listing(ctx, pull_changes(ctx, row, pr), render)


def pull_commit_list(ctx, row, pr) -> list[dict]:
    """The head's commits that the merge base lacks, newest first."""
    behind = {c["sha"] for c in ctx.store.history(row["id"], pr["merge_base"])}
    return [c for c in ctx.store.history(row["id"], head_sha(ctx, row, pr)) if c["sha"] not in behind]


@route("GET", "/repos/{owner}/{repo}/pulls/{index:int}/commits")
def pull_commits(ctx, owner, repo, index):
    row, _, pr = find_pull(ctx, owner, repo, index)
    files = ctx.query("files", "true").lower() != "false"
    return listing(ctx, pull_commit_list(ctx, row, pr), lambda c: ctx.render.commit(row, c, files=files))


def unified_diff(changes: list[dict]) -> str:
    out = []
    for change in changes:
        name, before, after = change["filename"], change["before"], change["after"]
        out.append(f"diff --git a/{name} b/{name}\n")
        if before is None:
            out.append("new file mode 100644\n")
        elif after is None:
            out.append("deleted file mode 100644\n")
        old_id = blob_sha(before)[:10] if before is not None else "0" * 10
        new_id = blob_sha(after)[:10] if after is not None else "0" * 10
        out.append(f"index {old_id}..{new_id}" + (" 100644\n" if before is not None and after is not None else "\n"))
        lines = difflib.unified_diff((before or "").splitlines(keepends=True), (after or "").splitlines(keepends=True),
                                     "/dev/null" if before is None else f"a/{name}",
                                     "/dev/null" if after is None else f"b/{name}", n=3)
        for line in lines:
            out.append(line if line.endswith("\n") else line + "\n\\ No newline at end of file\n")
    return "".join(out)


@route("GET", "/repos/{owner}/{repo}/pulls/{index:int}.diff")
def pull_diff(ctx, owner, repo, index):
    row, _, pr = find_pull(ctx, owner, repo, index)
    return text(unified_diff(pull_changes(ctx, row, pr)))


@route("GET", "/repos/{owner}/{repo}/pulls/{index:int}.patch")
def pull_patch(ctx, owner, repo, index):
    row, _, pr = find_pull(ctx, owner, repo, index)
    parts = []
    for commit in reversed(pull_commit_list(ctx, row, pr)):
        author = ctx.store.user_by_id(commit["author_id"])
        parent = commit["parents"][0] if commit["parents"] else None
        changes = changed_files(ctx.store, row["id"], parent, commit["sha"])
        parts.append(f"From {commit['sha']} Mon Sep 17 00:00:00 2001\nFrom: {author['login']} <{author['email']}>\n"
                     f"Date: {ts(commit['created'])}\nSubject: [PATCH] {commit['message']}\n\n---\n"
                     f"{unified_diff(changes)}")
    return text("".join(parts))


# -- reviews ------------------------------------------------------------------------------
def find_review(ctx, issue: dict, review_id: int) -> dict:
    review = ctx.store.one("SELECT * FROM reviews WHERE id = ? AND issue_id = ?", review_id, issue["id"])
    if review is None or (review["state"] == "PENDING" and review["reviewer_id"] != (ctx.user or {}).get("id")):
        raise not_found("GetReviewByID", [f"review does not exist [id: {review_id}]"])
    return review


@route("GET", "/repos/{owner}/{repo}/pulls/{index:int}/reviews")
def list_reviews(ctx, owner, repo, index):
    row, issue, _ = find_pull(ctx, owner, repo, index)
    me = ctx.user["id"] if ctx.user else None
    rows = [r for r in ctx.store.all("SELECT * FROM reviews WHERE issue_id = ? ORDER BY id", issue["id"])
            if r["state"] != "PENDING" or r["reviewer_id"] == me]
    return listing(ctx, rows, lambda r: ctx.render.review(r, issue, row), link=False)


def review_state(ctx, issue: dict, event: str, body: str, has_comments: bool) -> str:
    """Gitea's rules for a review event: exact names, self-review refused, bodies required."""
    sent, event = event, event if event in REVIEW_EVENTS else "PENDING"
    if event in ("APPROVED", "REQUEST_CHANGES"):
        if issue["poster_id"] == ctx.user["id"] and not ctx.forge.self_review:
            verb = "approve" if event == "APPROVED" else "reject"
            raise invalid(f"{verb} your own pull is not allowed")
        if issue["state"] == "closed":
            raise invalid("cannot approve or reject a closed or merged pull request")
    if event == "COMMENT" and not body and not has_comments:
        raise invalid(f"review event {sent} requires a body or a comment")
    if event in ("REQUEST_CHANGES", "PENDING") and not body:
        raise invalid(f"review event {sent} requires a body")
    return event


def add_review_comments(ctx, row: dict, pr: dict, review_id: int, issue: dict, commit_id: str, comments: list):
    stamp = now()
    for item in comments:
        if not isinstance(item, dict) or not item.get("body"):
            raise invalid("[Comments]: a review comment needs a body")
        new_position, old_position = position(item, "new_position"), position(item, "old_position")
        path = str(item.get("path") or "")
        line = -old_position if old_position > 0 else new_position
        ctx.store.insert("review_comments", review_id=review_id, issue_id=issue["id"], poster_id=ctx.user["id"],
                         path=path, body=item["body"], new_position=new_position, old_position=old_position,
                         commit_id=commit_id, created=stamp, updated=stamp,
                         patch=comment_patch(ctx, row, pr, path, line, commit_id))


def position(item: dict, name: str) -> int:
    value = item.get(name) or 0
    if not isinstance(value, int) or isinstance(value, bool) or abs(value) > INT64_MAX:
        raise invalid(f"[]: json: cannot unmarshal number into Go struct field "
                      f"CreatePullReviewComment.comments.{name} of type int64")
    return value


def comment_patch(ctx, row: dict, pr: dict, path: str, line: int, commit_id: str) -> str:
    """The diff a code comment keeps: its file's diff cut around the line, else the
    unchanged lines above it (as Gitea's CreateCodeComment makes it)."""
    changes = [c for c in pull_changes(ctx, row, pr) if c["filename"] == path]
    patch = cut_around_line(unified_diff(changes), abs(line), line < 0) if changes else ""
    if not patch and line:
        commit = ctx.store.get_commit(row["id"], commit_id) or ctx.store.get_commit(row["id"], head_sha(ctx, row, pr))
        patch = unchanged_line_patch((commit or {}).get("tree", {}).get(path), path, line)
    return patch


def submitted(ctx, row: dict, issue: dict, review_id: int, state: str, body: str):
    """A review left pending stays private; a submitted one joins the timeline."""
    if state == "PENDING":
        return
    ctx.store.event(issue["id"], ctx.user["id"], "review", body, review_id=review_id)
    # Only the latest approve or reject from a writer counts as official.
    if state in ("APPROVED", "REQUEST_CHANGES") and ctx.can_write(row):
        ctx.store.execute("UPDATE reviews SET official = 0 WHERE issue_id = ? AND reviewer_id = ?",
                          issue["id"], ctx.user["id"])
        ctx.store.update("reviews", {"id": review_id}, official=1)


REVIEW = [F("event"), F("body"), F("commit_id", go="CommitID"), F("comments", "any-list")]


@route("POST", "/repos/{owner}/{repo}/pulls/{index:int}/reviews", body=REVIEW, struct="CreatePullReviewOptions")
def create_review(ctx, owner, repo, index):
    row, issue, pr = find_pull(ctx, owner, repo, index)
    body = ctx.body
    comments = body.get("comments") or []
    state = review_state(ctx, issue, (body.get("event") or "").strip(), (body.get("body") or "").strip(),
                         bool(comments))
    commit_id = body.get("commit_id") or head_sha(ctx, row, pr)
    stamp = now()
    pending = ctx.store.one("SELECT * FROM reviews WHERE issue_id = ? AND reviewer_id = ? AND state = 'PENDING'",
                            issue["id"], ctx.user["id"])
    if pending:  # Gitea folds a new review into the reviewer's pending one
        review_id = pending["id"]
        ctx.store.update("reviews", {"id": review_id}, state=state, body=body.get("body") or "",
                         commit_id=commit_id, updated=stamp)
    else:
        review_id = ctx.store.insert("reviews", issue_id=issue["id"], reviewer_id=ctx.user["id"], state=state,
                                     body=body.get("body") or "", commit_id=commit_id, created=stamp, updated=stamp)
    add_review_comments(ctx, row, pr, review_id, issue, commit_id, comments)
    submitted(ctx, row, issue, review_id, state, body.get("body") or "")
    ctx.store.touch(issue["id"])
    review = ctx.store.one("SELECT * FROM reviews WHERE id = ?", review_id)
    return respond(ctx.render.review(review, issue, row))


@route("GET", "/repos/{owner}/{repo}/pulls/{index:int}/reviews/{review_id:int}")
def get_review(ctx, owner, repo, index, review_id):
    row, issue, _ = find_pull(ctx, owner, repo, index)
    return respond(ctx.render.review(find_review(ctx, issue, review_id), issue, row))


@route("POST", "/repos/{owner}/{repo}/pulls/{index:int}/reviews/{review_id:int}", body=[F("event"), F("body")],
       struct="SubmitPullReviewOptions")
def submit_review(ctx, owner, repo, index, review_id):
    row, issue, _ = find_pull(ctx, owner, repo, index)
    review = find_review(ctx, issue, review_id)
    if review["state"] != "PENDING":
        raise invalid("only a pending review can be submitted")
    has_comments = bool(ctx.store.value("SELECT COUNT(*) FROM review_comments WHERE review_id = ?", review_id))
    event = (ctx.body.get("event") or "").strip()
    state = review_state(ctx, issue, event, (ctx.body.get("body") or "").strip(), has_comments)
    if state == "PENDING":
        raise invalid("review event PENDING is not allowed when submitting a review")
    ctx.store.update("reviews", {"id": review_id}, state=state, body=ctx.body.get("body") or review["body"],
                     updated=now())
    submitted(ctx, row, issue, review_id, state, ctx.body.get("body") or review["body"])
    return respond(ctx.render.review(ctx.store.one("SELECT * FROM reviews WHERE id = ?", review_id), issue, row))


@route("DELETE", "/repos/{owner}/{repo}/pulls/{index:int}/reviews/{review_id:int}")
def delete_review(ctx, owner, repo, index, review_id):
    _, issue, _ = find_pull(ctx, owner, repo, index)
    review = find_review(ctx, issue, review_id)
    if review["reviewer_id"] != ctx.user["id"] and not ctx.user["is_admin"]:
        raise ApiError(403, "Must be repo admin")
    ctx.store.execute("DELETE FROM review_comments WHERE review_id = ?", review_id)
    ctx.store.execute("DELETE FROM comments WHERE type = 'review' AND issue_id = ? AND data = ?",
                      issue["id"], json.dumps({"review_id": review_id}))
    ctx.store.execute("DELETE FROM reviews WHERE id = ?", review_id)
    return empty()


@route("GET", "/repos/{owner}/{repo}/pulls/{index:int}/reviews/{review_id:int}/comments")
def review_comments(ctx, owner, repo, index, review_id):
    row, issue, _ = find_pull(ctx, owner, repo, index)
    find_review(ctx, issue, review_id)
    rows = ctx.store.all("SELECT * FROM review_comments WHERE review_id = ? ORDER BY id", review_id)
    return respond([ctx.render.review_comment(c, issue, row) for c in rows])


def _dismissal(ctx, owner, repo, index, review_id, dismissed: bool):
    row, issue, _ = find_pull(ctx, owner, repo, index, write=True)
    review = find_review(ctx, issue, review_id)
    if review["state"] not in ("APPROVED", "REQUEST_CHANGES"):
        raise ApiError(403, "not allow to dismiss a review which is not approve or reject")
    ctx.store.update("reviews", {"id": review_id}, dismissed=int(dismissed), updated=now())
    return respond(ctx.render.review(ctx.store.one("SELECT * FROM reviews WHERE id = ?", review_id), issue, row))


@route("POST", "/repos/{owner}/{repo}/pulls/{index:int}/reviews/{review_id:int}/dismissals",
       body=[F("message"), F("priors", bool)], struct="DismissPullReviewOptions")
def dismiss_review(ctx, owner, repo, index, review_id):
    return _dismissal(ctx, owner, repo, index, review_id, True)


@route("POST", "/repos/{owner}/{repo}/pulls/{index:int}/reviews/{review_id:int}/undismissals")
def undismiss_review(ctx, owner, repo, index, review_id):
    return _dismissal(ctx, owner, repo, index, review_id, False)
