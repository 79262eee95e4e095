"""The agent runtime under every sample: the CLI's and the SDK's versions are recorded,
samples of two runtimes are never pooled (an older sample without one is an unknown
runtime, apart), the report names the runtime of its figures; and the runtime's own
requests (the session title the CLI asks for) are counted in the usage and shown
apart in the anatomy, proved through the real CLI."""

import json
import re

import msgspec
import pytest
from conftest import CHECKOUT
from synthetic import sample, write_store
from test_report_aggregate import costing, matrix_of, report_of, row

from benchkit import counting
from benchkit.agent.claude import ClaudeDriver
from benchkit.agent.driver import AgentRequest, ToolDecision
from benchkit.agent.runtime import installed_runtime, sdk_version
from benchkit.agent.scripted import ScriptedModel, bash, say
from benchkit.anatomy import anatomy, components_of
from benchkit.documents import load_tree
from benchkit.fingerprint import arm_fingerprint
from benchkit.report import build_report, load_store
from benchkit.report.matrix import ArmEntry
from benchkit.report.render import render
from benchkit.sample import DECODER, Runtime

MODEL = "claude-sonnet-4-5"
OLD = Runtime(cli="2.1.300 (Claude Code)", sdk="0.2.150")
NEW = Runtime(cli="2.1.332 (Claude Code)", sdk="0.2.189")
DOCUMENT = "d" * 16
TREE = load_tree(CHECKOUT)


def ran(runtime: Runtime | None, when: str, cost: float, task: str = "t1", **options) -> dict:
    """A sample of gitea-mcp at one tool version and surface, in `runtime`."""
    extra = {} if runtime is None else {"runtime": msgspec.to_builtins(runtime)}
    return sample("gitea-mcp", task, tokens=costing(cost), tool_version="a5dd03c",
                  tool_surface="s" * 16, started_at=f"2026-07-{when}T12:00:00+00:00",
                  fingerprints={"arm": arm_fingerprint(DOCUMENT, "a5dd03c", "s" * 16)},
                  **extra, **options)


def test_samples_that_differ_only_in_their_runtime_are_never_pooled(tmp_path):
    """The newest runtime's samples count; the other runtime's, and those older than
    the field (an unknown runtime), are reported apart, each in its own row; the
    report names the runtime of its figures."""
    matrix = matrix_of([ArmEntry("gitea-mcp", fingerprint=DOCUMENT)], ["t1"])
    samples = ([ran(None, "08", 90000)] + [ran(OLD, "10", 70000) for _ in range(2)]
               + [ran(NEW, "17", 1000) for _ in range(3)])
    report = report_of(tmp_path, samples, matrix)

    assert row(report, "gitea-mcp").samples == 3
    assert row(report, "gitea-mcp").cost.value == pytest.approx(1000)
    assert sorted((r.changed, r.samples) for r in report.other_versions) == [
        (["runtime Claude Code 2.1.300, claude-agent-sdk 0.2.150"], 2),
        (["runtime unknown"], 1)]
    assert report.runtimes == {"gitea-mcp": NEW.label}
    assert f"in the agent runtime `{NEW.label}`" in render(report, "md")
    assert NEW.label in render(report, "html")


def test_a_run_that_knows_its_runtime_counts_only_that_runtimes_samples(tmp_path):
    """The run loop's ledger knows the runtime its drivers run: samples of another
    runtime, even newer ones, do not count toward --until."""
    store = write_store(tmp_path / "results", [ran(OLD, "20", 1000), ran(NEW, "10", 1000)])
    samples = [DECODER.decode(line) for line in
               (store / "gitea-mcp" / "t1.jsonl").read_bytes().splitlines()]
    current = counting.Current(arms={"gitea-mcp": DOCUMENT}, tasks={"t1": (None, None)},
                               model=None, tools={"gitea-mcp": ("a5dd03c", "s" * 16, NEW)})
    placed = counting.place_groups(counting.group_samples(samples), current)
    assert [s.runtime for s in placed.measured[("gitea-mcp", "t1")]] == [NEW]
    assert [key[2] for key in placed.other] == [(f"runtime {OLD.label}",)]


def test_a_sample_older_than_the_runtime_field_still_loads(tmp_path):
    data = ran(None, "08", 1000)
    assert "runtime" not in data
    report = build_report(load_store(write_store(tmp_path / "results", [data])),
                          matrix_of([ArmEntry("gitea-mcp", fingerprint=DOCUMENT)], ["t1"]))
    assert report.runtimes == {"gitea-mcp": "unknown runtime"}


# --- through the real CLI ------------------------------------------------------------

def run_agent(script, prompt: str = "Look."):
    """The real CLI against the scripted model, with the Bash tool: the run and every
    Messages API request the stand-in received (the agent's and the runtime's own)."""
    with ScriptedModel(script, model=MODEL) as model:
        run = ClaudeDriver(base_url=model.url).run(AgentRequest(
            system_prompt="You are benchkit's test agent.", prompt=prompt, model=MODEL,
            tools=["Bash"], mcp_servers={}, env={}, cwd=None,
            guard=lambda name, tool_input: ToolDecision(True, "allowed"), max_turns=10,
            backstop_seconds=120))
        received = model.messages()
    assert run.stop == "end", run.error
    return run, received


@pytest.mark.slow
def test_the_runtime_recorded_is_the_one_that_sends_the_requests():
    """`claude --version` of the bundled CLI names the version every request it sends
    carries in its system block (cc_version), and the SDK's is the installed one."""
    runtime = installed_runtime()
    assert runtime is not None and runtime.sdk == sdk_version() != "unknown"
    _, received = run_agent([say("Nothing to do.")])
    version = runtime.cli.split()[0]
    for request in received:
        first = request.body["system"][0]["text"]
        found = re.search(r"cc_version=([0-9.]+)\.[0-9a-f]+;", first)
        assert found and found[1] == version, first


@pytest.mark.slow
def test_the_runtimes_own_requests_are_counted_and_shown_as_its_own():
    """Given a task's intent (a prompt of more than a word, as every task's is), the
    CLI asks the main model, without tools, for a session title once per run: the one
    request outside the agent's loop. Its usage is in the trial's (summed over every
    request the stand-in answered), and the anatomy shows it as the runtime's own, not
    as the agent's first prompt."""
    intent = TREE.tasks["close-csv-export-issue"].intent
    run, received = run_agent([bash("echo benchkit-chores"), say("done")], intent)
    own = [r for r in received if r.auxiliary]
    agent = [r for r in received if not r.auxiliary]
    assert len(own) == 1 and len(agent) == len(run.requests) == 2
    [title] = own
    assert title.model == MODEL and not title.body.get("tools")
    assert "naming a coding session" in json.dumps(title.body["system"])

    summed = {"input": 0, "cache_write": 0, "cache_read": 0, "output": 0}
    for request in received:
        for key, name in (("input", "input_tokens"), ("cache_write", "cache_creation_input_tokens"),
                          ("cache_read", "cache_read_input_tokens"), ("output", "output_tokens")):
            summed[key] += request.usage[name]
    assert {key: run.usage[key] for key in summed} == summed

    found = anatomy(run.requests, run.usage, estimated=False)
    assert found is not None
    assert components_of({"input": title.usage["input_tokens"],
                          "cache_write": title.usage["cache_creation_input_tokens"],
                          "cache_read": title.usage["cache_read_input_tokens"],
                          "output": title.usage["output_tokens"]}) == \
        list(msgspec.structs.astuple(found.runtime_own))
    first = agent[0].usage
    assert found.ambient_tokens == (first["input_tokens"] + first["cache_creation_input_tokens"]
                                    + first["cache_read_input_tokens"])
