"""The forge held to a real Gitea: the differential fidelity suite (tests/differential.py)
replays tests/data/differential.yaml on both hosts; every difference must be accepted,
with its reason, in tests/data/differential-accepted.yaml, and every accepted entry must
still be needed."""

import subprocess
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
import differential
import state_changes


def test_request_list_covers_every_caller():
    steps = differential.load_steps()
    callers = {who for step in steps for who in step["by"]}
    assert {"seeder", "snapshotter", "refs", "gitea-axi", "tea", "gitea-mcp", "bad-input"} <= callers
    paths = {step["path"].split("?")[0] for step in steps}
    for route in ("/repos/{repo}/pulls/main/feature/csv-export", "/repos/{repo}/pulls/9/update",
                  "/repos/{repo}/issues/1/pin", "/repos/{repo}/issues/8", "/repos/{repo}/issues/1/blocks",
                  "/repos/{repo}/issues/2/dependencies", "/repos/{repo}/pulls/9/requested_reviewers"):
        assert route in paths, route


def test_every_accepted_difference_has_a_reason():
    for entry in differential.load_accepted():
        assert len(entry["reason"].split()) >= 2, entry


def test_judge_flags_unlisted_and_stale():
    found = [differential.Difference("a", "$.x", "1", "2")]
    entries = [{"request": "a", "where": "$.x", "reason": "r"}, {"request": "b", "where": "*", "reason": "r"}]
    unlisted, stale = differential.judge(found, entries)
    assert unlisted == [] and stale == [entries[1]]
    unlisted, _ = differential.judge([differential.Difference("c", "status", "200", "404")], entries)
    assert [d.request for d in unlisted] == ["c"]


@pytest.fixture(scope="module")
def replayed(gitea):
    """The list replayed once on a fresh forge and once on the session's real Gitea."""
    from benchkit.forge import Forge

    steps = differential.load_steps()
    with Forge() as forge:
        mine = differential.replay(forge, steps)
    theirs = differential.replay(gitea, steps)
    return steps, mine, theirs


def test_forge_matches_gitea(replayed):
    """No difference that differential-accepted.yaml does not accept, and no entry there
    that no longer differs."""
    found = differential.differences(*replayed)
    unlisted, stale = differential.judge(found, differential.load_accepted())
    assert not unlisted, "differences not in differential-accepted.yaml:\n" + "\n".join(map(str, unlisted))
    assert not stale, f"accepted differences that no longer occur: {stale}"


NEW_ROUTES = {"pull-by-branches": 200, "pull-by-unknown-branch": 404, "update-pull-up-to-date": 500,
              "update-pull-behind": 200, "pin-issue": 204, "unpin-issue": 204, "pin-too-many": 500,
              "delete-issue": 204, "deleted-issue": 404, "blocks": 200, "add-block": 201, "remove-block": 201,
              "remove-dependency": 201, "remove-dependency-twice": 500, "request-reviewer-poster": 422,
              "request-reviewer-unknown": 404, "withdraw-reviewer": 204, "review-code-comments": 200,
              "issues-unknown-milestone": 200, "huge-issue-id": 404, "huge-id-in-body": 422,
              "too-deep-json": 422, "unknown-api-route": 404, "git-info-refs": 200, "git-info-refs-no-suffix": 200,
              "git-info-refs-anonymous": 401}


@pytest.mark.parametrize("step_id", sorted(NEW_ROUTES))
def test_new_routes_answer_as_gitea_does(replayed, step_id):
    """The routes real clients call that the forge lacked, and the inputs it answered
    with a 500: the same status on both hosts, the one Gitea 1.26 gives."""
    steps, mine, theirs = replayed
    at = [s["id"] for s in steps].index(step_id)
    assert (mine[at]["status"], theirs[at]["status"]) == (NEW_ROUTES[step_id],) * 2


def test_review_comment_carries_gitea_diff_hunk(replayed):
    steps, mine, theirs = replayed
    at = [s["id"] for s in steps].index("review-code-comments")
    assert mine[at]["body"][0]["diff_hunk"] == theirs[at]["body"][0]["diff_hunk"] != ""


def test_unknown_milestone_is_discarded(replayed):
    steps, mine, _ = replayed
    ids = [s["id"] for s in steps]
    everything = mine[ids.index("issues-all-issues")]["body"]
    assert mine[ids.index("issues-unknown-milestone")]["body"] == everything


def _clone(host, workdir):
    """Seed a repository on `host`, clone it over smart HTTP, fetch a branch; what a
    checkout shows: branch names, and each branch's files and commit subjects."""
    from benchkit.documents import load_seed
    from benchkit.gitea.client import Client
    from benchkit.gitea.seed import provision

    repo = provision(Client(host.url, host.token), load_seed(differential.DATA.parent.parent / "seeds" / "default.yaml"))
    url = host.url.replace("http://", f"http://{host.user}:{host.token}@") + f"{repo.owner}/{repo.name}.git"
    git = ["git", "-c", "credential.helper=", "-C", str(workdir)]
    subprocess.run(["git", "clone", "-q", url, str(workdir)], check=True, capture_output=True, timeout=120)
    subprocess.run([*git, "fetch", "-q", "origin", "feature/csv-export"], check=True, capture_output=True, timeout=120)
    branches = sorted(subprocess.run([*git, "branch", "-r", "--format=%(refname:short)"], check=True,
                                     capture_output=True, text=True).stdout.split())
    seen = {}
    for branch in branches:
        if branch == "origin/HEAD" or branch == "origin":
            continue
        files = subprocess.run([*git, "ls-tree", "-r", "--name-only", branch], check=True, capture_output=True,
                               text=True).stdout.split()
        subjects = subprocess.run([*git, "log", "--format=%s", branch], check=True, capture_output=True,
                                  text=True).stdout.splitlines()
        seen[branch] = (files, subjects)
    return seen


def test_git_clone_and_fetch_alike(gitea, tmp_path):
    """gitea-axi's `pr checkout` path: a clone and a fetch over git smart HTTP give the
    same branches, files and history on the forge as on Gitea (hashes aside)."""
    from benchkit.forge import Forge

    with Forge() as forge:
        mine = _clone(forge, tmp_path / "forge")
    theirs = _clone(gitea, tmp_path / "gitea")
    assert mine == theirs and "origin/feature/csv-export" in mine


# -- the state, kind by kind: one change of each kind the forge models (tests/
#    state_changes.py), made over the API on both hosts, must snapshot alike

def _changed_state(host) -> dict:
    from benchkit.documents import load_seed
    from benchkit.gitea import Client, delete_repo, provision, snapshot

    client = Client(host.url, host.token)
    repo = provision(client, load_seed(differential.DATA.parent.parent / "seeds" / "default.yaml"))
    try:
        state_changes.apply(client, repo, state_changes.chosen(forge=True))
        return snapshot(client, repo.owner, repo.name)
    finally:
        delete_repo(client, repo.owner, repo.name)


def test_each_kind_the_forge_models_snapshots_as_on_gitea(gitea):
    """Per kind of the state, the forge's snapshot after the same changes equals Gitea's,
    but for what the forge says it does not model and the settings a host's own
    configuration decides (Gitea's units; the test Gitea runs without Actions)."""
    from benchkit.forge import Forge
    from benchkit.forge.users import UNMODELLED
    from benchkit.state import normalise

    with Forge() as forge:
        mine = normalise(_changed_state(forge))
    theirs = normalise(_changed_state(gitea))
    for section in theirs:
        if section in UNMODELLED:
            assert section not in mine
            continue
        for entry in theirs[section] if isinstance(theirs[section], list) else []:
            for key in UNMODELLED:
                entry.pop(key, None)
            for comment in entry.get("comments", []):
                for key in UNMODELLED:
                    comment.pop(key, None)
    settings = {key for key in theirs["repository"]["settings"]
                if theirs["repository"]["settings"][key] != mine["repository"]["settings"].get(key)}
    assert settings <= {"has_actions"}, settings
    del mine["repository"], theirs["repository"]
    for section in mine:
        assert mine[section] == theirs[section], section
    assert set(mine) == {s for s in theirs if s not in UNMODELLED}


def test_what_the_forge_does_not_model_is_the_states_and_no_agent_can_write_it():
    """Each kind the forge declares unmodelled is a section or field of the state, and
    the trial gateway forwards no request that writes one (so on the forge, where the
    snapshot leaves them out, no agent could have changed them)."""
    import yaml

    from benchkit.forge.users import UNMODELLED
    from benchkit.state import SECTIONS

    named = {s.name for s in SECTIONS} | {f.name for s in SECTIONS for f in s.fields}
    assert set(UNMODELLED) <= named
    operations = yaml.safe_load((differential.DATA.parent.parent / "benchkit" / "gateway"
                                 / "operations.yaml").read_text())["operations"]
    writes = [op for op in operations if not op.startswith("GET ")]
    routes = ("/topics", "/branch_protections", "/hooks", "/collaborators", "/keys", "/wiki",
              "/reactions", "/subscriptions", "/times", "/assets", "/lock")
    assert [op for op in writes if any(route in op for route in routes)] == []
