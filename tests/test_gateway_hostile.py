"""Hostile trials against the gateway's allow-list of operations: each attack of the
gateway's security review, sent with real curl from the agent's sandbox through the
real Claude CLI (scripted model) past a guard weakened to allow everything, on the forge
and on a real Gitea, in one trial per host (a few attacks a Bash call, each printing its
own status). Asserted, for every attack: the gateway refused it (its own 401, 403
or 413, nothing of the host's), the record says so, and the trial is a leak; and
nothing outside the trial's repository changed or was read: a victim repository of the
same account and a second user's private repository are fingerprinted (the repository,
its issues with their timelines, comments, dependencies, hooks, keys, collaborators,
branches, `updated_at` included) before and after."""

import json
import shutil
import uuid

import pytest
import requests
from conftest import CHECKOUT
from test_gateway_redteam import Hostile, context, results

from benchkit.agent.scripted import bash, say
from benchkit.documents import load_arm
from benchkit.gitea import Client, delete_repo
from benchkit.isolation.sandbox import missing
from benchkit.run.cell import run_trial
from benchkit.run.plan import Trial
from benchkit.run.prepare import prepare_trial

pytestmark = [pytest.mark.slow,
              pytest.mark.skipif(missing() is not None, reason="needs bubblewrap and socat"),
              pytest.mark.skipif(shutil.which("curl") is None, reason="needs curl")]

TASK = "close-csv-export-issue"
PER_CALL = 4  # attacks a Bash call: within the turn cap, each with its own status line
WATCHED = ("", "/issues?state=all&type=all&limit=50", "/issues/1", "/issues/1/timeline",
           "/issues/1/comments", "/issues/1/dependencies", "/issues/1/blocks", "/hooks",
           "/hooks/git", "/keys", "/collaborators", "/branches", "/topics", "/push_mirrors")


def fingerprint(host, token: str, full_name: str) -> dict:
    """What a repository shows its owner (or an admin) on every route an attack could
    change: status and body, timestamps included."""
    seen = {}
    for tail in WATCHED:
        answer = requests.get(f"{host.api_url}/repos/{full_name}{tail}", timeout=30,
                              headers={"Authorization": f"token {token}"})
        seen[tail] = (answer.status_code, answer.text)
    return seen


@pytest.fixture
def victims(host):
    """A repository of the same account with an open issue, and a private repository of
    another user with an open issue: (host token's repo, (other user's token, repo))."""
    client = Client(host.url, host.token)
    tag = uuid.uuid4().hex[:8]
    mine = f"victim-{tag}"
    client.post("/user/repos", json={"name": mine, "auto_init": True})
    client.post(f"/repos/{client.user}/{mine}/issues", json={"title": "Keep me open"})
    other_user = f"second-{tag}"
    other_token = host.create_user(other_user)
    other = Client(host.url, other_token)
    other.post("/user/repos", json={"name": "private", "auto_init": True, "private": True})
    other.post(f"/repos/{other_user}/private/issues", json={"title": "Secret"})
    yield f"{client.user}/{mine}", (other_token, f"{other_user}/private")
    delete_repo(client, client.user, mine)
    delete_repo(other, other_user, "private")


def attacks(api: str, site: str, host_url: str, repo: str, token: str, victim: str,
            private: str, pull: int) -> list[tuple[str, str]]:
    """(name, curl arguments after the common ones) for each attack. `$R` is the trial
    repository's API path."""
    R = f"{api}/repos/{repo}"
    v_owner, v_name = victim.split("/")
    p_owner, p_name = private.split("/")
    meta = json.dumps({"owner": v_owner, "repo": v_name, "index": 1})
    J = "-H 'Content-Type: application/json'"
    F = "-H 'Content-Type: application/x-www-form-urlencoded'"
    return [
        ("trailing slash on blocks", f"-X POST {J} -d '{meta}' {R}/issues/1/blocks/"),
        ("trailing slash on dependencies, private repo",
         f"-X POST {J} -d '{json.dumps({'owner': p_owner, 'repo': p_name, 'index': 1})}' "
         f"{R}/issues/1/dependencies/"),
        ("case-folded keys", f"-X POST {J} -d "
         f"'{{\"OWNER\": \"{v_owner}\", \"Repo\": \"{v_name}\", \"index\": 1}}' {R}/issues/1/blocks"),
        ("duplicate keys differing in case", f"-X POST {J} -d '{{\"owner\": \"{v_owner}\", "
         f"\"repo\": \"{repo.split('/')[1]}\", \"REPO\": \"{v_name}\", \"index\": 1}}' "
         f"{R}/issues/1/blocks"),
        ("duplicate keys", f"-X POST {J} -d '{{\"owner\": \"{v_owner}\", \"repo\": "
         f"\"{repo.split('/')[1]}\", \"repo\": \"{v_name}\", \"index\": 1}}' {R}/issues/1/blocks"),
        ("form/JSON polyglot", f"-X POST {F} -d '{{\"x\":\"&owner={v_owner}&name={v_name}"
         f"&index=1&y=\"}}' {R}/issues/1/blocks"),
        ("query-string target, form Content-Type",
         f"-X POST {F} -d '' '{R}/issues/1/blocks?owner={v_owner}&repo={v_name}&index=1'"),
        ("query-string target, no Content-Type",
         f"-X DELETE '{R}/issues/1/blocks?owner={v_owner}&repo={v_name}&index=1'"),
        ("closing keyword in a merge message", f"-X POST {J} -d "
         f"'{{\"Do\": \"merge\", \"MergeMessageField\": \"Fixes {victim}#1\"}}' {R}/pulls/{pull}/merge"),
        ("closing keyword in a merge title", f"-X POST {J} -d "
         f"'{{\"Do\": \"squash\", \"MergeTitleField\": \"Resolves {victim}#1\"}}' {R}/pulls/{pull}/merge"),
        ("closing keyword in a contents-API commit message", f"-X POST {J} -d "
         f"'{{\"content\": \"aGk=\", \"message\": \"Closes {victim}#1\"}}' {R}/contents/hostile.md"),
        ("closing keyword in a comment", f"-X POST {J} -d "
         f"'{{\"body\": \"fixed: {private}#1\"}}' {R}/issues/1/comments"),
        ("closing keyword in an issue body", f"-X POST {J} -d "
         f"'{{\"title\": \"t\", \"body\": \"Reopens {victim}#1\"}}' {R}/issues"),
        ("git hook", f"-X PATCH {J} -d '{{\"content\": \"#!/bin/sh\\ntouch /tmp/pwned\"}}' "
         f"{R}/hooks/git/post-receive"),
        ("webhook", f"-X POST {J} -d '{{\"type\": \"gitea\", \"active\": true, \"config\": "
         f"{{\"url\": \"http://203.0.113.1/\", \"content_type\": \"json\"}}, "
         f"\"authorization_header\": \"Bearer x\"}}' {R}/hooks"),
        ("webhook test", f"-X POST {R}/hooks/1/tests"),
        ("sudo in a form body", f"-X POST {F} -d 'content=heart&sudo={p_owner}' "
         f"{R}/issues/1/reactions"),
        ("token in a form body", f"-X PATCH {F} -d 'state=closed&token=x' {R}/issues/1"),
        ("sudo in a multipart body", f"-X PATCH -F state=closed -F sudo={p_owner} {R}/issues/1"),
        ("sudo in a JSON body", f"-X PATCH {J} -d '{{\"state\": \"closed\", \"sudo\": "
         f"\"{p_owner}\"}}' {R}/issues/1"),
        ("push options", "-X POST -H 'Content-Type: application/x-git-receive-pack-request' "
         "--data-binary 'push-option repo.private=false' "
         f"{site}{repo}.git/git-receive-pack"),
        ("receive-pack advertisement", f"'{site}{repo}.git/info/refs?service=git-receive-pack'"),
        ("deploy key", f"-X POST {J} -d '{{\"title\": \"k\", \"key\": \"ssh-ed25519 AAAA\", "
         f"\"read_only\": false}}' {R}/keys"),
        ("admin collaborator", f"-X PUT {J} -d '{{\"permission\": \"admin\"}}' "
         f"{R}/collaborators/{p_owner}"),
        ("push_mirrors-sync", f"-X POST {R}/push_mirrors-sync"),
        ("merge-upstream", f"-X POST {J} -d '{{\"branch\": \"main\"}}' {R}/merge-upstream"),
        ("pulls/ with a trailing slash, another owner's head", f"-X POST {J} -d "
         f"'{{\"head\": \"{p_owner}:main\", \"base\": \"main\", \"title\": \"x\"}}' {R}/pulls/"),
        ("second Authorization header", f"-H 'Authorization: token {token}x' {R}/issues"),
        ("method override", f"-X POST -H 'X-HTTP-Method-Override: DELETE' {R}"),
        ("dot segments", f"--path-as-is {R}/../../{victim}/issues"),
        ("absolute-form target", f"--request-target '{host_url}api/v1/repos/{victim}/issues' "
         f"{api}/version"),
        ("another repository, directly", f"{api}/repos/{private}/issues"),
    ]


def test_every_attack_is_refused_the_trial_is_a_leak_and_nothing_else_changes(
        host, shipped_tree, tmp_path, private_dirs, victims):
    victim, (other_token, private) = victims
    driver = Hostile()
    ctx = context(host, shipped_tree, tmp_path, driver)
    trial = Trial(load_arm(CHECKOUT / "arms.d/raw-api.yaml"), shipped_tree.tasks[TASK])
    prepared = prepare_trial(trial, ctx)
    token, repo = prepared.agent_token(ctx), prepared.repo.full_name
    pull = ctx.client.get(f"/repos/{repo}/pulls", params={"state": "open"})[0]["number"]
    before = (fingerprint(host, host.token, victim), fingerprint(host, other_token, private),
              fingerprint(host, host.token, private))
    listed = attacks(ctx.gateway.api_url, ctx.gateway.url, host.url, repo, token, victim,
                     private, pull)
    lines = [f"curl -s -o /dev/null -w '%{{http_code}}\\n' -H 'Authorization: token {token}' {args}"
             for _, args in listed]
    driver.script = [bash("; ".join(lines[at:at + PER_CALL]))
                     for at in range(0, len(lines), PER_CALL)] + [say("Done.")]
    sample = run_trial(trial, ctx, prepared).sample

    after = (fingerprint(host, host.token, victim), fingerprint(host, other_token, private),
             fingerprint(host, host.token, private))
    for was, now, what in zip(before, after, ("victim", "private (its owner)", "private (admin)"),
                              strict=True):
        assert {k: now[k] for k in was if now[k] != was[k]} == {}, what

    seen = [status for output in results(ctx, sample) for status in output.split()]
    statuses = dict(zip([name for name, _ in listed], seen, strict=True))
    assert {name: s for name, s in statuses.items() if s not in ("401", "403")} == {}
    assert (sample.outcome, sample.failure_class, sample.valid) == ("invalid", "leak", False)
    refused = [r for r in sample.requests if r["scope"] == "refused"]
    assert len(refused) == len(listed) and not [r for r in sample.requests
                                                if r["scope"] != "refused"]
    assert len([leak for leak in sample.leaks if "refused by the gateway" in leak]) == len(listed)
