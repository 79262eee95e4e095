"""The checker against real captured states: a repository seeded on the forge, changed
over its REST API as an agent would, snapshotted, and scored by `benchkit check`."""

import json

import pytest
from click.testing import CliRunner
from conftest import CHECKOUT

from benchkit.cli import main
from benchkit.documents import load_seed
from benchkit.documents.expectation import ground_truth
from benchkit.forge import Forge
from benchkit.gitea import Client, delete_repo, provision, snapshot
from benchkit.scoring import diff

SEED = load_seed(CHECKOUT / "seeds" / "default.yaml")


@pytest.fixture(scope="module")
def host():
    with Forge() as forge, Client(forge.url, forge.token) as client:
        yield forge, client


@pytest.fixture
def repo(host):
    forge, client = host
    seeded = provision(client, SEED)
    yield client, f"/repos/{seeded.owner}/{seeded.name}", lambda: snapshot(client, seeded.owner, seeded.name)
    delete_repo(client, seeded.owner, seeded.name)


def check(task_id, state, tmp_path, answer=None):
    state_file = tmp_path / "state.json"
    state_file.write_text(json.dumps(state))
    args = ["check", CHECKOUT / "tasks.d" / f"{task_id}.yaml", "--state", state_file,
            "--user", "bench"]
    if answer is not None:
        (tmp_path / "answer.txt").write_text(answer)
        args += ["--answer", tmp_path / "answer.txt"]
    result = CliRunner().invoke(main, [str(a) for a in args], catch_exceptions=False)
    return result.exit_code, json.loads(result.stdout)


def test_a_freshly_seeded_repository_is_the_ground_truth(repo, tmp_path):
    _, _, capture = repo
    state = capture()
    assert diff(ground_truth(SEED, "bench", seeded=state), state) == []
    assert check("read-review-body", state, tmp_path, "It says the error handling could be tightened.")[0] == 0
    code, verdict = check("ms-close-open-crashes", state, tmp_path)
    assert code == 1 and len(verdict["differences"]) == 4


# task id -> the API calls a competent agent makes (paths relative to the repository);
# one per way a snapshot could disagree with the interpreter (seeding a repository
# on the forge costs over a second, so not every task is here)
SOLUTIONS = {
    "assign-install-docs-typo": [("PATCH", "/issues/4", {"assignees": ["bench"]})],
    "create-memory-leak-issue": [("POST", "/issues", {
        "title": "Investigate memory leak", "body": "Memory usage grows unbounded during long export runs."})],
    "fta-merge-startup-pull": [("POST", "/pulls/10/merge", {"Do": "merge"})],
    "fta-review-csv-pull": [("POST", "/pulls/9/reviews", {
        "event": "COMMENT", "body": "The CSV export path looks correct to me."})],
    "ms-create-and-apply-stale": [
        ("POST", "/labels", {"name": "stale", "color": "#CCCCCC"}),
        ("POST", "/issues/2/labels", {"labels": ["stale"]}),
        ("PATCH", "/issues/2", {"state": "closed"}),
    ],
}


@pytest.mark.parametrize("task_id", SOLUTIONS)
def test_a_correct_change_over_the_api_passes(task_id, repo, tmp_path):
    client, base, capture = repo
    for method, path, body in SOLUTIONS[task_id]:
        client.request(method, base + path, json=body)
    assert check(task_id, capture(), tmp_path) == (0, {"passed": True, "differences": []})


def test_collateral_done_over_the_api_is_named(repo, tmp_path):
    client, base, capture = repo
    for _ in range(2):  # a retried call posts the comment twice
        client.request("POST", base + "/issues/3/comments", json={"body": "I can reproduce this too."})
    client.request("PATCH", base + "/labels/1", json={"color": "000000"})
    code, verdict = check("comment-save-large-files", capture(), tmp_path)
    assert code == 1
    assert verdict["differences"] == [
        'label "bug": color is 000000, expected d73a4a (collateral)',
        'issue #3 "Crash when saving large files": unexpected comment by bench: '
        '"I can reproduce this too." (collateral)',
    ]
