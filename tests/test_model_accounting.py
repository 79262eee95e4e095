"""The model service's accounting checked, never trusted, through `benchkit run` (the
real SDK and CLI against the scripted model, the forge, real curl): negative, huge and
missing usage and another model's answers each make their trial a harness error whose
sample keeps the raw figures; none halts the run, none reaches a measured figure, the
report or its headline."""

import json

import jsonschema
import pytest
from click.testing import CliRunner
from conftest import CHECKOUT

from benchkit.agent.accounting import check, same_model
from benchkit.agent.scripted import ScriptedModel, Turn
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
          Turn(text="7", answered_by=OTHER)]
EXPECTED = [("model-usage", "output -5 is negative"),
            ("model-usage", "1,000,000,000,000 output tokens"),
            ("model-usage", "usage missing from every agent request"),
            ("model-mismatch", f"asked for claude-sonnet-4-5, answered by {OTHER}")]


@pytest.mark.slow
def test_no_accounting_fault_halts_the_run_or_reaches_a_figure(tmp_path, monkeypatch, quiet):
    tasks = ["read-open-issue-count", "read-bug-issue-titles", "read-issue-labels-and-state",
             "read-review-body"]
    with ScriptedModel(FAULTS) as model:
        monkeypatch.setenv("ANTHROPIC_BASE_URL", model.url)
        monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-ant-benchkit-test")
        monkeypatch.setenv("CLAUDE_CONFIG_DIR", str(tmp_path / "claude"))
        result = CliRunner().invoke(main, [
            "run", str(CHECKOUT / "arms.d/raw-api.yaml"), *[a for t in tasks for a in ("--task", t)],
            "--store", "results", "--no-report", "--no-replay-failures", "--json"],
            catch_exceptions=False)
    assert result.exit_code == 1, result.output[-3000:]  # harness errors: trouble, no halt
    summary, = [e for e in map(json.loads, result.stdout.splitlines()) if e["event"] == "summary"]
    assert (summary["ran"], summary["planned"], summary["halted"]) == (4, 4, None)
    assert summary["spent_tokens"] == 0
    stored = sorted(Store(tmp_path / "results").samples(), key=lambda s: s["started_at"])
    assert sorted(s["task"] for s in stored) == sorted(tasks)  # every cell ran
    for sample in stored:
        jsonschema.validate(sample, SAMPLE_SCHEMA)
        assert (sample["outcome"], sample["valid"]) == ("harness-error", False), sample["error"]
        assert sample["usage"]["output"] == sample["usage"]["input"] == 0
        assert sample["usage_by_model"] == {} and sample["cost_usd"] is None
        assert sample["usage_reported"] is not None and sample["anatomy"] is None
    # in the order the script served them
    found = [(s["failure_class"], next((says for c, says in EXPECTED if says in s["error"]), None))
             for s in stored]
    assert found == EXPECTED, [s["error"] for s in stored]
    assert stored[1]["usage_reported"]["usage"]["output"] >= HUGE
    assert stored[0]["models"] == ["claude-sonnet-4-5"] and stored[3]["models"] == [OTHER]

    report = CliRunner().invoke(main, ["report", "--store", "results", "--format", "md",
                                       "--reports", "reports"], catch_exceptions=False)
    assert report.exit_code in (0, 1), report.output[-2000:]
    written = report.output + "".join(p.read_text(errors="replace")
                                      for p in (tmp_path / "reports").rglob("*") if p.is_file())
    for figure in ("1000000000", "1,000,000,000", "15000000", "15,000,000", "-5 "):
        assert figure not in written, figure


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
