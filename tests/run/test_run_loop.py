"""`benchkit run` through the CLI: trials and top-ups, least-sampled first, the budget,
--jobs, harness errors run again, the self-review probe's pick, JSON events and the
report at the end. Replay runs play refs.d/raw-api.yaml through the real CLI on an
embedded forge; budget runs use the claude driver against a scripted model whose
usage is fixed, so costs are exact."""

import json

import pytest
import yaml
from click.testing import CliRunner
from conftest import CHECKOUT

from benchkit.agent.scripted import ScriptedModel, say
from benchkit.cli import main
from benchkit.gitea import Client
from benchkit.store import Store

RAW_API = str(CHECKOUT / "arms.d/raw-api.yaml")
CLOSE = "close-csv-export-issue"
COUNT = "read-open-issue-count"
# Pre-flight's tool probe seeds one repository first: a fault meant for the trials
# lets that seeding's label requests pass.
PROBE_LABELS = len(yaml.safe_load((CHECKOUT / "seeds/default.yaml").read_text())["labels"])
NO_USAGE = {"input_tokens": 0, "cache_creation_input_tokens": 0,
            "cache_read_input_tokens": 0, "output_tokens": 0}
pytestmark = pytest.mark.usefixtures("quiet")  # no setting of the machine reaches a run


@pytest.fixture
def scripted(tmp_path, monkeypatch):
    """Point the claude driver at a scripted model: each trial's one main request costs
    exactly 10,000 cost-equivalent tokens (fresh input), auxiliary requests nothing."""
    def start(turns):
        model = ScriptedModel(turns, usage={**NO_USAGE, "input_tokens": 10_000},
                              auxiliary_usage=NO_USAGE).start()
        monkeypatch.setenv("ANTHROPIC_BASE_URL", model.url)
        monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-ant-benchkit-test")
        monkeypatch.setenv("CLAUDE_CONFIG_DIR", str(tmp_path / "claude"))
        started.append(model)
        return model
    started = []
    yield start
    for model in started:
        model.stop()


def run(*args, store="results"):
    return CliRunner().invoke(main, ["run", *args, "--store", str(store)],
                              catch_exceptions=False)


def events(result) -> list[dict]:
    return [json.loads(line) for line in result.stdout.splitlines()]  # JSON and nothing else


def samples(store="results", task=None) -> list[dict]:
    return list(Store(store).samples(arm="raw-api", task=task))


def repos(forge) -> list[str]:
    with Client(forge.url, forge.token) as client:
        return [r["name"] for r in client.get(f"/users/{forge.user}/repos")]


@pytest.mark.slow
def test_trials_add_until_tops_up_least_sampled_first(tmp_path):
    first = run(RAW_API, "--task", CLOSE, "--trials", "2", "--driver", "replay",
                "--budget", "10000000")
    assert first.exit_code == 0, first.output
    assert [s["outcome"] for s in samples(task=CLOSE)] == ["passed", "passed"]
    assert "no real tokens are spent" in first.stdout
    assert "they count against the budget" in first.stdout
    assert "done: 2 of 2 trial(s)" in first.stdout
    assert (tmp_path / "reports" / "report.md").is_file()  # rendered at the end

    topped = run(RAW_API, "--task", CLOSE, "--until", "3", "--driver", "replay", "--no-report")
    assert topped.exit_code == 0, topped.output
    assert len(samples(task=CLOSE)) == 3

    again = run(RAW_API, "--task", CLOSE, "--until", "3", "--driver", "replay", "--no-report")
    assert again.exit_code == 0 and len(samples(task=CLOSE)) == 3
    assert "nothing to do" in again.stderr

    # The cell with no sample goes first, though the other one is listed first.
    spread = run(RAW_API, "--task", CLOSE, "--task", COUNT, "--driver", "replay", "--json",
                 "--no-report")
    started = [(e["task"], e["expected_from"]) for e in events(spread) if e["event"] == "start"]
    assert started == [(COUNT, "this arm's mean"), (CLOSE, "this cell's mean")]
    assert len(samples(task=CLOSE)) == 4 and len(samples(task=COUNT)) == 1
    # Numbered within the cell across runs, as `show` and the report list them.
    assert [s["trial"] for s in samples(task=CLOSE)] == [0, 1, 2, 3]
    shown = CliRunner().invoke(main, ["show", "--task", CLOSE, "--json"])
    assert sorted(s["trial"] for s in json.loads(shown.stdout)) == [0, 1, 2, 3]


def test_a_budget_smaller_than_any_trial_starts_none(tmp_path):
    result = run(RAW_API, "--task", CLOSE, "--driver", "replay", "--budget", "5000")
    assert result.exit_code == 2, result.output  # nothing runnable (README's exit table)
    assert "embedded forge" not in result.output  # said before any host started
    # trials numbered as the sample numbers them ("trial": 0)
    assert "skipped (budget): raw-api close-csv-export-issue trial 0: expects 25,000~ " \
           "tokens, 5,000~ left" in result.stdout
    assert ("nothing to run: the budget of 5,000~ tokens fits no trial (the cheapest "
            "expects 25,000~); nothing was started") in result.output
    assert not (tmp_path / "results").exists() and not (tmp_path / "reports").exists()


@pytest.mark.slow
def test_the_budget_is_never_exceeded_and_what_was_skipped_is_said(tree_copy, monkeypatch,
                                                                    scripted):
    monkeypatch.setenv("BENCHKIT_ROOT", str(tree_copy))
    suite = tree_copy / "suite.yaml"
    suite.write_text(suite.read_text().replace("default_cell_tokens: 25000",
                                               "default_cell_tokens: 10000"))
    model = scripted([say("Nothing to do.")] * 5)
    result = run(str(tree_copy / "arms.d/raw-api.yaml"), "--task", CLOSE, "--trials", "5",
                 "--budget", "25000", "--json", "--no-report")
    assert result.exit_code == 0, result.output
    stored = samples(task=CLOSE)
    assert [s["usage"]["input"] for s in stored] == [10_000, 10_000]
    assert len(model.messages(auxiliary=False)) == 2  # no third agent ever started
    seen = events(result)
    skipped = [e for e in seen if e["event"] == "budget-skip"]
    assert [(e["trial"], e["expected_tokens"], e["left_tokens"]) for e in skipped] == \
        [(2, 10_000, 5_000), (3, 10_000, 5_000), (4, 10_000, 5_000)]
    summary = seen[-1]
    assert summary["event"] == "summary" and summary["spent_tokens"] == 20_000
    assert summary["left_tokens"] == 5_000 and len(summary["skipped_budget"]) == 3
    assert summary["usage_estimated"] is False


@pytest.mark.slow
def test_jobs_run_trials_at_once_each_on_its_own_repository(forge):
    tasks = ["read-bug-issue-titles", "read-issue-labels-and-state", COUNT, "read-review-body",
             CLOSE, "label-startup-crash", "reopen-readme-badges", "comment-save-large-files"]
    result = run(RAW_API, *[arg for task in tasks for arg in ("--task", task)], "--jobs", "4",
                 "--driver", "replay", "--json", "--no-report",
                 "--host", forge.url, "--token", forge.token)
    assert result.exit_code == 0, result.output
    stored = samples()
    assert sorted(s["task"] for s in stored) == sorted(tasks)
    assert {s["outcome"] for s in stored} == {"passed"}
    seen = events(result)
    repos_used = [e["repo"] for e in seen if e["event"] == "start"]
    assert len(set(repos_used)) == 8
    order = [e["event"] for e in seen if e["event"] in ("start", "end")]
    assert order.index("end") >= 2, "no two trials overlapped"
    assert seen[-1]["outcomes"] == {"passed": 8}
    assert repos(forge) == []
    assert forge.token not in result.output


@pytest.mark.slow
def test_a_harness_error_is_recorded_apart_and_run_again_with_until(forge):
    forge.inject_fault("POST", r"/repos/.*/labels$", status=500, times=2,  # both seeding attempts
                       after=PROBE_LABELS)
    result = run(RAW_API, "--task", CLOSE, "--until", "1", "--driver", "replay", "--json",
                 "--no-report", "--host", forge.url, "--token", forge.token)
    assert result.exit_code == 1, result.output  # a harness error happened: say so
    stored = samples(task=CLOSE)
    assert [(s["outcome"], s["failure_class"], s["valid"]) for s in stored] == \
        [("harness-error", "seeding", False), ("passed", None, True)]
    assert [e["trial"] for e in events(result) if e["event"] == "end"] == [0, 1]
    assert repos(forge) == []


def test_until_runs_a_cells_harness_errors_again_at_most_the_suites_harness_retries(forge):
    forge.inject_fault("POST", r"/repos/.*/labels$", status=500, times=1000, after=PROBE_LABELS)
    result = run(RAW_API, "--task", CLOSE, "--until", "1", "--driver", "replay", "--no-report",
                 "--host", forge.url, "--token", forge.token)
    assert result.exit_code == 1 and "halted" not in result.stdout, result.stdout
    stored = samples(task=CLOSE)  # the first trial and suite.yaml's harness_retries (3) more
    assert [s["outcome"] for s in stored] == ["harness-error"] * 4
    assert repos(forge) == []


def test_harness_errors_in_a_row_halt_the_run(forge):
    forge.inject_fault("POST", r"/repos/.*/labels$", status=500, times=1000, after=PROBE_LABELS)
    result = run(RAW_API, "--task", CLOSE, "--task", COUNT, "--task", "label-startup-crash",
                 "--until", "1", "--driver", "replay", "--no-report",
                 "--host", forge.url, "--token", forge.token)
    assert result.exit_code == 1
    assert "halted: 5 trials in a row ended in a harness error (last: seeding" in result.stdout
    stored = samples()
    assert len(stored) == 5 and {s["outcome"] for s in stored} == {"harness-error"}
    assert repos(forge) == []


def test_the_self_review_probe_picks_the_review_tasks_for_the_host(forge, scripted, tmp_path):
    # Pre-flight passes; the budget lets two trials start (25,000 expected, then 10,000)
    # and skips the rest: a budget that fits none would stop before the host is asked.
    scripted([])
    chosen = ["--task", "bonus-self-*", "--task", "fta-review-*", "--budget", "25000", "--json",
              "--no-report", "--host", forge.url, "--token", forge.token]

    forbidding = events(run(RAW_API, *chosen))  # the forge forbids self-review, as Gitea does
    assert forbidding[0]["self_review"] is False
    planned = {e["task"] for e in forbidding if e["event"] in ("start", "budget-skip")}
    assert {"bonus-self-approve-csv-pull", "bonus-self-request-changes-docs-pull"} <= planned
    before = samples()

    # A host remembered as permitting self-review: the bonus-self-* tasks do not apply.
    cache = tmp_path / "cache" / "hosts.json"
    cache.write_text(json.dumps({forge.url: {"self_review": True}}))
    permitting = events(run(RAW_API, *chosen))
    assert permitting[0]["self_review"] is True
    skips = {e["task"]: e["reason"] for e in permitting if e["event"] == "skip"}
    assert skips == {"bonus-self-approve-csv-pull": "only for hosts that forbid self-review "
                                                    "(this one does not)",
                     "bonus-self-request-changes-docs-pull": "only for hosts that forbid "
                                                             "self-review (this one does not)"}
    assert not [s for s in samples() if s not in before and s["task"].startswith("bonus-self-")]


@pytest.mark.slow
def test_the_agent_gets_the_intent_worded_for_the_host(forge, scripted):
    from benchkit.documents import load_tree
    model = scripted([say("Done.")])
    result = run(RAW_API, "--task", "fta-review-csv-pull", "--no-report",
                 "--host", forge.url, "--token", forge.token)
    assert result.exit_code == 0, result.output
    [sample] = samples()
    assert sample["self_review"] is False
    intent = load_tree(CHECKOUT).tasks["fta-review-csv-pull"].intent_for(False)
    first = model.messages(auxiliary=False)[0].body["messages"][0]
    text = first["content"] if isinstance(first["content"], str) else \
        "".join(block.get("text", "") for block in first["content"])
    assert intent.strip() in text


def test_not_runnable_cells_are_listed_not_run(tmp_path):
    result = run(RAW_API, "--tier", "bonus", "--driver", "replay", "--budget", "0", "--json",
                 "--no-report")
    assert result.exit_code == 2, result.output  # and the budget fits none of the others
    skips = {e["task"]: e["reason"] for e in events(result) if e["event"] == "skip"}
    assert skips["bonus-checkout-docs-head"] == "not applicable to raw-api"
    assert skips["bonus-create-archive-repo"] == "no scoring spec: the checker cannot judge it"
    assert skips["bonus-self-approve-csv-pull"].startswith("unsupported by the arm's tool (")
    assert not (tmp_path / "results").exists()

    # Nothing runnable on any host: bad input, said before a forge starts.
    nothing = run(RAW_API, "--task", "bonus-create-archive-repo", "--driver", "replay", "--no-report")
    assert nothing.exit_code == 2
    assert "nothing to run: no chosen cell can run" in nothing.stderr
    assert "embedded forge" not in nothing.stderr


def test_cost_equivalent_tokens_weigh_each_component_as_the_suite_says():
    from benchkit.cost import usage_cost
    from benchkit.documents import load_suite
    w = load_suite(CHECKOUT / "suite.yaml").weights
    split = {"input": 100, "cache_write": 1000, "cache_write_5m": 600, "cache_write_1h": 400,
             "cache_read": 5000, "output": 50}
    assert usage_cost(split, w) == pytest.approx(
        100 * w["input"] + 600 * w["cache_write_5m"] + 400 * w["cache_write_1h"]
        + 5000 * w["cache_read"] + 50 * w["output"])
    # A cache write not split by lifetime counts at the 5-minute weight, as in the report.
    unsplit = {**split, "cache_write_5m": None, "cache_write_1h": None}
    assert usage_cost(unsplit, w) == pytest.approx(
        100 * w["input"] + 1000 * w["cache_write_5m"] + 5000 * w["cache_read"] + 50 * w["output"])


def test_until_floor_is_the_suite_floor(tree_copy, monkeypatch):
    monkeypatch.setenv("BENCHKIT_ROOT", str(tree_copy))
    floor = yaml.safe_load((tree_copy / "suite.yaml").read_text())["floor"]
    result = run(str(tree_copy / "arms.d/raw-api.yaml"), "--task", CLOSE, "--until", "floor",
                 "--driver", "replay", "--dry-run", "--json")
    assert len(json.loads(result.stdout)["trials"]) == floor
