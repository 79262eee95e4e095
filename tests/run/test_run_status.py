"""A run's exit status is decided in one place (benchkit.run.status.exit_status) from how
the run ended (RunEnd): each code, and the phases it can come from. The table holds the
rule; the runs below end in a phase through the real pre-flight and execution, on the
embedded forge with the replay driver, and the status follows from what they return
(the phases the command line alone reaches are held there: a read-only store and a
full disk in test_store_damage.py, a stop in every phase in test_run_stop_phases.py)."""

import io
import os

import pytest

from benchkit.exits import EXIT_BAD_INPUT, EXIT_FAILED, EXIT_OK
from benchkit.planning.settings import RunSettings
from benchkit.preflight.checks import preflight
from benchkit.run.execution import execute
from benchkit.run.progress import Progress
from benchkit.run.status import RunEnd, exit_status
from benchkit.stopping import Stop

TASK = "read-open-issue-count"


@pytest.mark.parametrize(("end", "status"), [
    (RunEnd("trials"), EXIT_OK),
    (RunEnd("plan"), EXIT_OK),  # a dry run that printed its plan
    (RunEnd("trials", harness_errors=1), EXIT_FAILED),
    (RunEnd("trials", halted="raw-api t: KeyError: 'x'"), EXIT_FAILED),
    (RunEnd("trials", ran_nothing=True), EXIT_FAILED),
    (RunEnd("trials", left_behind=True), EXIT_FAILED),
    (RunEnd("probe", blocked="pre-flight probe: raw-api: 401", left_behind=True),
     EXIT_BAD_INPUT),
    (RunEnd("trials", stopped=143, left_behind=True), 143),
    (RunEnd("pre-flight", blocked="pre-flight tools: curl is not installed"), EXIT_BAD_INPUT),
    (RunEnd("plan", blocked="nothing to run: the budget fits no trial"), EXIT_BAD_INPUT),
    (RunEnd("host", blocked="cannot make the run's own user"), EXIT_BAD_INPUT),
    (RunEnd("probe", blocked="pre-flight probe: raw-api: 401"), EXIT_BAD_INPUT),
    (RunEnd("trials", blocked="the model service refused the credentials", harness_errors=2),
     EXIT_BAD_INPUT),
    (RunEnd("trials", stopped=130, blocked="refused", harness_errors=1), 130),
    (RunEnd("pre-flight", stopped=143), 143),
    (RunEnd("probe", stopped=129), 129),
])
def test_each_exit_code_from_the_phases_it_comes_from(end, status):
    assert exit_status(end) == status


@pytest.fixture
def in_tree(tree_copy, tmp_path, monkeypatch):
    monkeypatch.chdir(tree_copy)
    for name in [k for k in os.environ if k.startswith("GITEA_")]:
        monkeypatch.delenv(name)
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "no-config"))
    return tree_copy


def ended(tmp_path, **settings) -> tuple[RunEnd, str]:
    checked = preflight(["arms.d/raw-api.yaml"], task_patterns=[TASK], driver="replay")
    err = io.StringIO()
    progress = Progress(out=io.StringIO(), err=err, live=False, estimated=True)
    with Stop(note=progress.interrupted, say=progress.note) as stop:
        end = execute(checked, progress, RunSettings(driver="replay", **settings), stop, None)
    return end, err.getvalue()


def test_a_budget_that_fits_nothing_ends_in_the_plan_blocked(in_tree, tmp_path):
    end, said = ended(tmp_path, store_dir=str(tmp_path / "results"), until=2, budget=10)
    assert (end.phase, exit_status(end)) == ("plan", EXIT_BAD_INPUT)
    assert end.blocked in said and not (tmp_path / "results").exists()


def test_trials_that_ran_end_done(in_tree, tmp_path):
    end, said = ended(tmp_path, store_dir=str(tmp_path / "results"), replay_failures=False)
    assert end == RunEnd("trials"), said
    assert exit_status(end) == EXIT_OK
    assert list((tmp_path / "results").rglob("*.jsonl"))
