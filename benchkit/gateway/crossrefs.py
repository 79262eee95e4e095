"""Text that acts on another repository: a reference to an issue or pull request of
another repository. Gitea reads such text in an issue or pull request's title and body,
a comment, a merge's title and message and a commit's message (and in a file's path,
which becomes the commit message when none is given), and acts on the issue it names, in
any repository the writer may read: it writes a cross-reference into that issue's
timeline (its `updated_at` moves), and after a closing or reopening keyword it closes
or reopens it. So any such reference is refused, with or without a keyword.

Gitea 1.26 (modules/references/references.go) finds `owner/repo#N`, `owner/repo!N`, a
URL of its own `.../owner/repo/issues/N` (or `pulls`), and a Markdown link or autolink
whose target is `/owner/repo/issues/N` or such a URL; a link's index is read with Go's
`strconv.ParseInt`, which takes `+1`, `-1`, `0001`. The check is wider, to fail closed:
such a reference anywhere in the text, in any host, with a signed index or one with
leading zeros, letter case folded (Unicode folding: `ſ` is an `s`).

An autolink (`<scheme:...>`, or a URL Gitea links by itself) to its own host or to no
host whose path, less Gitea's own path, is `/owner/repo/issues/N`, Gitea writes into the
text it reads as `owner/repo#N` (modules/markup/mdstripper processAutoLink), glued to
the text before it and with its segments unchecked: `other<http://///r/issues/1>` reads
as `other/r#1`, `<http:////x(other/r/issues/1>` as `x(other/r#1`, and under a host at
`/git/`, `*ot*<http:///owner/r/issues/1>` as `otowner/r#1`. So in a URL whose path has
`issues` or `pulls` before what reads as an index, the two segments before must name
the trial's own repository, and the URL must stand alone (after whitespace, `(`, `[`,
or a `<` after one of them): a bold URL (`**http://...**`) is refused, to fail closed.

A hard line break (a line ending in a backslash or in two spaces) joins the lines with
nothing between them in the text Gitea reads (mdstripper writes a break only for a soft one),
so `other/  ` and `r#1` on the next line read as `other/r#1`, `@` and `admin` as
`@admin`: every check reads the text with such breaks joined too (`joined`).

Linear in the text: each pattern starts only at the beginning of a run of name
characters (or at a `/`) and takes a run whole, never backing into it (possessive
quantifiers), so no character is read more than a few times whatever the text
(benchmarks/text_checks_bench.py prints the figures; tests/gateway/test_gateway_values.py holds
them under a second for 1 MiB).
"""

from __future__ import annotations

import re

_CHARS = "0-9a-z_.-"  # a name's characters, letter case folded (Gitea's validNamePattern)
_INDEX = r"[+-]?[0-9]++"  # what strconv.ParseInt(s, 10, 64) reads as a number
# owner/repo#N, owner/repo!N (Gitea's cross-reference), from the start of the owner's run
_CROSS = re.compile(rf"(?<![{_CHARS}])([{_CHARS}]++)/([{_CHARS}]++)[#!]{_INDEX}")
# /owner/repo/issues/N, /owner/repo/pulls/N: a link's target, a URL's path
_LINK = re.compile(rf"/([{_CHARS}]++)/([{_CHARS}]++)/(?:issues|pulls)/{_INDEX}")
_NUMBERED = re.compile(r"[+-]?[0-9]")
_SCHEME = frozenset("abcdefghijklmnopqrstuvwxyz0123456789+.-")
# A URL's extent: an autolink's and a linked URL's end at whitespace, `<` or `>`.
_RUN = re.compile(r"[^\x00-\x20<>]++")


def acts_elsewhere(text: str, owner: str, repo: str) -> str:
    """The reference to another repository's issue or pull request in `text` ("" when
    there is none)."""
    if "/" not in text:  # every form names owner/repo
        return ""
    if (glued := joined(text)) != text and (hit := acts_elsewhere(glued, owner, repo)):
        return hit
    folded = text.casefold()
    mine = (owner.casefold(), repo.casefold())
    for pattern in (_CROSS, _LINK):
        for found in pattern.finditer(folded):
            if (found[1], found[2]) != mine:
                return found[0]
    return _rewritten_link(folded, mine)


def joined(text: str) -> str:
    """`text` with its hard line breaks joined as Gitea reads it, the next line's
    indentation dropped (the text itself when it has none). Line by line: linear."""
    if "\n" not in text:
        return text
    out, glued = [], False
    for line in text.split("\n"):
        if glued:
            line = line.lstrip(" \t\v\f")  # goldmark's spaces
        bare = line[:-1] if line.endswith("\r") else line
        glued = bare.endswith(("\\", "  "))
        out.append((bare[:-1] if bare.endswith("\\") else bare.rstrip(" ")) if glued
                   else line + "\n")
    out[-1] = out[-1][:-1] if not glued else out[-1]  # the last line had no newline
    return "".join(out)


def _rewritten_link(folded: str, mine: tuple[str, str]) -> str:
    """A URL Gitea could write into the text as a reference to another repository, or
    glued to the text before it (see the module's docstring): every `issues` or `pulls`
    segment of its path must follow the trial's owner and repository, and the URL stand
    alone. Each run of the text is read a few times at most."""
    for run in _RUN.finditer(folded):
        url = run[0]
        host = url.find("://")
        begin = host
        while begin > 0 and url[begin - 1] in _SCHEME:
            begin -= 1
        if host < 0:
            begin = host = url.find("www.")
        path = url.find("/", host + 3) if host >= 0 else -1
        if path < 0:
            continue
        segments = url[path:].split("/")
        named = [i for i in range(3, len(segments) - 1) if segments[i] in ("issues", "pulls")
                 and _NUMBERED.match(segments[i + 1])]  # what can read as an index
        if not named:
            continue
        at = run.start() + begin
        before = folded[at - 1] if at else " "
        if before == "<":
            before = folded[at - 2] if at > 1 else " "
        if before not in " \t\n\r\f([" or any(
                (segments[i - 2], segments[i - 1]) != mine for i in named):
            return url[begin:]
    return ""
