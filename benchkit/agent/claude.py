"""The Claude driver: one agent run on the Claude Agent SDK and its bundled CLI.

What the agent gets is exactly what the request names: the system prompt, the built-in
tools listed (Bash alone for shell arms, none for the MCP arm), the MCP servers listed
(strictly: no user or project servers), no user or project settings, a fresh empty
working directory, and the arm's env (its curated PATH included). The guard decides
every tool call twice over: in a PreToolUse hook, which the CLI runs for every call
(its permission callback is skipped for calls it deems read-only, such as `echo`),
and in the permission callback for anything that still reaches it.

The turn cap is the CLI's max turns. The wall-clock backstop kills every process of
the run: each carries a marker in its environment (BENCHKIT_RUN=<id>), so the CLI, its
shells, their children and the MCP server are all found and ended, even ones that
left the CLI's process group. The CLI runs under a parent-death signal (a wrapper in the
run's private directory: benchkit.lifetime), so a harness killed outright takes it
along at once, before it can send another model request; the run's stop's watchdog
ends the rest (they carry the run's tag).

The system prompt and the MCP servers' config hold the Gitea token: they reach the CLI
as files in the run's private directory, removed after the run, never as arguments
(which every user on the machine can read): benchkit.agent.private_inputs.

Containment: every Bash command runs in the trial's bubblewrap sandbox
(benchkit.isolation.sandbox, through CLAUDE_CODE_SHELL_PREFIX): read-only host, the
trial's own work directory, HOME and /tmp, no other process, an allowlisted
environment, network to the Gitea host's port alone. The CLI itself gets a HOME and
TMPDIR of the trial's own that the agent's shell cannot write: the CLI builds its
shell snapshot outside the sandbox by sourcing HOME's login files, under load after
the agent's first commands, so a ~/.bashrc the agent wrote there would run unconfined.
Unless it needs the maintainer's login, it also gets a fresh config directory. MCP servers start through a trampoline
that hands them only PATH, HOME, TMPDIR, the locale and their declared variables.

The SDK has no temperature option: runs use the runtime's default (docs/driver.md).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import re
import shlex
import shutil
import signal
import time
import uuid
from collections import deque
from concurrent.futures import ThreadPoolExecutor
from datetime import UTC, datetime
from pathlib import Path

from claude_agent_sdk import (
    ClaudeAgentOptions,
    CLIConnectionError,
    HookMatcher,
    PermissionResultAllow,
    PermissionResultDeny,
    ProcessError,
    ResultError,
    query,
)

from benchkit import journal
from benchkit.executable import write_executable
from benchkit.isolation.sandbox import Sandbox, SandboxError
from benchkit.lifetime import dies_with_thread
from benchkit.scrub import environment_secrets
from benchkit.stopping import STOP_SIGNALS, stopping

from . import service
from . import usage as usage_of
from .driver import MARKERS, AgentRequest, AgentRun, kill_marked
from .ending import (
    classify_result,
    classify_result_error,
    refused_status,
    tail,
    unstarted_mcp_servers,
    watch_model,
)
from .private_inputs import mcp_allowlisted, private_inputs
from .runtime import OnTheCli, bundled_cli
from .transcript import Recorder

RUN_MARKER = "BENCHKIT_RUN"
DUMMY_API_KEY = "sk-ant-benchkit-scripted"
# After the backstop fires, how long the SDK may take to notice the CLI is gone.
GRACE_SECONDS = 15
# How long the SDK's report of a CLI dead of a stop signal waits for the run to stop.
STOP_NOTICE = 0.5
# Quiet the CLI's own traffic that has nothing to do with the agent's work.
CLI_ENV = {"DISABLE_AUTOUPDATER": "1", "DISABLE_TELEMETRY": "1",
           "DISABLE_ERROR_REPORTING": "1", "CLAUDE_CODE_DISABLE_FEEDBACK_SURVEY": "1"}
# The driver's credentials: never in the sandboxed shell, scrubbed from every stored
# byte all the same (an unconfined run hands the CLI's environment to the shell).
ANTHROPIC_SECRETS = ("ANTHROPIC_API_KEY", "ANTHROPIC_AUTH_TOKEN", "CLAUDE_CODE_OAUTH_TOKEN")


class _QuietBackstop(logging.Filter):
    """The SDK logs an error when its CLI dies; after the backstop's SIGKILL, or once
    the run is stopping (Ctrl-C reaches the CLI too, and the stop kills it), that is
    expected, not news."""

    def filter(self, record: logging.LogRecord) -> bool:
        message = record.getMessage()
        if "Fatal error in message reader" not in message:
            return True
        died_of = re.search(r"exit code -(\d+)", message)
        signum = int(died_of.group(1)) if died_of else None
        if signum == signal.SIGKILL:
            return False
        # A terminal's Ctrl-C reaches the CLI and the run together: give the run's
        # handler a moment to say it is stopping.
        return not stopping(within=STOP_NOTICE if signum in STOP_SIGNALS else 0.0)


logging.getLogger("claude_agent_sdk._internal.query").addFilter(_QuietBackstop())


class ClaudeDriver(OnTheCli):
    """Runs the agent with the Claude Agent SDK.

    base_url: an Anthropic-compatible endpoint (the scripted model), used with a dummy
    API key and, unless config_dir says otherwise, a fresh, empty Claude config
    directory. Without it the CLI uses the maintainer's own credentials
    (ANTHROPIC_API_KEY, or the Claude login in config_dir, else CLAUDE_CONFIG_DIR, else
    ~/.claude), the directory pinned before an arm may move HOME.

    confine: run every Bash command in the OS sandbox (the default); False runs the
    shell as the CLI's child, with the CLI's environment, and marks the run unconfined.
    """

    name = "claude"

    @property
    def secrets(self) -> tuple[str, ...]:
        """The driver's credentials and the harness's secret-looking variables, for the
        store (and the transcript's excerpts) to scrub."""
        own = [os.environ[key] for key in ANTHROPIC_SECRETS if os.environ.get(key)]
        if self.api_key != DUMMY_API_KEY:
            own.append(self.api_key)
        return tuple(dict.fromkeys([*own, *environment_secrets()]))

    def __init__(self, base_url: str | None = None, api_key: str = DUMMY_API_KEY,
                 config_dir: str | os.PathLike | None = None, cli_path: str | None = None,
                 confine: bool = True):
        self.base_url = base_url
        self.api_key = api_key
        self.config_dir = config_dir
        self.cli_path = cli_path
        self.confine = confine

    def run(self, request: AgentRequest) -> AgentRun:
        try:
            asyncio.get_running_loop()
        except RuntimeError:
            return asyncio.run(self._run(request))
        # Called from async code: run on a private loop in a thread.
        with ThreadPoolExecutor(max_workers=1) as pool:
            return pool.submit(asyncio.run, self._run(request)).result()

    async def _run(self, request: AgentRequest) -> AgentRun:
        marker = uuid.uuid4().hex
        scratch = Path(journal.mkdtemp("benchkit-agent-"))  # journalled: holds the token
        cwd = Path(request.cwd) if request.cwd else scratch / "work"
        cwd.mkdir(parents=True, exist_ok=True)
        recorder = Recorder(secrets=(*request.secrets, *self.secrets))
        stderr_tail: deque[str] = deque(maxlen=40)
        started, clock = datetime.now(UTC), time.monotonic()
        sandbox = self._sandbox(request, marker, scratch, cwd)
        try:
            if sandbox is not None:
                sandbox.start()
        except (SandboxError, OSError) as exc:
            if sandbox is not None:
                sandbox.stop()
            shutil.rmtree(scratch, ignore_errors=True)
            return self._result(recorder, "startup-error", f"the sandbox did not start: {exc}",
                                None, started, 0.0)
        options = self._options(request, marker, scratch, cwd, recorder, stderr_tail.append,
                                sandbox)
        state: dict = {"backstop": False, "ended": None}

        def backstop():
            state["backstop"] = True
            recorder.model_outstanding("backstop")
            kill_marked(RUN_MARKER, marker)

        def end(stop: str, why: str) -> None:  # the model service stalled or refused us
            state["ended"] = (stop, why)
            kill_marked(RUN_MARKER, marker)

        watchdog = asyncio.get_running_loop().call_later(request.backstop_seconds, backstop)
        watch = asyncio.ensure_future(watch_model(recorder, request.model_idle_seconds, end))
        # Shielded, so that a Ctrl-C (or the last-resort timeout) kills the run's
        # processes before the SDK's own shutdown starts waiting for them to exit.
        consume = asyncio.ensure_future(self._consume(
            request, options, recorder, lambda: kill_marked(RUN_MARKER, marker)))
        stop, error, status = "end", None, None
        try:
            async with asyncio.timeout(request.backstop_seconds + GRACE_SECONDS):
                stop, error, status = await asyncio.shield(consume)
        except (TimeoutError, asyncio.CancelledError) as exc:
            kill_marked(RUN_MARKER, marker)
            await _settle(consume)
            if isinstance(exc, asyncio.CancelledError):
                raise
            stop, error = "backstop", f"no end {GRACE_SECONDS}s after the backstop"
        except ResultError as exc:
            stop, error, status = classify_result_error(exc)
        except CLIConnectionError as exc:
            stop, error = "startup-error", f"{exc}{tail(stderr_tail)}"
        except ProcessError as exc:
            stop = "startup-error" if not recorder.tools_offered else "crash"
            error = f"{exc}{tail(stderr_tail)}"
        except Exception as exc:  # whatever the SDK raised ends this run only
            stop, error = "crash", f"{type(exc).__name__}: {exc}{tail(stderr_tail)}"
        finally:
            watchdog.cancel()
            watch.cancel()
            kill_marked(RUN_MARKER, marker)  # strays: background jobs, a server the CLI left behind
            if sandbox is not None:
                sandbox.stop()
            shutil.rmtree(scratch, ignore_errors=True)
        if state["backstop"]:
            stop, error = "backstop", f"wall-clock backstop of {request.backstop_seconds}s reached"
        elif state["ended"] is not None:
            stop, error = state["ended"]
            status = refused_status(recorder.events)
        elif stop == "turn-cap":
            recorder.model_outstanding("turn cap")
        run = self._result(recorder, stop, error, status, started, time.monotonic() - clock)
        run.confined = sandbox is not None or (self.confine and "Bash" not in request.tools)
        return run

    def _sandbox(self, request: AgentRequest, marker: str, scratch: Path,
                 cwd: Path) -> Sandbox | None:
        """The trial's sandbox, for a shell arm run confined; None otherwise."""
        if not self.confine or "Bash" not in request.tools:
            return None
        markers = {key: value for key, value in request.env.items() if key in MARKERS}
        markers[RUN_MARKER] = marker
        arm_env = {key: value for key, value in request.env.items() if key not in MARKERS}
        # The CLI tracks the shell's cwd and background output in its temporary
        # directory, which the shell must reach; its messaging sockets it must not.
        sockets = scratch / "cli-tmp" / "cc-socks"
        sockets.mkdir(parents=True, mode=0o700, exist_ok=True)
        return Sandbox(scratch / "sandbox", workdir=cwd, home=scratch / "home",
                       tmp=scratch / "tmp", env=arm_env, host_url=request.network,
                       writable=(scratch / "cli-tmp", *map(Path, request.writable)),
                       readonly=tuple(map(Path, request.readonly)),
                       masked=(sockets,), markers=markers)

    async def _consume(self, request, options, recorder,
                       kill) -> tuple[str, str | None, int | None]:
        messages = query(prompt=_prompt(request.prompt), options=options)
        async for message in messages:
            recorder.add(message)
            unstarted = unstarted_mcp_servers(message)
            if unstarted:
                kill()  # the CLI would wait for the rest of a session that never comes
                # Drained to its end, not abandoned: query() does not close the SDK's own
                # generator, which the garbage collector would then end after asyncio.run
                # closed the loop ("RuntimeError: Event loop is closed").
                with contextlib.suppress(Exception):
                    async for _ in messages:
                        pass
                return "startup-error", (
                    f"MCP server(s) did not start: {', '.join(unstarted)} (one that hangs "
                    f"at start fails after the CLI's MCP_TIMEOUT)"), None
        result = recorder.result
        if result is not None and result.is_error:
            return classify_result(result.subtype, result.terminal_reason,
                                   result.api_error_status, result.result or result.errors)
        return "end", None, None

    def _options(self, request, marker, scratch, cwd, recorder, on_stderr,
                 sandbox) -> ClaudeAgentOptions:
        guard = request.guard

        def decide(name: str, tool_input: dict, tool_use_id: str | None) -> tuple[bool, str]:
            try:
                decision = guard(name, tool_input)
                allowed, reason = bool(decision.allowed), str(decision.reason)
            except Exception as exc:  # a broken guard denies
                allowed, reason = False, f"guard error: {exc}"
            recorder.decided(tool_use_id, allowed, reason)
            return allowed, reason

        async def pre_tool_use(hook_input, tool_use_id, context):
            allowed, reason = decide(hook_input["tool_name"], hook_input.get("tool_input") or {},
                                     tool_use_id)
            return {"hookSpecificOutput": {"hookEventName": "PreToolUse",
                                           "permissionDecision": "allow" if allowed else "deny",
                                           "permissionDecisionReason": reason}}

        async def can_use_tool(name, tool_input, context):
            allowed, reason = decide(name, tool_input, context.tool_use_id)
            return PermissionResultAllow() if allowed else PermissionResultDeny(message=reason)

        system_prompt, mcp_config = private_inputs(request, scratch, mcp_allowlisted)
        return ClaudeAgentOptions(
            system_prompt=system_prompt,
            model=request.model,
            tools=list(request.tools),
            mcp_servers=mcp_config,
            strict_mcp_config=True,
            setting_sources=[],
            can_use_tool=can_use_tool,
            hooks={"PreToolUse": [HookMatcher(matcher=None, hooks=[pre_tool_use],
                                              on_failure="block")]},
            max_turns=request.max_turns,
            cwd=str(cwd),
            env=self._env(request, marker, scratch, sandbox),
            stderr=on_stderr,
            cli_path=self._dies_with_run(scratch),
            include_partial_messages=True,  # each request's usage (benchkit.anatomy)
        )

    def _env(self, request: AgentRequest, marker: str, scratch: Path, sandbox) -> dict:
        env = dict(CLI_ENV)
        # The maintainer's own Gitea credentials stay out of the agent's shell.
        env.update({key: "" for key in os.environ if key.startswith("GITEA_")})
        if self.base_url:
            env.update(ANTHROPIC_BASE_URL=self.base_url, ANTHROPIC_API_KEY=self.api_key)
        env["CLAUDE_CONFIG_DIR"] = str(self._config_dir(scratch))
        # The trial's own HOME and TMPDIR, apart from the sandbox's: the CLI's shell
        # snapshot sources HOME's login files unconfined (a loaded test run saw it do so
        # after the agent had written ~/.bashrc), and reads no maintainer's files.
        for name, variable in (("cli-home", "HOME"), ("cli-own-tmp", "TMPDIR"),
                               ("cli-tmp", "CLAUDE_CODE_TMPDIR")):
            (scratch / name).mkdir(exist_ok=True)
            env[variable] = str(scratch / name)
        if request.mcp_servers:
            env["ENABLE_TOOL_SEARCH"] = "false"  # eager, unless the arm (its env, below) says so
            # The agent starts once its servers are up or have failed (MCP_TIMEOUT), never
            # without their tools while one is still connecting.
            env["MCP_CONNECTION_NONBLOCKING"] = "false"
        env["SHELL"] = "/bin/bash"  # the curated PATH may hold no shell
        env.update(request.env)
        env[RUN_MARKER] = marker
        if sandbox is not None:
            env["CLAUDE_CODE_SHELL_PREFIX"] = str(sandbox.prefix)
        return env

    def _dies_with_run(self, scratch: Path) -> str | None:
        """The CLI, started so that it dies with the thread that starts it: the SDK
        starts it on this run's event loop, whose thread outlives the run."""
        cli = self.cli_path or bundled_cli()
        argv = dies_with_thread([cli]) if cli else []
        if len(argv) < 2:
            return self.cli_path  # no CLI (the SDK says so), or no setpriv
        wrapper = scratch / "cli"
        write_executable(wrapper, f'#!/bin/sh\nexec {shlex.join(argv)} "$@"\n')
        # A directory mounted noexec: the CLI itself, the watchdog alone behind it.
        return str(wrapper) if os.access(wrapper, os.X_OK) else self.cli_path

    def _config_dir(self, scratch: Path) -> Path:
        if self.config_dir:
            return Path(self.config_dir)
        if self.base_url or any(os.environ.get(key) for key in ANTHROPIC_SECRETS):
            # A scripted model or a key needs no login: start from nothing.
            (scratch / "claude-config").mkdir(exist_ok=True)
            return scratch / "claude-config"
        return Path(os.environ.get("CLAUDE_CONFIG_DIR") or Path.home() / ".claude")

    def _result(self, recorder: Recorder, stop, error, status, started, duration) -> AgentRun:
        result = recorder.result
        if result is not None:
            total, by_model = usage_of.from_result(result.model_usage, result.usage)
        else:
            total, by_model = usage_of.from_messages(recorder.message_usage)
        recorder.stopped(stop, error)
        answer = recorder.last_text if stop != "end" or result is None or not result.result \
            else result.result
        return AgentRun(
            usage=total, usage_by_model=by_model, turns=len(recorder.main_messages),
            duration_s=round(duration, 3),
            cost_usd=result.total_cost_usd if result is not None else None,
            answer=answer, stop=stop, error=error, transcript=recorder.finish(),
            started=started, finished=datetime.now(UTC),
            tools_offered=recorder.tools_offered, api_error_status=status,
            requests=recorder.requests, model_service=service.evidence(recorder.events))


async def _settle(task: asyncio.Future) -> None:
    """Let a task wind down (its processes are gone); cancel it if it will not."""
    try:
        await asyncio.wait_for(task, GRACE_SECONDS)
    except BaseException:  # its outcome no longer matters
        pass


async def _prompt(text: str):
    # The permission callback needs the prompt as a stream of messages.
    yield {"type": "user", "message": {"role": "user", "content": text},
           "parent_tool_use_id": None, "session_id": ""}

