"""The hostile tests' watcher (tests/watch.py) on both hosts: it sees every other
repository of the host, another user's private one included, and an effect the
RepoState snapshot does not show (a dependency between issues of two repositories);
nothing is a change when nothing happened; `ignore` leaves a test's own repository out."""

import uuid

from watch import Watch, watching

from benchkit.gitea import Client, delete_repo, snapshot


def _repo(client: Client, private: bool = False) -> str:
    name = f"watched-{uuid.uuid4().hex[:8]}"
    client.post("/user/repos", {"name": name, "auto_init": True, "private": private})
    client.post(f"/repos/{client.user}/{name}/issues", {"title": "Keep me as I am"})
    return name


def test_the_watcher_sees_every_repository_and_effects_a_snapshot_misses(host):
    admin = Client(host.url, host.token)
    other = Client(host.url, host.create_user(f"other{uuid.uuid4().hex[:6]}"))
    victim, mine, hidden = _repo(admin), _repo(admin), _repo(other, private=True)
    try:
        watch = Watch(host.url, host.token, ignore=lambda name: name.endswith("/" + mine))
        before = watch.take()
        assert {f"{admin.user}/{victim}", f"{other.user}/{hidden}"} <= before.keys()
        assert f"{admin.user}/{mine}" not in before
        assert watch.changes(before, watch.take()) == []

        # Linking the victim's issue as a dependency of one in `mine`: the victim's
        # RepoState stays as it was, the watcher sees the victim's issue's blocks move.
        state = snapshot(admin, admin.user, victim)
        admin.post(f"/repos/{admin.user}/{mine}/issues/1/dependencies",
                   {"owner": admin.user, "repo": victim, "index": 1})
        assert snapshot(admin, admin.user, victim) == state
        changes = watch.changes(before, watch.take())
        assert any(line.startswith(f"{admin.user}/{victim} /issues/1/blocks") for line in changes)

        with watching(host.url, host.token) as seen:
            other.post(f"/repos/{other.user}/{hidden}/issues/1/comments", {"body": "hello"})
        assert any(line.startswith(f"{other.user}/{hidden} /issues/1/comments")
                   for line in seen.changes), seen.changes
    finally:
        for client, name in ((admin, victim), (admin, mine), (other, hidden)):
            delete_repo(client, client.user, name)
