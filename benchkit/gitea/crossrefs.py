"""Text that acts on another repository: a closing or reopening keyword with a reference
to an issue or pull request of another repository. Gitea reads such text in an issue
or pull request's title and body, a comment, a merge's title and message and a commit's
message, and closes or reopens the issue it names, in any repository the writer may
change. A mention without a keyword only links, and is let through.

The keywords are Gitea's defaults (modules/setting: close, closes, closed, fix, fixes,
fixed, resolve, resolves, resolved; reopen, reopens, reopened); Gitea matches them in any
letter case (Unicode folding: `ſ` is an `s`) next to the reference, after stripping
Markdown. The check is wider, to fail closed: a keyword anywhere in a text and a
reference to another repository anywhere in the same text.
"""

from __future__ import annotations

import re

KEYWORDS = ("close", "closes", "closed", "fix", "fixes", "fixed", "resolve", "resolves",
            "resolved", "reopen", "reopens", "reopened")
_KEYWORD = re.compile(r"(?<![\w])(" + "|".join(KEYWORDS) + r")(?![\w])")
_NAME = r"[0-9a-zA-Z_.-]+"
# owner/repo#N, owner/repo!N (Gitea's cross-reference), and a URL .../owner/repo/issues/N
_REFERENCES = (re.compile(rf"({_NAME})/({_NAME})[#!][0-9]+"),
               re.compile(rf"/({_NAME})/({_NAME})/(?:issues|pulls)/[0-9]+"))


def acts_elsewhere(text: str, owner: str, repo: str) -> str:
    """The reference to another repository a keyword in `text` would close or reopen
    ("" when there is none)."""
    folded = text.casefold()
    if not _KEYWORD.search(folded):
        return ""
    mine = (owner.casefold(), repo.casefold())
    for pattern in _REFERENCES:
        for found in pattern.finditer(folded):
            if (found[1], found[2]) != mine:
                return found[0]
    return ""
