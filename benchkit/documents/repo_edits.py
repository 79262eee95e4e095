"""What an edit does beyond the entity it names: a merge moves the base branch's files
on, a release makes its tag, a dependency joins two issues, a milestone's deletion
leaves its issues without one. Each works on a RepoState in place and answers a
problem's message, or None when it applied.

A merge's result is its files alone: with a merge commit, a squash, a rebase or a
fast-forward the base ends with the same files, but not with the same number of
commits, so that count is left open (null) for the checker.
"""

from __future__ import annotations

from benchkit.documents.seeded import blob_id, default_files, pull_file, seed_plan
from benchkit.state import normalise_text


def merge_bases(seed) -> dict[int, dict[str, str]]:
    """Each seeded pull request's merge base: the default branch's files when its head
    was made."""
    plan = seed_plan(seed)
    main, bases = default_files(plan), {}
    for pull in plan["pull_requests"]:
        bases[pull["number"]] = dict(main)
        if pull["state"] == "merged":
            file = pull_file(pull)
            main = {**main, file["path"]: blob_id(file["content"])}
    return bases


def merge(state: dict, pull: dict, base_files: dict[str, str] | None) -> str | None:
    """The pull request's head merged into its base: the base's files take every file
    the head changed since the merge base."""
    branches = {branch["name"]: branch for branch in state["branches"]}
    base, head = branches.get(pull["base"]), branches.get(pull["head"])
    if base is None or head is None or base_files is None:
        return (f"cannot merge pull request #{pull['number']}: its branches "
                f"{pull['base']!r} and {pull['head']!r} are not both known")
    merged = dict(base["files"])
    for path in base_files.keys() | head["files"].keys():
        if head["files"].get(path) != base_files.get(path):
            if path in head["files"]:
                merged[path] = head["files"][path]
            else:
                merged.pop(path, None)
    base["files"], base["commits"] = merged, None
    return None


def create_release(state: dict, spec: dict) -> str | None:
    """A published release makes its tag at the target branch's head (a lightweight tag:
    no message of its own); a draft makes none yet."""
    tag = spec["tag"]
    if any(release["tag"] == tag for release in state["releases"]):
        return f"a release of tag {tag!r} already exists"
    target = spec.get("target") or "main"
    branch = next((b for b in state["branches"] if b["name"] == target), None)
    if branch is None:
        return f"release target {target!r} is not a branch"
    draft = bool(spec.get("draft", False))
    state["releases"].append({"tag": tag, "name": spec.get("name", ""),
                              "body": normalise_text(spec.get("body")), "draft": draft,
                              "prerelease": bool(spec.get("prerelease", False)),
                              "attachments": []})
    if not draft and not any(existing["name"] == tag for existing in state["tags"]):
        state["tags"].append({"name": tag, "message": "", "files": dict(branch["files"])})
    return None


def add_dependency(state: dict, blocked: dict, blocker: dict) -> str | None:
    """`blocked` depends on `blocker` (both of this repository)."""
    if blocked is blocker:
        return "an issue cannot depend on itself"
    pair = {"blocked": f"#{blocked['number']}", "blocker": f"#{blocker['number']}"}
    if pair in state["dependencies"]:
        return f"#{blocked['number']} already depends on #{blocker['number']}"
    state["dependencies"].append(pair)
    return None


def create_milestone(state: dict, spec: dict) -> str | None:
    if any(milestone["title"] == spec["title"] for milestone in state["milestones"]):
        return f"milestone {spec['title']!r} already exists"
    state["milestones"].append({"title": spec["title"],
                                "description": normalise_text(spec.get("description")),
                                "state": spec.get("state", "open"),
                                "due_on": spec.get("due_on")})
    return None


def delete_milestone(state: dict, title: str) -> None:
    state["milestones"] = [m for m in state["milestones"] if m["title"] != title]
    for entity in state["issues"] + state["pull_requests"]:
        if entity.get("milestone") == title:
            entity["milestone"] = None


def rename_milestone(state: dict, old: str, new: str) -> None:
    for entity in state["issues"] + state["pull_requests"]:
        if entity.get("milestone") == old:
            entity["milestone"] = new
