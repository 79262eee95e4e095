"""Credential discovery: flags, then GITEA_URL / GITEA_TOKEN, then tea's login config."""

import pytest

from benchkit.gitea.credentials import CredentialsError, resolve_credentials, tea_config_path

TEA_CONFIG = """\
logins:
  - name: work
    url: https://git.example.test/
    token: work-secret-token
    default: false
    user: alice
  - name: home
    url: http://127.0.0.1:3000
    token: home-secret-token
    default: true
    user: bench
preferences:
  editor: false
"""


@pytest.fixture
def tea(tmp_path):
    path = tmp_path / "tea" / "config.yml"
    path.parent.mkdir()
    path.write_text(TEA_CONFIG)
    return path


def test_flags_win_over_environment_and_tea(tea):
    env = {"GITEA_URL": "http://env.test", "GITEA_TOKEN": "env-token"}
    creds = resolve_credentials("http://flag.test/api/v1/", "flag-token", env=env, tea_config=tea)
    assert (creds.url, creds.api_url, creds.token) == (
        "http://flag.test/", "http://flag.test/api/v1", "flag-token")
    assert creds.source == "flags"


def test_environment_wins_over_tea(tea):
    env = {"GITEA_URL": "http://env.test:3000/sub/", "GITEA_TOKEN": "env-token"}
    creds = resolve_credentials(env=env, tea_config=tea)
    assert (creds.url, creds.api_url, creds.token) == (
        "http://env.test:3000/sub/", "http://env.test:3000/sub/api/v1", "env-token")
    assert creds.source == "host from GITEA_URL, token from GITEA_TOKEN"


def test_tea_default_login_when_nothing_else(tea):
    creds = resolve_credentials(env={}, tea_config=tea)
    assert (creds.url, creds.token) == ("http://127.0.0.1:3000/", "home-secret-token")
    assert "home" in creds.source


def test_tea_login_by_name(tea):
    creds = resolve_credentials(login="work", env={"GITEA_URL": "http://ignored.test"},
                                tea_config=tea)
    assert (creds.url, creds.token) == ("https://git.example.test/", "work-secret-token")


def test_tea_token_only_for_its_own_host(tea):
    # A host from the environment takes the token of the tea login made for that host...
    creds = resolve_credentials(env={"GITEA_URL": "https://git.example.test/api/v1"},
                                tea_config=tea)
    assert creds.token == "work-secret-token"
    assert creds.source.startswith("host from GITEA_URL, token from tea login 'work'")
    # ...and a host no login knows gets no token at all, rather than another host's.
    with pytest.raises(CredentialsError, match="no token for http://other.test/"):
        resolve_credentials(host="http://other.test", env={}, tea_config=tea)


def test_first_login_when_none_is_default(tmp_path):
    path = tmp_path / "config.yml"
    path.write_text("logins:\n  - {name: a, url: 'http://a.test', token: ta}\n"
                    "  - {name: b, url: 'http://b.test', token: tb}\n")
    assert resolve_credentials(env={}, tea_config=path).token == "ta"


def test_xdg_config_home_is_honoured(tea):
    env = {"XDG_CONFIG_HOME": str(tea.parent.parent), "HOME": "/nonexistent"}
    assert tea_config_path(env) == tea
    assert resolve_credentials(env=env).token == "home-secret-token"
    assert tea_config_path({"HOME": "/home/u"}).as_posix() == "/home/u/.config/tea/config.yml"


def test_nothing_configured_names_every_source(tmp_path):
    with pytest.raises(CredentialsError) as caught:
        resolve_credentials(env={}, tea_config=tmp_path / "missing.yml")
    assert "--host" in str(caught.value) and "GITEA_URL" in str(caught.value)


def test_unknown_login_lists_known_ones(tea):
    with pytest.raises(CredentialsError, match="no tea login named 'nope' \\(logins: work, home\\)"):
        resolve_credentials(login="nope", env={}, tea_config=tea)


def test_bad_url_names_its_source(tea):
    with pytest.raises(CredentialsError, match="GITEA_URL"):
        resolve_credentials(env={"GITEA_URL": "ftp://x", "GITEA_TOKEN": "t"}, tea_config=tea)


def test_broken_tea_config_never_quotes_its_token(tmp_path):
    path = tmp_path / "config.yml"
    path.write_text("logins:\n  - name: x\n    token: [leaky-secret-token\n")
    with pytest.raises(CredentialsError) as caught:
        resolve_credentials(env={}, tea_config=path)
    assert str(path) in str(caught.value)
    assert "leaky-secret-token" not in str(caught.value)


def test_repr_hides_the_token(tea):
    creds = resolve_credentials(env={}, tea_config=tea)
    assert "home-secret-token" not in repr(creds)
    assert "home-secret-token" not in repr(creds.client())
