"""Two git trees compared: the files that changed between them (Gitea's ChangedFile rows,
with the texts) and their unified diff, as a pull request's files, diff and patch show.
"""

import difflib

from .repo_store import blob_sha
from .store import ForgeStore


def diff_trees(old: dict, new: dict) -> list[dict]:
    """Changed files between two trees, as Gitea's ChangedFile rows plus the texts."""
    out = []
    for path in sorted(set(old) | set(new)):
        before, after = old.get(path), new.get(path)
        if before == after:
            continue
        status = "added" if before is None else "deleted" if after is None else "modified"
        a_lines = (before or "").splitlines()
        b_lines = (after or "").splitlines()
        matcher = difflib.SequenceMatcher(a=a_lines, b=b_lines, autojunk=False)
        additions = deletions = 0
        for op, i1, i2, j1, j2 in matcher.get_opcodes():
            if op in ("replace", "delete"):
                deletions += i2 - i1
            if op in ("replace", "insert"):
                additions += j2 - j1
        out.append({"filename": path, "status": status, "additions": additions, "deletions": deletions,
                    "changes": additions + deletions, "before": before, "after": after})
    return out


def changed_files(store: ForgeStore, repo_id: int, base_sha: str | None, head_sha: str) -> list[dict]:
    """The changes from base to head; with no base (a root commit's parent), all of head's files."""
    base = store.get_commit(repo_id, base_sha) if base_sha else None
    head = store.get_commit(repo_id, head_sha)
    return diff_trees(base["tree"] if base else {}, head["tree"] if head else {})


def commit_changes(store: ForgeStore, repo_id: int, commit: dict) -> list[dict]:
    """What a commit changed against its first parent (everything, for a root commit)."""
    parent = store.get_commit(repo_id, commit["parents"][0]) if commit["parents"] else None
    return diff_trees(parent["tree"] if parent else {}, commit["tree"])


def unified_diff(changes: list[dict]) -> str:
    """The changes as `git diff` prints them (what .diff and a code comment's hunk cut from)."""
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
