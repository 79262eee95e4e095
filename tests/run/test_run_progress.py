"""What `benchkit run` shows while it runs: trials numbered as their samples are, n of
N, elapsed and ETA, tokens against the budget, passes and failures per arm; plain lines
off a terminal, a live status on one, and the --json events unchanged."""

import io
import json
import re
from types import SimpleNamespace

from benchkit.run.progress import Progress, clock
from benchkit.run.schedule import RunTally

HEADER = dict(arms=["raw-api", "tea"], cells=2, driver="replay", model="m",
              host={"url": "http://h/", "kind": "forge", "embedded": True}, self_review=False,
              budget=100000, jobs=1, store="results")
END_KEYS = {"event", "n", "arm", "task", "trial", "sample", "outcome", "failure_class", "valid",
            "tokens", "usage_estimated", "turns", "seconds", "detail", "totals"}


def ticket(arm, task, trial, number):
    trial = SimpleNamespace(arm=SimpleNamespace(id=arm), task=SimpleNamespace(id=task), index=trial)
    return SimpleNamespace(trial=trial, number=number, expected=1000.0, basis="suite default")


def sample(outcome, arm):
    return SimpleNamespace(
        id="s" * 32, arm=arm, outcome=outcome, failure_class=None, valid=True,
        usage_estimated=True, turns=3, duration_s=1.5,
        differences=["issue #2: state is open, expected closed"] if outcome == "failed" else [],
        error=None)


def scheduler(totals, budget=100000):
    return SimpleNamespace(totals=totals, left=lambda: budget - totals.spent)


def play(progress):
    """Three trials planned, two run: raw-api passes trial 0, tea fails trial 1."""
    progress.header(trials=3, **HEADER)
    totals = RunTally(planned=3)
    for number, (arm, trial, outcome) in enumerate([("raw-api", 0, "passed"), ("tea", 1, "failed")], 1):
        t = ticket(arm, "close-csv-export-issue", trial, number)
        progress.started(t, SimpleNamespace(repo=SimpleNamespace(full_name="bench/r")))
        totals.ran += 1
        totals.spent += 2000
        totals.outcomes[outcome] += 1
        progress.ended(t, sample(outcome, arm), 2000.0, scheduler(totals))
    return totals


def test_plain_lines_number_trials_as_the_sample_does_with_n_of_n_and_eta():
    out = io.StringIO()
    progress = Progress(estimated=True, out=out, err=io.StringIO())
    assert not progress.live  # a StringIO is no terminal
    play(progress)
    lines = out.getvalue().splitlines()
    ends = [line for line in lines if "started" not in line and line.startswith("[")]
    assert ends[0].startswith("[1/3] raw-api close-csv-export-issue trial 0: passed")
    assert ends[1].startswith("[2/3] tea close-csv-export-issue trial 1: failed - issue #2")
    assert "so far 2/3 trial(s), 4,000~ tokens, 96,000~ left" in ends[1]
    assert re.search(r"\d+:\d\d elapsed, ETA \d+:\d\d$", ends[1])
    assert "\x1b[" not in out.getvalue()  # no terminal escapes when piped


def test_the_live_status_says_progress_budget_and_per_arm_outcomes():
    progress = Progress(estimated=True, out=io.StringIO(), err=io.StringIO(), live=False)
    play(progress)
    status = progress.status()
    assert status.startswith("trials 2/3 | ")
    assert "4,000~ tokens of 100,000 budget" in status
    assert "raw-api 1 passed, 0 failed; tea 0 passed, 1 failed" in status
    assert progress.eta() is not None and progress.eta() >= 0
    assert clock(3723) == "1:02:03" and clock(65) == "1:05"


def test_on_a_terminal_the_status_is_drawn_and_stopped_before_the_summary():
    class Terminal(io.StringIO):
        def isatty(self):
            return True
    out = Terminal()
    progress = Progress(estimated=True, out=out, err=io.StringIO())
    assert progress.live
    totals = play(progress)
    assert progress._display is not None
    progress.summary(totals, not_run=[], budget=100000, interrupted=False, error=None, store="results")
    assert progress._display is None
    assert "trial 1: failed" in out.getvalue() and "done: 2 of 3 trial(s)" in out.getvalue()


def test_json_events_keep_their_shape():
    out = io.StringIO()
    play(Progress(json_mode=True, estimated=True, out=out, err=io.StringIO()))
    events = [json.loads(line) for line in out.getvalue().splitlines()]
    assert [e["event"] for e in events] == ["run", "start", "end", "start", "end"]
    ends = [e for e in events if e["event"] == "end"]
    assert all(set(e) == END_KEYS for e in ends)
    assert [e["trial"] for e in ends] == [0, 1]
