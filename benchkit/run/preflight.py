"""Pre-flight: everything `benchkit run` can check before a token is spent.

    documents  the tree, the chosen arm files, the --task ids or globs, the replay
               references: valid, or their problems as FILE:LINE: message
    tools      each arm's tool is present (its binary on PATH with what it needs to
               start, or its MCP server's command; its skill where the arm says) and
               prints its version, which every sample of the run records
    claude     the Claude Code CLI is there, and (driver claude) credentials are:
               ANTHROPIC_API_KEY or another key, a Claude login, or ANTHROPIC_BASE_URL
    host       the given or discovered Gitea host answers and accepts the token (with
               none, the run starts an embedded forge and there is nothing to check)
    sandbox    the agent's shell can be confined: a probe through the real prefix proves
               the host read-only, no foreign process or environment visible, other
               ports unreachable (skipped with --unconfined)

Every check runs, so one attempt names every problem. Nothing is written outside a
temporary directory. The tool probe, which needs the run's host and a seeded
repository, runs once the host is up (benchkit.run.probe), before any trial.
"""

from __future__ import annotations

import fnmatch
import importlib.util
import os
import shutil
import tempfile
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from pathlib import Path

from benchkit.gitea import Credentials, CredentialsError, GiteaError, HostError
from benchkit.installed import how_to_install
from benchkit.isolation import IsolationError, assemble
from benchkit.isolation.sandbox import probe
from benchkit.run.host import discover
from benchkit.run.probe import tool_version
from benchkit.spec import Arm, Problem, SpecError, Tree, load_arm, load_tree
from benchkit.spec.reference import Reference, reference_for
from benchkit.spec.task import Task

# Environment variables the Claude Code CLI accepts as credentials (or as a route that
# needs none of ours: a proxy, Bedrock, Vertex).
CLAUDE_KEYS = ("ANTHROPIC_API_KEY", "ANTHROPIC_AUTH_TOKEN", "CLAUDE_CODE_OAUTH_TOKEN",
               "ANTHROPIC_BASE_URL", "CLAUDE_CODE_USE_BEDROCK", "CLAUDE_CODE_USE_VERTEX")


@dataclass(frozen=True)
class Failure:
    check: str     # documents | tools | claude | host | probe | sandbox
    message: str

    def __str__(self) -> str:
        return f"pre-flight {self.check}: {self.message}"


class PreflightError(Exception):
    """One or more pre-flight checks failed; `failures` and `problems` say which."""

    def __init__(self, failures: list[Failure], problems: list[Problem] | None = None):
        self.failures = failures
        self.problems = problems or []  # the documents' problems
        super().__init__("; ".join(map(str, failures)))


@dataclass
class Checked:
    """What passed pre-flight: the documents loaded, the host's credentials (None: run
    an embedded forge)."""

    tree: Tree
    arms: list[Arm]
    tasks: list[Task]
    references: dict[str, Reference] = field(default_factory=dict)  # replay's, by arm id
    credentials: Credentials | None = None


def preflight(arm_paths, *, task_patterns=(), tiers=(),
              driver: str = "claude", host: str | None = None, token: str | None = None,
              login: str | None = None, environ: Mapping[str, str] = os.environ,
              confine: bool = True) -> Checked:
    """Run every check; return what the run needs, or raise PreflightError."""
    failures: list[Failure] = []
    problems: list[Problem] = []
    loaded = _documents(arm_paths, task_patterns, tiers, driver, problems)
    if problems:
        failures.append(Failure("documents", f"{len(problems)} problem(s) in the documents"))
    if loaded is not None:
        problems_found, versions = check_tools(loaded.arms, loaded.tree.suite)
        failures += [Failure("tools", m) for m in problems_found]
        loaded.arms = [replace(arm, tool_version=versions.get(arm.id)) for arm in loaded.arms]
    failures += [Failure("claude", m) for m in claude_problems(driver, environ)]
    credentials, host_failures = _host(host, token, login, environ)
    failures += [Failure("host", m) for m in host_failures]
    shell = loaded is None or any(arm.tool.kind == "shell" for arm in loaded.arms)
    failures += [Failure("sandbox", m) for m in sandbox_problems(confine and shell)]
    if failures:
        raise PreflightError(failures, problems)
    assert loaded is not None  # documents that did not load are a failure
    loaded.credentials = credentials
    return loaded


# --- documents -----------------------------------------------------------------------

def load_documents(arm_paths, *, task_patterns=(), tiers=(), driver: str = "claude") -> Checked:
    """The documents check alone (what `run --dry-run` needs: no tool, no host);
    raises PreflightError with their problems."""
    problems: list[Problem] = []
    loaded = _documents(arm_paths, task_patterns, tiers, driver, problems)
    if problems or loaded is None:
        raise PreflightError([Failure("documents", f"{len(problems)} problem(s) in the documents")],
                             problems)
    return loaded


def _documents(arm_paths, task_patterns, tiers, driver, problems) -> Checked | None:
    try:
        tree = load_tree()
    except SpecError as error:
        problems.extend(error.problems)
        return None
    arms: dict[str, Arm] = {}
    for path in arm_paths:
        try:
            arm = load_arm(path)
        except SpecError as error:
            problems.extend(error.problems)
            continue
        if arm.id in arms:
            problems.append(Problem(Path(path), None, f"arm {arm.id!r} is given twice "
                                                      f"(also {arms[arm.id].path})"))
        arms[arm.id] = arm
    tasks = choose_tasks(tree, task_patterns, tiers, problems)
    references = _references(list(arms.values()), tree.root, problems) if driver == "replay" else {}
    if problems:
        return None
    return Checked(tree, list(arms.values()), tasks, references)


def choose_tasks(tree, patterns, tiers, problems) -> list:
    """The tasks named by ids or globs (all when none), of the tiers given (all when
    none), in the tree's order. A pattern that matches nothing is a problem."""
    chosen = set()
    for pattern in patterns:
        matched = [task_id for task_id in tree.tasks if fnmatch.fnmatchcase(task_id, pattern)]
        if not matched:
            problems.append(Problem(tree.root / "tasks.d" / f"{pattern}.yaml", None,
                                    f"no task matches {pattern!r} (see `benchkit list tasks`)"))
        chosen.update(matched)
    tasks = [task for task_id, task in tree.tasks.items() if not patterns or task_id in chosen]
    if tiers:
        tasks = [task for task in tasks if task.tier in tiers]
        if not tasks:
            problems.append(Problem(tree.root / "tasks.d", None,
                                    f"no chosen task is of tier {' or '.join(map(repr, tiers))}"))
    return tasks


def _references(arms, root, problems) -> dict:
    references = {}
    for arm in arms:
        try:
            references[arm.id] = reference_for(arm, root)
        except SpecError as error:
            problems.extend(error.problems)
    return references


# --- tools ---------------------------------------------------------------------------

def check_tools(arms, suite, search_path: str | None = None) -> tuple[list[str], dict]:
    """(problems, arm id -> tool version): each arm's tool, as its templates resolve on
    this machine, is there to run, and says which version it is."""
    search_path = os.environ.get("PATH", os.defpath) if search_path is None else search_path
    found, versions = [], {}
    with tempfile.TemporaryDirectory(prefix="benchkit-preflight-") as workdir:
        for arm in arms:
            try:
                # Placeholder coordinates: only the arm's own templates matter here, and
                # the version command reaches no host.
                assembly = assemble(arm, suite, host_url="http://preflight.invalid/",
                                    api_url="http://preflight.invalid/api/v1", token="preflight",
                                    owner="preflight", repo="preflight", user="preflight",
                                    workdir=Path(workdir), search_path=search_path)
                problem = _tool_problem(arm, assembly, search_path)
                if problem is None:
                    with assembly:
                        versions[arm.id] = tool_version(arm, assembly)
            except IsolationError as error:
                problem = str(error)
            if problem:
                found.append(problem)
    return found, versions


def _tool_problem(arm, assembly, search_path: str) -> str | None:
    if arm.tool.kind == "shell":
        binary = arm.tool.executable
        if shutil.which(binary, path=search_path) is None:
            return (f"arm {arm.id}: its binary `{binary}` is not installed (not on PATH); "
                    f"install it: {how_to_install(binary)}")
        return None
    for server in assembly.mcp_servers.values():
        command = server["command"]
        if shutil.which(command, path=search_path) is None:
            return (f"arm {arm.id}: its MCP server command `{command}` is not installed "
                    f"(not an executable file, nor on PATH); install it: {how_to_install(command)}")
    return None


# --- Claude --------------------------------------------------------------------------

def claude_problems(driver: str, environ: Mapping[str, str] = os.environ) -> list[str]:
    """The CLI is needed by both drivers (replay runs the real CLI); credentials only by
    the claude driver."""
    found = []
    if claude_cli() is None:
        found.append("the Claude Code CLI is missing: neither bundled with claude-agent-sdk "
                     "nor `claude` on PATH (reinstall claude-agent-sdk)")
    if driver == "claude" and not claude_credentials(environ):
        config = claude_config_dir(environ)
        found.append(f"no Claude credentials: set ANTHROPIC_API_KEY, log in with `claude` "
                     f"(expected {config / '.credentials.json'}), or point ANTHROPIC_BASE_URL "
                     f"at a Messages API endpoint; `--driver replay` needs none")
    return found


def claude_cli() -> str | None:
    # Found, not imported: the SDK takes 1.5 s to import, and only its bundled CLI is asked for.
    found = importlib.util.find_spec("claude_agent_sdk")
    if found is None or found.origin is None:
        return None
    bundled = Path(found.origin).parent / "_bundled" / "claude"
    return str(bundled) if bundled.is_file() else shutil.which("claude")


def claude_config_dir(environ: Mapping[str, str] = os.environ) -> Path:
    """Where the Claude driver looks for a login (benchkit.agent.claude pins the same)."""
    configured = environ.get("CLAUDE_CONFIG_DIR")
    if configured:
        return Path(configured)
    return Path(environ.get("HOME") or Path.home()) / ".claude"


def claude_credentials(environ: Mapping[str, str] = os.environ) -> str | None:
    """Where the CLI will find credentials (for messages), or None."""
    for key in CLAUDE_KEYS:
        if (environ.get(key) or "").strip():
            return key
    login = claude_config_dir(environ) / ".credentials.json"
    return str(login) if login.is_file() else None


# --- sandbox -------------------------------------------------------------------------

def sandbox_problems(confine: bool) -> list[str]:
    """The agent's shell can be confined here (one line each); nothing to check when no
    arm has a shell or the run is --unconfined. Any host will do: the sandbox's one way
    out leads to the run's gateway on loopback, which reaches the host."""
    if not confine:
        return []
    return [] if (reason := probe()) is None else [reason]


# --- host ----------------------------------------------------------------------------

def _host(host, token, login, environ) -> tuple[Credentials | None, list[str]]:
    """(credentials or None for an embedded forge, failures)."""
    try:
        credentials = discover(host, token, login, environ)
    except CredentialsError as error:
        return None, [str(error)]
    return credentials, host_problems(credentials) if credentials is not None else []


def host_problems(credentials: Credentials) -> list[str]:
    """The host answers, and accepts the token."""
    where = f"{credentials.url} (from {credentials.source})"
    with credentials.client(retries=1, timeout=10) as client:
        try:
            client.get("/version")
            _ = client.user  # GET /user: whose token it is
        except GiteaError as error:
            if error.status in (401, 403):
                return [f"the Gitea host {where} rejected the token (HTTP {error.status}); "
                        f"check --token / GITEA_TOKEN"]
            return [f"{where} does not answer as a Gitea host: {error}"]
        except HostError as error:  # the client's line names the URL once, plainly
            return [str(error).replace(f"Gitea host {credentials.url}", f"the Gitea host {where}", 1)]
    return []
