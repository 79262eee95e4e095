"""Models as a factor, through `benchkit run --driver replay` on the forge (the real CLI,
its model resolved by the runtime itself before any trial): a name the runtime does not
know, or a full id it would replace by another, stops the run and its dry run at
pre-flight (exit 2, one line, nothing stored); an alias runs as what it resolves to and
is recorded so; two models of one arm give a model-by-model table and a verdict in the
report's md, HTML and JSON."""

import json
import os

import pytest
from click.testing import CliRunner
from conftest import CHECKOUT

from benchkit.agent import model_probe
from benchkit.agent.model_probe import resolve
from benchkit.cli import main
from benchkit.store import Store

RAW_API = str(CHECKOUT / "arms.d/raw-api.yaml")
TASKS = ("read-open-issue-count", "read-bug-issue-titles")


def run(*args):
    return CliRunner().invoke(main, ["run", RAW_API, "--driver", "replay", "--store", "results",
                                     *args], catch_exceptions=False)


@pytest.mark.parametrize("dry", [(), ("--dry-run",)], ids=["run", "dry-run"])
@pytest.mark.parametrize("model, says", [
    ("gpt-4o", "pre-flight model: --model gpt-4o: not a model the runtime (Claude Code "),
    ("claude-opus-4-1", "pre-flight model: --model claude-opus-4-1: the runtime (Claude Code "),
])
def test_a_model_the_runtime_would_not_run_as_given_stops_at_preflight(model, says, dry, quiet,
                                                                       tmp_path):
    result = run("--model", model, "--task", TASKS[0], *dry)
    assert result.exit_code == 2, result.output
    lines = [line for line in result.output.splitlines() if line.startswith("pre-flight")]
    assert len(lines) == 1 and lines[0].startswith(says), result.output
    if model == "claude-opus-4-1":  # what it would run instead, named
        assert lines[0].endswith("would run claude-opus-5-5 instead (it replaces that id); "
                                 "give --model claude-opus-5-5 to run it")
    assert not (tmp_path / "results").exists()


def test_the_probe_is_asked_once_and_says_what_it_cost(tmp_path, monkeypatch):
    monkeypatch.setenv("BENCHKIT_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.setattr(model_probe, "_cache", {})  # as a new process
    first = resolve("haiku")
    assert (first.model, first.alias, first.known, first.cached) == (
        "claude-haiku-5-5", True, True, False)
    assert first.said().endswith(f"probed in {first.ms} ms)") and first.ms > 0
    monkeypatch.setattr(model_probe, "_cache", {})  # another process, the same CLI
    again = resolve("haiku")
    assert again.cached and (again.ms, again.max_tokens) == (first.ms, first.max_tokens)
    assert again.said().endswith(f"kept from a probe of {first.ms} ms)")
    # what changes the runtime's choice is another question, asked anew
    monkeypatch.setenv("CLAUDE_CODE_MAX_OUTPUT_TOKENS", "5000")
    bounded = resolve("haiku")
    assert (bounded.cached, bounded.max_tokens) == (False, 5000)


@pytest.mark.slow
def test_two_models_of_one_arm_are_compared_in_every_format(quiet, tmp_path):
    tasks = [a for t in TASKS for a in ("--task", t)]
    alias = run("--model", "sonnet", *tasks, "--no-report", "--no-replay-failures")
    assert alias.exit_code == 0, alias.output[-2000:]
    assert "model claude-sonnet-5-5 (as sonnet resolves)" in alias.output
    given = run("--model", "claude-sonnet-4-5", *tasks)  # and the report at its end
    assert given.exit_code == 0, given.output[-2000:]
    samples = Store(tmp_path / "results").samples()
    assert sorted((s["model"], s.get("model_alias")) for s in samples) == [
        ("claude-sonnet-4-5", None), ("claude-sonnet-4-5", None),
        ("claude-sonnet-5-5", "sonnet"), ("claude-sonnet-5-5", "sonnet")]
    assert all(s["outcome"] == "passed" for s in samples)

    reports = tmp_path / "reports"
    report = json.loads((reports / "report.json").read_text())
    assert report["model"] == "claude-sonnet-4-5"  # the run's report: its own model
    compared, = report["model_comparisons"]
    assert (compared["arm"], compared["estimated"], set(compared["tasks"])) == (
        "raw-api", True, set(TASKS))
    assert {row["model"] for row in compared["rows"]} == {"claude-sonnet-4-5", "claude-sonnet-5-5"}
    pair, = compared["verdicts"]
    assert {pair["a"], pair["b"]} == {"claude-sonnet-4-5", "claude-sonnet-5-5"}
    assert pair["tasks"] == 2 and pair["verdict"] in ("a-cheaper", "b-cheaper", "equivalent",
                                                       "undecided")
    md = (reports / "report.md").read_text()
    assert "## Models: each arm's models compared" in md and "### raw-api (replay, est.)" in md
    assert f"| {pair['a']} vs {pair['b']} | 2 |" in md and pair["says"] in md
    html = (reports / "report.html").read_text()
    assert '<h2 id="models">' in html and f"<th>{pair['a']} vs {pair['b']}</th>" in html
    chosen = CliRunner().invoke(main, ["report", "--store", "results", "--format", "json",
                                       "--model", "claude-sonnet-5-5"], catch_exceptions=False)
    assert json.loads(chosen.output)["model"] == "claude-sonnet-5-5"


@pytest.mark.parametrize("model", ["Claude-Sonnet-4-5", "claude-sonnet-4-5?x=1", "sonnet;ls",
                                   "claude-sonnet-4-5/../x", "sonnet\x00"])
def test_a_name_not_written_as_a_model_id_stops_before_the_runtime_is_asked(model, quiet,
                                                                          tmp_path):
    """The runtime prices these by a part of them and would send them on as given, so
    every trial would be refused by the model service: pre-flight says so instead."""
    with pytest.raises(model_probe.ProbeError, match="not a model name"):
        resolve(model, cli_path=str(tmp_path / "no-cli"))  # never started
    if "\x00" not in model:  # what no command line can carry
        result = run("--model", model, "--task", TASKS[0], "--dry-run")
        assert result.exit_code == 2, result.output
        line, = [line for line in result.output.splitlines() if line.startswith("pre-flight")]
        assert line.startswith(f"pre-flight model: --model {model!r}: not a model name")


def test_the_environment_resolves_as_the_trials_would_and_reaches_nothing(tmp_path,
                                                                        monkeypatch):
    """An alias the environment maps to an id the runtime replaces stops the run (its
    trials would be answered by another model); a variable that changes resolution
    (CLAUDE_CODE_DISABLE_LEGACY_MODEL_REMAP) asks anew, never a kept answer; a provider
    switch or socket in the environment leaves the probe on the stand-in."""
    monkeypatch.setenv("BENCHKIT_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.setattr(model_probe, "_cache", {})
    mapped = resolve("sonnet", environ={**os.environ,
                                         "ANTHROPIC_DEFAULT_SONNET_MODEL": "claude-opus-4-1"})
    assert mapped.refusal().startswith("--model sonnet: the runtime (Claude Code ")
    assert mapped.refusal().endswith("resolves it to claude-opus-4-1, which it would run as "
                                     "claude-opus-5-5 instead (it replaces that id); give "
                                     "--model claude-opus-5-5 to run it")
    kept = resolve("claude-opus-4-1",
                   environ={**os.environ, "CLAUDE_CODE_DISABLE_LEGACY_MODEL_REMAP": "1"})
    assert (kept.model, kept.refusal()) == ("claude-opus-4-1", None)
    replaced = resolve("claude-opus-4-1")
    assert (replaced.cached, replaced.model) == (False, "claude-opus-5-5")
    elsewhere = resolve("haiku", environ={
        **os.environ, "CLAUDE_CODE_USE_FOUNDRY": "1", "ANTHROPIC_FOUNDRY_RESOURCE": "nowhere",
        "ANTHROPIC_FOUNDRY_API_KEY": "k", "ANTHROPIC_UNIX_SOCKET": str(tmp_path / "no.sock"),
        "CLAUDE_CODE_USE_ANTHROPIC_AWS": "1"})
    assert (elsewhere.model, elsewhere.max_tokens) == ("claude-haiku-5-5", 128_000)
    assert elsewhere.ms < model_probe.PROBE_TIMEOUT_SECONDS * 1000 / 2
