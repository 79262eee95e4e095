"""An arm's skill: the SKILL.md its bootstrap quotes, found where the installed tool
keeps it.

An arm's `tool.skill` is a path, or `{override: VAR, paths: [...]}`: when the harness's
environment sets VAR, the file it names is the one used; otherwise the first of the
paths that holds a file. A path may name `{{ tool_package }}`, the directory above the
one the tool's resolved executable is in (an npm-style install links
`bin/gitea-axi` to `<package>/dist/main.js`, and the package ships
`<package>/skills/gitea-axi/SKILL.md`). `~` is the harness's home. Nothing found is an
IsolationError naming every place tried.
"""

from __future__ import annotations

import os
import shutil
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

from benchkit.tool import ToolSpec

from .errors import IsolationError


def skill_body(arm_id: str, tool: ToolSpec, fill: Callable[..., Any],
               environ: Mapping[str, str], search_path: str) -> str:
    """The arm's skill text without its YAML front matter; "" when it has none."""
    spec = tool.skill
    if spec is None:
        return ""
    override = spec.override
    chosen = environ.get(override) if override else None
    places: list[tuple[str | None, str | None]]  # (the label shown, the path)
    if chosen:
        places = [(f"{override}={chosen}", chosen)]
    else:
        package = tool_package(tool, fill, search_path)
        places = [(None, _place(path, fill, package)) for path in spec.paths]
    tried = []
    for label, path in places:
        if path is None:
            tried.append(f"beside the tool (its executable `{_executable(tool, fill)}` "
                         f"is not installed)")
            continue
        file = _expand(path, environ)
        try:
            return strip_front_matter(file.read_text())
        except OSError as error:
            tried.append(f"{label or file} ({error.strerror or error})")
    raise IsolationError(f"arm {arm_id}: its skill was not found; looked in: "
                         + "; ".join(tried)
                         + (f" (or set {override} to name the file)" if override and not chosen else ""))


def tool_package(tool: ToolSpec, fill: Callable[..., Any], search_path: str) -> str | None:
    """The directory above the one the tool's executable resolves to (symlinks
    followed), or None where it is not installed."""
    command = _executable(tool, fill)
    found = command if "/" in command else shutil.which(command, path=search_path)
    if not found or not os.path.exists(found):
        return None
    return str(Path(os.path.realpath(found)).parent.parent)


def _executable(tool: ToolSpec, fill: Callable[..., Any]) -> str:
    return tool.executable if tool.kind == "shell" else fill(tool.executable)


def _place(path: str, fill: Callable[..., Any], package: str | None) -> str | None:
    """The rendered path; None when it needs the package and there is none."""
    if "tool_package" in path and package is None:
        return None
    return fill(path, tool_package=package or "")


def _expand(path: str, environ: Mapping[str, str]) -> Path:
    if path == "~" or path.startswith("~/"):
        home = environ.get("HOME") or str(Path.home())
        path = home + path[1:]
    return Path(path)


def strip_front_matter(text: str) -> str:
    lines = text.splitlines(keepends=True)
    if lines and lines[0].strip() == "---":
        for index, line in enumerate(lines[1:], 1):
            if line.strip() == "---":
                return "".join(lines[index + 1:]).lstrip("\n")
    return text
