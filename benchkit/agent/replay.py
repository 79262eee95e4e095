"""The replay driver: it plays a reference solution (benchkit.documents.reference, the
documents in refs.d/) as the model, through the real agent.

The replay driver serves a reference as the model's turns through the scripted model
server and the real Claude Code CLI: guard, caps, tools, host and checker all run for
real; only the model is scripted. Each turn is computed when its request arrives,
from the tool results that request carries. Usage is an estimate from the bytes the
CLI sent and the model returned (docs/replay.md), and the run is marked as estimated.
"""

from __future__ import annotations

import re
from datetime import UTC, datetime

from benchkit.agent.api_view import visible_tools
from benchkit.agent.driver import AgentRequest, AgentRun, zero_usage
from benchkit.agent.runtime import OnTheCli
from benchkit.agent.scripted import ScriptedModel, ToolCall, Turn, estimate_usage
from benchkit.documents.reference import (
    Reference,
    TaskReference,
    excerpt,
    render_answer,
    render_step,
)
from benchkit.evidence import REPLAY, STOP, ReplayEvent

NULL_ANSWER = "I made no changes."


def null_reference(task_id: str) -> TaskReference:
    """The null agent: no tool call, a final answer that states nothing."""
    return TaskReference(task=task_id, answer=NULL_ANSWER)


# --- the context templates see ------------------------------------------------------

def context_for(*, host_url: str, api_url: str, token: str, owner: str, repo: str,
                user: str, self_review: bool = False, targets: dict | None = None) -> dict:
    """The names a step or answer template sees (outputs is added turn by turn)."""
    return {**(targets or {}), "host_url": host_url, "api_url": api_url, "token": token,
            "owner": owner, "repo": repo, "user": user, "self_review": self_review,
            "outputs": []}


# --- the model's side of a replay ----------------------------------------------------

def tool_results(request: dict) -> list[tuple[str, bool]]:
    """(text, is_error) of every tool result a Messages API request carries, in order."""
    results = []
    for message in request.get("messages") or []:
        content = message.get("content") if isinstance(message, dict) else None
        if message.get("role") != "user" or not isinstance(content, list):
            continue
        for block in content:
            if isinstance(block, dict) and block.get("type") == "tool_result":
                results.append((_text_of(block.get("content")), bool(block.get("is_error"))))
    return results


# The CLI appends reminders of its own to a tool result before sending it on.
_REMINDER = re.compile(r"\s*<system-reminder>.*?</system-reminder>\s*", re.DOTALL)


def _text_of(content) -> str:
    if isinstance(content, list):
        content = "\n".join(b.get("text", "") for b in content
                            if isinstance(b, dict) and b.get("type") == "text")
    return _REMINDER.sub("\n", content).strip() if isinstance(content, str) else ""


class Play:
    """The model's turns for one task reference: step i is served once the request
    carries i tool results (one per earlier step), then the answer. Steps and answer
    are rendered at that moment, with `outputs` the text of those results (a tool
    search's left out: no template reads it). As the API would, a step calls only a
    tool whose schema the request offers: a tool behind the runtime's tool search is
    called once its search has loaded it, else the replay stops saying so."""

    def __init__(self, task: TaskReference, context: dict):
        self.task = task
        self.context = context
        self.failed: dict[int, str] = {}  # step number (1-based) -> excerpt of its result
        self.errors: list[str] = []
        self.served = 0

    def turn(self, request: dict):
        results = tool_results(request)
        for number, (text, is_error) in enumerate(results, start=1):
            if is_error and number <= len(self.task.steps):
                self.failed[number] = self._scrub(excerpt(text))
        index = len(results)
        self.served = max(self.served, index)
        steps = self.task.steps
        context = {**self.context, "outputs": [text for number, (text, _) in enumerate(results)
                                               if number >= len(steps) or not steps[number].search]}
        try:
            if index < len(steps):
                step = render_step(steps[index], context)
                if step.tool is not None and step.tool not in visible_tools(request):
                    raise LookupError(f"{step.tool} is not among the tools the request offers "
                                      f"(its schema was never loaded)")
                call = (ToolCall("Bash", {"command": step.run}) if step.run is not None
                        else ToolCall(step.tool or "", step.input or {}))  # a step has one
                return Turn(calls=(call,))
            return Turn(text=render_answer(self.task, context) or NULL_ANSWER)
        except Exception as error:  # a broken template ends the replay, reported
            message = f"step {index + 1}: {type(error).__name__}: {error}" \
                if index < len(self.task.steps) else f"answer: {type(error).__name__}: {error}"
            self.errors.append(self._scrub(message))
            return Turn(text=f"The replay stopped: {self._scrub(message)}")

    def summary(self) -> ReplayEvent:
        """The transcript event that says how the replay went."""
        return {"event": REPLAY, "task": self.task.task, "steps": len(self.task.steps),
                "served": self.served, "failed_steps": dict(sorted(self.failed.items())),
                "errors": list(self.errors), "targets": dict(self.task.targets)}

    def _scrub(self, text: str) -> str:
        token = self.context.get("token")
        return text.replace(token, "***") if token else text


class ReplayModel(ScriptedModel):
    """The scripted model server, its turns computed by a Play as requests arrive.
    Every figure it reports is estimated from bytes (docs/replay.md)."""

    def __init__(self, play: Play, *, model: str | None = None):
        super().__init__([], model=model, usage=estimate_usage, auxiliary_usage=estimate_usage)
        self.play = play

    def turn_for(self, index: int, request: dict) -> Turn:
        return self.play.turn(request)


# --- the driver ----------------------------------------------------------------------

class ReplayDriver(OnTheCli):
    """Plays a reference as the model through the real Claude Code CLI (Driver protocol).

    The request must carry its `cell` (the task, self-review and the trial's
    coordinates), since steps are rendered against them.
    """

    name = "replay"

    def __init__(self, reference: Reference, *, cli_path: str | None = None,
                 confine: bool = True):
        self.reference = reference
        self.cli_path = cli_path
        self.confine = confine  # the agent's shell in the OS sandbox (benchkit.agent.claude)

    def played(self, task: str) -> str | None:
        found = self.reference.for_task(task)
        return found.fingerprint if found is not None else None

    def run(self, request: AgentRequest) -> AgentRun:
        # Imported when a run happens: the SDK takes 1.5 s to import (measured).
        from benchkit.agent.claude import ClaudeDriver
        given = request.assignment
        task = None if given is None else self.reference.for_task(given.task)
        if given is None or task is None or task.unsupported is not None:
            why = ("the request carries no assignment (task and coordinates)" if given is None
                   else f"{self.reference.path.name} has no playable reference for task "
                        f"{given.task!r}"
                   + (f": {task.unsupported}" if task is not None and task.unsupported else ""))
            return _not_run(why)
        context = context_for(**given.where.names(), self_review=given.self_review,
                              targets=task.targets)
        play = Play(task, context)
        with ReplayModel(play, model=request.model) as model:
            run = ClaudeDriver(base_url=model.url, cli_path=self.cli_path,
                               confine=self.confine).run(request)
        run.usage_estimated = True
        run.transcript.append(play.summary())
        return run


def _not_run(why: str) -> AgentRun:
    """A run that never started: the cell runner records it as a harness error."""
    now = datetime.now(UTC)
    return AgentRun(usage=zero_usage(), usage_by_model={}, turns=0, duration_s=0.0,
                    cost_usd=None, answer=None, stop="startup-error", error=why,
                    transcript=[{"event": STOP, "stop": "startup-error", "error": why}],
                    started=now, finished=now, usage_estimated=True)
