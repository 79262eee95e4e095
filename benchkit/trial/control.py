"""A trial's control object: what the gateway's control requests read and write
(benchkit.gateway.control) to tell a host failing on its own from an agent's doing. A
private repository of the run's own user (the client's: a run user no trial's user can
see, or with gateway-only containment the maintainer, where the gateway alone keeps an
agent from it), with one label: a read is GET of the label, a write a PATCH of its
description (a write to the host's database that shows on no page). Made with the
trial's repository, named like a throwaway one (so `benchkit gc` finds one a crash left;
the run's journal lists it first), deleted with it. It costs the host about 40 ms a trial.
"""

from __future__ import annotations

from benchkit import journal
from benchkit.errors import HostError
from benchkit.gateway.control import ControlObject
from benchkit.gitea import Client, GiteaError, Repo
from benchkit.gitea.repos import discard, unique_name

LABEL = {"name": "control", "color": "000000", "description": "benchkit control"}


def open_control(client: Client, prefix: str) -> tuple[Repo, ControlObject]:
    """A new control repository of the client's user and what its controls ask;
    HostError when the host refuses (what was made is deleted again)."""
    repo = Repo(client.user, unique_name(prefix))
    journal.add("repo", owner=repo.owner, name=repo.name)
    try:
        made = client.post("/user/repos", {"name": repo.name, "private": True,
                                            "description": "benchkit control (throwaway)"})
        repo = Repo((made.get("owner") or {}).get("login") or repo.owner, made["name"])
        label = client.post(f"/repos/{repo.owner}/{repo.name}/labels", LABEL)
        path = f"/api/v1/repos/{repo.owner}/{repo.name}/labels/{label['id']}"
    except (GiteaError, HostError, KeyError, TypeError) as error:
        raise HostError(f"cannot make the trial's control repository: {error}"
                        f"{discard(client, repo)}") from None
    return repo, ControlObject(read=path, write=path, token=client.token or "")
