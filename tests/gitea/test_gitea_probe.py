"""The self-review probe, on a throwaway repository, cached per host."""

import json

from benchkit.gitea.client import Client
from benchkit.gitea.probe import cache_path, probe_self_review
from benchkit.gitea.repos import list_leftovers


def logged(forge):
    """The forge's request log: every answered request is in it (the forge logs each
    before the last byte of its answer leaves)."""
    return forge.requests()


def test_probe_answers_once_per_host_and_cleans_up(forge, tmp_path):
    cache = tmp_path / "hosts.json"
    with Client(forge.url, forge.token) as client:
        # Gitea forbids approving one's own pull request (422); the forge behaves alike.
        assert probe_self_review(client, path=cache) is False
        reviews = [r for r in logged(forge) if r["path"].endswith("/reviews")]
        assert [(r["method"], r["status"]) for r in reviews] == [("POST", 422)]
        assert list_leftovers(client, "benchkit-") == []
        stored = json.loads(cache.read_text())
        assert stored[forge.url]["self_review"] is False
        assert stored[forge.url]["user"] == forge.user

        before = len(logged(forge))
        assert probe_self_review(client, path=cache) is False
        assert len(logged(forge)) == before  # answered from the cache

        assert probe_self_review(client, path=cache, cache=False) is False
        assert len(logged(forge)) > before


def test_cached_answer_is_per_host(forge, tmp_path):
    cache = tmp_path / "hosts.json"
    cache.write_text(json.dumps({"http://elsewhere.test/": {"self_review": True},
                                 forge.url: {"self_review": True}}))
    with Client(forge.url, forge.token) as client:
        assert probe_self_review(client, path=cache) is True  # trusted as cached
        assert not [r for r in logged(forge) if r["path"].endswith("/reviews")]
    cache.write_text("not json")
    with Client(forge.url, forge.token) as client:
        assert probe_self_review(client, path=cache) is False  # a broken cache re-probes
    assert json.loads(cache.read_text())[forge.url]["self_review"] is False


def test_cache_location_follows_the_environment(monkeypatch, tmp_path):
    monkeypatch.setenv("BENCHKIT_CACHE_DIR", str(tmp_path / "bk"))
    assert cache_path() == tmp_path / "bk" / "hosts.json"
    monkeypatch.delenv("BENCHKIT_CACHE_DIR")
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    assert cache_path() == tmp_path / "xdg" / "benchkit" / "hosts.json"
