"""Failure replay on the forge, with the real CLI: a trial that failed because the
host raced it (the repository answering 404 to the agent's write once, as a host still
settling a new repository does, past what the readiness gate waited for) comes out `not reproducible` when its own calls are replayed
on a fresh repository, while a genuinely wrong agent comes out `reproducible`; the
samples stay as they were and no replay becomes a sample.

The replay repeats the trial's calls and its final answer, so only a fault on what the
calls did can come out `not reproducible`: a lagging search index that made an agent
draw a wrong conclusion is replayed with that conclusion (docs/replay.md). A 5xx is no
race to test here: the audit already makes it a harness error, never the arm's."""

import io
import json
import re
import subprocess

import pytest
from conftest import BENCHKIT, CHECKOUT
from test_run_cell import Scripted, context

from benchkit.agent.replay import ReplayDriver
from benchkit.agent.scripted import bash, say
from benchkit.report.aggregate import not_reproducible
from benchkit.run.cell import run_trial
from benchkit.run.failures import NOT_REPRODUCIBLE, REPRODUCIBLE, replay_failures, worth_replaying
from benchkit.run.plan import Trial
from benchkit.run.progress import Progress
from benchkit.spec import load_arm
from benchkit.spec.reference import reference_for

pytestmark = [pytest.mark.slow, pytest.mark.usefixtures("private_dirs")]
TASK = "close-csv-export-issue"  # close issue #2: the reference lists, then PATCHes


class Racing:
    """The reference played as the agent while the host answers the issue's PATCH with
    404 once: the race lasts as long as the trial, as a host's transient state does."""

    name = "replay"
    confine = True

    def __init__(self, forge, driver):
        self.forge, self.driver = forge, driver

    def run(self, request):
        self.forge.inject_fault("PATCH", r"/issues/2$", status=404)
        try:
            return self.driver.run(request)
        finally:
            self.forge.clear_faults()


def samples(store):
    return [json.loads(line) for path in sorted(store.root.glob("*/*.jsonl"))
            for line in path.read_text().splitlines()]


def test_a_host_race_is_not_reproducible_and_a_wrong_agent_is(forge, shipped_tree, tmp_path):
    arm = load_arm(CHECKOUT / "arms.d/raw-api.yaml")
    trial = Trial(arm, shipped_tree.tasks[TASK])
    racing = Racing(forge, ReplayDriver(reference_for(arm, CHECKOUT)))
    raced = run_trial(trial, context(forge, shipped_tree, tmp_path, racing))
    wrong_agent = Scripted([bash("echo looking"), say("Closed issue #2.")])  # closed nothing
    wrong = run_trial(trial, context(forge, shipped_tree, tmp_path, wrong_agent))
    assert raced.sample.outcome == wrong.sample.outcome == "failed", raced.sample.differences
    assert worth_replaying(raced) and worth_replaying(wrong)
    before = samples(context(forge, shipped_tree, tmp_path, racing).store)

    out = io.StringIO()
    progress = Progress(json_mode=True, out=out)
    verdicts = replay_failures([(trial, raced), (trial, wrong)],
                               lambda arm_: context(forge, shipped_tree, tmp_path, racing),
                               progress)
    assert [v["verdict"] for v in verdicts] == [NOT_REPRODUCIBLE, REPRODUCIBLE]
    assert [v["trial"] for v in verdicts] == [raced.sample.id, wrong.sample.id]
    assert verdicts[0]["replay"]["outcome"] == "passed" and verdicts[0]["replay"]["calls"] == 2
    assert verdicts[1]["replay"]["outcome"] == "failed" and verdicts[1]["replay"]["differences"]
    events = [json.loads(line) for line in out.getvalue().splitlines()]
    assert [e["verdict"] for e in events if e["event"] == "failure_replay"] == \
        [NOT_REPRODUCIBLE, REPRODUCIBLE]

    store = context(forge, shipped_tree, tmp_path, racing).store
    assert samples(store) == before and len(before) == 2  # nothing charged, nothing rewritten
    assert [r["trial"] for r in not_reproducible(store.root)] == [raced.sample.id]
    assert forge.token not in store.failure_replays_path.read_text()
    shown = subprocess.run([*BENCHKIT, "show", raced.sample.id[:12], "--store", str(store.root)],
                           capture_output=True, text=True, timeout=60)
    assert shown.returncode == 0, shown.stderr
    assert "failure replay: not reproducible" in shown.stdout
    assert "the trial's differences:\n    - " in shown.stdout
    assert "the replay's differences: none" in shown.stdout


def test_a_run_replays_its_failures_at_the_end_unless_told_not_to(tree_copy):
    """The command line: a reference that closes the wrong issue fails, and its replay
    fails the same way (reproducible); --no-replay-failures replays nothing."""
    refs = tree_copy / "refs.d" / "raw-api.yaml"
    text = refs.read_text(encoding="utf-8")
    wrong = "  close-csv-export-issue:\n    targets: {issue: 3}"
    refs.write_text(text.replace("  close-csv-export-issue:\n    targets: {issue: 2}", wrong, 1))
    command = [*BENCHKIT, "run", "arms.d/raw-api.yaml", "--driver", "replay",
               "--task", "close-csv-export-issue", "--no-report"]
    first = subprocess.run([*command, "--no-replay-failures"], cwd=tree_copy,
                           capture_output=True, text=True, timeout=300)
    assert first.returncode == 0, first.stderr[-2000:]
    replays = tree_copy / "results" / "failure-replays.jsonl"
    assert "failed" in first.stdout and not replays.exists()
    second = subprocess.run(command, cwd=tree_copy, capture_output=True, text=True, timeout=300)
    assert second.returncode == 0, second.stderr[-2000:]
    assert re.search(r"failure replay: raw-api close-csv-export-issue trial \d+ \(failed\): "
                     r"reproducible - its 2 call\(s\) on a fresh repository failed", second.stdout), \
        second.stdout[-2000:]
    entry, = [json.loads(line) for line in replays.read_text().splitlines()]
    assert entry["verdict"] == REPRODUCIBLE and entry["replay"]["differences"] == entry["differences"]
    cell = tree_copy / "results" / "raw-api" / "close-csv-export-issue.jsonl"
    assert len(cell.read_text().splitlines()) == 2  # the two trials; no replay among them
