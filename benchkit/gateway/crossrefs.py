"""Text that acts on another repository: a reference to an issue or pull request of
another repository. Gitea reads such text in an issue or pull request's title and body,
a comment, a merge's title and message and a commit's message (and in a file's path,
which becomes the commit message when none is given), and acts on the issue it names, in
any repository the writer may read: it writes a cross-reference into that issue's
timeline (its `updated_at` moves), and after a closing or reopening keyword it closes
or reopens it. So any such reference is refused, with or without a keyword.

Gitea finds `owner/repo#N`, `owner/repo!N` and a link `/owner/repo/issues/N` (or
`pulls`) after stripping Markdown; the check is wider, to fail closed: such a reference
anywhere in the text, letter case folded (Unicode folding: `ſ` is an `s`).
"""

from __future__ import annotations

import re

_NAME = r"[0-9a-zA-Z_.-]+"
# owner/repo#N, owner/repo!N (Gitea's cross-reference), and a URL .../owner/repo/issues/N
_REFERENCES = (re.compile(rf"({_NAME})/({_NAME})[#!][0-9]+"),
               re.compile(rf"/({_NAME})/({_NAME})/(?:issues|pulls)/[0-9]+"))


def acts_elsewhere(text: str, owner: str, repo: str) -> str:
    """The reference to another repository's issue or pull request in `text` ("" when
    there is none)."""
    folded = text.casefold()
    mine = (owner.casefold(), repo.casefold())
    for pattern in _REFERENCES:
        for found in pattern.finditer(folded):
            if (found[1], found[2]) != mine:
                return found[0]
    return ""
