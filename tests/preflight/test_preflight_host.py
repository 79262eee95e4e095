"""The host `benchkit run` and `validate --live` share: a named host is used or is an
error, never quietly replaced; with none named, an embedded forge lives for the block."""

import pytest
import requests

from benchkit.gitea import CredentialsError
from benchkit.preflight.host import EMBEDDED, discover, open_host


@pytest.fixture
def bare_env(tmp_path):
    """An environment naming no host: no GITEA_*, no tea login."""
    return {"HOME": str(tmp_path / "home"), "XDG_CONFIG_HOME": str(tmp_path / "config")}


def test_nothing_named_starts_an_embedded_forge_for_the_block(bare_env):
    assert discover(environ=bare_env) is None
    notes = []
    with open_host(None, notes.append) as where:
        answer = requests.get(where.api_url + "/user", timeout=10,
                              headers={"Authorization": f"token {where.token}"})
        assert answer.status_code == 200 and where.source == EMBEDDED
        assert notes == [f"no Gitea host given or discovered: running against an embedded "
                         f"forge at {where.url}, stopped when the run ends"]
    with pytest.raises(requests.ConnectionError):
        requests.get(where.api_url + "/version", timeout=5)


@pytest.mark.parametrize("named", [{"host": "http://gitea.invalid/"}, {"login": "work"}])
def test_a_named_host_without_credentials_is_an_error_not_a_forge(bare_env, named):
    with pytest.raises(CredentialsError):
        discover(environ=bare_env, **named)


def test_a_host_named_in_the_environment_alone_is_an_error_not_a_forge(bare_env):
    with pytest.raises(CredentialsError, match="no token for http://gitea.invalid/"):
        discover(environ={**bare_env, "GITEA_URL": "http://gitea.invalid"})


def test_a_named_host_is_used_as_given(forge, bare_env):
    credentials = discover(forge.url, forge.token, environ=bare_env)
    notes = []
    with open_host(credentials, notes.append) as where:
        assert where is credentials and notes == []
    assert (where.url, where.source) == (forge.url, "flags")
