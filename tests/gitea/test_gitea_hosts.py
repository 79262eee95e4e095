"""Host-facing behaviour on both hosts (the `host` fixture): a fresh forge, and the
session's real Gitea. Seed then snapshot is the ground truth, the readiness gate meets
a lagging issue index, self-review is refused, gc sweeps only throwaways, and a cell's
audit says what it could check on a host with (forge) and without (Gitea) a request log."""

import json
import secrets

import pytest
from click.testing import CliRunner
from conftest import CHECKOUT

from benchkit.agent.replay import ReplayDriver
from benchkit.cli import main
from benchkit.documents import load_arm, load_seed, load_tree
from benchkit.documents.expectation import seed_plan
from benchkit.documents.reference import reference_for
from benchkit.forge import Forge
from benchkit.forge.users import UNMODELLED
from benchkit.gitea import Client, GiteaError, probe_self_review, wait_ready
from benchkit.gitea.repos import create_repo, delete_repo
from benchkit.gitea.seed import seed_repo
from benchkit.planning.plan import Trial
from benchkit.preflight.host import probe_host
from benchkit.scoring import diff
from benchkit.state import SECTIONS, normalise
from benchkit.store import Store
from benchkit.trial.cell import run_trial
from benchkit.trial.prepare import RunContext

DEFAULT_SEED = str(CHECKOUT / "seeds" / "default.yaml")
YOUNG = ("--older-than", "0")  # gc spares repositories a run may still use; these are ours


def prefix() -> str:
    """A prefix of this test's own: the session's Gitea is shared between tests."""
    return f"benchkit-hosts-{secrets.token_hex(3)}-"


@pytest.fixture
def runner(tmp_path):
    return CliRunner(env={"GITEA_URL": None, "GITEA_TOKEN": None,
                          "XDG_CONFIG_HOME": str(tmp_path / "config")})


@pytest.fixture
def client(host):
    with Client(host.url, host.token, backoff=0.05) as client:
        yield client


def invoke(runner, host, *args):
    done = runner.invoke(main, [*args, "--host", host.url, "--token", host.token],
                         catch_exceptions=False)
    assert host.token not in done.output
    return done


def test_seed_then_snapshot_is_the_ground_truth_and_gc_sweeps_it(host, runner, tmp_path):
    mine = prefix()
    seeded = invoke(runner, host, "seed", "--seed", DEFAULT_SEED, "--prefix", mine)
    assert seeded.exit_code == 0, seeded.output
    full_name = "{owner}/{repo}".format(**json.loads(seeded.stdout))
    captured = invoke(runner, host, "snapshot", "--repo", full_name)
    assert captured.exit_code == 0
    (tmp_path / "captured.json").write_text(captured.stdout)
    truth = runner.invoke(main, ["expect", "--seed", DEFAULT_SEED, "--user", host.user,
                                 "--seeded", str(tmp_path / "captured.json")])
    assert truth.exit_code == 0
    state = json.loads(captured.stdout)
    # Every section, but what the host says it does not model (the forge: benchkit.forge.users).
    unmodelled = set(UNMODELLED) if isinstance(host, Forge) else set()
    assert set(state) == {section.name for section in SECTIONS} - unmodelled
    assert not unmodelled & set(state["issues"][0])
    expected = json.loads(truth.stdout)
    assert diff(expected, state) == []
    if not unmodelled:  # nothing left out: the very same state
        assert normalise(state) == normalise(expected)

    listed = invoke(runner, host, "gc", "--prefix", mine, *YOUNG)
    assert listed.exit_code == 0 and listed.stdout.splitlines() == [full_name]
    swept = invoke(runner, host, "gc", "--prefix", mine, "--yes", *YOUNG)
    assert swept.stdout.splitlines() == [f"deleted {full_name}"]
    assert invoke(runner, host, "gc", "--prefix", mine, *YOUNG).stdout == ""
    assert invoke(runner, host, "snapshot", "--repo", full_name).exit_code == 2  # no such repo


def test_gc_never_touches_a_repository_that_merely_shares_the_prefix(host, runner, client):
    mine = prefix()
    thrown, _ = create_repo(client, mine)
    keep = client.post("/user/repos", {"name": f"{mine}notes"})["name"]
    try:
        swept = invoke(runner, host, "gc", "--prefix", mine, "--yes", *YOUNG)
        assert swept.stdout.splitlines() == [f"deleted {thrown.full_name}"]
        assert client.get(f"/repos/{host.user}/{keep}")["name"] == keep
    finally:
        delete_repo(client, host.user, keep)


def search_finds(client, repo, number: int, title: str) -> bool:
    hits = client.get(f"{repo.path}/issues", {"q": title, "type": "issues", "state": "all"})
    return any(hit["number"] == number for hit in hits)


def test_the_gate_meets_a_lagging_issue_index_and_releases(host, client):
    """Gitea's issue indexer (bleve behind an asynchronous queue) answers a keyword
    search from before the latest change for a while; the forge imitates it with an
    index lag. The issue seeded last is not found at once; the gate waits until it is."""
    if isinstance(host, Forge):
        host.set_index_lag(1.0)
    title = "Readiness probe for the lagging index"
    seed = seed_plan(load_seed(DEFAULT_SEED))
    plan = seed_plan({"labels": seed["labels"], "milestones": seed["milestones"],
                      "issues": [*seed["issues"], {"title": title}]})
    number = plan["issues"][-1]["number"]
    repo, branch = create_repo(client, prefix())
    try:
        seed_repo(client, repo, plan, branch=branch)
        assert not search_finds(client, repo, number, title)  # the index lags the database
        wait_ready(client.url, client.token, repo, plan, timeout=60, interval=0.05)
        assert search_finds(client, repo, number, title)
    finally:
        delete_repo(client, repo.owner, repo.name)


def test_self_review_is_refused_and_the_probe_says_so(host, client, tmp_path):
    assert probe_self_review(client, path=tmp_path / "hosts.json") is False
    assert json.loads((tmp_path / "hosts.json").read_text())[host.url]["self_review"] is False
    repo, branch = create_repo(client, prefix())
    try:
        pull = {**seed_plan(load_seed(DEFAULT_SEED))["pull_requests"][0], "number": 1,
                "labels": [], "comments": [], "reviews": [], "state": "open", "assigned": False}
        seed_repo(client, repo, {"labels": [], "issues": [], "pull_requests": [pull]}, branch=branch)
        for event, verb in (("APPROVED", "approve"), ("REQUEST_CHANGES", "reject")):
            with pytest.raises(GiteaError) as refused:
                client.post(f"{repo.path}/pulls/1/reviews", {"event": event, "body": "Mine."})
            assert refused.value.status == 422
            assert f"{verb} your own pull is not allowed" in refused.value.message
        with pytest.raises(GiteaError) as empty:
            client.post(f"{repo.path}/pulls/1/reviews", {"event": "COMMENT", "body": ""})
        assert empty.value.status == 422
        review = client.post(f"{repo.path}/pulls/1/reviews", {"event": "COMMENT", "body": "Noted."})
        assert review["state"] == "COMMENT" and review["body"] == "Noted."
    finally:
        delete_repo(client, repo.owner, repo.name)


@pytest.mark.slow
def test_a_replayed_cell_is_audited_with_or_without_a_request_log(host, client, tmp_path):
    """The raw-api reference for one task, through the real CLI, scored on the host.
    On both the audit reads the gateway's record of the trial's requests; on the forge
    also the forge's own log of the trial's host token; a real Gitea keeps none, so the
    sample says that log was not checked (and no token is minted there)."""
    tree = load_tree(CHECKOUT)
    arm = load_arm(CHECKOUT / "arms.d" / "raw-api.yaml")
    task = tree.tasks["close-csv-export-issue"]
    store = Store(tmp_path / "results", secrets=[host.token])
    ctx = RunContext(suite=tree.suite, seeds=tree.seeds, client=client, store=store,
                     driver=ReplayDriver(reference_for(arm, CHECKOUT)), root=CHECKOUT,
                     host=probe_host(client, tree.suite.repo_prefix))
    before = repo_names(client, host)
    sample = run_trial(Trial(arm, task), ctx).sample
    assert (sample.outcome, sample.valid) == ("passed", True), sample
    kind = "forge" if isinstance(host, Forge) else "gitea"
    assert sample.host.kind == kind and sample.self_review is False
    events = json.loads((store.root / sample.transcript).read_text())
    audit = next(e for e in events if e["event"] == "audit")
    assert audit["gateway"].startswith("checked: ") and "curl/" in audit["gateway"]
    assert sample.requests and {r["scope"] for r in sample.requests} <= {"repo", "global"}
    assert {r["user_agent"].split("/")[0] for r in sample.requests} == {"curl"}
    if kind == "forge":
        assert audit["request_log"].startswith("checked: every request made with this trial's host token")
    else:
        assert audit["request_log"].startswith("not checked: the host keeps no request log")
        assert sample.host.version == host.version
    assert audit["leaks"] == []
    assert not [p for p in store.root.rglob("*") if p.is_file() and host.token in p.read_text()]
    assert repo_names(client, host) == before  # the cell's repository (and the probe's) went


def repo_names(client, host) -> set:
    return {repo["name"] for repo in client.paginate(f"/users/{host.user}/repos")}
