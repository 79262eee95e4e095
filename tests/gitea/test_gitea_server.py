"""The real-Gitea host API (`with Gitea() as host:`) and the pins it is built from."""

import http.server
import stat
import subprocess
import sys
import tempfile
import threading
import time

import pytest
import requests

from benchkit.gitea import server
from benchkit.gitea.server import Gitea, GiteaStartError
from benchkit.gitea.tools import TOOLS, ToolUnavailable, built, pin, read_versions


def whoami(host, token):
    return requests.get(f"{host.api_url}/user", timeout=10,
                        headers={"Authorization": f"token {token}"})


def test_a_running_gitea_answers_with_its_admin_token(gitea):
    assert gitea.url.startswith("http://127.0.0.1:") and gitea.api_url == gitea.url + "api/v1"
    assert gitea.version == pin("gitea").version
    me = whoami(gitea, gitea.token).json()
    assert me["login"] == gitea.user and me["is_admin"] is True
    assert gitea.token not in repr(gitea)
    assert 0 < gitea.startup_seconds < 120


def test_tokens_are_minted_and_revoked(gitea):
    token = gitea.create_token(gitea.user)
    assert token != gitea.token and whoami(gitea, token).status_code == 200
    assert gitea.revoke_token(token) is True
    assert whoami(gitea, token).status_code == 401
    assert gitea.revoke_token(token) is False


def test_another_user_gets_a_token_of_its_own(gitea):
    token = gitea.create_user("reviewer-a")
    assert whoami(gitea, token).json()["login"] == "reviewer-a"


def test_stopping_removes_the_work_directory_and_the_server(gitea):
    with Gitea(binary=gitea.binary) as other:
        work, url = other.work, other.url
        assert (work / "custom" / "app.ini").is_file()
        assert other.port != gitea.port
    assert not work.exists()
    with pytest.raises(requests.ConnectionError):
        requests.get(url + "api/v1/version", timeout=5)


def test_a_gitea_dies_with_the_process_that_started_it_even_on_sigkill(gitea):
    starter = subprocess.Popen(
        [sys.executable, "-c", "import sys, time\nfrom benchkit.gitea.server import Gitea\n"
         f"with Gitea(binary={str(gitea.binary)!r}) as g:\n"
         "    print(g.url, flush=True)\n    time.sleep(600)\n"],
        stdout=subprocess.PIPE, text=True)
    try:
        url = starter.stdout.readline().strip()
        assert url.startswith("http://127.0.0.1:"), "the starter printed no URL"
        assert requests.get(url + "api/v1/version", timeout=10).status_code == 200
    finally:
        starter.kill()  # SIGKILL: no `with` exit, no atexit
        starter.wait()
    deadline = time.monotonic() + 30  # bounds a hang: the kernel's signal is immediate
    while True:
        try:
            requests.get(url + "api/v1/version", timeout=2)
        except requests.ConnectionError:
            break
        assert time.monotonic() < deadline, f"the Gitea at {url} outlived its killed starter"
        time.sleep(0.1)


class Impostor(http.server.BaseHTTPRequestHandler):
    """Another server on loopback: 200 and a version to anything."""

    def do_GET(self):
        body = b'{"version": "9.9.9", "login": "someone"}'
        self.send_response(200)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args):
        pass


def test_a_port_another_server_took_is_no_gitea_of_ours(gitea, monkeypatch, tmp_path):
    """The port is chosen free, and another server takes it before Gitea binds it (a
    race on a busy machine): that server answered /version first and was taken for
    the host. The start fails saying so, and leaves no directory."""
    impostor = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Impostor)
    threading.Thread(target=impostor.serve_forever, daemon=True).start()
    monkeypatch.setattr(server, "_free_port", lambda: impostor.server_address[1])
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))
    try:
        with pytest.raises(GiteaStartError, match=f"127.0.0.1:{impostor.server_address[1]} "
                                                  "answers as another server"):
            Gitea(binary=gitea.binary).start()
    finally:
        impostor.shutdown()
    assert list(tmp_path.glob("benchkit-gitea-*")) == []


def test_a_missing_build_names_the_pin_and_why(tmp_path, monkeypatch):
    monkeypatch.setattr("benchkit.gitea.tools.TOOLS_DIR", tmp_path)
    wanted = pin("gitea")
    with pytest.raises(ToolUnavailable, match=rf"gitea {wanted.version} \({wanted.source}\) is not built"
                                              r".*scripts/test-setup"):
        Gitea()
    (tmp_path / f"gitea-{wanted.version}.absent").write_text("Go is not installed\n")
    with pytest.raises(ToolUnavailable, match="is not built at .*: Go is not installed$"):
        built("gitea")


def test_an_override_must_be_executable_and_carry_the_static_files(tmp_path, monkeypatch):
    fake = tmp_path / "gitea"
    fake.write_text("#!/bin/sh\n")
    monkeypatch.setenv("BENCHKIT_GITEA", str(fake))
    with pytest.raises(ToolUnavailable, match="is not an executable file"):
        Gitea()
    fake.chmod(fake.stat().st_mode | stat.S_IXUSR)
    with pytest.raises(ToolUnavailable, match="lacks templates, options/"):
        Gitea()


def test_the_pin_file_names_every_tool_and_the_go_module_agrees():
    values = read_versions()
    for tool in TOOLS:
        assert pin(tool).source and pin(tool).version
    go_mod = (pin("gitea").directory.parents[1] / "tools" / "gitea" / "go.mod").read_text()
    assert f"{values['GITEA_MODULE']} v{values['GITEA_VERSION']}" in go_mod
    assert f"\ntool {values['GITEA_MODULE']}\n" in go_mod


def test_a_broken_pin_file_is_named(tmp_path):
    broken = tmp_path / "versions"
    broken.write_text("GITEA_MODULE=code.gitea.io/gitea\nnot a pin\n")
    with pytest.raises(ToolUnavailable, match=rf"{broken}:2: want KEY=VALUE"):
        read_versions(broken)
    broken.write_text("GITEA_MODULE=code.gitea.io/gitea\n")
    with pytest.raises(ToolUnavailable, match="no GITEA_VERSION line"):
        pin("gitea", broken)


def test_the_access_log_names_client_requests_without_their_query(gitea):
    requests.get(f"{gitea.api_url}/user", params={"token": gitea.token}, timeout=10,
                 headers={"User-Agent": "curl/8.5.0"})
    for _ in range(1200):  # Gitea writes its access log asynchronously (bound: a hang)
        mine = [e for e in gitea.requests() if e["user_agent"] == "curl/8.5.0"]
        if mine:
            break
        time.sleep(0.1)
    assert mine == [{"method": "GET", "path": "/api/v1/user", "status": 200,
                     "user_agent": "curl/8.5.0"}]
    assert gitea.token not in (gitea.work / "log" / "access.log").read_text()
