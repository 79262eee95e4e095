"""The forge as a host the harness controls: tokens and users, the request log, fault
injection, the lagging indexer, a database file that outlives the process, and the
`benchkit forge` command.
"""

import os
import re
import signal
import subprocess
import time

import pytest
import requests
from conftest import BENCHKIT

from benchkit.forge import Forge


def session(token):
    s = requests.Session()
    s.headers["Authorization"] = f"token {token}"
    return s


def test_fixed_token_and_more_users():
    with Forge(user="alice", token="preconfigured") as forge:
        assert (forge.user, forge.token) == ("alice", "preconfigured")
        assert forge.url.startswith("http://127.0.0.1:") and forge.url.endswith("/")
        assert forge.api_url == forge.url + "api/v1"
        assert session("preconfigured").get(forge.api_url + "/user").json()["is_admin"] is True
        bob = forge.create_user("bob")
        assert bob != forge.token and len(bob) == 40
        me = session(bob).get(forge.api_url + "/user").json()
        assert (me["login"], me["is_admin"]) == ("bob", False)
        assert "preconfigured" not in repr(forge)
    with Forge() as forge:
        assert re.fullmatch(r"[0-9a-f]{40}", forge.token)


def test_request_log_records_each_request_without_secrets(forge):
    s = session(forge.token)
    s.headers["User-Agent"] = "curl/8.0"
    s.post(forge.api_url + "/user/repos", json={"name": "logged"})
    s.get(forge.api_url + f"/repos/bench/logged?token={forge.token}")
    s.get(forge.api_url + "/repos/bench/missing")
    entries = forge.requests()
    assert [(e["method"], e["path"], e["status"]) for e in entries] == [
        ("POST", "/api/v1/user/repos", 201),
        ("GET", "/api/v1/repos/bench/logged", 200),
        ("GET", "/api/v1/repos/bench/missing", 404)]
    first = entries[0]
    assert first["user_agent"] == "curl/8.0" and first["bytes_in"] == len(b'{"name": "logged"}')
    assert first["bytes_out"] > 1000 and first["duration"] > 0 and abs(first["started"] - time.time()) < 60
    assert forge.token not in repr(entries)
    assert forge.requests(since=entries[1]["seq"]) == entries[2:]
    for _ in range(20):  # each answer is logged before the client has it: no wait needed
        s.get(forge.api_url + "/version")
        assert forge.requests()[-1]["path"] == "/api/v1/version"

    # The same log over HTTP, for an admin's token only; reading it is not itself logged.
    over_http = s.get(forge.url + "_forge/requests").json()
    assert over_http == forge.requests()
    outsider = session(forge.create_user("outsider"))
    assert outsider.get(forge.url + "_forge/requests").status_code == 403
    assert requests.get(forge.url + "_forge/requests").status_code == 401
    assert len(forge.requests()) == len(over_http)


def test_faults_fail_a_route_a_set_number_of_times(forge):
    s = session(forge.token)
    url = forge.api_url + "/version"
    forge.inject_fault("GET", r"/version$", status=503, times=2)
    assert [s.get(url).status_code for _ in range(3)] == [503, 503, 200]
    forge.inject_fault("*", "/version", status=None, delay=0.3)
    started = time.monotonic()
    assert s.get(url).status_code == 200 and time.monotonic() - started >= 0.3
    forge.inject_fault("POST", "/version", status=500)  # another method: not matched by a GET
    assert s.get(url).status_code == 200
    forge.clear_faults()
    forge.inject_fault("GET", "/version", drop=True)
    with pytest.raises(requests.ConnectionError):
        requests.get(url)
    assert requests.get(url).status_code == 200
    logged = [e["status"] for e in forge.requests() if e["path"] == "/api/v1/version"]
    assert logged[:2] == [503, 503]


def test_faults_over_http_for_another_process(forge):
    s = session(forge.token)
    made = s.post(forge.url + "_forge/faults", json={"method": "GET", "path": "/user$", "status": 502, "times": 1})
    assert made.status_code == 201
    assert s.get(forge.api_url + "/user").status_code == 502
    assert s.get(forge.api_url + "/user").status_code == 200
    user = s.post(forge.url + "_forge/users", json={"name": "carol"}).json()
    assert session(user["token"]).get(forge.api_url + "/user").json()["login"] == "carol"


def test_keyword_search_lags_behind_writes_as_configured():
    with Forge(index_lag=0.6) as forge:
        now = [0.0]  # the indexer's clock, moved on by the test, never by the load
        forge.state.indexer.clock = lambda: now[0]
        s = session(forge.token)
        s.post(forge.api_url + "/user/repos", json={"name": "lag"})
        s.post(forge.api_url + "/repos/bench/lag/issues", json={"title": "Memory leak"})
        search = lambda: [i["title"] for i in s.get(forge.api_url + "/repos/bench/lag/issues",  # noqa: E731
                                                    params={"q": "leak"}).json()]
        assert search() == []  # not indexed yet
        assert [i["title"] for i in s.get(forge.api_url + "/repos/bench/lag/issues").json()] == ["Memory leak"]
        now[0] += 0.7
        assert search() == ["Memory leak"]
        s.patch(forge.api_url + "/repos/bench/lag/issues/1", json={"title": "Memory growth"})
        assert search() == ["Memory growth"]  # the old text is still what the index holds
        forge.set_index_lag(0)
        assert search() == []
        s.post(forge.api_url + "/repos/bench/lag/issues/1/comments", json={"body": "still leaking"})
        assert search() == ["Memory growth"]  # comments are indexed too


def test_database_file_outlives_the_forge(tmp_path):
    db = str(tmp_path / "forge.db")
    with Forge(token="keep", db=db) as forge:
        s = session("keep")
        s.post(forge.api_url + "/user/repos", json={"name": "kept", "auto_init": True})
        s.post(forge.api_url + "/repos/bench/kept/issues", json={"title": "Survives restarts"})
    with Forge(db=db, index_lag=30) as forge:  # the old token still works, a new one is added
        for token in ("keep", forge.token):
            titles = [i["title"] for i in session(token).get(forge.api_url + "/repos/bench/kept/issues",
                                                             params={"q": "restarts"}).json()]
            assert titles == ["Survives restarts"]  # indexed already, whatever the lag
    with open(db, "rb") as raw:
        assert b"keep" not in raw.read()  # tokens are stored hashed


def test_benchkit_forge_command_serves_in_the_foreground(tmp_path):
    env = {**os.environ, "PYTHONUNBUFFERED": "1"}
    process = subprocess.Popen([*BENCHKIT, "forge", "--port", "0", "--user", "dave",
                                "--token", "cli-token", "--db", str(tmp_path / "cli.db")],
                               stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env)
    try:
        lines = dict(process.stdout.readline().strip().split(": ", 1) for _ in range(3))
        assert lines["user"] == "dave" and lines["token"] == "cli-token"
        me = session("cli-token").get(lines["url"] + "api/v1/user", timeout=10).json()
        assert me["login"] == "dave"
    finally:
        process.send_signal(signal.SIGINT)
        process.wait(timeout=120)


def test_benchkit_forge_command_reports_a_busy_port():
    with Forge() as forge:
        done = subprocess.run([*BENCHKIT, "forge", "--port", str(forge.port)],
                              capture_output=True, text=True, timeout=30)
    assert done.returncode == 2 and f"cannot listen on 127.0.0.1:{forge.port}" in done.stderr


def test_benchkit_forge_command_names_a_bad_database(tmp_path):
    bad = tmp_path / "not-a.db"
    bad.write_text("this is no SQLite database\n" * 100)
    done = subprocess.run([*BENCHKIT, "forge", "--port", "0", "--db", str(bad)], capture_output=True, text=True,
                          timeout=30)
    assert done.returncode == 2 and f"cannot open the forge database {bad}" in done.stderr
