"""Scope by identity: each trial of a run is a user of its own, owning its repository
alone, so no trial's identity can read or act on another trial's repository, whatever
a request spells. Straight to the host with one trial's token (as if the gateway had
forwarded anything), on the forge and on a real Gitea; then a real `benchkit run` with
two trials at once, and one stopped by Ctrl-C in its trial, leaving no trial user."""

import base64
import json
import os
import secrets
import signal
import subprocess

import pytest
import requests
from conftest import BENCHKIT, CHECKOUT
from test_run_stop_phases import (
    TOKEN,
    leftovers,
    previous,  # noqa: F401  (the fixture, by name)
    sending,
    stop_in,
)
from watch import Watch, closed_by_then

from benchkit.forge import Forge
from benchkit.gitea import Client
from benchkit.gitea.runuser import create_run_user, delete_run_user, user_prefix

TASK = "close-csv-export-issue"


def _trial(admin: Client, prefix: str):
    """A trial's user and its repository with one open issue."""
    user = create_run_user(admin, prefix, role="trial")
    own = Client(admin.url, user.token, retries=0)
    repo = own.post("/user/repos", {"name": f"{prefix}repo", "auto_init": True,
                                    "private": True, "default_branch": "main"})
    own.post(f"/repos/{user.login}/{repo['name']}/issues", {"title": "Keep me open"})
    return user, own, f"{user.login}/{repo['name']}"


def test_a_trials_user_cannot_read_or_touch_another_trials_repository(host):
    admin = Client(host.url, host.token)
    prefix = f"bk-{secrets.token_hex(2)}-"
    a, own_a, repo_a = _trial(admin, prefix)
    b, own_b, repo_b = _trial(admin, prefix)
    try:
        watch = Watch(host.url, host.token, ignore=lambda name: name != repo_b)
        before = watch.take()
        api, auth = host.api_url, {"Authorization": f"token {a.token}"}

        def send(method, path, body=None):
            return requests.request(method, api + path, headers=auth, json=body,
                                    timeout=30).status_code

        for path in ("", "/issues/1", "/issues?state=all", "/contents/README.md"):
            assert send("GET", f"/repos/{repo_b}{path}") == 404, path
        assert send("PATCH", f"/repos/{repo_b}/issues/1", {"state": "closed"}) == 404
        assert send("POST", f"/repos/{repo_b}/issues/1/comments", {"body": "x"}) == 404
        # B01: a Markdown link whose index Gitea parses (`+1`) in a comment of A's own;
        # B02: the same behind a closing keyword, pushed to A's default branch, and last
        # a keyword closing A's own issue: once that is closed, Gitea has read the message.
        link = f"[the other one](/{repo_b}/issues/+1)"
        assert send("POST", f"/repos/{repo_a}/issues/1/comments", {"body": f"see {link}"}) == 201
        made = send("POST", f"/repos/{repo_a}/contents/fix.txt", {
            "content": base64.b64encode(b"fixed\n").decode(), "branch": "main",
            "message": f"Closes {link}\nCloses {repo_b}#1\nCloses #1\n"})
        assert made == 201
        if not isinstance(host, Forge):  # the forge does not act on closing keywords
            closed_by_then(own_a, f"/repos/{repo_a}/issues/1")
        assert watch.changes(before, watch.take()) == []
        assert own_b.get(f"/repos/{repo_b}/issues/1")["state"] == "open"
    finally:
        delete_run_user(admin, a.login)
        delete_run_user(admin, b.login)
    for user in (a, b):
        assert requests.get(f"{api}/user", timeout=30,
                            headers={"Authorization": f"token {user.token}"}).status_code == 401


def _users(host) -> set[str]:
    with Client(host.url, host.token) as admin:
        return {u["login"] for u in admin.paginate("/admin/users")
                if u["login"].startswith((user_prefix("benchkit-"), user_prefix("benchkit-", "trial")))}


@pytest.mark.slow
def test_a_run_gives_each_trial_a_user_of_its_own_and_deletes_it(host, tmp_path):
    before = _users(host)
    env = {k: v for k, v in os.environ.items() if not k.startswith("GITEA_")}
    env.update(TMPDIR=str(tmp_path), BENCHKIT_ROOT=str(CHECKOUT))
    done = subprocess.run(
        [*BENCHKIT, "run", "arms.d/raw-api.yaml", "--task", TASK, "--driver", "replay",
         "--trials", "2", "--jobs", "2", "--no-replay-failures", "--no-report",
         "--store", str(tmp_path / "results"), "--host", host.url, "--token", host.token],
        capture_output=True, text=True, cwd=CHECKOUT, timeout=600, env=env)
    assert done.returncode == 0, done.stdout + done.stderr
    samples = [json.loads(line) for line in
               (tmp_path / "results" / "raw-api" / f"{TASK}.jsonl").read_text().splitlines()]
    assert [(s["outcome"], s["containment"]) for s in samples] == [("passed", "trial-user")] * 2
    owners = {line.split(" started on ")[1].split("/")[0] for line in done.stdout.splitlines()
              if " started on " in line}
    assert len(owners) == 2 and all(o.startswith("benchkit-trial-") for o in owners), done.stdout
    assert _users(host) == before, "a trial's (or the run's) user outlived the run"
    assert not (tmp_path / "results" / ".journal").exists()
    assert [p.name for p in tmp_path.iterdir() if p.name.startswith("benchkit-")] == []
    stored = (tmp_path / "results" / "raw-api" / f"{TASK}.jsonl").read_text()
    assert host.token not in stored


@pytest.mark.slow
@pytest.mark.parametrize("where", ["forge", "gitea"])
def test_ctrl_c_in_a_trial_leaves_no_trial_user(where, tmp_path, request):
    kept = request.getfixturevalue("previous")  # test_run_stop_phases's store and report
    if where == "gitea":
        gitea = request.getfixturevalue("gitea")
        before = set(leftovers(gitea.url, gitea.token))
        said = stop_in("trial", tmp_path, kept, url=gitea.url, token=gitea.token,
                       repos=lambda: sorted(set(leftovers(gitea.url, gitea.token)) - before),
                       send=sending(signal.SIGINT))
    else:
        with Forge(token=TOKEN) as forge:
            said = stop_in("trial", tmp_path, kept, url=forge.url, token=forge.token,
                           repos=lambda: leftovers(forge.url, forge.token),
                           send=sending(signal.SIGINT))
    assert "each trial runs as a user of its own" in said
