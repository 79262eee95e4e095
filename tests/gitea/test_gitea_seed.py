"""Provisioning, seeding, the readiness gate and snapshots against the forge over HTTP."""

import json
import time

import pytest
from click.testing import CliRunner

from benchkit import PACKAGE_DIR
from benchkit.cli import main
from benchkit.documents import load_seed
from benchkit.documents.expectation import seed_plan
from benchkit.errors import HarnessError, HostError, ReadinessError, SeedError
from benchkit.gitea.client import Client
from benchkit.gitea.ready import wait_ready
from benchkit.gitea.repos import Repo, create_repo, delete_repo, list_leftovers, unique_name
from benchkit.gitea.seed import provision, seed_repo
from benchkit.gitea.snapshot import snapshot
from benchkit.state import normalise

DEFAULT_SEED = PACKAGE_DIR.parent / "seeds" / "default.yaml"
PREFIX = "benchkit-test-"

def logged(forge):
    """The forge's request log: every answered request is in it (the forge logs each
    before the last byte of its answer leaves)."""
    return forge.requests()


@pytest.fixture
def seed():
    return load_seed(DEFAULT_SEED)


@pytest.fixture
def client(forge):
    with Client(forge.url, forge.token, backoff=0.01) as client:
        yield client


def expected_truth(user):
    result = CliRunner().invoke(main, ["expect", "--seed", str(DEFAULT_SEED), "--user", user])
    assert result.exit_code == 0, result.output
    return json.loads(result.output)


def captured(client, repo):
    """The repository's snapshot but its settings (the host's, which `expect` cannot
    know), each section as `expect` prints it: the sections the forge models."""
    state = snapshot(client, repo.owner, repo.name)
    del state["repository"]
    return normalise(state)


def modelled(state):
    """The expected state, as a forge's snapshot holds it: what the forge does not model
    left out."""
    from benchkit.forge.users import UNMODELLED
    kept = {key: value for key, value in state.items() if key not in UNMODELLED}
    for item in kept["issues"] + kept["pull_requests"]:
        for key in UNMODELLED:
            item.pop(key, None)
        for comment in item["comments"]:
            for key in UNMODELLED:
                comment.pop(key, None)
    return normalise(kept)


def seeding_budget(plan):
    """One request per entity created, a PATCH per closed item, and GET /user + the repo."""
    issues, pulls = plan["issues"], plan["pull_requests"]
    items = issues + pulls
    return (2 + len(plan["files"]) + len(plan["labels"]) + len(plan["milestones"])
            + len(issues) + 2 * len(pulls)
            + sum(len(item["comments"]) for item in items)
            + sum(len(pull["reviews"]) for pull in pulls)
            + sum(item["state"] != "open" for item in items))


def test_seeded_repository_snapshots_to_the_ground_truth(forge, client, seed):
    repo = provision(client, seed, prefix=PREFIX)
    assert repo.owner == forge.user and repo.name.startswith(PREFIX)
    assert repo.full_name == f"{forge.user}/{repo.name}"
    assert captured(client, repo) == modelled(expected_truth(forge.user))
    delete_repo(client, repo.owner, repo.name)
    assert list_leftovers(client, PREFIX) == []


def test_seeding_makes_no_redundant_request(forge, seed):
    plan = seed_plan(seed)
    with Client(forge.url, forge.token) as client:
        start = len(logged(forge))
        repo, branch = create_repo(client, PREFIX)
        seed_repo(client, repo, plan, branch=branch)
        seeding = logged(forge)[start:]
        assert len(seeding) == seeding_budget(plan) == 29
        assert not [r for r in seeding if r["method"] == "GET" and r["path"] != "/api/v1/user"]
        start = len(logged(forge))
        wait_ready(client.url, client.token, repo, seed, timeout=10)
        assert len(logged(forge)) - start == 5  # repo, issues, pulls, two searches
        start = len(logged(forge))
        snapshot(client, repo.owner, repo.name)
        # The version (what the host models), the repository and nine lists (labels,
        # milestones, issues, pull requests, comments, branches, tags, releases); per
        # issue its dependencies, per pull request its reviews, per branch its history,
        # its tree and its head's statuses (each head is its own commit here).
        items = plan["issues"] + plan["pull_requests"]
        branches = 1 + len(plan["pull_requests"])
        assert len(logged(forge)) - start == (
            10 + len(items) + len(plan["pull_requests"]) + 3 * branches)


def test_gate_waits_for_a_lagging_index_then_releases(forge, client, seed):
    forge.set_index_lag(2.0)
    started = time.monotonic()
    repo = provision(client, seed, prefix=PREFIX, gate_timeout=20)
    assert time.monotonic() - started >= 1.5
    listings = [r for r in logged(forge) if r["method"] == "GET" and r["path"].endswith("/issues")]
    assert len(listings) > 3  # one listing, then the issue search polled more than once
    assert captured(client, repo) == modelled(expected_truth(forge.user))


def test_gate_fails_within_its_timeout_as_a_harness_error(forge, client, seed):
    plan = seed_plan(seed)
    repo, branch = create_repo(client, PREFIX)
    seed_repo(client, repo, plan, branch=branch)
    forge.set_index_lag(30.0)
    started = time.monotonic()
    with pytest.raises(ReadinessError) as caught:
        wait_ready(client.url, client.token, repo, seed, timeout=1.5)
    assert time.monotonic() - started < 1.5 + 60  # a bound on a hang only
    assert isinstance(caught.value, HarnessError)
    assert "search index does not return seeded issue #8" in str(caught.value)
    assert "not ready after 1.5 s" in str(caught.value)


def test_gate_timeout_in_provision_discards_the_repository(forge, client, seed):
    forge.set_index_lag(30.0)
    with pytest.raises(ReadinessError):
        provision(client, seed, prefix=PREFIX, gate_timeout=1.0)
    assert list_leftovers(client, PREFIX) == []


def test_gate_waits_for_a_repository_that_answers_404_at_first(forge, client, seed):
    plan = seed_plan(seed)
    repo, branch = create_repo(client, PREFIX)
    seed_repo(client, repo, plan, branch=branch)
    forge.inject_fault("GET", rf"/repos/{repo.owner}/{repo.name}$", status=404, times=3)
    wait_ready(client.url, client.token, repo, seed, timeout=10, interval=0.05)
    gets = [r for r in logged(forge) if r["method"] == "GET"
            and r["path"].endswith(f"/repos/{repo.owner}/{repo.name}")]
    assert [r["status"] for r in gets] == [404, 404, 404, 200]


def test_gate_sees_a_missing_seeded_item(forge, client, seed):
    repo, branch = create_repo(client, PREFIX)
    plan = seed_plan(seed)
    short = {**plan, "pull_requests": plan["pull_requests"][:-1]}
    seed_repo(client, repo, short, branch=branch)
    with pytest.raises(ReadinessError, match="not all 3 seeded pull requests are listed"):
        wait_ready(client.url, client.token, repo, plan, timeout=0.5)


def test_a_500_while_seeding_starts_over_in_a_new_repository(forge, client, seed):
    forge.inject_fault("POST", r"/repos/[^/]+/[^/]+/issues$", status=500, times=1)
    repo = provision(client, seed, prefix=PREFIX)
    assert captured(client, repo) == modelled(expected_truth(forge.user))
    created = [r for r in logged(forge) if r["method"] == "POST" and r["path"].endswith("/user/repos")]
    deleted = [r for r in logged(forge) if r["method"] == "DELETE"]
    assert len(created) == 2 and len(deleted) == 1
    assert list_leftovers(client, PREFIX) == [repo]


def test_a_dropped_create_is_cleaned_up_by_name_and_retried(forge, client, seed):
    forge.inject_fault("POST", r"/user/repos$", drop=True, times=1)
    repo = provision(client, seed, prefix=PREFIX)
    creates = [r for r in logged(forge) if r["path"].endswith("/user/repos")]
    deletes = [r for r in logged(forge) if r["method"] == "DELETE"]
    # The host might have made the repository before the line dropped: delete it by name.
    assert len(creates) == 2 and [r["status"] for r in deletes] == [404]
    assert repo.name not in deletes[0]["path"]
    assert list_leftovers(client, PREFIX) == [repo]


def test_every_attempt_failing_is_a_seed_error_with_nothing_left(forge, client, seed):
    forge.inject_fault("POST", r"/contents/", status=500, times=5)
    with pytest.raises(SeedError, match=r"in 2 attempt\(s\).*attempt 1 .*attempt 2 "):
        provision(client, seed, prefix=PREFIX)
    assert list_leftovers(client, PREFIX) == []


def test_a_host_dying_mid_seed_leaves_only_what_gc_finds(forge, client, seed):
    _ = client.user  # the host was alive when the run began
    # Down for exactly the calls two attempts make: a label each, a delete (4 tries) each.
    forge.inject_fault("POST", r"/labels$", drop=True, times=2)
    forge.inject_fault("DELETE", r"/repos/", drop=True, times=2 * (1 + client.retries))
    with pytest.raises(SeedError) as caught:
        provision(client, seed, prefix=PREFIX)
    message = str(caught.value)
    assert "cannot reach Gitea host" in message and "benchkit gc" in message
    leftovers = list_leftovers(client, PREFIX)
    assert len(leftovers) == 2
    assert all(repo.full_name in message for repo in leftovers)


def test_dead_host_is_a_host_error_before_anything_is_created(seed, dead_url):
    with Client(dead_url, "t", retries=1, backoff=0.01) as client:
        with pytest.raises(HostError, match="cannot reach Gitea host"):
            provision(client, seed, prefix=PREFIX)


def test_numbering_drift_is_a_seed_error(forge, client, seed):
    plan = seed_plan(seed)
    repo, branch = create_repo(client, PREFIX)
    client.post(f"{repo.path}/issues", {"title": "already here"})
    with pytest.raises(SeedError, match="became #2, the ground truth says #1"):
        seed_repo(client, repo, plan, branch=branch)


def test_snapshot_captures_every_state(forge, client, seed):
    repo = provision(client, seed, prefix=PREFIX)
    client.post(f"{repo.path}/pulls/10/merge", {"Do": "merge"})
    client.patch(f"{repo.path}/pulls/11", {"state": "closed"})
    client.post(f"{repo.path}/issues/9/comments", {"body": "A PR comment."})
    client.post(f"{repo.path}/pulls/9/reviews", {
        "event": "COMMENT", "body": "Inline notes.",
        "comments": [{"path": "export.txt", "body": "This line.", "new_position": 1}]})
    client.post(f"{repo.path}/labels", {"name": "Stale", "color": "#CCCCCC"})
    state = snapshot(client, repo.owner, repo.name)
    pulls = {pull["number"]: pull for pull in state["pull_requests"]}
    assert pulls[10]["state"] == "merged" and pulls[11]["state"] == "closed"
    assert pulls[9]["comments"] == [{"author": forge.user, "body": "A PR comment."}]
    assert pulls[9]["reviews"] == [{"author": forge.user, "kind": "comment", "body": "Inline notes.",
                                    "dismissed": False,
                                    "comments": [{"author": forge.user, "body": "This line."}]}]
    assert {"name": "Stale", "color": "cccccc", "description": "", "exclusive": False,
            "archived": False} in state["labels"]
    branches = {branch["name"]: branch for branch in state["branches"]}
    assert branches["main"]["files"].keys() == {"README.md", "fix.txt"}  # the merge's
    assert branches["main"]["commits"] == 3  # the seed's, the head's, the merge commit
    assert [issue["number"] for issue in state["issues"]] == list(range(1, 9))


def test_leftovers_are_only_recognisable_throwaways(forge, client):
    mine, _ = create_repo(client, PREFIX)
    for name in (f"{PREFIX}notes", "benchkit-20260101-000000-abcdef-x", "other"):
        client.post("/user/repos", {"name": name})
    other = "benchkit-" + unique_name("")
    client.post("/user/repos", {"name": other})
    assert list_leftovers(client, PREFIX) == [mine]
    assert list_leftovers(client, "benchkit-") == [Repo(forge.user, other)]
    assert list_leftovers(client, PREFIX, older_than=3600) == []
    with pytest.raises(ValueError):
        list_leftovers(client, "")
