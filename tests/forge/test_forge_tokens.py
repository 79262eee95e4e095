"""Tokens the forge mints per agent, over HTTP: the request log names each request's
token by its identity (never the token), an agent's token reaches the Gitea API but
not the admin routes, and revoking it ends it without touching the admin's."""

import re
import sqlite3

import requests

from benchkit.forge import Forge, token_id


def call(forge, method, path, token, user_agent="curl/8.0", **kwargs):
    headers = {"Authorization": f"token {token}", "User-Agent": user_agent}
    return requests.request(method, forge.url + path.lstrip("/"), headers=headers, timeout=10,
                            **kwargs)


def test_the_log_names_each_request_by_its_tokens_identity(forge):
    agent = forge.create_token(forge.user)
    assert agent != forge.token and re.fullmatch(r"[0-9a-f]{40}", agent)
    call(forge, "GET", "api/v1/user", agent)
    call(forge, "GET", "api/v1/version", forge.token, user_agent="benchkit/0.1")
    requests.get(forge.api_url + "/version", timeout=10)  # no token at all
    basic = requests.get(forge.api_url + "/user", auth=(forge.user, agent), timeout=10)
    query = requests.get(forge.api_url + f"/user?token={agent}", timeout=10)
    assert basic.status_code == query.status_code == 200
    entries = forge.requests()
    assert [e["token_id"] for e in entries] == [token_id(agent), token_id(forge.token), None,
                                                token_id(agent), token_id(agent)]
    assert re.fullmatch(r"[0-9a-f]{12}", entries[0]["token_id"])
    assert agent not in repr(entries) and forge.token not in repr(entries)
    # Over HTTP too, whole or one token's requests only.
    over_http = call(forge, "GET", "_forge/requests", forge.token).json()
    assert [e["token_id"] for e in over_http] == [e["token_id"] for e in entries]
    mine = call(forge, "GET", f"_forge/requests?token_id={token_id(agent)}", forge.token).json()
    assert [e["seq"] for e in mine] == [e["seq"] for e in entries if e["token_id"] == token_id(agent)]


def test_a_request_a_fault_answers_is_still_known_by_its_token(forge):
    agent = forge.create_token(forge.user)
    forge.inject_fault("GET", r"/api/v1/user$", status=503)
    assert call(forge, "GET", "api/v1/user", agent).status_code == 503
    assert forge.requests()[-1]["token_id"] == token_id(agent)


def test_admin_routes_mint_and_revoke_agent_tokens_an_agent_cannot_use_them(forge):
    minted = call(forge, "POST", "_forge/tokens", forge.token, json={})
    assert minted.status_code == 201
    body = minted.json()
    assert (body["login"], body["token_id"]) == (forge.user, token_id(body["token"]))
    agent = body["token"]
    assert call(forge, "GET", "api/v1/user", agent).json()["login"] == forge.user
    assert call(forge, "POST", "api/v1/user/repos", agent, json={"name": "mine"}).status_code == 201
    # The agent's token is the admin user's, but it never reaches the forge's own routes:
    # it cannot read or steer the log that audits it, nor mint a token for another client.
    for method, path, kwargs in (("GET", "_forge/requests", {}),
                                 ("POST", "_forge/tokens", {"json": {}}),
                                 ("DELETE", "_forge/faults", {})):
        assert call(forge, method, path, agent, **kwargs).status_code == 403, path
    # A token for another user; an unknown user is refused.
    carol = call(forge, "POST", "_forge/users", forge.token, json={"name": "carol"}).json()
    for_carol = call(forge, "POST", "_forge/tokens", forge.token, json={"user": "carol"}).json()
    assert call(forge, "GET", "api/v1/user", for_carol["token"]).json()["login"] == "carol"
    assert carol["token"] != for_carol["token"]
    assert call(forge, "POST", "_forge/tokens", forge.token, json={"user": "nobody"}).status_code == 422

    revoked = call(forge, "DELETE", f"_forge/tokens/{body['token_id']}", forge.token)
    assert revoked.status_code == 200
    assert call(forge, "GET", "api/v1/user", agent).status_code == 401
    assert call(forge, "DELETE", f"_forge/tokens/{body['token_id']}", forge.token).status_code == 404
    # Only API-only tokens can be revoked this way: the admin's own stays.
    assert call(forge, "DELETE", f"_forge/tokens/{token_id(forge.token)}", forge.token).status_code == 404
    assert call(forge, "GET", "api/v1/user", forge.token).status_code == 200


def test_the_python_api_mints_and_revokes(forge):
    agent = forge.create_token(forge.user)
    assert call(forge, "GET", "api/v1/user", agent).status_code == 200
    assert forge.revoke_token(agent) is True and forge.revoke_token(agent) is False
    assert forge.revoke_token(forge.token) is False
    assert call(forge, "GET", "api/v1/user", agent).status_code == 401


def test_a_database_file_from_before_token_scopes_keeps_its_tokens(tmp_path):
    db = tmp_path / "forge.db"
    with sqlite3.connect(db) as old:  # the tokens table as it was, with an admin's token
        old.executescript(
            "CREATE TABLE users (id INTEGER PRIMARY KEY, login TEXT NOT NULL UNIQUE COLLATE NOCASE,"
            " email TEXT NOT NULL, full_name TEXT NOT NULL DEFAULT '', is_admin INTEGER NOT NULL"
            " DEFAULT 0, created INTEGER NOT NULL, last_login INTEGER NOT NULL DEFAULT 0);"
            "CREATE TABLE tokens (hash TEXT PRIMARY KEY, user_id INTEGER NOT NULL, name TEXT NOT NULL);")
    with Forge(db=str(db), token="0" * 40) as forge:
        assert call(forge, "GET", "_forge/requests", "0" * 40).status_code == 200
        agent = forge.create_token(forge.user)
        assert call(forge, "GET", "_forge/requests", agent).status_code == 403
