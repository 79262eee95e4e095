"""The driver protocol: the seam between the cell runner and whatever runs the agent.

The cell runner builds an `AgentRequest` (the arm's system prompt, the task intent,
exactly the arm's tools, the guard, the caps) and gets back an `AgentRun`: the four
token components summed over every model the run touched, turns, duration, imputed
cost, the final answer, how the run stopped, and the transcript events.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any, Protocol, TypedDict, cast

from benchkit.evidence import Event, ModelService, RequestEvent, UsageFigures
from benchkit.sample import Runtime
from benchkit.stopping import RUN_TAG
from benchkit.stopping import kill_marked as kill_marked  # the drivers' and tests' seam

# Variables that mark a run's processes for kill_marked: kept on the processes outside
# any sandbox, never handed to the agent's shell.
MARKERS = ("BENCHKIT_RUN", RUN_TAG)
# What an MCP server keeps of the CLI's environment, besides its declared variables
# (the Claude driver's trampoline; the run's tool probe gives a server the same).
MCP_PASSED = ("PATH", "HOME", "TMPDIR", "LANG", "LC_ALL", "TERM")



class GuardDecision(Protocol):
    """What a guard returns; benchkit.isolation's Decision has these and more."""

    @property
    def allowed(self) -> bool: ...

    @property
    def reason(self) -> str: ...


# (tool_name, tool_input) -> GuardDecision, asked for every tool call the model proposes.
ToolGuard = Callable[[str, dict], GuardDecision]


@dataclass(frozen=True)
class ToolDecision:
    """A guard decision written inline (simple guards, tests)."""

    allowed: bool = True
    reason: str = "allowed"


class Names(TypedDict):
    """The coordinates by template name."""

    host_url: str
    api_url: str
    token: str
    owner: str
    repo: str
    user: str


@dataclass(frozen=True)
class Coordinates:
    """Where one trial runs, by the names an arm's and a reference's templates use: the
    host as the agent reaches it (its gateway), the agent's token for this trial, the
    trial's repository and the user."""

    host_url: str
    api_url: str
    token: str = field(repr=False)
    owner: str
    repo: str
    user: str

    def names(self) -> Names:
        """name -> value, as templates see them ({{ host_url }}, {{ token }}, ...)."""
        return cast(Names, asdict(self))


@dataclass(frozen=True)
class Assignment:
    """What one trial asks of a driver: its task, whether the host permits self-review
    (the task's variant), and the trial's coordinates."""

    task: str
    self_review: bool
    where: Coordinates


@dataclass
class AgentRequest:
    system_prompt: str
    prompt: str                      # the task intent
    model: str
    tools: list[str]                 # built-in tools: ["Bash"] for shell arms, [] for MCP
    mcp_servers: dict                # name -> {"type": "stdio", "command", "args", "env"}
    env: dict                        # the arm's env, the curated PATH included
    cwd: Path | None                 # a fresh empty directory; None: the driver makes one
    guard: ToolGuard
    max_turns: int
    backstop_seconds: float
    # A model request with no progress for this long is a stall (None: no limit
    # but the backstop; benchkit.agent.ending).
    model_idle_seconds: float | None = None
    # The one host the agent's shell may reach (the sandbox bridges its port alone),
    # the arm's directories it may write besides its own (the config directory), the
    # files in them it may only read (the credential files the harness wrote), and
    # every secret the run knows (scrubbed from what the transcript keeps).
    network: str | None = None
    writable: tuple = ()
    readonly: tuple = ()
    secrets: tuple = field(default=(), repr=False)
    # The task and the trial's coordinates, for drivers that render against them
    # (replay); never logged.
    assignment: Assignment | None = field(default=None, repr=False)


@dataclass
class AgentRun:
    usage: UsageFigures              # summed over every model
    usage_by_model: dict[str, UsageFigures]
    turns: int
    duration_s: float
    cost_usd: float | None
    answer: str | None
    stop: str                        # one of benchkit.sample.STOPS
    error: str | None
    transcript: list[Event]
    started: datetime
    finished: datetime
    tools_offered: list[str] = field(default_factory=list)  # what the agent was shown
    api_error_status: int | None = None                      # HTTP status of an API error
    usage_estimated: bool = False                            # replay: bytes, not tokens
    temperature: Any = None          # the SDK has no temperature option: runtime default
    confined: bool = True            # the agent's shell ran in the OS sandbox (or it had none)
    # The agent's model requests one by one (the transcript's "request" events).
    requests: list[RequestEvent] = field(default_factory=list)
    # The model service's faults as the CLI reported them (benchkit.agent.service).
    model_service: ModelService | None = None


class Driver(Protocol):
    """What runs an agent, with everything the run reads of it (nothing by getattr)."""

    name: str                  # "claude" or "replay": the sample's `driver`
    confine: bool              # its agent's shell runs in the OS sandbox
    # The model endpoint it was given (None: the CLI's own credentials), and the Claude
    # config directory it hands the CLI (None: the maintainer's): what a refusal of the
    # credentials names (benchkit.agent.service.credential_source).
    base_url: str | None
    config_dir: str | os.PathLike | None

    @property
    def runtime(self) -> Runtime | None:
        """The CLI and SDK its runs take, which every sample records."""

    @property
    def secrets(self) -> tuple[str, ...]:
        """Its credentials, for the store to scrub."""

    def played(self, task: str) -> str | None:
        """What it plays for `task` in a model's place, as a digest (a replay's
        reference, whose bytes its figures are); None where a model answers."""

    def run(self, request: AgentRequest) -> AgentRun: ...


def zero_usage() -> UsageFigures:
    return {"input": 0, "cache_write": 0, "cache_write_5m": 0, "cache_write_1h": 0,
            "cache_read": 0, "output": 0}
