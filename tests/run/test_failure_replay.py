"""Failure replay on the forge, with the real CLI: a trial that failed because the
host raced it comes out `not reproducible` when its own calls are replayed on a fresh
repository, while a genuinely wrong agent comes out `reproducible`; the samples stay as
they were and no replay becomes a sample. Two races: the search index lagging beyond
what the readiness gate saw, under a command that acts on what it finds, and the
repository answering 404 to the agent's write once, as a host still settling does.

The replay repeats the trial's calls and its final answer, so only a race on what the
calls did can come out `not reproducible`: a lagging index that made an agent draw a
wrong conclusion in its answer is replayed with that conclusion (docs/replay.md). A 5xx
the agent met is charged unless the harness's own control request of the same kind,
sent right after, failed too: a replay that runs clean acquits nothing (B07)."""

import io
import json
import re
import signal
import subprocess
import time

import msgspec
import pytest
from conftest import BENCHKIT, CHECKOUT
from test_trial_cell import Scripted, context, curl

from benchkit import counting
from benchkit.agent.replay import ReplayDriver
from benchkit.agent.runtime import OnTheCli
from benchkit.agent.scripted import bash, say
from benchkit.documents import load_arm
from benchkit.documents.reference import reference_for
from benchkit.planning.ledger import Ledger
from benchkit.planning.plan import Trial, plan
from benchkit.report.aggregate import not_reproducible
from benchkit.run.failures import (
    LEAKED,
    NOT_REPRODUCIBLE,
    REPRODUCIBLE,
    replay_failures,
    worth_replaying,
)
from benchkit.run.progress import Progress
from benchkit.sample import HOST_5XX, PROVOKED, Sample
from benchkit.trial.cell import run_trial
from benchkit.trial.prepare import prepare_trial

pytestmark = [pytest.mark.slow, pytest.mark.usefixtures("private_dirs")]
TASK = "close-csv-export-issue"  # close issue #2: the reference lists, then PATCHes


class Racing(OnTheCli):
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


class Lagging(OnTheCli):
    """The reference played as the agent while the forge's search index lags far behind
    its writes: the readiness gate saw the index current, the trial does not."""

    name = "replay"
    confine = True

    def __init__(self, forge, driver):
        self.forge, self.driver = forge, driver

    def run(self, request):
        self.forge.set_index_lag(3600)
        try:
            return self.driver.run(request)
        finally:
            self.forge.set_index_lag(0)


# Closes the issue a keyword search finds, in one command: with the index behind, it
# finds none and the PATCH goes to issues/null.
CLOSE_WHAT_SEARCH_FINDS = """
      - run: >-
          curl -sS --fail-with-body -X PATCH -H "Authorization: token {{ token }}"
          -H "Content-Type: application/json" -d '{"state": "closed"}'
          "{{ api_url }}/repos/{{ owner }}/{{ repo }}/issues/$(curl -sS -H "Authorization: token {{ token }}"
          "{{ api_url }}/repos/{{ owner }}/{{ repo }}/issues?state=open&type=issues&q=csv" | jq '.[0].number')"
"""


def test_an_index_lag_beyond_the_gate_is_not_reproducible(forge, shipped_tree, tree_copy, tmp_path):
    refs = tree_copy / "refs.d" / "raw-api.yaml"
    text = refs.read_text(encoding="utf-8")
    start = text.index("  close-csv-export-issue:")
    steps = text.index("    steps:\n", start) + len("    steps:\n")
    answer = text.index("    answer:", steps)
    refs.write_text(text[:steps] + CLOSE_WHAT_SEARCH_FINDS.lstrip("\n") + text[answer:])
    arm = load_arm(CHECKOUT / "arms.d/raw-api.yaml")
    trial = Trial(arm, shipped_tree.tasks[TASK])
    lagging = Lagging(forge, ReplayDriver(reference_for(arm, tree_copy)))
    raced = run_trial(trial, context(forge, shipped_tree, tmp_path, lagging))
    assert raced.sample.outcome == "failed" and worth_replaying(raced), raced.sample.differences
    progress = Progress(json_mode=True, out=io.StringIO())
    verdict, = replay_failures([(trial, raced)],
                               lambda arm_: context(forge, shipped_tree, tmp_path, lagging),
                               progress)
    assert verdict.verdict == NOT_REPRODUCIBLE and verdict.replay.outcome == "passed"
    assert len(samples(context(forge, shipped_tree, tmp_path, lagging).store)) == 1


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
    assert [v.verdict for v in verdicts] == [NOT_REPRODUCIBLE, REPRODUCIBLE]
    assert [v.trial for v in verdicts] == [raced.sample.id, wrong.sample.id]
    assert verdicts[0].replay.outcome == "passed" and verdicts[0].replay.calls == 2
    assert verdicts[1].replay.outcome == "failed" and verdicts[1].replay.differences
    events = [json.loads(line) for line in out.getvalue().splitlines()]
    assert [e["verdict"] for e in events if e["event"] == "failure_replay"] == \
        [NOT_REPRODUCIBLE, REPRODUCIBLE]

    store = context(forge, shipped_tree, tmp_path, racing).store
    assert samples(store) == before and len(before) == 2  # nothing charged, nothing rewritten
    assert [r.trial for r in not_reproducible(store.failure_replays())] == [raced.sample.id]
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
    pending, entry = [json.loads(line) for line in replays.read_text().splitlines()]
    assert pending["verdict"] == "pending" and pending["trial"] == entry["trial"]
    assert entry["verdict"] == REPRODUCIBLE and entry["replay"]["differences"] == entry["differences"]
    cell = tree_copy / "results" / "raw-api" / "close-csv-export-issue.jsonl"
    assert len(cell.read_text().splitlines()) == 2  # the two trials; no replay among them


def test_a_replay_cut_off_by_a_kill_leaves_its_trial_named_never_replayed(tree_copy):
    """SIGTERM while the failure replay runs: the run stops (143), and the trial's line
    in failure-replays.jsonl, written before the replay began, stays `pending`: show
    names the trial as never replayed, where before its verdict was lost without a
    trace."""
    refs = tree_copy / "refs.d" / "raw-api.yaml"
    text = refs.read_text(encoding="utf-8")
    wrong = "  close-csv-export-issue:\n    targets: {issue: 3}\n    steps:\n      - run: sleep 6\n"
    refs.write_text(text.replace("  close-csv-export-issue:\n    targets: {issue: 2}\n    steps:\n",
                                 wrong, 1))
    replays = tree_copy / "results" / "failure-replays.jsonl"
    run = subprocess.Popen([*BENCHKIT, "run", "arms.d/raw-api.yaml", "--driver", "replay",
                            "--task", "close-csv-export-issue", "--no-report"], cwd=tree_copy,
                           stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        deadline = time.monotonic() + 240
        while not (replays.exists() and "pending" in replays.read_text()):
            assert run.poll() is None and time.monotonic() < deadline, run.communicate()
            time.sleep(0.1)
        run.send_signal(signal.SIGTERM)  # the replay's `sleep 6` is running
        out, err = run.communicate(timeout=120)
    finally:
        if run.poll() is None:
            run.kill()
            run.communicate()
    assert run.returncode == 143, err[-2000:]
    entry, = [json.loads(line) for line in replays.read_text().splitlines()]
    assert entry["verdict"] == "pending"
    shown = subprocess.run([*BENCHKIT, "show", entry["trial"][:12], "--store", "results"],
                           cwd=tree_copy, capture_output=True, text=True, timeout=60)
    assert "failure replay: never replayed - the run stopped during its replay" in shown.stdout, \
        shown.stdout + shown.stderr


class Failing(OnTheCli):
    """The reference played as the agent while the host answers the issue's PATCH with
    500 once, and, when `alone` is False, the harness's own control write right after
    too: a host failing on its own, not the agent's doing."""

    name = "replay"
    confine = True

    def __init__(self, forge, driver, alone=True):
        self.forge, self.driver, self.alone = forge, driver, alone

    def run(self, request):
        pattern = r"/issues/2$" if self.alone else r"/issues/2$|/labels/[0-9]+$"
        self.forge.inject_fault("*", pattern, status=500 if self.alone else 503,
                                times=1 if self.alone else 2)
        try:
            return self.driver.run(request)
        finally:
            self.forge.clear_faults()


def test_a_5xx_the_agent_provokes_only_in_its_own_repository_is_charged(
        host, shipped_tree, tmp_path):
    """B07: the agent posts one issue dependency twice (the host answers 500, Gitea and
    the forge alike) only when its repository's name, upper-cased, is its own: the
    replay's repository has another name, so the replay runs clean. Once a 5xx that
    did not come again was a free harness error that `--until` ran again; now the
    harness's own control write, sent right after the 5xx, answered: the trial is
    charged."""
    provoking = Scripted()
    ctx = context(host, shipped_tree, tmp_path, provoking)
    trial = Trial(load_arm(CHECKOUT / "arms.d/raw-api.yaml"), shipped_tree.tasks[TASK])
    prepared = prepare_trial(trial, ctx)
    post = curl(ctx, prepared, "POST", "/issues/1/dependencies",
                {"owner": prepared.repo.owner, "repo": prepared.repo.name, "index": 2})
    own = prepared.repo.name.upper()
    provoking.script = [bash(f'if [ "$(echo {prepared.repo.name} | tr a-z A-Z)" = "{own}" ]; '
                             f"then {post}; {post}; fi"), say("Done.")]
    result = run_trial(trial, ctx, prepared)
    sample = result.sample
    assert (sample.outcome, sample.failure_class, sample.valid) == \
        ("failed", PROVOKED, True), sample.error
    errors = [e for e in sample.requests if e["status"] >= 500]
    assert errors and all(e["control"]["status"] == 200 for e in errors), sample.requests
    assert "control request right after did not fail: the arm's, charged" in sample.error
    assert worth_replaying(result)
    progress = Progress(json_mode=True, out=io.StringIO())
    verdict, = replay_failures([(trial, result)],
                               lambda arm_: context(host, shipped_tree, tmp_path, provoking),
                               progress)
    # the replay's names make the condition false: no 5xx there, a plain failure
    assert (verdict.verdict, verdict.replay.failure_class) == (REPRODUCIBLE, "checker")
    stored, = samples(ctx.store)
    assert (stored["outcome"], stored["failure_class"]) == ("failed", PROVOKED)  # still charged
    shown = subprocess.run([*BENCHKIT, "show", sample.id[:12], "--store", str(ctx.store.root)],
                           capture_output=True, text=True, timeout=60)
    assert "outcome: failed (host-error-provoked)" in shown.stdout, shown.stderr
    assert "failure replay: reproducible" in shown.stdout


@pytest.mark.parametrize("alone,expected", [
    (True, ("failed", PROVOKED, True)),   # the host answered its control: not shown at fault
    (False, ("harness-error", HOST_5XX, False)),  # its control failed too: the host's
], ids=["route-only", "host-failing"])
def test_a_5xx_is_the_hosts_only_when_its_control_fails_too(
        forge, shipped_tree, tmp_path, alone, expected):
    arm = load_arm(CHECKOUT / "arms.d/raw-api.yaml")
    failing = Failing(forge, ReplayDriver(reference_for(arm, CHECKOUT)), alone=alone)
    ctx = context(forge, shipped_tree, tmp_path, failing)
    sample = run_trial(Trial(arm, shipped_tree.tasks[TASK]), ctx).sample
    assert (sample.outcome, sample.failure_class, sample.valid) == expected, sample.error
    error, = [e for e in sample.requests if e["status"] >= 500]
    assert error["control"] == {**error["control"], "kind": "write",
                                "status": 200 if alone else 503}
    if not alone:
        assert "the host failed on its own: PATCH" in sample.error
        assert "control write right after: HTTP 503" in sample.error


def test_a_replay_that_leaks_makes_its_trial_count_as_invalid(host, shipped_tree, tmp_path):
    """B16: the agent names its repository in a form the replay does not rewrite (its
    name upper-cased, lowered by the shell): on its own trial that is its own
    repository, on the replay's the trial's, outside the replay's scope: the gateway
    refuses it. It also provokes a 500 (one dependency posted twice), as the red team's
    trial did (`failed/host-error-provoked`). The replay runs under the same gateway and
    audit as the trial, and its leak makes the trial count as invalid and, a leak of the
    agent's own, as a failure of its arm (once, on Gitea, it stayed valid)."""
    agent = Scripted()
    ctx = context(host, shipped_tree, tmp_path, agent)
    trial = Trial(load_arm(CHECKOUT / "arms.d/raw-api.yaml"), shipped_tree.tasks[TASK])
    prepared = prepare_trial(trial, ctx)
    plain = curl(ctx, prepared, "GET", "/issues")
    hidden = plain.replace(f"/{prepared.repo.name}/",
                           f"/$(echo {prepared.repo.name.upper()} | tr A-Z a-z)/")
    post = curl(ctx, prepared, "POST", "/issues/1/dependencies",
                {"owner": prepared.repo.owner, "repo": prepared.repo.name, "index": 2})
    agent.script = [bash(f"{hidden}; {post}; {post}"), say("Nothing to do.")]
    result = run_trial(trial, ctx, prepared)
    assert (result.sample.outcome, result.sample.failure_class, result.sample.valid) == \
        ("failed", PROVOKED, True), result.sample.error
    cells = [(trial.arm, trial.task)]

    def ledger():
        return Ledger(cells, ctx.seeds, ctx.suite, driver="claude",
                      model=ctx.run_model).load(ctx.store)
    assert len(plan(cells, ledger(), until=1)) == 0  # the failure counts
    progress = Progress(json_mode=True, out=io.StringIO())
    verdict, = replay_failures([(trial, result)],
                               lambda arm_: context(host, shipped_tree, tmp_path, agent), progress)
    assert verdict.verdict == LEAKED and verdict.replay.leaks, verdict
    assert "was refused by the gateway" in verdict.replay.leaks[0]
    # Invalid now, and still a failure of its arm: `--until 1` plans nothing.
    assert len(plan(cells, ledger(), until=1)) == 0
    stored = [msgspec.convert(s, Sample) for s in ctx.store.samples()]
    counted, = counting.overruled(stored, counting.replay_leaks(ctx.store.failure_replays()))
    assert (counted.outcome, counted.failure_class, counted.valid) == \
        ("invalid", "replay-leak", False)
    assert counting.charged_leak(counted.outcome, counted.failure_class)
    assert ledger().valid[(trial.arm.id, trial.task.id)] == 1
    shown = subprocess.run([*BENCHKIT, "show", result.sample.id[:12], "--store",
                            str(ctx.store.root)], capture_output=True, text=True, timeout=60)
    assert "failure replay: leaked" in shown.stdout and \
        "the replay leaked, so the trial counts as invalid (replay-leak)" in shown.stdout, \
        shown.stdout + shown.stderr
