"""Each arm's tool, proven before a token is spent: its version, and one read-only probe.

    tool_version(arm, assembly)     the first line of `<tool> <tool.version...>`, run
                                    in pre-flight with the arm's environment (and again
                                    for a trial whose tool changed: trial/version.py)
    probe_tools(arms, ctx, seed)    every arm's `tool.probe` on one seeded repository,
                                    with exactly the environment, PATH and credentials
                                    its agent will get (a shell probe of a confined run
                                    inside the same sandbox; an MCP server with the same
                                    allowlist); the failures, one message each
    probe_arms(arms, ctx, seed)     the same, and each arm's tool surface as the probe
                                    met it (benchkit.surface): an MCP server's tools/list
                                    is asked in the probe's own session; and, for a
                                    confined shell arm, its version command's first line
                                    inside the sandbox, the environment the agent's tool
                                    runs in (what every sample records)

A probe fails when it exits non-zero (an MCP tool result marked as an error), prints an
error line, does not show the seeded repository (no title of a seeded issue in its
output: it did not read the repository with the arm's credentials), is denied by the
arm's guard, or when the gateway (benchkit.gateway.server, through which the probe
reaches the host exactly as the agent will, with a throwaway token) saw no request,
refused one, saw one with a User-Agent the arm does not declare, or one that was not a
read. No token ever appears in a message.
"""

from __future__ import annotations

import asyncio
import re
import shlex
import shutil
import subprocess
import tempfile
from dataclasses import dataclass, field
from pathlib import Path

from benchkit import journal
from benchkit.agent.audit import audit_gateway
from benchkit.agent.driver import MCP_PASSED
from benchkit.documents import Arm, Seed, Suite
from benchkit.errors import HarnessError
from benchkit.gateway.server import Grant, gateway_for
from benchkit.gitea import Client, Repo, provision
from benchkit.gitea.admin import mint_agent_token, revoke_agent_token
from benchkit.gitea.repos import discard
from benchkit.installed import version_line
from benchkit.isolation import IsolationError, assemble
from benchkit.isolation.assembly import MCP_SERVER_NAME
from benchkit.isolation.sandbox import Sandbox
from benchkit.lifetime import dies_with_thread
from benchkit.preflight.host import HostFacts
from benchkit.scrub import scrub
from benchkit.stopping import marked, shielded, stopping
from benchkit.surface import Surface, canonical_tools

VERSION_TIMEOUT = 30
PROBE_TIMEOUT = 60
OUTPUT_SHOWN = 600  # characters of a failing command's output in its message
# A line that reports an error: "Error: ...", "error: TEA_NOT_INSTALLED", {"error": ...}.
ERROR_LINE = re.compile(r"(?im)^\W{0,3}(error|fatal|panic)\b")
READS = ("GET", "HEAD", "OPTIONS")


def tool_version(arm, assembly) -> str:
    """What the tool prints for its version arguments (its first line), run as the
    agent's tool would start: a shell binary through the curated PATH, an MCP server's
    command with the server's environment. The assembly must be set up. IsolationError
    when it does not start or fails."""
    argv, env = tool_command(arm, assembly)
    argv += list(arm.tool.version)
    try:
        done = subprocess.run(dies_with_thread(argv), env=env, cwd=assembly.config_dir,
                              stdin=subprocess.DEVNULL, capture_output=True, text=True,
                              timeout=VERSION_TIMEOUT)
    except subprocess.TimeoutExpired:
        raise IsolationError(f"arm {arm.id}: its version command `{shlex.join(argv)}` "
                             f"did not finish in {VERSION_TIMEOUT}s") from None
    except OSError as error:
        raise IsolationError(f"arm {arm.id}: its version command `{shlex.join(argv)}` "
                             f"cannot start: {error.strerror or error}") from None
    version = version_line(done.stdout or done.stderr)
    if done.returncode != 0 or version is None:
        raise IsolationError(f"arm {arm.id}: its version command `{shlex.join(argv)}` failed "
                             f"(exit status {done.returncode}): "
                             f"{_shown(done.stdout + done.stderr, assembly.token)}")
    return version


def tool_command(arm, assembly) -> tuple[list[str], dict]:
    """How the arm's tool starts: its command and environment (a shell binary through
    the curated PATH, an MCP server's command with the server's)."""
    if arm.tool.kind == "shell":
        return [arm.tool.executable], marked(assembly.agent_env())
    server = assembly.mcp_servers[MCP_SERVER_NAME]
    return [server["command"]], marked({**assembly.agent_env(), **server["env"]})


# --- the probe -----------------------------------------------------------------------

@dataclass(frozen=True)
class ProbeSite:
    """Where the probes run: the run's host (a client of its own, and what the host
    was found to be), the suite, the loaded tree's root (`{{ root }}`)."""

    client: Client
    suite: Suite
    host: HostFacts
    root: Path | None = None
    gate_timeout: float = 60.0
    admin_token: str | None = field(default=None, repr=False)  # the forge's admin routes; None: the client's


def probe_tools(arms: list[Arm], ctx: ProbeSite, seed: Seed, *,
                confine: bool = True) -> list[str]:
    """Probe every arm on one repository of the run's host freshly seeded with `seed`;
    the repository is deleted whatever happens. `confine`: whether the run's shells are
    sandboxed."""
    return probe_arms(arms, ctx, seed, confine=confine)[0]


def probe_arms(arms: list[Arm], ctx: ProbeSite, seed: Seed, *, confine: bool = True,
               versions: dict[str, str] | None = None) -> tuple[list[str], dict[str, Surface]]:
    """probe_tools' failures, and arm id -> the surface of each arm whose probe passed.
    `versions`, when given, takes arm id -> the version line of each confined shell arm
    whose probe passed, as its version command printed it inside the sandbox."""
    problems, surfaces, repo = [], {}, None
    try:
        try:
            with shielded():  # a stop waits for the repository, so that it is deleted
                repo = provision(ctx.client, seed, prefix=ctx.suite.repo_prefix,
                                 gate_timeout=ctx.gate_timeout)
        except HarnessError as error:
            return [f"cannot seed a repository for the tool probes: "
                    f"{ctx.client.scrub(str(error))}"], {}
        for arm in arms:
            problem, surface, version = _probe_arm(arm, ctx, repo, seed, confine)
            if problem is not None:
                problems.append(problem)
            elif surface is not None:
                surfaces[arm.id] = surface
            if problem is None and version is not None and versions is not None:
                versions[arm.id] = version
        return problems, surfaces
    finally:
        if repo is not None:
            with shielded():
                discard(ctx.client, repo)


def _probe_arm(arm: Arm, ctx: ProbeSite, repo: Repo, seed: Seed,
               confine: bool) -> tuple[str | None, Surface | None, str | None]:
    token, token_id = ctx.client.token or "", None  # a host without a token: none to give
    gateway, grant = gateway_for(ctx.client.url), None
    try:
        try:
            if ctx.host.forge:  # behind the gateway, a host token of its own (defence in depth)
                with shielded():  # a stop waits for the token, so that it is revoked
                    token, token_id = mint_agent_token(
                        ctx.client.url, ctx.admin_token or ctx.client.token,
                        repo=repo.full_name, user=repo.owner)
        except HarnessError as error:
            return (f"arm {arm.id}: cannot prepare its probe: {ctx.client.scrub(str(error))}",
                    None, None)
        grant = gateway.issue(repo.owner, repo.name, token)
        return _probe(arm, ctx, repo, seed, grant, confine)
    finally:
        if grant is not None:
            gateway.end(grant, abort=stopping)
        if token_id is not None:
            with shielded():
                revoke_agent_token(ctx.client.url, ctx.admin_token or ctx.client.token, token_id)


def announced_names(arm: Arm, tools: list[dict]) -> tuple[str, ...]:
    """The tool names the runtime announces instead of their schemas, for an arm behind
    its tool search (as the agent sees them: mcp__<server>__<tool>); none otherwise."""
    if not arm.tool.tool_search:
        return ()
    return tuple(sorted(f"mcp__{MCP_SERVER_NAME}__{tool.get('name')}" for tool in tools))


def _probe(arm: Arm, ctx: ProbeSite, repo: Repo, seed: Seed, grant: Grant,
           confine: bool) -> tuple[str | None, Surface | None, str | None]:
    client, token = ctx.client, grant.token
    with journal.tempdir("benchkit-probe-") as workdir:
        try:
            assembly = assemble(arm, ctx.suite, host_url=grant.url, api_url=grant.api_url,
                                token=token, owner=repo.owner, repo=repo.name,
                                user=client.user, workdir=Path(workdir), root=ctx.root)
            with assembly:
                host_url = grant.url if confine else None
                call, ok, output, tools = _call(arm, assembly, Path(workdir), host_url)
                version = (sandboxed_version(arm, assembly, Path(workdir), host_url)
                           if ok and host_url and arm.tool.kind == "shell" else None)
        except IsolationError as error:
            return str(error), None, None
    surface = Surface(tools=canonical_tools(tools), skill=assembly.skill,
                      bootstrap=arm.bootstrap, shown=assembly.bootstrap_shown,
                      announced=announced_names(arm, tools))
    return _verdict(arm, ctx, repo, seed, grant, call, ok, output), surface, version


def sandboxed_version(arm, assembly, workdir: Path, host_url: str | None) -> str:
    """The first line the tool's version command prints inside the agent's sandbox (a
    virtual environment's interpreter with that environment, as the agent runs it;
    `host_url`: the one host it may reach, None none); IsolationError when it fails."""
    command = shlex.join([arm.tool.executable, *arm.tool.version])
    _, ok, output = _sandboxed(command, assembly, workdir, host_url)
    version = version_line(output) if ok else None
    if version is None:
        raise IsolationError(f"arm {arm.id}: its version command `{command}` failed inside the "
                             f"sandbox: {_shown(output, assembly.token)}")
    return version


def _verdict(arm: Arm, ctx: ProbeSite, repo: Repo, seed: Seed, grant: Grant,
             call: str, ok: bool, output: str) -> str | None:
    """Why the probe's call failed, or None."""
    client, token = ctx.client, grant.token
    said = f"arm {arm.id}: its probe `{_redacted(call, token, client.token)}`"
    shown = _shown(output, token, client.token)
    titles = [issue["title"] for issue in seed.issues]
    if not ok:
        return f"{said} failed: {shown}"
    if ERROR_LINE.search(output):
        return f"{said} printed an error: {shown}"
    if not any(title in output for title in titles):
        return (f"{said} does not show the seeded repository {repo.full_name} (none of its "
                f"issue titles is in the output), so its credentials did not reach the "
                f"host: {shown}")
    return _requests_problem(arm, said, list(grant.requests))


def _requests_problem(arm, said: str, mine: list) -> str | None:
    """What the gateway's record of the probe's requests says against it."""
    if not mine:
        return f"{said} made no request to the host with the token it was given"
    leaks = audit_gateway(mine, arm.user_agents)
    if leaks:
        hint = f" (the arm declares user_agents {list(arm.user_agents)})" if arm.user_agents else ""
        return f"{said}: {leaks[0]}{hint}"
    writes = [f"{e.get('method')} {e.get('path')}" for e in mine if e.get("method") not in READS]
    if writes:
        return f"{said} is not read-only: it made {', '.join(writes)}"
    return None


def _call(arm, assembly, workdir: Path, host_url: str | None
          ) -> tuple[str, bool, str, list[dict]]:
    """(the call as shown, whether it succeeded, its output, the MCP server's tools/list:
    empty for a shell). `host_url`: the host a confined shell may reach; None runs the
    shell unconfined, as --unconfined does."""
    probe = assembly.probe
    if arm.tool.kind == "shell":
        return (*_run_shell(probe.run or "", assembly, workdir, host_url), [])
    return _call_mcp(probe.tool or "", probe.input, assembly)


def _run_shell(command: str, assembly, workdir: Path, host_url: str | None
               ) -> tuple[str, bool, str]:
    decision = assembly.guard.decide(command)
    if not decision.allowed:
        return command, False, f"the arm's guard denies it: {decision.reason}"
    if host_url is None:
        env = marked(assembly.agent_env())
        return _shell(command, [env.get("SHELL") or shutil.which("bash") or "/bin/bash", "-c"],
                      env, workdir)
    return _sandboxed(command, assembly, workdir, host_url)


def _sandboxed(command: str, assembly, workdir: Path,
               host_url: str | None) -> tuple[str, bool, str]:
    """Run a command line in a sandbox as the agent's, reaching `host_url` alone."""
    with journal.tempdir("benchkit-probe-sandbox-") as scratch, \
            Sandbox(Path(scratch) / "sandbox", workdir=workdir, home=Path(scratch) / "home",
                    tmp=Path(scratch) / "tmp", env=dict(assembly.env),
                    host_url=host_url, writable=(assembly.config_dir,),
                    readonly=assembly.credential_files, markers=marked({})) as sandbox:
        # The arm's config directory, as the agent's sandbox has it (tea's login file):
        # it lives under the harness's temporary directory, which the sandbox hides.
        return _shell(command, [str(sandbox.prefix)], {}, workdir)


def _shell(command: str, argv: list[str], env: dict, workdir: Path) -> tuple[str, bool, str]:
    """Run `argv + [command]`: the agent's shell, or the sandbox's prefix around it."""
    try:
        done = subprocess.run(dies_with_thread([*argv, command]), env=env, cwd=workdir,
                              stdin=subprocess.DEVNULL, capture_output=True, text=True,
                              timeout=PROBE_TIMEOUT)
    except subprocess.TimeoutExpired:
        return command, False, f"no answer in {PROBE_TIMEOUT}s"
    output = done.stdout + done.stderr
    if done.returncode != 0:
        return command, False, f"exit status {done.returncode}: {output}"
    return command, True, output


def _call_mcp(name: str, arguments: dict, assembly) -> tuple[str, bool, str, list[dict]]:
    server = assembly.mcp_servers[MCP_SERVER_NAME]
    shown = f"{name} {arguments}"
    with tempfile.TemporaryFile("w+") as errlog:
        try:
            error, output, tools = asyncio.run(asyncio.wait_for(
                _mcp_call(server, _mcp_env(assembly, server), name, arguments,
                          errlog), PROBE_TIMEOUT))
        except Exception as exc:  # any way the server fails is the probe's
            errlog.seek(0)
            detail = " ".join(errlog.read().split())[-OUTPUT_SHOWN // 2:]  # its last words
            reason = "no answer in time" if isinstance(exc, TimeoutError) else _describe(exc)
            return shown, False, f"the MCP server failed ({reason}){': ' + detail if detail else ''}", []
    return shown, not error, output, tools


def _mcp_env(assembly, server: dict) -> dict:
    """What the Claude driver's trampoline leaves an MCP server: MCP_PASSED of the
    agent's environment and the server's declared variables."""
    env = assembly.agent_env()
    return marked({**{key: env[key] for key in MCP_PASSED if key in env}, **server["env"]})


async def _mcp_call(server: dict, env: dict, name: str, arguments: dict, errlog):
    # Imported for an MCP arm's probe only: the MCP client takes 0.9 s to import (measured).
    from mcp import ClientSession, StdioServerParameters
    from mcp.client.stdio import stdio_client
    # Started by this thread's event loop, it dies with the thread, even a SIGKILL's.
    command, *args = dies_with_thread([server["command"], *server["args"]])
    params = StdioServerParameters(command=command, args=args, env=env)
    async with stdio_client(params, errlog=errlog) as (read, write), \
            ClientSession(read, write) as session:
        await session.initialize()
        tools = await _list_tools(session)
        result = await session.call_tool(name, arguments)
    text = "\n".join(getattr(part, "text", "") for part in result.content)
    return bool(result.is_error), text, tools


async def _list_tools(session) -> list[dict]:
    """Every tool the server lists (all pages), as JSON: what the agent is shown."""
    tools, cursor = [], None
    while True:
        page = await (session.list_tools(cursor=cursor) if cursor else session.list_tools())
        tools += [tool.model_dump(mode="json", by_alias=True, exclude_none=True)
                  for tool in page.tools]
        cursor = page.next_cursor
        if not cursor:
            return tools


def _describe(exc: BaseException) -> str:
    """The innermost error of an exception group (the MCP client's task groups)."""
    while isinstance(exc, BaseExceptionGroup) and exc.exceptions:
        exc = exc.exceptions[0]
    return f"{type(exc).__name__}: {exc}"


def _shown(text: str, *secrets: str | None) -> str:
    """Output for a message: tokens out, on one line, its end (where errors are)."""
    text = " ".join(_redacted(text, *secrets).split())
    return text if len(text) <= OUTPUT_SHOWN else "... " + text[-OUTPUT_SHOWN:]


def _redacted(text: str, *secrets: str | None) -> str:
    """Tokens out of a message, in every form benchkit.scrub knows."""
    return scrub(text, [s for s in secrets if s], placeholder="[token]")
