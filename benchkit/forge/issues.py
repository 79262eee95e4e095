"""Routes for labels, milestones, issues, comments, issue labels and the issue search."""

import re
from datetime import datetime

from .store import now
from .web import INT64_MAX, ApiError, F, empty, invalid, listing, not_found, respond, route

COLOR = re.compile(r"^#?([0-9a-fA-F]{6}|[0-9a-fA-F]{3})$")


# -- labels -------------------------------------------------------------------------
def normalise_color(value: str) -> str:
    match = COLOR.match(value.strip())
    if not match:
        raise invalid(f"invalid color: {value if value.startswith('#') else '#' + value}")
    digits = match.group(1).lower()
    return "".join(c * 2 for c in digits) if len(digits) == 3 else digits


def find_row(ctx, table: str, repo: dict, key: str, name_column: str | None = None) -> dict:
    """The repository's row of `table` whose id is `key`, else (with `name_column`) whose
    name is; 404 when there is none."""
    row = None
    if key.isdigit() and int(key) <= INT64_MAX:
        row = ctx.store.one(f"SELECT * FROM {table} WHERE repo_id = ? AND id = ?", repo["id"], int(key))
    if row is None and name_column:
        row = ctx.store.one(f"SELECT * FROM {table} WHERE repo_id = ? AND {name_column} = ?",
                            repo["id"], key)
    if row is None:
        raise not_found()
    return row


def find_label(ctx, repo: dict, key: str, *, by_name: bool = False) -> dict:
    return find_row(ctx, "labels", repo, key, "name" if by_name else None)


@route("GET", "/repos/{owner}/{repo}/labels")
def list_labels(ctx, owner, repo):
    row = ctx.repo(owner, repo)
    labels = ctx.store.all("SELECT * FROM labels WHERE repo_id = ? ORDER BY name, id", row["id"])
    return listing(ctx, labels, lambda label: ctx.render.label(label, row), link=False)


LABEL = [F("name", required=True), F("color", required=True), F("description"), F("exclusive", bool),
         F("is_archived", bool)]


@route("POST", "/repos/{owner}/{repo}/labels", body=LABEL, struct="CreateLabelOption")
def create_label(ctx, owner, repo):
    row = ctx.repo(owner, repo, write=True)
    body = ctx.body
    label_id = ctx.store.insert("labels", repo_id=row["id"], name=body["name"], color=normalise_color(body["color"]),
                                description=body.get("description") or "", exclusive=int(bool(body.get("exclusive"))),
                                is_archived=int(bool(body.get("is_archived"))))
    label = ctx.store.one("SELECT * FROM labels WHERE id = ?", label_id)
    return respond(ctx.render.label(label, row), 201)


@route("GET", "/repos/{owner}/{repo}/labels/{key}")
def get_label(ctx, owner, repo, key):
    row = ctx.repo(owner, repo)
    return respond(ctx.render.label(find_label(ctx, row, key, by_name=True), row))


@route("PATCH", "/repos/{owner}/{repo}/labels/{key}", body=[F(f.name, f.kind) for f in LABEL],
       struct="EditLabelOption")
def edit_label(ctx, owner, repo, key):
    row = ctx.repo(owner, repo, write=True)
    label = find_label(ctx, row, key)
    changes = {k: v for k, v in ctx.body.items() if v is not None and k != "is_archived"}
    if "color" in changes:
        changes["color"] = normalise_color(changes["color"])
    if "exclusive" in changes:
        changes["exclusive"] = int(changes["exclusive"])
    # Gitea's edit form treats a missing is_archived as false: leaving it out un-archives.
    changes["is_archived"] = int(bool(ctx.body.get("is_archived")))
    ctx.store.update("labels", {"id": label["id"]}, **changes)
    return respond(ctx.render.label(ctx.store.one("SELECT * FROM labels WHERE id = ?", label["id"]), row))


@route("DELETE", "/repos/{owner}/{repo}/labels/{key}")
def delete_label(ctx, owner, repo, key):
    row = ctx.repo(owner, repo, write=True)
    label = find_label(ctx, row, key)
    ctx.store.execute("DELETE FROM issue_labels WHERE label_id = ?", label["id"])
    ctx.store.execute("DELETE FROM labels WHERE id = ?", label["id"])
    return empty()


# -- milestones ---------------------------------------------------------------------
def find_milestone(ctx, repo: dict, key: str) -> dict:
    return find_row(ctx, "milestones", repo, key, "title")


@route("GET", "/repos/{owner}/{repo}/milestones")
def list_milestones(ctx, owner, repo):
    row = ctx.repo(owner, repo)
    state = ctx.query("state", "open")
    rows = ctx.store.all("SELECT * FROM milestones WHERE repo_id = ? ORDER BY id", row["id"])
    rows = [m for m in rows if state == "all" or m["state"] == state]
    if ctx.query("name"):
        rows = [m for m in rows if ctx.query("name").lower() in m["title"].lower()]
    return listing(ctx, rows, ctx.render.milestone)


MILESTONE = [F("title", required=True), F("description"), F("due_on", go="Deadline"), F("state")]


@route("POST", "/repos/{owner}/{repo}/milestones", body=MILESTONE, struct="CreateMilestoneOption")
def create_milestone(ctx, owner, repo):
    row = ctx.repo(owner, repo, write=True)
    body, stamp = ctx.body, now()
    state = "closed" if body.get("state") == "closed" else "open"
    mid = ctx.store.insert("milestones", repo_id=row["id"], title=body["title"],
                           description=body.get("description") or "", state=state,
                           due_on=parse_time(body.get("due_on")), created=stamp, updated=stamp,
                           closed_at=stamp if state == "closed" else None)
    return respond(ctx.render.milestone(ctx.store.one("SELECT * FROM milestones WHERE id = ?", mid)), 201)


@route("GET", "/repos/{owner}/{repo}/milestones/{key}")
def get_milestone(ctx, owner, repo, key):
    return respond(ctx.render.milestone(find_milestone(ctx, ctx.repo(owner, repo), key)))


@route("PATCH", "/repos/{owner}/{repo}/milestones/{key}", body=[F(f.name, go=f.go) for f in MILESTONE],
       struct="EditMilestoneOption")
def edit_milestone(ctx, owner, repo, key):
    row = ctx.repo(owner, repo, write=True)
    milestone = find_milestone(ctx, row, key)
    changes = {k: v for k, v in ctx.body.items() if v is not None}
    if "due_on" in changes:
        changes["due_on"] = parse_time(changes["due_on"])
    if "state" in changes:
        changes["state"] = "closed" if changes["state"] == "closed" else "open"
        changes["closed_at"] = now() if changes["state"] == "closed" else None
    ctx.store.update("milestones", {"id": milestone["id"]}, updated=now(), **changes)
    return respond(ctx.render.milestone(ctx.store.one("SELECT * FROM milestones WHERE id = ?", milestone["id"])))


@route("DELETE", "/repos/{owner}/{repo}/milestones/{key}")
def delete_milestone(ctx, owner, repo, key):
    milestone = find_milestone(ctx, ctx.repo(owner, repo, write=True), key)
    ctx.store.execute("UPDATE issues SET milestone_id = 0 WHERE milestone_id = ?", milestone["id"])
    ctx.store.execute("DELETE FROM milestones WHERE id = ?", milestone["id"])
    return empty()


# -- listing and searching issues -----------------------------------------------------
def parse_time(value: str | None) -> int | None:
    """RFC 3339 to Unix seconds; Gitea answers 422 for anything else."""
    if not value:
        return None
    try:
        return int(datetime.fromisoformat(value.replace("Z", "+00:00")).timestamp())
    except ValueError:
        raise invalid(f"parsing time \"{value}\" as \"2006-01-02T15:04:05Z07:00\": "
                      f"cannot parse \"{value}\" as \"2006\"") from None


def user_id_named(ctx, login: str) -> int:
    user = ctx.store.user_by_login(login)
    if user is None:
        raise not_found(errors=[f"user does not exist [uid: 0, name: {login}]"])
    return user["id"]


def filter_issues(ctx, repo_ids: list[int], *, state: str, kind: str) -> list[dict]:
    """Issues of these repositories matching the request's filters, newest first."""
    if not repo_ids:
        return []
    marks = ",".join("?" * len(repo_ids))
    sql = f"SELECT * FROM issues WHERE repo_id IN ({marks})"
    args: list = list(repo_ids)
    if state in ("open", "closed"):
        sql += " AND state = ?"
        args.append(state)
    if kind in ("issues", "pulls"):
        sql += " AND is_pull = ?"
        args.append(int(kind == "pulls"))
    names = [n.strip() for n in ctx.query("labels").split(",") if n.strip()]
    known = ctx.store.all(f"SELECT DISTINCT name FROM labels WHERE repo_id IN ({marks}) AND name IN "
                          f"({','.join('?' * len(names))})", *repo_ids, *names) if names else []
    for label in known:  # every named label must be on the issue; unknown names drop out
        sql += " AND id IN (SELECT issue_id FROM issue_labels JOIN labels ON labels.id = label_id WHERE name = ?)"
        args.append(label["name"])
    since, before = parse_time(ctx.query("since")), parse_time(ctx.query("before"))
    if since is not None:
        sql += " AND updated >= ?"
        args.append(since)
    if before is not None:
        sql += " AND updated <= ?"
        args.append(before)
    if ctx.query("created_by"):
        sql += " AND poster_id = ?"
        args.append(user_id_named(ctx, ctx.query("created_by")))
    if ctx.query("assigned_by"):
        sql += " AND id IN (SELECT issue_id FROM issue_assignees WHERE user_id = ?)"
        args.append(user_id_named(ctx, ctx.query("assigned_by")))
    if ctx.query("milestones"):
        titles = [m.strip() for m in ctx.query("milestones").split(",") if m.strip()]
        ids = [m["id"] for m in ctx.store.all(f"SELECT * FROM milestones WHERE repo_id IN ({marks})", *repo_ids)
               if m["title"] in titles or str(m["id"]) in titles]
        if ids:  # unknown milestones are discarded: if none is known, the filter vanishes
            sql += f" AND milestone_id IN ({','.join('?' * len(ids))})"
            args.extend(ids)
    rows = ctx.store.all(sql + " ORDER BY created DESC, id DESC", *args)
    if ctx.query("mentioned_by"):
        user_id_named(ctx, ctx.query("mentioned_by"))  # 404 for an unknown user
        mention = "@" + ctx.query("mentioned_by").lower()
        rows = [r for r in rows
                if mention in " ".join([r["body"], *(c["body"] for c in ctx.store.comments(r["id"]))]).lower()]
    keyword = ctx.query("q").strip()
    if keyword:  # keyword search goes through the (possibly lagging) indexer
        found = ctx.forge.indexer.search(keyword, [r["id"] for r in rows])
        rows = [r for r in rows if r["id"] in found or str(r["number"]) == keyword.lstrip("#")]
    return rows


def render_issue(ctx, repos: dict):
    return lambda row: ctx.render.issue(row, repos[row["repo_id"]])


@route("GET", "/repos/{owner}/{repo}/issues")
def list_issues(ctx, owner, repo):
    row = ctx.repo(owner, repo)
    rows = filter_issues(ctx, [row["id"]], state=ctx.query("state", "open"), kind=ctx.query("type"))
    return listing(ctx, rows, render_issue(ctx, {row["id"]: row}))


@route("GET", "/repos/issues/search")
def search_issues(ctx):
    repos = {r["id"]: r for r in ctx.store.all("SELECT * FROM repos ORDER BY id")
             if not r["private"] or ctx.can_write(r)}
    if ctx.query("owner"):
        owner = ctx.store.user_by_login(ctx.query("owner"))
        repos = {k: r for k, r in repos.items() if owner and r["owner_id"] == owner["id"]}
    rows = filter_issues(ctx, list(repos), state=ctx.query("state", "open"), kind=ctx.query("type"))
    me = ctx.user["id"] if ctx.user else None
    flag = lambda name: ctx.query(name).lower() in ("1", "true")  # noqa: E731
    if me and flag("created"):
        rows = [r for r in rows if r["poster_id"] == me]
    if me and flag("assigned"):
        rows = [r for r in rows if any(u["id"] == me for u in ctx.store.assignees(r["id"]))]
    if me and flag("mentioned"):
        rows = [r for r in rows if f"@{ctx.user['login']}".lower() in r["body"].lower()]
    if me and flag("reviewed"):
        rows = [r for r in rows if ctx.store.one("SELECT 1 FROM reviews WHERE issue_id = ? AND reviewer_id = ?",
                                                 r["id"], me)]
    if flag("review_requested"):
        rows = []
    return listing(ctx, rows, render_issue(ctx, repos), default=20)


# -- one issue ----------------------------------------------------------------------------
def resolve_assignees(ctx, repo: dict, body: dict) -> list[int] | None:
    """User ids for `assignees` (and the older single `assignee`), or None if neither was sent."""
    if body.get("assignees") is None and body.get("assignee") is None:
        return None
    names = list(body.get("assignees") or [])
    if body.get("assignee"):
        names.insert(0, body["assignee"])
    ids = []
    for name in names:
        user = ctx.store.user_by_login(name)
        if user is None:
            raise invalid(f"Assignee does not exist: [name: user does not exist [uid: 0, name: {name}]]")
        if not (user["is_admin"] or user["id"] == repo["owner_id"]):
            raise invalid(f"user [{name}] cannot be assigned: no write access to the repository")
        ids.append(user["id"])
    return ids


def labels_by_ids(ctx, repo: dict, ids: list[int]) -> list[dict]:
    if not ids:
        return []
    return ctx.store.all(f"SELECT * FROM labels WHERE repo_id = ? AND id IN ({','.join('?' * len(ids))})",
                         repo["id"], *ids)


def milestone_id(ctx, repo: dict, value) -> int:
    if not value:
        return 0
    if not ctx.store.one("SELECT 1 FROM milestones WHERE repo_id = ? AND id = ?", repo["id"], value):
        raise not_found()
    return value


CREATE_ISSUE = [F("title", required=True), F("body"), F("assignee"), F("assignees", "strs"),
                F("milestone", int), F("labels", "ints"), F("closed", bool), F("due_date", go="Deadline"), F("ref")]


def new_issue(ctx, repo: dict, *, is_pull: bool) -> dict:
    """Create the issue row behind an issue or a pull request, from the bound body."""
    body, store, stamp = ctx.body, ctx.store, now()
    writer = ctx.can_write(repo)
    closed = bool(body.get("closed"))
    issue_id = store.insert("issues", repo_id=repo["id"], number=store.next_number(repo["id"]),
                            poster_id=ctx.user["id"], title=body["title"].strip(), body=body.get("body") or "",
                            is_pull=int(is_pull), ref=body.get("ref") or "", created=stamp, updated=stamp,
                            state="closed" if closed else "open", closed_at=stamp if closed else None,
                            due_date=parse_time(body.get("due_date")),
                            milestone_id=milestone_id(ctx, repo, body.get("milestone")) if writer else 0)
    if writer:  # non-writers have labels, milestone and assignees silently dropped
        store.add_labels(issue_id, labels_by_ids(ctx, repo, body.get("labels") or []), ctx.user["id"])
        assignees = resolve_assignees(ctx, repo, body)
        if assignees:
            store.set_assignees(issue_id, assignees, ctx.user["id"])
    if closed:
        store.event(issue_id, ctx.user["id"], "close")
    ctx.reindex(issue_id)
    return store.issue_by_id(issue_id)


@route("POST", "/repos/{owner}/{repo}/issues", body=CREATE_ISSUE, struct="CreateIssueOption")
def create_issue(ctx, owner, repo):
    row = ctx.repo(owner, repo)
    return respond(ctx.render.issue(new_issue(ctx, row, is_pull=False), row), 201)


@route("GET", "/repos/{owner}/{repo}/issues/{index:int}")
def get_issue(ctx, owner, repo, index):
    row = ctx.repo(owner, repo)
    return respond(ctx.render.issue(ctx.issue(row, index), row))


EDIT_ISSUE = [F("title"), F("body"), F("state"), F("assignee"), F("assignees", "strs"), F("milestone", int),
              F("due_date", go="Deadline"), F("unset_due_date", bool, go="RemoveDeadline"), F("ref"),
              F("content_version", int)]


def apply_edit(ctx, repo: dict, issue: dict):
    """The edits an issue PATCH and a pull request PATCH share."""
    body, store = ctx.body, ctx.store
    writer = ctx.can_write(repo)
    if not (writer or issue["poster_id"] == ctx.user["id"]):
        raise ApiError(403, body=False)
    changes, actor = {}, ctx.user["id"]
    for field in ("title", "body", "ref"):
        if body.get(field) is not None:
            changes[field] = body[field].strip() if field == "title" else body[field]
    if changes.get("title", issue["title"]) != issue["title"]:
        store.event(issue["id"], actor, "change_title", old_title=issue["title"], new_title=changes["title"])
    if "body" in changes and changes["body"] != issue["body"]:
        changes["content_version"] = issue["content_version"] + 1
    if body.get("due_date"):
        changes["due_date"] = parse_time(body["due_date"])
    if body.get("unset_due_date"):
        changes["due_date"] = None
    if writer and body.get("milestone") is not None:
        changes["milestone_id"] = milestone_id(ctx, repo, body["milestone"])
        if changes["milestone_id"] != issue["milestone_id"]:
            store.event(issue["id"], actor, "milestone", milestone_id=changes["milestone_id"],
                        old_milestone_id=issue["milestone_id"])
    state = body.get("state")
    if state is not None:
        if state not in ("open", "closed"):
            raise ApiError(412, f"unknown state: {state}")
        pull = store.pull(issue["id"]) if issue["is_pull"] else None
        if pull and pull["merged"] and state != issue["state"]:
            raise ApiError(412, "cannot change state of this pull request, it was already merged")
        if state != issue["state"]:
            changes["state"] = state
            changes["closed_at"] = now() if state == "closed" else None
            store.event(issue["id"], actor, "close" if state == "closed" else "reopen")
    if writer:
        assignees = resolve_assignees(ctx, repo, body)
        if assignees is not None:
            store.set_assignees(issue["id"], assignees, actor)
    store.touch(issue["id"], **changes)
    ctx.reindex(issue["id"])
    return store.issue_by_id(issue["id"])


@route("PATCH", "/repos/{owner}/{repo}/issues/{index:int}", body=EDIT_ISSUE, struct="EditIssueOption")
def edit_issue(ctx, owner, repo, index):
    row = ctx.repo(owner, repo)
    issue = apply_edit(ctx, row, ctx.issue(row, index))
    return respond(ctx.render.issue(issue, row), 201)


# -- comments -------------------------------------------------------------------------------
def comment_times(ctx, rows: list) -> list:
    since, before = parse_time(ctx.query("since")), parse_time(ctx.query("before"))
    return [c for c in rows if (since is None or c["updated"] >= since) and (before is None or c["updated"] <= before)]


@route("GET", "/repos/{owner}/{repo}/issues/{index:int}/comments")
def list_comments(ctx, owner, repo, index):
    row = ctx.repo(owner, repo)
    issue = ctx.issue(row, index)
    rows = comment_times(ctx, ctx.store.comments(issue["id"]))
    return respond([ctx.render.comment(c, issue, row) for c in rows], 200, {"X-Total-Count": str(len(rows))})


@route("GET", "/repos/{owner}/{repo}/issues/comments")
def list_repo_comments(ctx, owner, repo):
    row = ctx.repo(owner, repo)
    rows = comment_times(ctx, ctx.store.all(
        "SELECT comments.* FROM comments JOIN issues ON issues.id = comments.issue_id "
        "WHERE issues.repo_id = ? AND comments.type = 'comment' ORDER BY comments.id", row["id"]))
    return listing(ctx, rows, lambda c: ctx.render.comment(c, ctx.store.issue_by_id(c["issue_id"]), row))


COMMENT = [F("body", required=True)]


@route("POST", "/repos/{owner}/{repo}/issues/{index:int}/comments", body=COMMENT, struct="CreateIssueCommentOption")
def create_comment(ctx, owner, repo, index):
    row = ctx.repo(owner, repo)
    issue = ctx.issue(row, index)
    if issue["is_locked"] and not ctx.can_write(row):
        raise ApiError(403, "issue is locked")
    stamp = now()
    cid = ctx.store.insert("comments", issue_id=issue["id"], poster_id=ctx.user["id"], body=ctx.body["body"],
                           created=stamp, updated=stamp)
    ctx.store.touch(issue["id"])
    ctx.reindex(issue["id"])
    comment = ctx.store.one("SELECT * FROM comments WHERE id = ?", cid)
    return respond(ctx.render.comment(comment, issue, row), 201)


def find_comment(ctx, row: dict, comment_id: int) -> tuple[dict, dict]:
    comment = ctx.store.one("SELECT * FROM comments WHERE id = ?", comment_id)
    issue = ctx.store.issue_by_id(comment["issue_id"]) if comment else None
    if issue is None or issue["repo_id"] != row["id"]:
        raise not_found(errors=[f"comment does not exist [id: {comment_id}, issue_id: 0]"])
    if comment["type"] != "comment":  # a timeline event: Gitea answers 204, no body
        raise ApiError(204, body=False)
    return comment, issue


def may_change(ctx, row: dict, comment: dict):
    if not (ctx.can_write(row) or comment["poster_id"] == ctx.user["id"]):
        raise ApiError(403, body=False)


@route("GET", "/repos/{owner}/{repo}/issues/comments/{comment_id:int}")
def get_comment(ctx, owner, repo, comment_id):
    row = ctx.repo(owner, repo)
    comment, issue = find_comment(ctx, row, comment_id)
    return respond(ctx.render.comment(comment, issue, row))


def _edit_comment(ctx, owner, repo, comment_id):
    row = ctx.repo(owner, repo)
    comment, issue = find_comment(ctx, row, comment_id)
    may_change(ctx, row, comment)
    ctx.store.update("comments", {"id": comment_id}, body=ctx.body["body"], updated=now())
    ctx.reindex(issue["id"])
    return respond(ctx.render.comment(ctx.store.one("SELECT * FROM comments WHERE id = ?", comment_id), issue, row))


def _delete_comment(ctx, owner, repo, comment_id):
    row = ctx.repo(owner, repo)
    comment, issue = find_comment(ctx, row, comment_id)
    may_change(ctx, row, comment)
    ctx.store.execute("DELETE FROM comments WHERE id = ?", comment_id)
    ctx.reindex(issue["id"])
    return empty()


route("PATCH", "/repos/{owner}/{repo}/issues/comments/{comment_id:int}", body=COMMENT,
      struct="EditIssueCommentOption")(_edit_comment)
route("DELETE", "/repos/{owner}/{repo}/issues/comments/{comment_id:int}")(_delete_comment)
# The deprecated per-issue spellings, which some clients still use.
route("PATCH", "/repos/{owner}/{repo}/issues/{index:int}/comments/{comment_id:int}", body=COMMENT,
      struct="EditIssueCommentOption")(lambda ctx, owner, repo, index, comment_id:
                                       _edit_comment(ctx, owner, repo, comment_id))
route("DELETE", "/repos/{owner}/{repo}/issues/{index:int}/comments/{comment_id:int}")(
    lambda ctx, owner, repo, index, comment_id: _delete_comment(ctx, owner, repo, comment_id))


# -- issue labels -------------------------------------------------------------------------
def labels_from_body(ctx, repo: dict) -> list[dict]:
    """`labels` as all ids or (since Gitea 1.22) all names; unknown ones drop out."""
    values = ctx.body.get("labels") or []
    ids = [v for v in values if isinstance(v, int) and not isinstance(v, bool)]
    names = [v for v in values if isinstance(v, str)]
    if "form" in ctx.request.headers.get("content-type", ""):  # form values are all strings
        ids, names = [int(v) for v in names if v.isdigit()], [v for v in names if not v.isdigit()]
    if ids and names:
        raise ApiError(400, "labels should be an array of strings or integers")
    if names:
        return ctx.store.all(f"SELECT * FROM labels WHERE repo_id = ? AND name IN ({','.join('?' * len(names))})",
                             repo["id"], *names)
    return labels_by_ids(ctx, repo, ids)


def labelled(ctx, owner, repo, index, *, replace: bool):
    row = ctx.repo(owner, repo)
    issue = ctx.issue(row, index)
    labels = labels_from_body(ctx, row)
    if not ctx.can_write(row):
        raise ApiError(403, body=False)
    keep = {label["id"] for label in labels}
    if replace:
        for label in ctx.store.issue_labels(issue["id"]):
            if label["id"] not in keep:
                ctx.store.remove_label(issue["id"], label["id"], ctx.user["id"])
    ctx.store.add_labels(issue["id"], labels, ctx.user["id"])
    return respond([ctx.render.label(label, row) for label in ctx.store.issue_labels(issue["id"])])


ISSUE_LABELS = [F("labels", "any-list")]


@route("GET", "/repos/{owner}/{repo}/issues/{index:int}/labels")
def get_issue_labels(ctx, owner, repo, index):
    row = ctx.repo(owner, repo)
    issue = ctx.issue(row, index)
    return respond([ctx.render.label(label, row) for label in ctx.store.issue_labels(issue["id"])])


@route("POST", "/repos/{owner}/{repo}/issues/{index:int}/labels", body=ISSUE_LABELS, struct="IssueLabelsOption")
def add_issue_labels(ctx, owner, repo, index):
    return labelled(ctx, owner, repo, index, replace=False)


@route("PUT", "/repos/{owner}/{repo}/issues/{index:int}/labels", body=ISSUE_LABELS, struct="IssueLabelsOption")
def replace_issue_labels(ctx, owner, repo, index):
    return labelled(ctx, owner, repo, index, replace=True)


@route("DELETE", "/repos/{owner}/{repo}/issues/{index:int}/labels/{label_id:int}")
def remove_issue_label(ctx, owner, repo, index, label_id):
    row = ctx.repo(owner, repo)
    issue = ctx.issue(row, index)
    if not ctx.can_write(row):
        raise ApiError(403, body=False)
    if not ctx.store.one("SELECT 1 FROM labels WHERE repo_id = ? AND id = ?", row["id"], label_id):
        raise invalid(f"label does not exist [label_id: {label_id}]")
    ctx.store.remove_label(issue["id"], label_id, ctx.user["id"])
    return empty()


@route("DELETE", "/repos/{owner}/{repo}/issues/{index:int}/labels")
def clear_issue_labels(ctx, owner, repo, index):
    row = ctx.repo(owner, repo)
    issue = ctx.issue(row, index)
    if not ctx.can_write(row):
        raise ApiError(403, body=False)
    ctx.store.clear_labels(issue["id"], ctx.user["id"])
    return empty()


# -- the timeline: comments and events together ---------------------------------------------
@route("GET", "/repos/{owner}/{repo}/issues/{index:int}/timeline")
def timeline(ctx, owner, repo, index):
    row = ctx.repo(owner, repo)
    issue = ctx.issue(row, index)
    rows = comment_times(ctx, ctx.store.timeline(issue["id"]))
    return listing(ctx, rows, lambda c: ctx.render.timeline_comment(c, issue, row))
