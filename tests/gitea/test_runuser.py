"""A run's own user, on the forge and on a real Gitea: what the host's own permissions
keep from it (sent straight to the host with its token, as if the gateway had
forwarded anything), a `benchkit run` that acts as one and deletes it, `benchkit gc`
that finds one a crash left, and a maintainer's token that cannot make one, which
needs --gateway-only-containment and is said in the samples and the report."""

import base64
import json
import os
import secrets
import subprocess
import uuid

import pytest
import requests
from conftest import BENCHKIT, CHECKOUT
from watch import Watch, closed_by_then

from benchkit.forge import Forge
from benchkit.gitea import Client, delete_repo
from benchkit.gitea.runuser import (
    admin_problem,
    create_run_user,
    delete_run_user,
    list_run_users,
    user_prefix,
)

TASK = "close-csv-export-issue"


def prefix() -> str:
    """A prefix of this test's own: the session's Gitea is shared between tests."""
    return f"bk-{secrets.token_hex(2)}-"


def _repo(client: Client, *, private: bool) -> str:
    name = f"{'private' if private else 'public'}-{uuid.uuid4().hex[:8]}"
    client.post("/user/repos", {"name": name, "auto_init": True, "private": private})
    client.post(f"/repos/{client.user}/{name}/issues", {"title": "Keep me open"})
    return name


@pytest.fixture
def others(host):
    """What a run user must not reach: a private and a public repository of the
    maintainer's (the admin's), and another user's private one."""
    admin = Client(host.url, host.token)
    other = Client(host.url, host.create_user(f"other{uuid.uuid4().hex[:6]}"))
    made = [(admin, _repo(admin, private=True)), (admin, _repo(admin, private=False)),
            (other, _repo(other, private=True))]
    yield [f"{client.user}/{name}" for client, name in made]
    for client, name in made:
        delete_repo(client, client.user, name)


def test_the_hosts_permissions_keep_a_run_user_from_everything_else(host, others):
    admin = Client(host.url, host.token)
    assert admin_problem(admin) is None
    mine = prefix()
    user = create_run_user(admin, mine)
    watch = Watch(host.url, host.token, ignore=lambda name: name.startswith(user.login + "/"))
    before = watch.take()
    private, public, theirs = others
    run = Client(host.url, user.token, retries=0)
    trial = run.post("/user/repos", {"name": f"{mine}trial", "auto_init": True, "private": True})
    assert trial["owner"]["login"] == user.login
    api, auth = host.api_url, {"Authorization": f"token {user.token}"}

    def send(method, path, body=None):
        return requests.request(method, api + path, headers=auth, json=body, timeout=30).status_code

    assert send("GET", f"/repos/{private}") == 404
    assert send("GET", f"/repos/{private}/issues/1") == 404
    assert send("GET", f"/repos/{theirs}") == 404
    assert send("PATCH", f"/repos/{private}/issues/1", {"state": "closed"}) == 404
    assert send("PATCH", f"/repos/{public}/issues/1", {"state": "closed"}) == 403
    assert send("POST", f"/repos/{public}/labels", {"name": "x", "color": "#ffffff"}) == 403
    assert send("PATCH", f"/repos/{public}", {"private": True}) == 403
    assert send("DELETE", f"/repos/{public}") == 403
    assert send("GET", "/admin/users") == 403
    assert send("POST", "/admin/users", {"username": "intruder", "email": "i@x.y",
                                         "password": "pw-123456!"}) == 403
    # Closing keywords naming the others' issues, in a commit to its own default branch,
    # last its own issue's: once that is closed, Gitea has acted on the message.
    run.post(f"/repos/{user.login}/{trial['name']}/issues", {"title": "Close me"})
    message = "".join(f"Closes {name}#1\n" for name in others) + "Closes #1\n"
    made = send("POST", f"/repos/{user.login}/{trial['name']}/contents/fix.txt", {
        "content": base64.b64encode(b"fixed\n").decode(), "message": message})
    assert made == 201
    if not isinstance(host, Forge):  # the forge does not act on closing keywords
        closed_by_then(run, f"/repos/{user.login}/{trial['name']}/issues/1")
    changes = watch.changes(before, watch.take())
    # A mention of an issue of a public repository lands in its timeline as it would
    # for anyone signed in (the gateway is what refuses it); nothing else moved.
    assert [line for line in changes if not line.startswith(f"{public} /issues/1")] == []
    assert all(admin.get(f"/repos/{name}/issues/1")["state"] == "open" for name in others)

    delete_run_user(admin, user.login)
    assert requests.get(f"{api}/repos/{user.login}/{trial['name']}", timeout=30,
                        headers={"Authorization": f"token {host.token}"}).status_code == 404
    assert requests.get(f"{api}/user", headers=auth, timeout=30).status_code == 401
    assert list_run_users(admin, mine) == []


def test_gc_finds_a_run_user_a_crash_left_and_deletes_it_with_its_repositories(host, tmp_path):
    admin = Client(host.url, host.token)
    mine = prefix()
    user = create_run_user(admin, mine)
    Client(host.url, user.token).post("/user/repos", {"name": f"{mine}left", "private": True})
    env = _env(tmp_path)
    listed = _benchkit(["gc", "--prefix", mine, "--older-than", "0", "--host", host.url,
                        "--token", host.token], env)
    assert listed.returncode == 0 and listed.stdout.splitlines() == [f"run user {user.login}"]
    swept = _benchkit(["gc", "--prefix", mine, "--older-than", "0", "--yes", "--host", host.url,
                       "--token", host.token], env)
    assert swept.stdout.splitlines() == [f"deleted run user {user.login} and its repositories"]
    assert list_run_users(admin, mine) == []
    young = create_run_user(admin, mine)  # a run in progress: spared by default
    try:
        spared = _benchkit(["gc", "--prefix", mine, "--yes", "--host", host.url, "--token",
                            host.token], env)
        assert spared.returncode == 0 and spared.stdout == ""
    finally:
        delete_run_user(admin, young.login)


@pytest.mark.slow
def test_a_run_acts_as_a_user_of_its_own_and_deletes_it(host, tmp_path):
    admin = Client(host.url, host.token)
    done = _run(host.url, host.token, tmp_path)
    assert done.returncode == 0, done.stderr
    sample = _sample(tmp_path)
    assert (sample["outcome"], sample["containment"]) == ("passed", "trial-user")
    [login] = [line.split("the probes as ")[1].split(",")[0] for line in done.stdout.splitlines()
               if line.startswith("each trial runs as a user of its own")]
    assert login.startswith(user_prefix("benchkit-"))
    assert login not in [u["login"] for u in admin.paginate("/admin/users")]
    assert host.token not in (tmp_path / "results" / "raw-api" / f"{TASK}.jsonl").read_text()


@pytest.mark.slow
def test_without_admin_rights_a_run_needs_gateway_only_containment_and_says_so(host, tmp_path):
    token = host.create_user(f"plain{uuid.uuid4().hex[:6]}")
    refused = _run(host.url, token, tmp_path)
    assert refused.returncode == 2
    said = refused.stdout + refused.stderr
    assert "not a site administrator" in said and "--gateway-only-containment" in said
    assert not (tmp_path / "results").exists()

    done = _run(host.url, token, tmp_path, "--gateway-only-containment")
    assert done.returncode == 0, done.stderr
    assert "containment rests on the gateway alone" in done.stdout
    assert _sample(tmp_path)["containment"] == "gateway"
    report = (tmp_path / "reports" / "report.md").read_text()
    assert "gateway-only containment" in report


def _env(tmp_path) -> dict:
    env = {k: v for k, v in os.environ.items() if not k.startswith("GITEA_")}
    env.update(HOME=str(tmp_path / "home"), XDG_CONFIG_HOME=str(tmp_path / "config"),
               BENCHKIT_CACHE_DIR=str(tmp_path / "cache"),
               BENCHKIT_STATE_DIR=str(tmp_path / "state"))  # no other test's dead runs
    return env


def _benchkit(args, env) -> subprocess.CompletedProcess:
    return subprocess.run([*BENCHKIT, *args], capture_output=True, text=True, cwd=CHECKOUT,
                          timeout=600, env=env)


def _run(url, token, tmp_path, *extra) -> subprocess.CompletedProcess:
    return _benchkit(["run", "arms.d/raw-api.yaml", "--task", TASK, "--driver", "replay",
                      "--no-replay-failures", "--store", str(tmp_path / "results"),
                      "--reports", str(tmp_path / "reports"), "--host", url, "--token", token,
                      *extra], _env(tmp_path))


def _sample(tmp_path) -> dict:
    *_, last = (tmp_path / "results" / "raw-api" / f"{TASK}.jsonl").read_text().splitlines()
    return json.loads(last)
