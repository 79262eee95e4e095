"""`benchkit run --json`'s events are the typed records of benchkit.run.events: every line
the real command line prints decodes as one, and prints back byte for byte; the
contracts doc names exactly the events the module declares."""

import json
import os
import re
import subprocess

import msgspec
import pytest
from conftest import BENCHKIT, CHECKOUT

from benchkit.planning.plan import BudgetSkip, Skip
from benchkit.run import events


def run_json(tmp_path, *args, code=0) -> list[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("GITEA_", "XDG_"))}
    env["XDG_CONFIG_HOME"], env["HOME"] = str(tmp_path / "no-config"), str(tmp_path)
    done = subprocess.run([*BENCHKIT, "run", "arms.d/raw-api.yaml", "--driver", "replay",
                           "--task", "read-open-issue-count", "--json",
                           "--store", str(tmp_path / "store"), *args],
                          capture_output=True, text=True, cwd=CHECKOUT, env=env, timeout=300)
    assert done.returncode == code, done.stderr
    return done.stdout.splitlines()


def decoded(lines: list[str]) -> list[events.Event]:
    """Each line as its typed event, checked to print back to the very same bytes."""
    found = [events.DECODER.decode(line) for line in lines]
    for line, event in zip(lines, found, strict=True):
        assert json.dumps(events.builtins(event), ensure_ascii=False) == line
    return found


def test_a_runs_every_line_is_a_typed_event_that_prints_back_the_same(tmp_path):
    lines = run_json(tmp_path, "--no-report")
    run, start, end, summary = decoded(lines)
    assert [json.loads(line)["event"] for line in lines] == ["run", "start", "end", "summary"]
    assert isinstance(run, events.RunEvent) and run.host["embedded"] is True
    assert run.model_probe is not None and run.model_probe.given == run.model  # kept as given
    assert isinstance(start, events.StartEvent) and start.task == "read-open-issue-count"
    assert isinstance(end, events.EndEvent) and end.outcome == "passed"
    assert end.totals.ran == 1 and end.totals.left_tokens is None
    assert isinstance(summary, events.SummaryEvent) and summary.ran == summary.planned == 1
    # what the dry run and --until-decided's plan print, from the sample just stored
    plan, = decoded(run_json(tmp_path, "--dry-run", "--budget", "100", code=2))  # fits none
    assert isinstance(plan, events.PlanEvent) and plan.over_budget[0].basis == "this cell's mean"
    decide, = decoded(run_json(tmp_path, "arms.d/tea.yaml", "--dry-run", "--until-decided",
                               "--budget", "100000"))
    assert isinstance(decide, events.DecideEvent) and decide.next[0].arm == "tea"


@pytest.mark.parametrize("event", [
    events.InterruptEvent(),
    events.SkippedEvent(arm="a", task="t", reason="why"),
    events.BudgetSkippedEvent(arm="a", task="t", trial=2, expected_tokens=10, left_tokens=3),
    events.FailureReplayEvent(trial="id", arm="a", task="t", verdict="reproducible",
                              replay_outcome="failed"),
    events.SummaryEvent(ran=0, planned=1, outcomes={}, spent_tokens=0, usage_estimated=False,
                        budget=5.0, left_tokens=5, skipped_budget=[BudgetSkip("a", "t", "why", 1)],
                        not_run=[Skip("a", "u", "no tool")], interrupted=True, halted=None,
                        error=None, seconds=1.5, store="results"),
    events.ReportEvent(paths=["reports/report.md"]),
    events.PreflightEvent(ok=False, failures=[events.Failed("tools", "no tea")], problems=[]),
], ids=lambda event: events.name(type(event)))
def test_each_event_prints_its_name_first_and_decodes_to_itself(event):
    line = json.dumps(events.builtins(event), ensure_ascii=False)
    assert line.startswith(f'{{"event": "{events.name(type(event))}"')
    assert events.DECODER.decode(line) == event


def test_a_line_of_no_known_event_is_refused():
    with pytest.raises(msgspec.ValidationError):
        events.DECODER.decode(b'{"event": "started", "n": 1}')


def test_the_contracts_doc_names_every_event_and_no_other():
    contracts = (CHECKOUT / "docs" / "contracts.md").read_text(encoding="utf-8")
    row = next(line for line in contracts.splitlines() if line.startswith("| `benchkit run "))
    listed = re.findall(r"`([a-z_-]+)`", row.split("one event per line", 1)[1])
    names = {name for name in listed if not name.startswith("--")}  # not the options
    assert names == {events.name(k) for k in events.EVENTS}
