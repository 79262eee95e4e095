"""Pre-flight: everything `benchkit run` can check before a token is spent.

    documents  the tree, the chosen arm files, the --task ids or globs, the replay
               references: valid, or their problems as FILE:LINE: message
    tools      each arm's tool is present (its binary on PATH with what it needs to
               start, or its MCP server's command; its skill where the arm says) and
               prints its version, which every sample of the run records
    claude     the Claude Code CLI is there, and (driver claude) credentials are:
               ANTHROPIC_API_KEY or another key, a Claude login, or ANTHROPIC_BASE_URL
    model      the runtime itself, asked what it runs for the model (--model, else the
               suite's) against a local stand-in, nothing spent: an alias it resolves
               runs as the full id; an id it would replace by another, or a model it
               does not know, stops the run (benchkit.agent.model_probe)
    host       the given or discovered Gitea host answers and accepts the token (with
               none, the run starts an embedded forge and there is nothing to check), and
               the token can administer users, so that the run acts as a user of its own
               (without, the run needs --gateway-only-containment: the gateway alone then
               bounds what an agent reaches)
    sandbox    the agent's shell can be confined: a probe through the real prefix proves
               the host read-only, no foreign process or environment visible, other
               ports unreachable (skipped with --unconfined)

Every check runs, so one attempt names every problem. Nothing is written outside a
temporary directory. The tool probe, which needs the run's host and a seeded
repository, runs once the host is up (benchkit.preflight.probe), before any trial.
"""

from __future__ import annotations

import fnmatch
import os
import re
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from pathlib import Path

from benchkit.agent.model_probe import ProbeError, Resolution, resolve
from benchkit.agent.runtime import bundled_cli
from benchkit.documents import Arm, DocumentError, Problem, Tree, load_arm
from benchkit.documents.loader import did_you_mean
from benchkit.documents.reference import Reference, reference_for
from benchkit.documents.task import Task
from benchkit.documents.tree import load_tree_parts
from benchkit.errors import BenchkitError
from benchkit.gitea import Credentials, CredentialsError, GiteaError, HostError
from benchkit.gitea.runuser import admin_problem
from benchkit.gitea.server import BINARY_ENV
from benchkit.gitea.tools import ToolUnavailable, built
from benchkit.isolation.sandbox import probe
from benchkit.preflight.host import GITEA, discover, throwaway
from benchkit.preflight.tools import check_tools, installed_only

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


class PreflightError(BenchkitError):
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
    warnings: list[str] = field(default_factory=list)  # said before anything runs
    own_user: bool = True  # the run makes a user of its own (False: gateway-only containment)
    # --only-installed: arm id -> why its tool is not here, with its install line; these
    # arms are left out of `arms`
    not_installed: dict[str, str] = field(default_factory=dict)
    resolution: Resolution | None = None  # the model, as the runtime resolves it
    # the host the run starts for itself when `credentials` is None: "forge", or "gitea"
    # (--host gitea: the pinned Gitea)
    throwaway: str = "forge"


def preflight(arm_paths, *, task_patterns=(), tiers=(),
              driver: str = "claude", host: str | None = None, token: str | None = None,
              login: str | None = None, environ: Mapping[str, str] = os.environ,
              confine: bool = True, gateway_only: bool = False,
              only_installed: bool = False, model: str | None = None) -> Checked:
    """Run every check; return what the run needs, or raise PreflightError.
    `only_installed`: leave out the arms whose tool is not installed (Checked.not_installed)
    instead of failing on them; `model`: --model (None: the suite's)."""
    failures: list[Failure] = []
    problems: list[Problem] = []
    loaded = _documents(arm_paths, task_patterns, tiers, driver, problems)
    if problems:
        failures.append(Failure("documents", f"{len(problems)} problem(s) in the documents"))
    if loaded is not None:
        hint = installed_only(loaded, only_installed)
        problems_found, versions = check_tools(loaded.arms, loaded.tree.suite)
        failures += [Failure("tools", m) for m in [*problems_found, *hint]]
        loaded.arms = [replace(arm, tool_version=versions.get(arm.id)) for arm in loaded.arms]
    failures += [Failure("claude", m) for m in claude_problems(driver, environ)]
    resolution = _model(model, loaded, environ, failures)
    credentials, host_failures = _host(host, token, login, environ, gateway_only)
    failures += [Failure("host", m) for m in host_failures]
    shell = loaded is None or any(arm.tool.kind == "shell" for arm in loaded.arms)
    failures += [Failure("sandbox", m) for m in sandbox_problems(confine and shell)]
    if failures:
        raise PreflightError(failures, problems)
    assert loaded is not None  # documents that did not load are a failure
    loaded.credentials, loaded.own_user = credentials, not gateway_only
    loaded.resolution = resolution
    loaded.throwaway = throwaway(host)
    return loaded


# --- documents -----------------------------------------------------------------------

def load_documents(arm_paths, *, task_patterns=(), tiers=(), driver: str = "claude",
                   only_installed: bool = False, model: str | None = None) -> Checked:
    """The documents check and the model's (what `run --dry-run` needs: no tool, no
    host); raises PreflightError with their problems. `only_installed` leaves out the
    arms whose tool is not installed, as the run would."""
    problems: list[Problem] = []
    loaded = _documents(arm_paths, task_patterns, tiers, driver, problems)
    if problems or loaded is None:
        raise PreflightError([Failure("documents", f"{len(problems)} problem(s) in the documents")],
                             problems)
    failures = [Failure("tools", m)
                for m in (installed_only(loaded, only_installed) if only_installed else [])]
    loaded.resolution = _model(model, loaded, os.environ, failures)
    if failures:
        raise PreflightError(failures)
    return loaded


def _documents(arm_paths, task_patterns, tiers, driver, problems) -> Checked | None:
    try:
        tree, found = load_tree_parts()
    except DocumentError as error:
        problems.extend(error.problems)
        return None
    spare = [p for p in found if tree is not None and not _needed(p, tree.root, arm_paths,
                                                                   task_patterns)]
    problems.extend(p for p in found if p not in spare)
    if tree is None:
        return None
    warnings = [f"{p} (not chosen: this run goes on without it)" for p in spare]
    arms: dict[str, Arm] = {}
    for path in arm_paths:
        try:
            arm = load_arm(path)
        except DocumentError as error:
            problems.extend(error.problems)
            continue
        if arm.id in arms:
            problems.append(Problem(Path(path), None, f"arm {arm.id!r} is given twice "
                                                      f"(also {arms[arm.id].path})"))
        arms[arm.id] = arm
        warnings += outside_the_tree(arm, path, tree)
    tasks = choose_tasks(tree, task_patterns, tiers, problems)
    references = _references(list(arms.values()), tree.root, problems) if driver == "replay" else {}
    if problems:
        return None
    return Checked(tree, list(arms.values()), tasks, references, warnings=warnings)


def outside_the_tree(arm: Arm, path, tree: Tree) -> list[str]:
    """A warning for an arm file the report will not count as given: its id is not one
    of arms.d/ ("arm not in the tree"), or arms.d/ defines that id otherwise (its
    samples are another version). Said before any trial, so no token is spent unawares."""
    known = tree.arms.get(arm.id)
    if known is None:
        return [f"note: {path}: arm {arm.id} is not in arms.d/: the run keeps its document "
                f"in the store (.arms/{arm.id}.yaml), where the report reads it, and its "
                f"references come from the refs.d/ beside it (else the tree's)"]
    if known.fingerprint != arm.fingerprint:
        return [f"warning: {path}: arm {arm.id} differs from arms.d/{arm.id}.yaml: the report "
                f"counts the samples of arms.d/{arm.id}.yaml and lists these apart, as "
                "another version"]
    return []


def _needed(problem: Problem, root: Path, arm_paths, task_patterns) -> bool:
    """Whether a run of these arm files and --task patterns may need the broken document:
    the suite, a seed, an arm file given, a task file whose name (its id) a pattern
    matches, any task when no pattern narrows them (a tier is known only to a task that
    loads). A task or arm the run does not choose is named and left out."""
    where = problem.file.resolve().parent
    if where == root / "arms.d":
        return problem.file.resolve() in {Path(path).resolve() for path in arm_paths}
    if where == root / "tasks.d":
        return not task_patterns or any(fnmatch.fnmatchcase(problem.file.stem, pattern)
                                        for pattern in task_patterns)
    return True


def choose_tasks(tree, patterns, tiers, problems) -> list:
    """The tasks named by ids or globs (all when none), of the tiers given (all when
    none), in the tree's order. A pattern that matches nothing is a problem."""
    chosen = set()
    for pattern in patterns:
        matched = [task_id for task_id in tree.tasks if fnmatch.fnmatchcase(task_id, pattern)]
        if not matched:
            problems.append(Problem(tree.root / "tasks.d" / f"{pattern}.yaml", None,
                                    f"no task matches {pattern!r}{_meant(pattern, tree.tasks)} "
                                    "(see `benchkit list tasks`)"))
        chosen.update(matched)
    tasks = [task for task_id, task in tree.tasks.items() if not patterns or task_id in chosen]
    if tiers:
        tasks = [task for task in tasks if task.tier in tiers]
        if not tasks:
            problems.append(Problem(tree.root / "tasks.d", None,
                                    f"no chosen task is of tier {' or '.join(map(repr, tiers))}"))
    return tasks


def _meant(pattern: str, task_ids) -> str:
    """What a --task that matches nothing was probably meant to be: the closest id, or
    for a glob a glob at the ids' word boundaries that matches: the longest that the
    glob's fixed start begins with (`fta-nothing-*` -> `fta-*`), else the closest one
    (`ftx-*` -> `fta-*`), else none."""
    if not any(mark in pattern for mark in "*?["):
        return did_you_mean(pattern, task_ids)
    globs = sorted({"-".join(parts[:n]) + "-*" for task_id in task_ids
                    for parts in (task_id.split("-"),) for n in range(1, len(parts))})
    head = re.split(r"[*?[]", pattern, maxsplit=1)[0]
    kept = [glob for glob in globs if head.startswith(glob[:-1])]
    if kept:
        return f" (did you mean {max(kept, key=len)!r}?)"
    return did_you_mean(pattern, globs)


def _references(arms, root, problems) -> dict:
    references = {}
    for arm in arms:
        try:
            references[arm.id] = reference_for(arm, root)
        except DocumentError as error:
            problems.extend(error.problems)
    return references


# --- Claude --------------------------------------------------------------------------

def claude_problems(driver: str, environ: Mapping[str, str] = os.environ) -> list[str]:
    """The CLI is needed by both drivers (replay runs the real CLI); credentials only by
    the claude driver."""
    found = []
    if bundled_cli() is None:
        found.append("the Claude Code CLI is missing: neither bundled with claude-agent-sdk "
                     "nor `claude` on PATH (reinstall claude-agent-sdk)")
    if driver == "claude" and not claude_credentials(environ):
        config = claude_config_dir(environ)
        found.append(f"no Claude credentials: set ANTHROPIC_API_KEY, log in with `claude` "
                     f"(expected {config / '.credentials.json'}), or point ANTHROPIC_BASE_URL "
                     f"at a Messages API endpoint; `--driver replay` needs none")
    return found


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


# --- model ---------------------------------------------------------------------------

def _model(model: str | None, loaded: Checked | None, environ: Mapping[str, str],
           failures: list[Failure]) -> Resolution | None:
    """The model as the runtime resolves it; a failure added where it must not run.
    Nothing to ask without the documents (the suite names the default) or the CLI
    (the claude check says so)."""
    if loaded is None or bundled_cli() is None:
        return None
    try:
        found = resolve(model or loaded.tree.suite.model, environ=environ)
    except ProbeError as error:
        failures.append(Failure("model", str(error)))
        return None
    refused = found.refusal()
    if refused:
        failures.append(Failure("model", refused))
    return found


# --- sandbox -------------------------------------------------------------------------

def sandbox_problems(confine: bool) -> list[str]:
    """The agent's shell can be confined here (one line each); nothing to check when no
    arm has a shell or the run is --unconfined. Any host will do: the sandbox's one way
    out leads to the run's gateway on loopback, which reaches the host."""
    if not confine:
        return []
    return [] if (reason := probe()) is None else [reason]


# --- host ----------------------------------------------------------------------------

def _host(host, token, login, environ,
          gateway_only: bool) -> tuple[Credentials | None, list[str]]:
    """(credentials or None for an embedded forge, failures)."""
    try:
        credentials = discover(host, token, login, environ)
    except CredentialsError as error:
        return None, [str(error)]
    if credentials is None and throwaway(host) == GITEA:
        try:
            built("gitea", BINARY_ENV)
        except ToolUnavailable as error:
            return None, [f"--host gitea: {error}; `bash scripts/setup --host gitea` builds it"]
    if credentials is None:
        return None, []
    return credentials, host_problems(credentials, own_user=not gateway_only)


def host_problems(credentials: Credentials, *, own_user: bool = False) -> list[str]:
    """The host answers, and accepts the token; with `own_user`, the token can
    administer users (the run makes a user of its own)."""
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
        problem = admin_problem(client) if own_user else None
    if problem:
        return [f"{where}: {problem}, so the run cannot make a user of its own to act as, and "
                f"containment would rest on the gateway alone (another repository of your "
                f"account would be kept from an agent by the gateway only, not by the host); "
                f"use a site administrator's token with the admin scope, or pass "
                f"--gateway-only-containment to run anyway"]
    return []
