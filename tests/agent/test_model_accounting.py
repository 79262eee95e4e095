"""The model service's accounting checked, never trusted, through `benchkit run` (the
real SDK and CLI against the scripted model, the forge, real curl): negative, huge and
missing usage, figures sent as text, an output above the request's own max_tokens and
another model's answers (another dated snapshot of a dated id included) each make their
trial a harness error whose sample keeps the raw figures; none halts the run, none
reaches a measured figure, the report or its headline. An alias runs as the model the
runtime resolves it to, asked for, recorded and checked as that."""

import json

import jsonschema
import pytest
from click.testing import CliRunner
from conftest import CHECKOUT

from benchkit.agent import faults
from benchkit.agent.accounting import check, same_model
from benchkit.agent.scripted import ScriptedModel, Turn, bash, say
from benchkit.cli import main
from benchkit.store import Store

SAMPLE_SCHEMA = json.loads((CHECKOUT / "benchkit/schemas/sample.schema.json").read_text())
HUGE = 10 ** 12
OTHER = "claude-3-5-haiku-20241022"
FIGURES = {"input_tokens": 100, "cache_creation_input_tokens": 0,
           "cache_read_input_tokens": 0, "output_tokens": 20}
# One cell each, in the run's order: the turn each trial's agent is answered with.
FAULTS = [Turn(text="7", usage={**FIGURES, "output_tokens": -5}),
          Turn(text="none", usage={**FIGURES, "output_tokens": HUGE}),
          Turn(text="none", usage_missing=True),
          Turn(text="7", answered_by=OTHER),
          Turn(text="none"),  # figures that pass: five harness errors in a row halt a run
          Turn(text="none", usage=faults.as_text({**FIGURES, "cache_creation_input_tokens": 4000},
                                                 "cache_creation_input_tokens")),
          Turn(text="none", usage=faults.beyond_max_tokens(FIGURES))]
# What the runtime sends claude-sonnet-4-5's requests as max_tokens (its model probe's).
MAX_TOKENS = 32_000
EXPECTED = [("model-usage", "output -5 is negative"),
            ("model-usage", "1,000,000,000,000 output tokens"),
            ("model-usage", "usage missing from every agent request"),
            ("model-mismatch", f"asked for claude-sonnet-4-5, answered by {OTHER}"),
            (None, None),
            ("model-usage", "request 1: cache_write is '4000', not a count"),
            ("model-usage", f"request 1: {MAX_TOKENS + 1:,} output tokens, above the "
                            f"request's own max_tokens ({MAX_TOKENS:,})")]
TASKS = ["read-open-issue-count", "read-bug-issue-titles", "read-issue-labels-and-state",
         "read-review-body", "close-csv-export-issue", "label-startup-crash",
         "reopen-readme-badges"]


def run(tmp_path, monkeypatch, script, *args):
    """`benchkit run` of raw-api on the claude driver against the stand-in; (its
    result, the stored samples in order, the stand-in's agent requests)."""
    with ScriptedModel(script) as model:
        monkeypatch.setenv("ANTHROPIC_BASE_URL", model.url)
        monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-ant-benchkit-test")
        monkeypatch.setenv("CLAUDE_CONFIG_DIR", str(tmp_path / "claude"))
        result = CliRunner().invoke(main, [
            "run", str(CHECKOUT / "arms.d/raw-api.yaml"), "--store", "results", "--no-report",
            "--no-replay-failures", *args], catch_exceptions=False)
    stored = sorted(Store(tmp_path / "results").samples(), key=lambda s: s["started_at"])
    return result, stored, model.messages(auxiliary=False)


@pytest.mark.slow
def test_no_accounting_fault_halts_the_run_or_reaches_a_figure(tmp_path, monkeypatch, quiet):
    result, stored, requests = run(tmp_path, monkeypatch, FAULTS, "--json",
                                   *[a for t in TASKS for a in ("--task", t)])
    assert result.exit_code == 1, result.output[-3000:]  # harness errors: trouble, no halt
    summary, = [e for e in map(json.loads, result.stdout.splitlines()) if e["event"] == "summary"]
    assert (summary["ran"], summary["planned"], summary["halted"]) == (7, 7, None)
    assert sorted(s["task"] for s in stored) == sorted(TASKS)  # every cell ran
    clean = stored.pop(4)
    spent = clean["usage"]["input"] + 5 * clean["usage"]["output"]  # no cache figures
    assert clean["valid"] and summary["spent_tokens"] == spent > 0  # only it was charged
    for sample in stored:
        jsonschema.validate(sample, SAMPLE_SCHEMA)
        assert (sample["outcome"], sample["valid"]) == ("harness-error", False), sample["error"]
        assert sample["usage"]["output"] == sample["usage"]["input"] == 0
        assert sample["usage_by_model"] == {} and sample["cost_usd"] is None
        assert sample["usage_reported"] is not None and sample["anatomy"] is None
    # in the order the script served them
    found = [(s["failure_class"], next((says for c, says in EXPECTED if says and says in s["error"]),
                                       None)) for s in stored]
    assert found == [e for e in EXPECTED if e[0]], [s["error"] for s in stored]
    assert stored[1]["usage_reported"]["usage"]["output"] >= HUGE
    assert stored[0]["models"] == ["claude-sonnet-4-5"] and stored[3]["models"] == [OTHER]
    # the text as the service sent it, never a 0 for it (the CLI's own total is what it is)
    assert "4000" in json.dumps(stored[4]["usage_reported"])  # the 6th trial's
    assert {r.body["max_tokens"] for r in requests} == {MAX_TOKENS}  # as the probe read it

    report = CliRunner().invoke(main, ["report", "--store", "results", "--format", "md",
                                       "--reports", "reports"], catch_exceptions=False)
    assert report.exit_code in (0, 1), report.output[-2000:]
    written = report.output + "".join(p.read_text(errors="replace")
                                      for p in (tmp_path / "reports").rglob("*") if p.is_file())
    for figure in ("1000000000", "1,000,000,000", "15000000", "15,000,000", "-5 "):
        assert figure not in written, figure


@pytest.mark.slow
def test_a_dated_id_is_itself_and_an_alias_runs_as_what_it_resolves_to(tmp_path, monkeypatch,
                                                                        quiet):
    dated, other_date = "claude-3-5-sonnet-20240620", "claude-3-5-sonnet-20241022"
    result, stored, _ = run(tmp_path, monkeypatch, [Turn(text="7", answered_by=other_date)],
                            "--model", dated, "--task", "read-open-issue-count")
    assert result.exit_code == 1, result.output[-2000:]
    sample, = stored
    assert (sample["failure_class"], sample["models"]) == ("model-mismatch", [other_date])
    assert f"asked for {dated}, answered by {other_date}" in sample["error"]
    assert sample["usage"]["input"] == 0 and sample["usage_reported"] is not None

    result, stored, asked = run(tmp_path, monkeypatch, [say("7")], "--model", "sonnet",
                                "--task", "read-open-issue-count")
    assert result.exit_code == 0, result.output[-2000:]
    assert "model: sonnet resolves to claude-sonnet-5-5" in result.output
    sample = stored[-1]
    jsonschema.validate(sample, SAMPLE_SCHEMA)
    assert (sample["model"], sample["model_alias"], sample["models"]) == (
        "claude-sonnet-5-5", "sonnet", ["claude-sonnet-5-5"])
    assert sample["valid"] and sample["usage"]["input"] > 0  # measured, as its own model's
    assert {(r.model, r.body["max_tokens"]) for r in asked} == {("claude-sonnet-5-5", 128_000)}


def test_the_check_names_every_kind_of_wrong_figure():
    fine = {"input": 10, "cache_write": 0, "cache_read": 0, "output": 5}
    assert check([{"model": "claude-sonnet-4-5-20250929", "usage": fine}], fine, {},
                 "claude-sonnet-4-5").problems == []
    assert same_model("claude-sonnet-4-5", "claude-sonnet-4-5-20250929")
    assert not same_model("claude-sonnet-4-5", "claude-sonnet-4")
    window = check([{"model": "claude-opus-4-1", "usage": {**fine, "cache_read": 300_000}}],
                   fine, {}, "claude-opus-4-1").problems
    assert window == ["request 1: a prompt of 300,010 tokens, above claude-opus-4-1's context "
                      "window (200,000)"]
    strings = check([], {**fine, "input": "7"}, {}, "m").problems
    assert strings == ["the run's total: input is '7', not a count"]
    for wrong in (7.0, True, None):  # a float, a bool, a null where a count is due
        problems = check([{"model": "m", "usage": {**fine, "output": wrong}}], fine, {}, "m").problems
        assert problems == [f"request 1: output is {wrong!r}, not a count"], problems
    assert check([{"model": "m", "usage": {**fine, "output": 33}}], fine, {}, "m",
                 max_tokens=32).problems == [
        "request 1: 33 output tokens, above the request's own max_tokens (32)"]
    assert same_model("claude-3-5-sonnet-20240620", "claude-3-5-sonnet-20240620")
    assert not same_model("claude-3-5-sonnet-20240620", "claude-3-5-sonnet-20241022")
    assert not same_model("claude-3-5-sonnet-20240620", "claude-3-5-sonnet")
    assert same_model("claude-sonnet-4-5[1m]", "claude-sonnet-4-5-20250929")
    assert not same_model("claude-sonnet-4-5[1m]", "claude-opus-4-5")
    assert check([{"model": "m-20250101", "usage": fine}, {"model": "m-20260101", "usage": fine}],
                 fine, {}, "m").problems == ["asked for m, answered by m-20250101, m-20260101"]
    for answered in (5, {"id": 1}, ["m"]):  # a model that is no name is another model
        assert check([{"model": answered, "usage": fine}], fine, {}, "m").problems == [
            f"asked for m, answered by {answered!r}"]


@pytest.mark.slow
def test_an_option_of_the_id_answers_as_the_id_and_a_model_that_is_no_name_is_a_mismatch(
        tmp_path, monkeypatch, quiet):
    """`--model claude-sonnet-4-5[1m]` runs as given, and the runtime sends its requests
    as claude-sonnet-4-5 (the option is a header): that answer is the model asked for,
    where every trial was a mismatch. A response whose model is no name (an object) is
    its trial's mismatch, where it halted the run with an internal error; so is a trial
    answered by two dated snapshots (an undated id has one of its own)."""
    tasks = [a for t in ("read-open-issue-count", "read-bug-issue-titles",
                         "read-issue-labels-and-state") for a in ("--task", t)]
    result, stored, requests = run(tmp_path, monkeypatch, [
        Turn(text="There are 5 open issues."), Turn(text="none", answered_by={"id": 1}),
        Turn(calls=bash("true").calls, answered_by="claude-sonnet-4-5-20250929"),
        Turn(text="none", answered_by="claude-sonnet-4-5-20260101")],
        "--model", "claude-sonnet-4-5[1m]", *tasks, "--json")
    summary, = [e for e in map(json.loads, result.stdout.splitlines()) if e["event"] == "summary"]
    assert (summary["ran"], summary["halted"]) == (3, None), result.output[-2000:]
    assert {r.model for r in requests} == {"claude-sonnet-4-5"}
    first, second, third = stored
    assert first["model"] == "claude-sonnet-4-5[1m]" and first["valid"], first["error"]
    assert first["outcome"] in ("passed", "failed") and first["usage"]["input"] > 0
    for mismatched, says in ((second, "answered by {'id': 1}"),
                             (third, "answered by claude-sonnet-4-5-20250929, "
                                     "claude-sonnet-4-5-20260101")):
        assert (mismatched["outcome"], mismatched["failure_class"]) == (
            "harness-error", "model-mismatch"), mismatched["error"]
        assert says in mismatched["error"]
