"""An agent's token on the forge reaches its own trial's repository alone: it cannot
delete or write another trial's repository, nor create repositories; reads outside
/repos (the user, the version) still work, as every arm's tool needs them."""

import pytest

from benchkit.errors import HarnessError
from benchkit.gitea.admin import mint_agent_token
from benchkit.gitea.client import Client
from benchkit.gitea.repos import create_repo, delete_repo

PREFIX = "benchkit-scope-"


def test_an_agent_token_reaches_only_its_own_repository(forge):
    harness = Client(forge.url, forge.token)
    own, _ = create_repo(harness, PREFIX)
    other, _ = create_repo(harness, PREFIX)
    token, _ = mint_agent_token(forge.url, forge.token, repo=own.full_name)
    try:
        with Client(forge.url, token) as agent:
            assert agent.get("/user")["login"] == forge.user
            assert agent.get("/version")
            created = agent.post(f"/repos/{own.full_name}/issues", {"title": "mine"})
            assert created["number"] >= 1
            for attempt in (lambda: agent.delete(f"/repos/{other.full_name}"),
                            lambda: agent.get(f"/repos/{other.full_name}/issues"),
                            lambda: agent.post(f"/repos/{other.full_name}/issues", {"title": "x"}),
                            lambda: agent.post("/user/repos", {"name": PREFIX + "new"})):
                with pytest.raises(HarnessError, match="403"):
                    attempt()
        assert harness.get(f"/repos/{other.full_name}")["name"] == other.name
    finally:
        for repo in (own, other):
            delete_repo(harness, repo.owner, repo.name)
