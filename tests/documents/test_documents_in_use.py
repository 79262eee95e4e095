"""Documents as the commands meet them: a broken document is named (FILE:LINE) but stops
only a command that needs it; a missing refs.d/ file is one warning per arm; a task
glob or an arm that names nothing gets a "did you mean"."""

import fnmatch
import json
import subprocess

import pytest
from conftest import BENCHKIT, CHECKOUT
from test_cli_contract import no_host_env

BROKEN = "tasks.d/read-bug-issue-titles.yaml"


def benchkit(*args, cwd, env=None, timeout=300):
    return subprocess.run([*BENCHKIT, *map(str, args)], capture_output=True, text=True,
                          cwd=cwd, env=env, timeout=timeout)


@pytest.fixture
def broken_tree(tree_copy):
    """The shipped tree with one task broken: its tier is not one."""
    path = tree_copy / BROKEN
    text = path.read_text()
    assert "tier: read\n" in text
    path.write_text(text.replace("tier: read\n", "tier: reed\n"))
    line = text.splitlines().index("tier: read") + 1
    return tree_copy, f"{BROKEN}:{line}: "


def test_validate_still_fails_on_a_broken_task(broken_tree):
    tree, where = broken_tree
    done = benchkit("validate", cwd=tree)
    assert done.returncode == 2 and where in done.stderr


def test_list_names_a_broken_task_and_lists_the_others(broken_tree):
    tree, where = broken_tree
    done = benchkit("list", "tasks", "--json", cwd=tree)
    assert done.returncode == 0, done.stderr
    assert done.stderr.startswith(where)
    ids = [row["id"] for row in json.loads(done.stdout)]
    assert "read-open-issue-count" in ids and "read-bug-issue-titles" not in ids
    assert len(ids) == len(list((tree / "tasks.d").glob("*.yaml"))) - 1


def test_a_run_of_another_task_runs_and_names_the_broken_one(broken_tree, tmp_path):
    tree, where = broken_tree
    planned = benchkit("run", "arms.d/raw-api.yaml", "--driver", "replay", "--task",
                       "read-open-issue-count", "--store", tmp_path / "results", "--dry-run",
                       cwd=tree, env=no_host_env(tmp_path))
    assert planned.returncode == 0, planned.stderr
    assert "would run 1 trial(s)" in planned.stdout
    assert where in planned.stderr and "not chosen" in planned.stderr
    done = benchkit("run", "arms.d/raw-api.yaml", "--driver", "replay", "--task",
                    "read-open-issue-count", "--store", tmp_path / "results", "--no-report",
                    cwd=tree, env=no_host_env(tmp_path))
    assert done.returncode == 0, done.stdout + done.stderr
    assert where in done.stderr
    stored = (tmp_path / "results" / "raw-api" / "read-open-issue-count.jsonl").read_text()
    assert json.loads(stored)["outcome"] == "passed"


@pytest.mark.parametrize("chosen", [["--task", "read-bug-*"], [], ["--tier", "read"]],
                         ids=["named", "every-task", "a-tier"])
def test_a_run_that_may_need_the_broken_task_stops(broken_tree, tmp_path, chosen):
    tree, where = broken_tree
    done = benchkit("run", "arms.d/raw-api.yaml", "--driver", "replay", *chosen,
                    "--store", tmp_path / "results", "--dry-run", cwd=tree,
                    env=no_host_env(tmp_path))
    assert done.returncode == 2 and where in done.stderr + done.stdout


def test_a_broken_arm_not_given_does_not_stop_a_run(tree_copy, tmp_path):
    path = tree_copy / "arms.d" / "tea.yaml"
    path.write_text(path.read_text().replace("  binary: tea\n", "  binary: [tea\n"))
    done = benchkit("run", "arms.d/raw-api.yaml", "--driver", "replay", "--task",
                    "read-open-issue-count", "--store", tmp_path / "results", "--dry-run",
                    cwd=tree_copy, env=no_host_env(tmp_path))
    assert done.returncode == 0, done.stderr
    assert "arms.d/tea.yaml:" in done.stderr
    done = benchkit("run", "arms.d/tea.yaml", "--driver", "replay", "--task",
                    "read-open-issue-count", "--store", tmp_path / "results", "--dry-run",
                    cwd=tree_copy, env=no_host_env(tmp_path))
    assert done.returncode == 2 and "arms.d/tea.yaml:" in done.stderr + done.stdout


def test_a_missing_reference_file_is_one_warning_per_arm(tree_copy):
    (tree_copy / "refs.d" / "tea.yaml").unlink()
    done = benchkit("validate", cwd=tree_copy)
    assert done.returncode == 0, done.stderr
    warnings = [line for line in done.stderr.splitlines() if "arm tea" in line]
    assert warnings == ["arms.d/tea.yaml: warning: not provable on arm tea: no "
                        "refs.d/tea.yaml (replay and validate --live skip its tasks)"]


def test_a_task_glob_that_matches_nothing_says_what_was_meant(tree_copy, tmp_path):
    done = benchkit("run", "arms.d/raw-api.yaml", "--driver", "replay", "--task", "fta-*x",
                    "--dry-run", cwd=tree_copy, env=no_host_env(tmp_path))
    assert done.returncode == 2
    assert "no task matches 'fta-*x' (did you mean 'fta-*'?" in done.stdout + done.stderr
    done = benchkit("run", "arms.d/raw-api.yaml", "--driver", "replay", "--task",
                    "read-open-isue-count", "--dry-run", cwd=tree_copy, env=no_host_env(tmp_path))
    assert done.returncode == 2
    assert "(did you mean 'read-open-issue-count'?)" in done.stdout + done.stderr


def test_an_arm_id_for_an_arm_file_says_what_was_meant(tree_copy, tmp_path):
    done = benchkit("run", "raw-api", "--driver", "replay", "--dry-run", cwd=tree_copy,
                    env=no_host_env(tmp_path))
    assert done.returncode == 2
    assert "did you mean arms.d/raw-api.yaml?" in done.stderr
    done = benchkit("run", "arms.d/raw-apy.yaml", "--driver", "replay", "--dry-run",
                    cwd=tree_copy, env=no_host_env(tmp_path))
    assert done.returncode == 2
    assert "did you mean arms.d/raw-api.yaml?" in done.stderr


def test_until_trials_tops_each_cell_up_to_the_suites_trials(tree_copy, tmp_path):
    """suite.yaml's `trials` is the depth of a full sweep: `--until trials`."""
    suite = tree_copy / "suite.yaml"
    suite.write_text(suite.read_text().replace("trials: 5 ", "trials: 4 "))
    done = benchkit("run", "arms.d/raw-api.yaml", "--driver", "replay", "--task",
                    "read-open-issue-count", "--until", "trials", "--dry-run",
                    "--store", tmp_path / "results", cwd=tree_copy, env=no_host_env(tmp_path))
    assert done.returncode == 0, done.stderr
    assert "would run 4 trial(s)" in done.stdout
    help_text = benchkit("run", "-h", cwd=tree_copy).stdout
    assert "`trials`: the suite's trials" in " ".join(help_text.split())


def test_an_arm_outside_arms_d_is_run_with_its_own_references_and_reported(tree_copy, tmp_path):
    """An arm file from elsewhere (a tool's own repository) with its references in the
    refs.d/ beside it: the run replays them, keeps the arm's document in the store, and
    the report counts its samples, from `benchkit report` of that store too."""
    elsewhere = tmp_path / "elsewhere"
    (elsewhere / "refs.d").mkdir(parents=True)
    text = (tree_copy / "arms.d" / "raw-api.yaml").read_text()
    (elsewhere / "my-api.yaml").write_text(text.replace("id: raw-api", "id: my-api"))
    references = (tree_copy / "refs.d" / "raw-api.yaml").read_text()
    (elsewhere / "refs.d" / "my-api.yaml").write_text(
        references.replace("arm: raw-api", "arm: my-api"))
    done = benchkit("run", elsewhere / "my-api.yaml", "--task", "read-open-issue-count",
                    "--driver", "replay", "--store", tmp_path / "results", "--reports",
                    tmp_path / "reports", cwd=tree_copy, env=no_host_env(tmp_path))
    assert done.returncode == 0, done.stderr[-3000:]
    assert (f"note: {elsewhere / 'my-api.yaml'}: arm my-api is not in arms.d/: the run keeps "
            "its document in the store (.arms/my-api.yaml)") in done.stderr
    assert (tmp_path / "results" / ".arms" / "my-api.yaml").read_text() == \
        (elsewhere / "my-api.yaml").read_text()
    for reports in (tmp_path / "reports", tmp_path / "again"):
        if reports.name == "again":
            assert benchkit("report", "--store", tmp_path / "results", "--reports", reports,
                            cwd=tree_copy).returncode == 0
        report = json.loads((reports / "report.json").read_text())
        assert "my-api" in report["arms"] and report["other_versions"] == []
        row = next(r for r in report["estimates"]["headline"] if r["arm"] == "my-api")
        assert row["samples"] == 1
    # The same id as a tree arm, another definition: counted apart, said before trial 0.
    (elsewhere / "raw-api.yaml").write_text(text.replace("nothing else.", "nothing else!"))
    done = subprocess.run([*BENCHKIT, "run", str(elsewhere / "raw-api.yaml"), "--task",
                           "read-open-issue-count", "--driver", "replay", "--no-report",
                           "--store", str(tmp_path / "results")], cwd=tree_copy,
                          env=no_host_env(tmp_path), stdout=subprocess.PIPE,
                          stderr=subprocess.STDOUT, text=True, timeout=300)  # one stream, in order
    assert done.returncode == 0, done.stdout
    warning = (f"warning: {elsewhere / 'raw-api.yaml'}: arm raw-api differs from "
               "arms.d/raw-api.yaml: the report counts the samples of arms.d/raw-api.yaml")
    assert warning in done.stdout
    assert done.stdout.index(warning) < done.stdout.index("trial 0: started")


@pytest.mark.parametrize(("pattern", "meant"), [
    ("fta-nothing-*", " (did you mean 'fta-*'?)"),  # not a same-length cut of another id
    ("ftx-*", " (did you mean 'fta-*'?)"),
    ("read-opn*", " (did you mean 'read-*'?)"),
    ("fta-reopen-x*", " (did you mean 'fta-reopen-*'?)"),
    ("zzz*", ""),
])
def test_a_glob_that_matches_nothing_is_offered_one_that_matches(pattern, meant):
    from benchkit.documents import load_tree
    from benchkit.preflight.checks import _meant
    ids = list(load_tree(CHECKOUT).tasks)
    assert _meant(pattern, ids) == meant
    if meant:
        offered = meant.split("'")[1]
        assert any(fnmatch.fnmatchcase(task_id, offered) for task_id in ids)
