"""The diff hunk a review comment carries: Gitea cuts the file's diff around the
commented line when the comment is made (git.CutDiffAroundLine, 4 lines of context),
or, for a line the pull request leaves unchanged, makes a patch of the lines above it;
the API then shows the part from the first `@@` on (convert.patch2diff).
"""

import re

CONTEXT_LINES = 4  # setting.UI.CodeCommentLines
HUNK = re.compile(r"^@@ -(?P<begin_old>[0-9]+)(,(?P<end_old>[0-9]+))? \+(?P<begin_new>[0-9]+)(,(?P<end_new>[0-9]+))? @@")
DIFF_HEAD = "diff --git "


def _is_header(line: str, in_hunk: bool) -> bool:
    return line.startswith(DIFF_HEAD) or (not in_hunk and (line.startswith("---") or line.startswith("+++")))


def cut_around_line(diff: str, line: int, old: bool, context: int = CONTEXT_LINES) -> str:
    """A one-file diff cut down to the hunk holding `line` and `context` lines above it."""
    if line == 0 or context == 0:
        return ""
    hunk: list[str] = []
    begin = end = current = other = 0
    headers, in_hunk = 0, False
    for text in diff.split("\n"):
        if _is_header(text, in_hunk):
            if text.startswith(DIFF_HEAD):
                in_hunk = False
            hunk.append(text)
            headers += 1
        if current > line:
            break
        if text.startswith("@@"):
            in_hunk = True
            if len(hunk) > headers:
                break
            match = HUNK.match(text)
            if match is None:  # never so in a diff: content lines start with a space, + or -
                continue
            side, opposite = ("old", "new") if old else ("new", "old")
            begin = int(match.group(f"begin_{side}"))
            end = begin + int(match.group(f"end_{side}") or 0)
            other = int(match.group(f"begin_{opposite}"))
            if begin <= line <= end:
                hunk.append(text)
                current = begin
                continue
        elif len(hunk) > headers and text:
            hunk.append(text)
            mark = text[0]
            if mark == "+":
                current, other = (current, other + 1) if old else (current + 1, other)
            elif mark == "-":
                current, other = (current + 1, other) if old else (current, other + 1)
            elif mark != "\\":
                current, other = current + 1, other + 1
    if current == 0:
        return ""
    if len(hunk) - headers - 1 <= context:
        return "\n".join(hunk)
    old_begin, new_begin = (current, other) if old else (other, current)
    old_count = new_count = 0
    for text in hunk[len(hunk) - context:]:
        if text[0] == "+":
            new_begin, new_count = new_begin - 1, new_count + 1
        elif text[0] == "-":
            old_begin, old_count = old_begin - 1, old_count + 1
        else:
            old_begin, new_begin = old_begin - 1, new_begin - 1
            old_count, new_count = old_count + 1, new_count + 1
    cut = hunk[:headers] + hunk[len(hunk) - context - 1:]
    cut[headers] = f"@@ -{old_begin},{old_count} +{new_begin},{new_count} @@"
    return "\n".join(cut)


def unchanged_line_patch(content: str | None, path: str, line: int, context: int = CONTEXT_LINES) -> str:
    """Gitea's synthetic patch for a comment on a line the diff does not touch."""
    if content is None:
        return ""
    commented = abs(line)
    start = max(commented - context, 1)
    lines = content.split("\n")
    if content.endswith("\n"):
        lines.pop()
    chosen = lines[start - 1:commented]
    if not chosen:
        return ""
    body = "".join(f" {text}\n" for text in chosen)
    return (f"diff --git a/{path} b/{path}\n--- a/{path}\n+++ b/{path}\n"
            f"@@ -{start},{len(chosen)} +{start},{len(chosen)} @@\n{body}")


def diff_hunk(patch: str) -> str:
    """convert.patch2diff: the patch from its first hunk header on."""
    parts = patch.split("\n@@")
    return "@@" + parts[1] if len(parts) == 2 else ""
