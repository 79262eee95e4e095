"""Pre-flight's tools check: each arm's tool, as its templates resolve here, is installed
(on PATH, or among the checkout's pinned builds), starts with what it needs (its skill
where the arm says) and prints its version; and `run --only-installed`, which leaves
out the arms whose tool is not installed, each listed with its install line.
"""

from __future__ import annotations

import shutil
from pathlib import Path

from benchkit import journal
from benchkit.installed import how_to_install, tool_path
from benchkit.isolation import IsolationError, assemble
from benchkit.preflight.probe import tool_version


def check_tools(arms, suite, search_path: str | None = None) -> tuple[list[str], dict]:
    """(problems, arm id -> tool version): each arm's tool, as its templates resolve on
    this machine, is there to run, and says which version it is."""
    problems, versions = _tools(arms, suite, search_path, versions=True)
    return list(problems.values()), versions


def missing_tools(arms, suite, search_path: str | None = None) -> dict[str, str]:
    """arm id -> why its tool cannot run here (not installed), for the arms whose tool
    pre-flight would refuse; what `run --dry-run` marks (it runs no version command)."""
    return _tools(arms, suite, search_path, versions=False)[0]


def _tools(arms, suite, search_path: str | None, *, versions: bool) -> tuple[dict, dict]:
    search_path = tool_path() if search_path is None else search_path
    found: dict[str, str] = {}
    versions_found: dict[str, str | None] = {}
    with journal.tempdir("benchkit-preflight-") as workdir:
        for arm in arms:
            # A missing tool first: what it needs besides (its skill) is moot without it.
            problem = not_installed(arm, search_path)
            if problem is None:
                try:
                    problem = _assembled_problem(arm, suite, search_path, Path(workdir),
                                                 versions, versions_found)
                except IsolationError as error:
                    problem = str(error)
            if problem:
                found[arm.id] = problem
    return found, versions_found


def _assembled_problem(arm, suite, search_path: str, workdir: Path, versions: bool,
                       versions_found: dict) -> str | None:
    # Placeholder coordinates: only the arm's own templates matter here, and the version
    # command reaches no host.
    assembly = assemble(arm, suite, host_url="http://preflight.invalid/",
                        api_url="http://preflight.invalid/api/v1", token="preflight",
                        owner="preflight", repo="preflight", user="preflight",
                        workdir=workdir, search_path=search_path)
    problem = _server_problem(arm, assembly, search_path)
    if problem is None and versions:
        with assembly:
            versions_found[arm.id] = tool_version(arm, assembly)
    return problem


def not_installed(arm, search_path: str) -> str | None:
    """Why the arm's tool is not installed here (its binary, or its MCP server's
    command, is on no PATH), with its install line; None when it is, or when its
    command is a template known only once rendered."""
    executable = arm.tool.executable
    if "{{" in executable or shutil.which(executable, path=search_path):
        return None
    what = "binary" if arm.tool.kind == "shell" else "MCP server command"
    return (f"arm {arm.id}: its {what} `{executable}` is not installed (not on PATH); "
            f"install it: {how_to_install(arm.tool, arm.path)}")


def _server_problem(arm, assembly, search_path: str) -> str | None:
    """An MCP server's rendered command that is no executable file."""
    for server in assembly.mcp_servers.values():
        command = server["command"]
        if shutil.which(command, path=search_path) is None:
            return (f"arm {arm.id}: its MCP server command `{command}` is not installed "
                    f"(not an executable file, nor on PATH); install it: "
                    f"{how_to_install(arm.tool, arm.path)}")
    return None


def installed_only(loaded, only_installed: bool) -> list[str]:
    """With `only_installed`, move the arms whose tool is not installed out of
    `loaded.arms` into `loaded.not_installed` (a failure when none is left); without,
    when some are missing and others installed, the line that names the flag."""
    search_path = tool_path()
    missing = {arm.id: why for arm in loaded.arms if (why := not_installed(arm, search_path))}
    if not missing:
        return []
    left = [arm for arm in loaded.arms if arm.id not in missing]
    if not only_installed:
        return [f"{len(missing)} arm(s) cannot run here; `--only-installed` runs the "
                f"{len(left)} whose tools are installed ({', '.join(a.id for a in left)}) and "
                "lists the others"] if left else []
    loaded.arms, loaded.not_installed = left, missing
    if not left:
        return [*missing.values(), "--only-installed: none of the chosen arms' tools is "
                                   "installed, so there is nothing to run"]
    return []
