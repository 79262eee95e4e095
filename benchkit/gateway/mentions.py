"""Text that names a user: an `@mention`. Gitea 1.26 reads mentions in the text of an
issue, a pull request, a comment and a review (models/issues/issue_update.go
FindAndUpdateIssueMentions, modules/references/references.go mentionPattern, after
modules/markup/mdstripper strips the Markdown), looks the user or team up, and notifies
those who can read the repository: the site administrator, always. So a mention of
anyone but the trial's own user is refused.

Gitea's mention is `@name` or `@org/team` (ASCII letters, digits, `_`, `-` and `.`)
after whitespace, `(`, `[` or the start; stripping Markdown starts a new line before the
text of emphasis, a link's text, an autolink and such, so after any markup character
too; a hard line break joins two lines with nothing between (`@`, a break, `admin` is
`@admin`: benchkit.gateway.crossrefs.joined), so the text is read joined too. The check is wider, to fail closed: every `@` followed by a name character is a
mention, except where it cannot begin one: right after a letter or digit in a word
with no `@`, `www.` or `://` before it (an e-mail address, `a@b`; after a URL Gitea
links, what follows is a new text). Code spans and blocks are not told apart:
a mention there is refused too. Linear in the text.
"""

from __future__ import annotations

import re
from itertools import chain

from benchkit.gateway.crossrefs import joined

_NAME = "-0-9A-Za-z_"  # what may follow the `@` of a mention (Go's [-\w])
_MENTION = re.compile(rf"@([{_NAME}][-.{_NAME[1:]}]*+)(/?)")
# An `@` that begins a mention whatever came before in its word: not after a letter or digit.
_DIRECT = re.compile(rf"(?<![0-9A-Za-z])@(?=[{_NAME}])")
# From a word's `@`, `www.` or `://` on, any later `@` of the word begins one: each match
# runs to the next such `@` (or the word's end), so none is read twice.
_OPENED = re.compile(rf"(?:@|www\.|://)(?:[^\t\n\f\r @]|@(?![{_NAME}]))*+")


def mentions_other(text: str, allowed: frozenset[str]) -> str:
    """The first mention in `text` of a user or team whose lower-case name is not in
    `allowed` ("" when there is none)."""
    if "@" not in text:
        return ""
    if (glued := joined(text)) != text and (hit := mentions_other(glued, allowed)):
        return hit
    starts = (found.start() for found in _DIRECT.finditer(text))
    later = (found.end() for found in _OPENED.finditer(text)
             if text.startswith("@", found.end()))
    for start in chain(starts, later):
        found = _MENTION.match(text, start)
        if found is None:
            continue
        name = found[1].rstrip(".").lower()  # Gitea's lazy match ends before a last dot
        if found[2] or name not in allowed:
            return found[0][:40]
    return ""
