"""The host's work on what a request carries, bounded so that no request the gateway
forwards holds the host past a second. Gitea 1.26.0's superlinear paths, measured on its
own code (benchmarks/hostwork_bench.py prints the figures):

- text it reads for mentions and references (issue and pull request titles and bodies,
  comments, reviews, commit and merge messages: modules/references after
  modules/markup/mdstripper, once for mentions and once for references). Goldmark's
  emphasis, link and nesting work is quadratic in Markdown punctuation (`*a_` repeated:
  20 KB 0.3 s, 40 KB 1.4 s, 80 KB 5.8 s; `[a](`, `` ` ``, `~`, `> `, `1. `, `+ ` alike),
  and for each reference it finds (`#1`, `!1`, `owner/repo#1`, an issue URL) a pattern
  runs over all the text before it (`#1` on every line: 8 KB 4.3 s). So each string of
  a body, and each path parameter (the contents API's default commit message is
  "Add <path>"), is held to TEXT_BYTES, MARKUP_CHARS of Markdown punctuation, and
  references times its bytes to REFERENCE_WORK; a request's strings to REQUEST_TEXT in
  all. A file's content (the contents API's base64 `content`) is stored, never read as
  text: the request's own size limit holds it.
- lists: a body's arrays (labels, assignees, review comments: one write or lookup an
  item) and a list filter's comma-separated items (Gitea looks each of `milestones` up
  by name and then by id: 32k items, 64k queries, 2.7 s a request) to LIST_ITEMS.
- the query: Gitea copies it into its `Link` header, and runs `q` through its indexer:
  QUERY_BYTES at most.

Every check is one pass over its input. A request past a bound is refused (a leak: the
trial is invalid and, as the agent's own doing, a failure of its arm).
"""

from __future__ import annotations

import re
from collections.abc import Iterator

TEXT_BYTES = 16 * 1024
REQUEST_TEXT = 32 * 1024
MARKUP_CHARS = 2048
REFERENCE_WORK = 128 * 1024  # references x bytes of their text: 8 in 16 KiB, 128 in 1 KiB
LIST_ITEMS = 64
QUERY_BYTES = 4096
FILE_CONTENT = frozenset({"content"})  # base64 file bodies: stored, never parsed as text
LIST_FILTERS = frozenset({"labels", "milestones"})
# What goldmark's inline and block parsing nests or pairs; and what Gitea's reference
# patterns start from.
_MARKUP = re.compile(r"[*_~`\[\]()<>!+.|\\]")
_REFERENCE = re.compile(r"[#!][0-9]|/(?:issues|pulls)/[0-9]")


def text_too_costly(text: str, where: str) -> str:
    """Why the host's work on one string would be too much ("" when it would not)."""
    size = len(text.encode("utf-8", "surrogatepass"))
    if size > TEXT_BYTES:
        return f"{where} of {size} bytes of text (the host parses at most {TEXT_BYTES} a string)"
    markup = sum(1 for _ in _MARKUP.finditer(text))
    if markup > MARKUP_CHARS:
        return (f"{where} with {markup} Markdown punctuation characters (at most "
                f"{MARKUP_CHARS}: the host's Markdown parsing is quadratic in them)")
    references = sum(1 for _ in _REFERENCE.finditer(text))
    if references * size > REFERENCE_WORK:
        return (f"{where} with {references} issue references in {size} bytes (the host's "
                f"work is their product: at most {REFERENCE_WORK})")
    return ""


def body_too_costly(body: object) -> str:
    """Why the host's work on a JSON body would be too much ("" when it would not)."""
    total = 0
    for where, value in _leaves(body, "the body"):
        if isinstance(value, list):
            if len(value) > LIST_ITEMS:
                return f"{where}: a list of {len(value)} items (at most {LIST_ITEMS})"
            continue
        if reason := text_too_costly(value, where):
            return reason
        total += len(value)
        if total > REQUEST_TEXT:
            return f"a body of more than {REQUEST_TEXT} characters of text"
    return ""


def query_too_costly(pairs: list[tuple[str, str]], encoded: str) -> str:
    """Why the host's work on a query (its pairs, and as forwarded) would be too much."""
    if len(encoded) > QUERY_BYTES:
        return f"a query of {len(encoded)} bytes (at most {QUERY_BYTES})"
    for key, value in pairs:
        if key in LIST_FILTERS and value.count(",") >= LIST_ITEMS:
            return f"the filter {key} with {value.count(',') + 1} items (at most {LIST_ITEMS})"
    return ""


def _leaves(value: object, where: str) -> Iterator[tuple[str, str | list]]:
    """Every string and list in a JSON value, with where it is; not a file's content."""
    if isinstance(value, str):
        yield where, value
    elif isinstance(value, list):
        yield where, value
        for item in value:
            yield from _leaves(item, where)
    elif isinstance(value, dict):
        for key, item in value.items():
            if key not in FILE_CONTENT:
                yield from _leaves(item, f"the field {str(key)[:40]!r}")
