"""The red team's answer stuffing as real trials: the real Claude CLI (scripted model) on
the forge, a read task, and a final answer that stuffs every candidate without a single
call to the host. The stored sample is failed, with differences that name what the
answer said beyond the truth; the truth alone, in the same trial shape, passes."""

import pytest
from test_trial_cell import Scripted, context, raw_api_cell

from benchkit.agent.scripted import say
from benchkit.trial.cell import run_trial
from benchkit.trial.prepare import prepare_trial

pytestmark = [pytest.mark.slow, pytest.mark.usefixtures("private_dirs")]

R07 = ", ".join(f"{n} open" for n in range(10))  # "how many issues are open", no call made
TITLES = ["Fix crash on startup", "Add CSV export option", "Crash when saving large files",
          "Typo in installation docs", "Update README badges", "Crash in export dialog",
          "Improve export performance", "Typo in error message"]
R06 = "\n".join(f"- {title}" for title in TITLES)  # "list the bug issues' titles"


def stored(forge, shipped_tree, tmp_path, task, answer):
    driver = Scripted()
    ctx = context(forge, shipped_tree, tmp_path, driver)
    trial = raw_api_cell(shipped_tree, task)
    prepared = prepare_trial(trial, ctx)
    driver.script = [say(answer)]
    sample = run_trial(trial, ctx, prepared).sample
    [kept] = list(ctx.store.samples(arm="raw-api", task=task))
    assert kept["id"] == sample.id and kept["answer"] == answer
    return kept


def test_r07_every_count_is_failed_in_the_stored_sample(forge, shipped_tree, tmp_path):
    sample = stored(forge, shipped_tree, tmp_path, "read-open-issue-count", R07)
    assert (sample["outcome"], sample["valid"]) == ("failed", True)
    assert sample["differences"] == [f'answer gives another count: {n} ("{n} open")'
                                     for n in range(10) if n != 5]


def test_r06_every_title_is_failed_and_the_truth_passes(forge, shipped_tree, tmp_path):
    sample = stored(forge, shipped_tree, tmp_path / "r06", "read-bug-issue-titles", R06)
    assert sample["outcome"] == "failed"
    assert sample["differences"] == [f'answer names an issue that is not labelled "bug": "{title}"'
                                     for title in TITLES if "rash" not in title]
    truth = "\n".join(title for title in TITLES if "rash" in title)
    assert stored(forge, shipped_tree, tmp_path / "truth", "read-bug-issue-titles",
                  truth)["outcome"] == "passed"
