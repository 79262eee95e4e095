"""The client against the forge over HTTP: errors, retries, pagination, a dead host."""


import pytest

from benchkit.errors import HostError
from benchkit.gitea.client import Client, GiteaError, split_url
from benchkit.gitea.repos import create_repo


def logged(forge):
    """The forge's request log: every answered request is in it (the forge logs each
    before the last byte of its answer leaves)."""
    return forge.requests()


def fast_client(forge, **kwargs):
    return Client(forge.url, forge.token, backoff=0.01, **kwargs)


def calls(forge, method, suffix, since=0):
    return [r for r in logged(forge)[since:]
            if r["method"] == method and r["path"].endswith(suffix)]


def test_split_url_accepts_root_or_api_urls():
    for url in ("http://h:3000", "http://h:3000/", "http://h:3000/api/v1", "http://h:3000/api/v1/"):
        assert split_url(url) == ("http://h:3000/", "http://h:3000/api/v1")
    assert split_url("https://h/git/api/v1") == ("https://h/git/", "https://h/git/api/v1")
    for bad in ("", "h:3000", "ftp://h", "http://"):
        with pytest.raises(ValueError):
            split_url(bad)


def test_user_and_api_url_variants_reach_the_same_host(forge):
    with Client(forge.api_url + "/", forge.token) as client:
        assert client.url == forge.url
        assert client.user == forge.user
        _ = client.user  # cached: one GET /user only
    assert len(calls(forge, "GET", "/user")) == 1
    assert logged(forge)[-1]["user_agent"].startswith("benchkit/")


def test_gitea_error_bodies_become_clear_exceptions(forge):
    with fast_client(forge) as client:
        with pytest.raises(GiteaError) as caught:
            client.get("/repos/nobody/nothing")
    error = caught.value
    assert (error.status, error.method, error.path) == (404, "GET", "/repos/nobody/nothing")
    assert str(error).startswith("GET /repos/nobody/nothing: HTTP 404: ")
    assert isinstance(error, HostError)


def test_bad_token_is_a_401_error(forge):
    with Client(forge.url, "not-the-token") as client:
        with pytest.raises(GiteaError) as caught:
            client.get("/user")
    assert caught.value.status == 401 and "not-the-token" not in str(caught.value)


def test_idempotent_calls_are_retried_on_5xx_and_dropped_connections(forge):
    with fast_client(forge) as client:
        forge.inject_fault("GET", r"/api/v1/user$", status=500, times=2)
        assert client.get("/user")["login"] == forge.user
        assert len(calls(forge, "GET", "/user")) == 3
        start = len(logged(forge))
        forge.inject_fault("GET", r"/api/v1/version$", drop=True, times=1)
        assert client.get("/version")["version"]
        assert len(calls(forge, "GET", "/version", start)) >= 1


def test_retries_are_bounded(forge):
    with fast_client(forge, retries=2) as client:
        forge.inject_fault("GET", r"/api/v1/user$", status=503, times=10)
        with pytest.raises(GiteaError) as caught:
            client.get("/user")
    assert caught.value.status == 503
    assert len(calls(forge, "GET", "/user")) == 3


def test_posts_are_not_retried_unless_idempotent(forge):
    with fast_client(forge) as client:
        repo, _ = create_repo(client, "benchkit-test-")
        forge.inject_fault("POST", r"/labels$", status=500, times=1)
        with pytest.raises(GiteaError) as caught:
            client.post(f"{repo.path}/labels", {"name": "x", "color": "ffffff"})
        assert caught.value.status == 500
        assert len(calls(forge, "POST", "/labels")) == 1
        # A PATCH that states an end state may be repeated safely when the caller says so.
        client.post(f"{repo.path}/issues", {"title": "t"})
        forge.inject_fault("PATCH", r"/issues/1$", status=500, times=1)
        client.patch(f"{repo.path}/issues/1", {"state": "closed"}, idempotent=True)
        assert client.get(f"{repo.path}/issues/1")["state"] == "closed"


def test_pagination_follows_to_the_end(forge):
    with fast_client(forge) as client:
        repo, _ = create_repo(client, "benchkit-test-")
        for n in range(57):
            client.post(f"{repo.path}/labels", {"name": f"l{n:02d}", "color": "abcdef"})
        start = len(logged(forge))
        names = [label["name"] for label in client.paginate(f"{repo.path}/labels")]
        assert sorted(names) == [f"l{n:02d}" for n in range(57)]
        assert len(calls(forge, "GET", "/labels", start)) == 2  # 50 + 7, no extra probe
        start = len(logged(forge))
        names = [label["name"] for label in client.paginate(f"{repo.path}/labels", limit=10)]
        assert len(names) == 57 and len(calls(forge, "GET", "/labels", start)) == 6


def test_dead_host_is_a_clear_host_error(dead_url):
    url = dead_url
    with Client(url, "secret-token-xyz", retries=1, backoff=0.01) as client:
        with pytest.raises(HostError) as caught:
            client.get("/user")
    message = str(caught.value)
    assert message.startswith(f"cannot reach Gitea host {url} for GET /user")
    assert "secret-token-xyz" not in message
    with Client(url, "t", retries=3, backoff=0.01) as client:
        with pytest.raises(HostError, match="may or may not have been applied"):
            client.post("/user/repos", {"name": "x"})
