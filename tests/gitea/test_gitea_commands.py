"""`benchkit seed`, `snapshot` and `gc` against the forge, and the token never showing."""

import json
import logging

import pytest
from click.testing import CliRunner

from benchkit import PACKAGE_DIR
from benchkit.cli import main
from benchkit.documents import load_seed
from benchkit.errors import HarnessError
from benchkit.gitea.client import Client
from benchkit.gitea.ready import wait_ready
from benchkit.gitea.repos import create_repo
from benchkit.gitea.seed import provision
from benchkit.gitea.snapshot import snapshot
from benchkit.scoring import diff

DEFAULT_SEED = str(PACKAGE_DIR.parent / "seeds" / "default.yaml")
PREFIX = "benchkit-cli-"


@pytest.fixture
def runner(tmp_path):
    # No GITEA_* and no tea config of the machine's user leaks into these runs.
    return CliRunner(env={"GITEA_URL": None, "GITEA_TOKEN": None,
                          "XDG_CONFIG_HOME": str(tmp_path / "config")})


def invoke(runner, *args, **kwargs):
    return runner.invoke(main, list(args), catch_exceptions=False, **kwargs)


def flags(forge):
    return ["--host", forge.url, "--token", forge.token]


def test_seed_snapshot_gc_round_trip(forge, runner):
    seeded = invoke(runner, "seed", "--seed", DEFAULT_SEED, "--prefix", PREFIX, *flags(forge))
    assert seeded.exit_code == 0, seeded.output
    printed = json.loads(seeded.stdout)
    assert set(printed) == {"owner", "repo", "url"}
    assert printed["url"] == f"{forge.url}{printed['owner']}/{printed['repo']}"
    full_name = f"{printed['owner']}/{printed['repo']}"

    captured = invoke(runner, "snapshot", "--repo", full_name, *flags(forge))
    expected = invoke(runner, "expect", "--seed", DEFAULT_SEED, "--user", forge.user)
    assert captured.exit_code == 0 and diff(json.loads(expected.stdout), json.loads(captured.stdout)) == []

    young = ["--older-than", "0"]  # the repository is seconds old
    listed = invoke(runner, "gc", "--prefix", PREFIX, *young, *flags(forge))
    assert listed.exit_code == 0 and listed.stdout.splitlines() == [full_name]
    swept = invoke(runner, "gc", "--prefix", PREFIX, "--yes", *young, *flags(forge))
    assert swept.stdout.splitlines() == [f"deleted {full_name}"]
    assert "deleted 1 leftover" in swept.stderr
    assert invoke(runner, "gc", "--prefix", PREFIX, *young, *flags(forge)).stdout == ""


def test_credentials_from_environment_and_tea_login(forge, runner, tmp_path):
    env = {"GITEA_URL": forge.api_url, "GITEA_TOKEN": forge.token}
    repo = invoke(runner, "seed", "--prefix", PREFIX, "--gate-timeout", "10", env=env)
    assert repo.exit_code == 0, repo.output  # default seed found in the tree
    tea = tmp_path / "config" / "tea" / "config.yml"
    tea.parent.mkdir(parents=True)
    tea.write_text(f"logins:\n  - name: local\n    url: {forge.url}\n    token: {forge.token}\n"
                   f"    default: true\n    user: {forge.user}\n")
    listed = invoke(runner, "gc", "--prefix", PREFIX, "--older-than", "0", "--login", "local")
    assert listed.stdout.splitlines() == [f"{forge.user}/{json.loads(repo.stdout)['repo']}"]


def test_errors_are_one_line_and_exit_2(forge, runner):
    """Bad input and a host that cannot be used exit 2, as in every command."""
    missing = invoke(runner, "snapshot", "--repo", f"{forge.user}/absent", *flags(forge))
    assert missing.exit_code == 2
    assert missing.stderr == (f"error: GET /repos/{forge.user}/absent: HTTP 404: "
                              f"no repository {forge.user}/absent (or no access to it)\n")
    nowhere = invoke(runner, "gc")
    assert nowhere.exit_code == 2 and "no Gitea host" in nowhere.stderr
    for command in (["seed"], ["snapshot", "--repo", "a/b"]):
        assert invoke(runner, *command).exit_code == 2, command
    bad = invoke(runner, "snapshot", "--repo", "just-a-name", *flags(forge))
    assert bad.exit_code == 2 and "OWNER/NAME" in bad.output


def test_the_token_appears_in_no_output_and_no_log(forge, runner, caplog, capsys, dead_url):
    caplog.set_level(logging.DEBUG)
    token = forge.token
    outputs = []
    # The CLI, on success and on failure.
    seeded = invoke(runner, "seed", "--prefix", PREFIX, *flags(forge))
    full_name = "{owner}/{repo}".format(**json.loads(seeded.stdout))
    for args in (["snapshot", "--repo", full_name], ["snapshot", "--repo", "x/absent"],
                 ["gc", "--prefix", PREFIX], ["gc", "--prefix", PREFIX, "--yes"]):
        result = invoke(runner, *args, *flags(forge))
        outputs += [result.stdout, result.stderr]
    outputs.append(invoke(runner, "gc", "--host", dead_url, "--token", token).stderr)
    outputs.append(invoke(runner, "gc", "--host", forge.url, "--token", token + "x").stderr)
    # The library, on its error paths.
    with Client(forge.url, token, backoff=0.01) as client:
        seed = load_seed(DEFAULT_SEED)
        repo, _ = create_repo(client, PREFIX)
        for failing in (lambda: wait_ready(forge.url, token, repo, seed, timeout=0.3),
                        lambda: client.post(f"{repo.path}/labels", {"color": "zz"}),
                        lambda: snapshot(client, "x", "absent")):
            with pytest.raises(HarnessError) as caught:
                failing()
            outputs += [str(caught.value), repr(caught.value)]
        forge.inject_fault("POST", r"/issues$", status=500, times=2)
        with pytest.raises(HarnessError) as caught:
            provision(client, seed, prefix=PREFIX)
        outputs += [str(caught.value), repr(client)]
    captured = capsys.readouterr()
    outputs += [captured.out, captured.err]
    assert all(output is not None for output in outputs)
    assert not [output for output in outputs if token in output]
    assert {"benchkit.gitea.client", "urllib3.connectionpool"} <= {r.name for r in caplog.records}
    assert token not in caplog.text
    assert not [record for record in caplog.records if token in str(record.args)]


def test_gc_during_a_run_spares_its_repository_and_revokes_only_stale_agent_tokens(forge, runner):
    """`gc --yes` (default --older-than) once deleted a running trial's repository, and a
    host killed with -9 left agent tokens that gc never revoked."""
    from benchkit.gitea.admin import mint_agent_token
    from benchkit.gitea.repos import delete_repo
    client = Client(forge.url, forge.token)
    running, _ = create_repo(client, PREFIX)  # a trial in progress, with its agent's token
    token, _ = mint_agent_token(forge.url, forge.token, repo=running.full_name)
    crashed, _ = create_repo(client, PREFIX)  # a trial whose host died: repo gone, token not
    stale, stale_id = mint_agent_token(forge.url, forge.token, repo=crashed.full_name)
    delete_repo(client, crashed.owner, crashed.name)

    swept = invoke(runner, "gc", "--prefix", PREFIX, "--yes", *flags(forge))
    assert swept.exit_code == 0, swept.output
    assert swept.stdout.splitlines() == [f"revoked agent token {stale_id} of {crashed.full_name}"]
    assert "sparing those younger than 600s" in swept.stderr
    with Client(forge.url, token) as agent:
        assert agent.get(f"/repos/{running.full_name}")["name"] == running.name
    with Client(forge.url, stale) as agent, pytest.raises(HarnessError, match="401"):
        agent.get("/user")
    delete_repo(client, running.owner, running.name)


def test_seed_takes_a_seed_s_name_as_a_task_s_seed_gives_it(forge, runner, monkeypatch):
    monkeypatch.chdir(PACKAGE_DIR.parent)  # the tree whose seeds/ names it
    seeded = invoke(runner, "seed", "--seed", "default", "--prefix", PREFIX, *flags(forge))
    assert seeded.exit_code == 0, seeded.output
    printed = json.loads(seeded.stdout)
    captured = invoke(runner, "snapshot", "--repo", f"{printed['owner']}/{printed['repo']}",
                      *flags(forge))
    expected = invoke(runner, "expect", "--seed", "default", "--user", forge.user)
    assert diff(json.loads(expected.stdout), json.loads(captured.stdout)) == []
    unknown = runner.invoke(main, ["seed", "--seed", "nosuch", *flags(forge)])
    assert unknown.exit_code == 2
    assert "'nosuch' is neither a seed of the tree (seeds/nosuch.yaml) nor a seed file" \
        in unknown.output
