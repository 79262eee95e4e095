"""Failure replay on the forge, with the real CLI: a trial that failed because the
host raced it comes out `not reproducible` when its own calls are replayed on a fresh
repository, while a genuinely wrong agent comes out `reproducible`; the samples stay as
they were and no replay becomes a sample. Two races: the search index lagging beyond
what the readiness gate saw, under a command that acts on what it finds, and the
repository answering 404 to the agent's write once, as a host still settling does.

The replay repeats the trial's calls and its final answer, so only a race on what the
calls did can come out `not reproducible`: a lagging index that made an agent draw a
wrong conclusion in its answer is replayed with that conclusion (docs/replay.md). A 5xx
the agent met is replayed as soon as its trial ends: one its own calls provoke again is
charged to the trial, one that does not come again stays a harness error."""

import dataclasses
import io
import json
import re
import subprocess

import pytest
from conftest import BENCHKIT, CHECKOUT
from test_run_cell import Scripted, context, curl

from benchkit.agent.replay import ReplayDriver
from benchkit.agent.runtime import OnTheCli
from benchkit.agent.scripted import bash, say
from benchkit.documents import load_arm
from benchkit.documents.reference import reference_for
from benchkit.report.aggregate import not_reproducible
from benchkit.run.cell import run_trial
from benchkit.run.failures import (
    NOT_REPRODUCIBLE,
    PROVOKED_VERDICT,
    REPRODUCIBLE,
    replay_failures,
    settle_host_error,
    worth_replaying,
)
from benchkit.run.plan import Trial
from benchkit.run.prepare import prepare_trial
from benchkit.run.progress import Progress
from benchkit.sample import HOST_5XX, PROVOKED

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
    assert [r.trial for r in not_reproducible(store.root)] == [raced.sample.id]
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


class Failing(OnTheCli):
    """The reference played as the agent while the host answers the issue's PATCH with
    500 once: a host fault, not the agent's."""

    name = "replay"
    confine = True

    def __init__(self, forge, driver):
        self.forge, self.driver = forge, driver

    def run(self, request):
        self.forge.inject_fault("PATCH", r"/issues/2$", status=500)
        try:
            return self.driver.run(request)
        finally:
            self.forge.clear_faults()


def test_a_5xx_the_agents_own_calls_provoke_is_charged_to_the_trial(host, shipped_tree, tmp_path):
    """Posting one issue dependency twice makes the host answer 500 (Gitea does, the
    forge as Gitea): the replay on a fresh repository meets it again, so the trial is
    failed, class host-error-provoked, not a harness error `--until` would run again."""
    twice = Scripted()
    ctx = dataclasses.replace(context(host, shipped_tree, tmp_path, twice),
                              settle=settle_host_error)
    trial = Trial(load_arm(CHECKOUT / "arms.d/raw-api.yaml"), shipped_tree.tasks[TASK])
    prepared = prepare_trial(trial, ctx)
    post = curl(ctx, prepared, "POST", "/issues/1/dependencies",
                {"owner": prepared.repo.owner, "repo": prepared.repo.name, "index": 2})
    twice.script = [bash(f"{post}; {post}"), say("Done.")]
    result = run_trial(trial, ctx, prepared)
    sample = result.sample
    assert (sample.outcome, sample.failure_class, sample.valid) == \
        ("failed", PROVOKED, True), sample.error
    assert "met it again on a fresh repository (POST /api/v1/repos/OWNER/REPO/issues/1/" \
           "dependencies)" in sample.error
    verdict = ctx.store.failure_replays()[sample.id]
    assert verdict.verdict == PROVOKED_VERDICT and verdict.replay.failure_class == HOST_5XX
    assert not worth_replaying(result)  # replayed already
    shown = subprocess.run([*BENCHKIT, "show", sample.id[:12], "--store", str(ctx.store.root)],
                           capture_output=True, text=True, timeout=60)
    assert "outcome: failed (host-error-provoked)" in shown.stdout, shown.stderr
    assert "failure replay: provoked" in shown.stdout
    listed = subprocess.run([*BENCHKIT, "show", "--outcome", "failures", "--store",
                             str(ctx.store.root)], capture_output=True, text=True, timeout=60)
    assert "host-error-provoked: the host answered" in listed.stdout, listed.stderr


def test_a_5xx_that_does_not_come_again_stays_a_harness_error(forge, shipped_tree, tmp_path):
    arm = load_arm(CHECKOUT / "arms.d/raw-api.yaml")
    failing = Failing(forge, ReplayDriver(reference_for(arm, CHECKOUT)))
    ctx = dataclasses.replace(context(forge, shipped_tree, tmp_path, failing),
                              settle=settle_host_error)
    trial = Trial(arm, shipped_tree.tasks[TASK])
    sample = run_trial(trial, ctx).sample
    assert (sample.outcome, sample.failure_class) == ("harness-error", HOST_5XX), sample.error
    verdict = ctx.store.failure_replays()[sample.id]
    assert verdict.verdict == NOT_REPRODUCIBLE and verdict.replay.outcome == "passed"
    assert not_reproducible(ctx.store.root) == []  # no failure to look at: not the arm's

