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
left the CLI's process group.

The system prompt and the MCP servers' config hold the Gitea token: they reach the CLI
as files in the run's private directory, removed after the run, never as arguments
(which every user on the machine can read).

The SDK has no temperature option: runs use the runtime's default (docs/driver.md).
"""

from __future__ import annotations

import asyncio
import json
import logging
import os
import shutil
import tempfile
import time
import uuid
from collections import deque
from concurrent.futures import ThreadPoolExecutor
from datetime import datetime, timezone
from pathlib import Path

from claude_agent_sdk import (ClaudeAgentOptions, CLIConnectionError, HookMatcher,
                              PermissionResultAllow, PermissionResultDeny, ProcessError,
                              ResultError, SystemMessage, query)

from . import usage as usage_of
from .driver import AgentRequest, AgentRun, kill_marked
from .transcript import Recorder

RUN_MARKER = "BENCHKIT_RUN"
DUMMY_API_KEY = "sk-ant-benchkit-scripted"
# After the backstop fires, how long the SDK may take to notice the CLI is gone.
GRACE_SECONDS = 15
# Quiet the CLI's own traffic that has nothing to do with the agent's work.
CLI_ENV = {"DISABLE_AUTOUPDATER": "1", "DISABLE_TELEMETRY": "1",
           "DISABLE_ERROR_REPORTING": "1", "CLAUDE_CODE_DISABLE_FEEDBACK_SURVEY": "1"}
# The CLI passes its environment to the agent's shell (its own scrubbing needs
# bubblewrap), so these may show up in what the agent prints: the store scrubs them.
ANTHROPIC_SECRETS = ("ANTHROPIC_API_KEY", "ANTHROPIC_AUTH_TOKEN", "CLAUDE_CODE_OAUTH_TOKEN")


class _QuietBackstop(logging.Filter):
    """The SDK logs an error when its CLI dies; after the backstop's SIGKILL that is
    expected, not news."""

    def filter(self, record: logging.LogRecord) -> bool:
        return not ("Fatal error in message reader" in record.getMessage()
                    and "exit code -9" in record.getMessage())


logging.getLogger("claude_agent_sdk._internal.query").addFilter(_QuietBackstop())


class ClaudeDriver:
    """Runs the agent with the Claude Agent SDK.

    base_url: an Anthropic-compatible endpoint (the scripted model), used with a dummy
    API key and, unless config_dir says otherwise, a fresh, empty Claude config
    directory. Without it the CLI uses the maintainer's own credentials
    (ANTHROPIC_API_KEY, or the Claude login in config_dir, else CLAUDE_CONFIG_DIR, else
    ~/.claude), the directory pinned before an arm may move HOME.
    """

    name = "claude"

    @property
    def secrets(self) -> tuple[str, ...]:
        """Credentials the agent's shell can see, for the store to scrub."""
        return tuple(os.environ[key] for key in ANTHROPIC_SECRETS if os.environ.get(key))

    def __init__(self, base_url: str | None = None, api_key: str = DUMMY_API_KEY,
                 config_dir: str | os.PathLike | None = None, cli_path: str | None = None):
        self.base_url = base_url
        self.api_key = api_key
        self.config_dir = config_dir
        self.cli_path = cli_path

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
        scratch = Path(tempfile.mkdtemp(prefix="benchkit-agent-"))
        cwd = Path(request.cwd) if request.cwd else scratch / "work"
        cwd.mkdir(parents=True, exist_ok=True)
        recorder = Recorder()
        stderr_tail: deque[str] = deque(maxlen=40)
        options = self._options(request, marker, scratch, cwd, recorder, stderr_tail.append)
        started, clock = datetime.now(timezone.utc), time.monotonic()
        state = {"backstop": False}

        def backstop():
            state["backstop"] = True
            kill_marked(RUN_MARKER, marker)

        watchdog = asyncio.get_running_loop().call_later(request.backstop_seconds, backstop)
        # Shielded, so that a Ctrl-C (or the last-resort timeout) kills the run's
        # processes before the SDK's own shutdown starts waiting for them to exit.
        consume = asyncio.ensure_future(self._consume(request, options, recorder))
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
            stop, error, status = _classify_result_error(exc)
        except CLIConnectionError as exc:
            stop, error = "startup-error", f"{exc}{_tail(stderr_tail)}"
        except ProcessError as exc:
            stop = "startup-error" if not recorder.tools_offered else "crash"
            error = f"{exc}{_tail(stderr_tail)}"
        except Exception as exc:  # noqa: BLE001 - whatever the SDK raised ends this run only
            stop, error = "crash", f"{type(exc).__name__}: {exc}{_tail(stderr_tail)}"
        finally:
            watchdog.cancel()
            kill_marked(RUN_MARKER, marker)  # strays: background jobs, a server the CLI left behind
            shutil.rmtree(scratch, ignore_errors=True)
        if state["backstop"]:
            stop, error = "backstop", f"wall-clock backstop of {request.backstop_seconds}s reached"
        return self._result(recorder, stop, error, status, started, time.monotonic() - clock)

    async def _consume(self, request, options, recorder) -> tuple[str, str | None, int | None]:
        async for message in query(prompt=_prompt(request.prompt), options=options):
            recorder.add(message)
            failed = _failed_mcp_servers(message)
            if failed:
                return "startup-error", f"MCP server(s) failed to start: {', '.join(failed)}", None
        result = recorder.result
        if result is not None and result.is_error:
            return _classify_result(result.subtype, result.terminal_reason,
                                    result.api_error_status, result.result or result.errors)
        return "end", None, None

    def _options(self, request, marker, scratch, cwd, recorder, on_stderr) -> ClaudeAgentOptions:
        guard = request.guard

        def decide(name: str, tool_input: dict, tool_use_id: str | None) -> tuple[bool, str]:
            try:
                decision = guard(name, tool_input)
                allowed, reason = bool(decision.allowed), str(decision.reason)
            except Exception as exc:  # noqa: BLE001 - a broken guard denies
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

        system_prompt, mcp_config = _private_inputs(request, scratch)
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
            env=self._env(request, marker, scratch),
            stderr=on_stderr,
            cli_path=self.cli_path,
        )

    def _env(self, request: AgentRequest, marker: str, scratch: Path) -> dict:
        env = dict(CLI_ENV)
        # The maintainer's own Gitea credentials stay out of the agent's shell.
        env.update({key: "" for key in os.environ if key.startswith("GITEA_")})
        if self.base_url:
            env.update(ANTHROPIC_BASE_URL=self.base_url, ANTHROPIC_API_KEY=self.api_key)
        env["CLAUDE_CONFIG_DIR"] = str(self._config_dir(scratch))
        if request.mcp_servers:
            env["ENABLE_TOOL_SEARCH"] = "false"  # schemas load eagerly: the MCP arm's cost
        env["SHELL"] = "/bin/bash"  # the curated PATH may hold no shell
        env.update(request.env)
        env[RUN_MARKER] = marker
        return env

    def _config_dir(self, scratch: Path) -> Path:
        if self.config_dir:
            return Path(self.config_dir)
        if self.base_url:  # a scripted model needs no login: start from nothing
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
            started=started, finished=datetime.now(timezone.utc),
            tools_offered=recorder.tools_offered, api_error_status=status)


async def _settle(task: asyncio.Future) -> None:
    """Let a task wind down (its processes are gone); cancel it if it will not."""
    try:
        await asyncio.wait_for(task, GRACE_SECONDS)
    except BaseException:  # noqa: BLE001 - its outcome no longer matters
        pass


async def _prompt(text: str):
    # The permission callback needs the prompt as a stream of messages.
    yield {"type": "user", "message": {"role": "user", "content": text},
           "parent_tool_use_id": None, "session_id": ""}


def _failed_mcp_servers(message) -> list[str]:
    """A server that failed to start leaves the agent without tools: stop before the
    model spends a token on it."""
    if not (isinstance(message, SystemMessage) and message.subtype == "init"):
        return []
    return [s.get("name", "?") for s in message.data.get("mcp_servers", [])
            if s.get("status") == "failed"]


def _classify_result_error(exc: ResultError) -> tuple[str, str, int | None]:
    return _classify_result(exc.subtype, exc.terminal_reason, exc.api_error_status,
                            exc.result or exc.errors or str(exc))


def _classify_result(subtype, terminal_reason, status, detail) -> tuple[str, str, int | None]:
    text = detail if isinstance(detail, str) else "; ".join(map(str, detail or []))
    if subtype == "error_max_turns" or terminal_reason == "max_turns":
        return "turn-cap", text or "turn cap reached", None
    if terminal_reason == "api_error" or status is not None:
        return "api-error", text or "API error", status
    return "crash", text or f"error result: {subtype}", status


def _private_inputs(request: AgentRequest, scratch: Path) -> tuple[dict, str | dict]:
    """The system prompt and the MCP config as files in the run's private directory
    (0700, removed after the run), not as the CLI's arguments: both hold the token,
    and every user can read a process's arguments."""
    prompt = _private_file(scratch / "system-prompt.md", request.system_prompt)
    config = {}
    if request.mcp_servers:
        config = _private_file(scratch / "mcp.json", json.dumps({"mcpServers": request.mcp_servers}))
    return {"type": "file", "path": prompt}, config


def _private_file(path: Path, text: str) -> str:
    """Write `text` to a new file only its owner can read; its path."""
    with os.fdopen(os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600), "w",
                   encoding="utf-8") as f:
        f.write(text)
    return str(path)


def _tail(lines) -> str:
    return ("\n" + "\n".join(lines)) if lines else ""
