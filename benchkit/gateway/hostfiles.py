"""Files the host reads from a repository and acts on: a write to one is refused. From
Gitea 1.26.0's source (each entry names where it reads it); Gitea matches most of them
in one letter case or two, the check takes any (and a path with its segments' spaces
trimmed). tests/gateway/test_gateway_values.py reads the pinned source and fails when it reads
a path this list misses.

An entry ending in `/` is a directory: the path itself and everything under it.
"""

from __future__ import annotations

HOST_READS: tuple[tuple[str, str], ...] = (
    # code owners: review requests (and notifications) for whoever a file names,
    # resolved without a permission check
    ("CODEOWNERS", "services/issue/pull.go codeOwnerFiles"),
    ("docs/CODEOWNERS", "services/issue/pull.go codeOwnerFiles"),
    # the host's own configuration directories: code owners, issue and pull request
    # templates and their config, merge message templates, Actions workflows, a
    # template repository's expansions
    (".gitea/", "services/issue/pull.go, services/issue/template.go, routers/web/repo/"
                "issue.go, routers/web/repo/pull.go, services/pull/merge.go, "
                "modules/setting/actions.go, services/repository/generate.go"),
    (".github/", "services/issue/template.go, routers/web/repo/issue.go, "
                 "routers/web/repo/pull.go, modules/setting/actions.go"),
    (".gitlab/", "services/issue/template.go templateDirCandidates"),
    # issue templates at the root
    ("ISSUE_TEMPLATE/", "services/issue/template.go templateDirCandidates"),
    ("ISSUE_TEMPLATE.md", "routers/web/repo/issue.go issueTemplateCandidates"),
    ("ISSUE_TEMPLATE.yaml", "routers/web/repo/issue.go issueTemplateCandidates"),
    ("ISSUE_TEMPLATE.yml", "routers/web/repo/issue.go issueTemplateCandidates"),
    # pull request templates at the root
    ("PULL_REQUEST_TEMPLATE.md", "routers/web/repo/pull.go pullRequestTemplateCandidates"),
    ("PULL_REQUEST_TEMPLATE.yaml", "routers/web/repo/pull.go pullRequestTemplateCandidates"),
    ("PULL_REQUEST_TEMPLATE.yml", "routers/web/repo/pull.go pullRequestTemplateCandidates"),
    # git's own files the host reads: attributes (LFS, linguist, diffs), submodules,
    # blame's ignored revisions, the web editor's settings
    (".gitattributes", "modules/git/attribute/checker.go"),
    (".gitmodules", "modules/git/commit_submodule.go"),
    (".git-blame-ignore-revs", "modules/gitrepo/blame.go"),
    (".editorconfig", "services/context/repo.go GetEditorconfig"),
)

_FILES = frozenset(path.casefold() for path, _ in HOST_READS if not path.endswith("/"))
_DIRS = tuple(path.casefold() for path, _ in HOST_READS if path.endswith("/"))


def host_reads(path: str) -> str:
    """The entry of HOST_READS a file at `path` (in the repository) falls under ("" for
    none)."""
    folded = "/".join(part.strip() for part in path.split("/") if part.strip()).casefold()
    if folded in _FILES:
        return folded
    for directory in _DIRS:
        if folded == directory[:-1] or folded.startswith(directory):
            return directory
    return ""
