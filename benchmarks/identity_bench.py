#!/usr/bin/env python3
"""What per-trial identity costs a trial: making a trial's own user with its token
(POST /admin/users, then the user's token for its own basic credentials) and deleting
it with its repository, on the forge and on a real Gitea; beside them, provisioning
the trial's repository (seeded, gated), which a trial pays anyway. Both are paid while
the previous trial runs (the run prepares the next trial ahead), so what a trial waits
for is the larger of the two minus its own run.

    python3 benchmarks/identity_bench.py [--runs 5]

Needs the pinned Gitea build (`bash scripts/test-setup`) for the Gitea figures.
"""

from __future__ import annotations

import argparse

from _timing import timed

from benchkit.documents import load_tree
from benchkit.forge import Forge
from benchkit.gitea import Client, provision
from benchkit.gitea.repos import delete_repo
from benchkit.gitea.runuser import create_run_user, delete_run_user
from benchkit.gitea.server import Gitea
from benchkit.gitea.tools import ToolUnavailable

PREFIX = "bench-"


def measure(name: str, url: str, token: str, runs: int) -> None:
    admin = Client(url, token)
    seed = load_tree().seeds["default"]
    made: list = []

    def create() -> None:
        made.append(create_run_user(admin, PREFIX, role="trial"))

    def delete() -> None:
        delete_run_user(admin, made.pop().login)

    def user_and_repository() -> None:
        user = create_run_user(admin, PREFIX, role="trial")
        with Client(url, user.token) as own:
            provision(own, seed, prefix=PREFIX)
        delete_run_user(admin, user.login)

    def repository_alone() -> None:
        repo = provision(admin, seed, prefix=PREFIX)
        delete_repo(admin, repo.owner, repo.name)

    created = timed(runs, create)
    deleted = timed(runs, delete)
    whole = timed(runs, user_and_repository)
    alone = timed(runs, repository_alone)
    print(f"{name:6} create user+token {created:7.1f} ms   delete user {deleted:7.1f} ms   "
          f"trial user + seeded repository + delete {whole:7.1f} ms   "
          f"seeded repository alone + delete {alone:7.1f} ms   "
          f"(identity adds {whole - alone:+.1f} ms, median of {runs})")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=5)
    runs = parser.parse_args().runs
    with Forge() as forge:
        measure("forge", forge.url, forge.token, runs)
    try:
        gitea = Gitea()
    except ToolUnavailable as exc:
        print(f"gitea  not measured: {exc}")
        return
    with gitea:
        measure("gitea", gitea.url, gitea.token, runs)


if __name__ == "__main__":
    main()
