"""A gateway no request can freeze or bloat: a trial's upload budget is reserved before
a body is read (parallel bodies cannot together pass it); an answer streams to the
agent with the host's URL rewritten piece by piece, never held whole (the harness's
memory stays bounded); a trial's connections are capped and a request that trickles in
is cut off, so a flood costs a bounded number of threads; a request without the trial's
token is the trial's whose door it came through, and no other's; a trial's end (a stop)
aborts a host answer still held; and a request's recorded duration is the time its
tool waited. At the gateway's seam against the forge, a real Gitea and a stand-in host
of known answers, and B08 through the real CLI with two trials at once."""

from __future__ import annotations

import base64
import contextlib
import gzip
import hashlib
import json
import os
import random
import re
import socket
import subprocess
import sys
import threading
import time
import uuid
from pathlib import Path

import pytest
import requests
from conftest import BENCHKIT, CHECKOUT

from benchkit.agent.audit import audit_gateway
from benchkit.agent.replay import tool_results
from benchkit.agent.scripted import ScriptedModel, bash, say
from benchkit.forge import Forge
from benchkit.gateway import server
from benchkit.gateway.answers import Rewriter
from benchkit.gateway.framing import Limits
from benchkit.gateway.server import Gateway
from benchkit.gitea import Client, delete_repo
from benchkit.isolation import sandbox
from benchkit.isolation.sandbox import missing

MIB = 1024 * 1024
DEADLINE = 60  # seconds: bounds a hang, never paces a test


@pytest.fixture
def trial_repo(repo_with_issue):
    """A repository of the host's user with issue #1: (client, name)."""
    return repo_with_issue("gw-bounds", "Talk here")


def _port(url: str) -> int:
    return int(url.rstrip("/").rsplit(":", 1)[1])


def test_parallel_bodies_cannot_together_pass_the_trials_budget(host, trial_repo):
    """B09b: twelve bodies sent at once (files: the contents API's content is stored,
    never parsed), each within a request's limit, together over the trial's: each is
    reserved before it is read, so those past the budget are refused (413) before a
    byte of them is taken, and what was forwarded stays within it. B09b's 9 MiB comment,
    which held a real Gitea 14 s parsing it, never reaches the host: refused at once."""
    client, name = trial_repo
    text = base64.b64encode(("lorem ipsum dolor " * (384 * 1024 // 18)).encode()).decode()
    bodies = [json.dumps({"content": text, "message": "m", "new_branch": f"b{n:02}"}).encode()
              for n in range(12)]  # a branch each: Gitea refuses a write racing another's
    body = bodies[0]
    with Gateway(host.url, limits=Limits(request_bytes=MIB, trial_bytes=4 * MIB)) as gateway:
        grant = gateway.issue(client.user, name, host.token)
        conns = [socket.create_connection(("127.0.0.1", _port(grant.url)), timeout=DEADLINE)
                 for _ in range(12)]
        for n, conn in enumerate(conns):  # every head first: the old gateway measured here
            conn.sendall(f"POST /api/v1/repos/{client.user}/{name}/contents/f{n}.txt HTTP/1.1\r\n"
                         f"Host: x\r\nAuthorization: token {grant.token}\r\nConnection: close"
                         f"\r\nContent-Type: application/json\r\nContent-Length: {len(body)}"
                         "\r\n\r\n".encode())
        for conn, one in zip(conns, bodies):
            try:
                conn.sendall(one)
            except OSError:
                pass  # refused already: the gateway closed its side
        answers = []
        for conn in conns:
            answers.append(conn.recv(64))
            conn.close()
        assert gateway.idle(timeout=DEADLINE)
    with Gateway(host.url) as gateway:  # the suite's limits: 9 MiB fits a request
        plain = gateway.issue(client.user, name, host.token)
        started = time.monotonic()
        huge = requests.post(f"{plain.api_url}/repos/{client.user}/{name}/issues/1/comments",
                             json={"body": "lorem ipsum " * (9 * MIB // 12)}, timeout=DEADLINE,
                             headers={"Authorization": f"token {plain.token}"})
        assert huge.status_code == 403 and time.monotonic() - started < 5, huge.text[:200]
        assert gateway.idle(timeout=DEADLINE)
    statuses = sorted(a.split(b" ")[1].decode() for a in answers)
    forwarded = sum(e["bytes_in"] for e in grant.requests if e["status"] == 201)
    assert forwarded <= 4 * MIB and statuses.count("201") == 4 * MIB // len(body), \
        [(e["status"], e.get("reason")) for e in grant.requests]
    assert statuses.count("413") == 12 - statuses.count("201")
    branches = [b for b in client.get(f"/repos/{client.user}/{name}/branches")
                if b["name"][0] == "b"]
    assert len(branches) == statuses.count("201")
    assert grant.uploaded == forwarded  # the refused bodies gave back what they reserved
    assert "bytes of text" in plain.requests[-1]["reason"]
    assert client.get(f"/repos/{client.user}/{name}/issues/1/comments") == []


# A stand-in host of known answers, in a process of its own (its memory is not the
# harness's): GET /api/v1/repos/o/r/issues answers JSON text naming its
# own root URL again and again (and a longer port, which stays), chunked; ?limit=N
# (a parameter the gateway forwards) asks for N bytes.
HOST = r"""
import sys
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import parse_qs, urlsplit

class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    def log_message(self, *args): pass
    def do_GET(self):
        size = int(parse_qs(urlsplit(self.path).query).get("limit", ["1000"])[0])
        unit = UNIT.encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Transfer-Encoding", "chunked")
        self.end_headers()
        block = unit * (61 * 1024 // len(unit))
        left = size // len(unit)
        while left:
            n = min(left, len(block) // len(unit))
            piece = block[:n * len(unit)]
            self.wfile.write(b"%x\r\n%s\r\n" % (len(piece), piece))
            left -= n
        self.wfile.write(b"0\r\n\r\n")

server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
ROOT = f"http://127.0.0.1:{server.server_address[1]}"
UNIT = '{"url":"' + ROOT + '/api/v1/x","far":"' + ROOT + '5/y","pad":"' + "p" * 37 + '"},'
print(ROOT, UNIT, flush=True)
server.serve_forever()
"""


@pytest.fixture
def stand_in():
    """(its root URL, the unit its answers repeat)."""
    process = subprocess.Popen([sys.executable, "-c", HOST], stdout=subprocess.PIPE, text=True)
    try:
        root, unit = process.stdout.readline().split()
        yield root, unit
    finally:
        process.kill()
        process.wait()


def rss() -> int:
    with open("/proc/self/statm") as statm:
        return int(statm.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")


def test_an_answer_streams_through_rewritten_never_held_whole(stand_in):
    """A 128 MiB answer: the bytes the tool gets are the host's with every root URL the
    door's (and the longer port's kept), and the harness's memory grows by far less than
    the answer while it passes (the old gateway held it whole, and a rewritten copy)."""
    root, unit = stand_in
    size = 128 * MIB
    with Gateway(root + "/") as gateway:
        grant = gateway.issue("o", "r", "t")
        own = grant.url.rstrip("/")
        expected = unit.replace(root + "/", own + "/").encode()
        count = size // len(unit)
        want = hashlib.sha256()
        for _ in range(count):
            want.update(expected)
        peak, done, before = [rss()], threading.Event(), rss()

        def watch() -> None:
            while not done.wait(0.002):
                peak[0] = max(peak[0], rss())
        watcher = threading.Thread(target=watch, daemon=True)
        watcher.start()
        got, length = hashlib.sha256(), 0
        with requests.get(f"{grant.api_url}/repos/o/r/issues", params={"limit": size},
                          headers={"Authorization": f"token {grant.token}"}, stream=True,
                          timeout=DEADLINE) as answer:
            assert answer.status_code == 200
            for piece in answer.iter_content(64 * 1024):
                got.update(piece)
                length += len(piece)
        done.set()
        watcher.join()
        assert gateway.idle(timeout=DEADLINE)
    assert length == count * len(expected) and got.hexdigest() == want.hexdigest()
    assert peak[0] - before < 32 * MIB, f"grew {(peak[0] - before) / MIB:.0f} MiB"
    assert grant.requests[-1]["bytes_out"] == length


class ForgeApart:
    """The embedded forge in a process of its own (`benchkit forge`): its memory is not
    the harness's, so the harness's own can be read."""

    def __init__(self):
        with socket.socket() as sock:
            sock.bind(("127.0.0.1", 0))
            port = sock.getsockname()[1]
        self.process = subprocess.Popen([*BENCHKIT, "forge", "--port", str(port)],
                                        stdout=subprocess.PIPE, text=True)
        said = dict(self.process.stdout.readline().strip().split(": ", 1) for _ in range(3))
        self.url, self.user, self.token = said["url"], said["user"], said["token"]

    def close(self) -> None:
        self.process.kill()
        self.process.wait()


@pytest.fixture
def forge_apart():
    apart = ForgeApart()
    yield apart
    apart.close()


@pytest.mark.slow
@pytest.mark.parametrize("where", ["forge_apart", "gitea"])
def test_four_huge_issue_lists_stream_through_at_once(where, request):
    """B10: two labels with 1 MiB descriptions on 40 issues, then four issue lists at
    once (about 80 MiB each): every answer reaches its tool whole, with the host's URL
    nowhere in it, while the harness's memory grows by far less than one answer (the
    old gateway held each whole, and a rewritten copy: 796 MiB at its peak). On the
    forge (in a process of its own) and on a real Gitea."""
    gitea = request.getfixturevalue(where)
    client = Client(gitea.url, gitea.token)
    name = f"gw-b10-{uuid.uuid4().hex[:6]}"
    client.post("/user/repos", json={"name": name, "auto_init": True})
    try:
        labels = [client.post(f"/repos/{client.user}/{name}/labels", json={
            "name": f"big-{n}", "color": "#ff0000",
            "description": "lorem ipsum " * (MIB // 12)})["id"] for n in range(2)]
        for n in range(40):
            client.post(f"/repos/{client.user}/{name}/issues",
                        json={"title": f"Issue {n}", "labels": labels})
        host_root = gitea.url.rstrip("/").encode()
        # 4 x 80 MiB: past a trial's downloads (R18: tests/gateway/test_gateway_hostwork.py)
        with Gateway(gitea.url, limits=Limits(download_bytes=1024 * MIB)) as gateway:
            grant = gateway.issue(client.user, name, gitea.token)
            sizes: list[int] = []
            leaked: list[bool] = []

            def list_issues() -> None:
                tail, size, seen = b"", 0, False
                with requests.get(f"{grant.api_url}/repos/{client.user}/{name}/issues",
                                  params={"limit": 50, "state": "all"}, stream=True,
                                  headers={"Authorization": f"token {grant.token}"},
                                  timeout=DEADLINE * 5) as answer:
                    for piece in answer.iter_content(64 * 1024):
                        seen = seen or host_root in tail + piece
                        tail, size = piece[-len(host_root):], size + len(piece)
                sizes.append(size)
                leaked.append(seen)
            before, peak, done = rss(), [rss()], threading.Event()

            def watch() -> None:
                while not done.wait(0.005):
                    peak[0] = max(peak[0], rss())
            watcher = threading.Thread(target=watch, daemon=True)
            watcher.start()
            readers = [threading.Thread(target=list_issues) for _ in range(4)]
            for reader in readers:
                reader.start()
            for reader in readers:
                reader.join(DEADLINE * 5)
            done.set()
            watcher.join()
            assert gateway.idle(timeout=DEADLINE)
        assert len(sizes) == 4 and min(sizes) > 80 * MIB and leaked == [False] * 4, sizes
        assert [e["status"] for e in grant.requests] == [200] * 4
        assert peak[0] - before < 64 * MIB, f"grew {(peak[0] - before) / MIB:.0f} MiB"
    finally:
        delete_repo(client, client.user, name)


def test_the_rewrite_in_pieces_is_the_rewrite_of_the_whole():
    root, own = b"http://127.0.0.1:3000", b"http://127.0.0.1:41234"
    text = b"".join(random.Random(7).choice([root, root + b"/", root + b"0", b"x", b"http:",
                                             b"http://127.0.0.1:300", b'"'])
                    for _ in range(4000))
    whole = re.sub(re.escape(root) + rb"(?![0-9])", own, text)
    for seed in range(30):
        rng, rewriter, out, at = random.Random(seed), Rewriter(root, own), [], 0
        while at < len(text):
            step = rng.randint(1, 40)
            out.append(rewriter.feed(text[at:at + step]))
            at += step
        out.append(rewriter.end())
        assert b"".join(out) == whole, seed


def _threads() -> int:
    return threading.active_count()


def test_a_flood_of_half_sent_requests_costs_bounded_threads_and_is_the_trials(forge):
    """B11b: 200 connections each sending half a request line. At most the trial's
    limit are served at once (the rest are answered 429 and closed), each is cut off
    (408) once its time to arrive is out, the threads stay bounded, the record says so,
    and the trial's tools are served again after."""
    client = Client(forge.url, forge.token)
    name = f"gw-flood-{uuid.uuid4().hex[:6]}"
    client.post("/user/repos", json={"name": name, "auto_init": True})
    limit, base = 16, _threads()
    try:
        with Gateway(forge.url, limits=Limits(connections=limit, arrival_seconds=1.0)) as gateway:
            grant = gateway.issue(client.user, name, forge.token)
            conns, most = [], 0
            for _ in range(200):
                conn = socket.create_connection(("127.0.0.1", _port(grant.url)), timeout=DEADLINE)
                conn.sendall(b"GET /api/v1/vers")
                conns.append(conn)
                most = max(most, _threads())
            answers = []
            for conn in conns:  # each is answered and closed: none hangs
                got = b""
                try:
                    while piece := conn.recv(4096):
                        got += piece
                except ConnectionResetError:
                    got = got or b"reset"  # turned away before its request was read
                answers.append(got.split(b"\r\n")[0])
                conn.close()
                most = max(most, _threads())
            assert most <= base + limit + 3, (most, base)
            assert answers.count(b"HTTP/1.1 408 Request Timeout") >= limit
            assert set(answers) <= {b"HTTP/1.1 408 Request Timeout",
                                    b"HTTP/1.1 429 Too Many Requests", b"reset"}
            answer = requests.get(f"{grant.api_url}/repos/{client.user}/{name}", timeout=DEADLINE,
                                  headers={"Authorization": f"token {grant.token}"})
            assert answer.status_code == 200
            assert gateway.idle(timeout=DEADLINE)
        statuses = [e["status"] for e in grant.requests]
        assert statuses.count(408) == answers.count(b"HTTP/1.1 408 Request Timeout")
        assert 429 in statuses and statuses[-1] == 200
        assert len(audit_gateway(grant.requests, [])) == len(statuses) - 1  # each a leak
        deadline = time.monotonic() + DEADLINE
        while _threads() > base + 2 and time.monotonic() < deadline:
            time.sleep(0.05)  # the last connections' threads ending
        assert _threads() <= base + 2
    finally:
        delete_repo(client, client.user, name)


@pytest.mark.skipif(missing() is not None, reason="needs bubblewrap and socat")
def test_a_flood_through_the_sandboxs_bridge_costs_bounded_processes(forge, tmp_path,
                                                                      monkeypatch):
    """B11b: the bridge's socat forked one process a connection (202 for 200). Now at
    most BRIDGE_CHILDREN at once on the harness's side; the rest wait their turn and
    are answered all the same."""
    monkeypatch.setattr(sandbox, "BRIDGE_CHILDREN", 8)
    with Gateway(forge.url, limits=Limits(connections=4, arrival_seconds=0.5)) as gateway:
        grant = gateway.issue(forge.user, "anything", forge.token)
        box = sandbox.Sandbox(tmp_path / "root", workdir=tmp_path / "work", home=tmp_path / "home",
                              tmp=tmp_path / "tmp", host_url=grant.url)
        with box:
            assert box._bridge is not None
            children = Path(f"/proc/{box._bridge.pid}/task/{box._bridge.pid}/children")
            conns, most = [], 0
            for _ in range(40):
                conn = socket.socket(socket.AF_UNIX)
                conn.connect(str(box.socket))
                conn.sendall(b"GET /api/v1/vers")
                conns.append(conn)
                most = max(most, len(children.read_text().split()))
            for conn in conns:
                conn.settimeout(DEADLINE)
                with contextlib.suppress(OSError):
                    while conn.recv(4096):
                        most = max(most, len(children.read_text().split()))
                conn.close()
    assert 0 < most <= 8, most
    assert len(grant.requests) >= 8  # each connection that reached the door is on record


def test_a_request_half_sent_is_cut_off_after_its_time_to_arrive(forge):
    with Gateway(forge.url, limits=Limits(arrival_seconds=1.5)) as gateway:
        grant = gateway.issue(forge.user, "anything", forge.token)
        with socket.create_connection(("127.0.0.1", _port(grant.url)), timeout=DEADLINE) as conn:
            started = time.monotonic()
            conn.sendall(b"GET /api/v1/version HT")
            answer = b""
            while chunk := conn.recv(4096):  # the answer, then the connection closed
                answer += chunk
            waited = time.monotonic() - started
        assert answer.startswith(b"HTTP/1.1 408") and 1.4 < waited < 10, waited


def test_a_request_without_the_trials_token_is_the_trial_whose_door_it_came_through(host):
    """B08: two trials at once; through the first's door a request with no token and a
    Sudo header (a leak), and one with no token at all: both on the first's record, none
    on the second's; the first's token through the second's door is the second's leak."""
    client = Client(host.url, host.token)
    names = [f"gw-door-{w}-{uuid.uuid4().hex[:6]}" for w in ("a", "b")]
    for name in names:
        client.post("/user/repos", json={"name": name, "auto_init": True})
    try:
        with Gateway(host.url) as gateway:
            first, second = (gateway.issue(client.user, n, host.token) for n in names)
            assert first.url != second.url != gateway.url
            version = "api/v1/version"
            sudo = requests.get(first.url + version, headers={"Sudo": "admin"}, timeout=DEADLINE)
            bare = requests.get(first.url + version, timeout=DEADLINE)
            crossed = requests.get(second.url + version, timeout=DEADLINE,
                                   headers={"Authorization": f"token {first.token}"})
            own = requests.get(second.url + version, timeout=DEADLINE,
                               headers={"Authorization": f"token {second.token}"})
            assert (sudo.status_code, bare.status_code, crossed.status_code,
                    own.status_code) == (401, 401, 401, 200)
            assert gateway.idle(timeout=DEADLINE)
        assert [(e["scope"], e.get("reason")) for e in first.requests] == [
            ("refused", "acting as another user (Sudo) is refused"), ("unauthorized", None)]
        assert [(e["scope"], e.get("reason")) for e in second.requests] == [
            ("refused", "another trial's token"), ("global", None)]
        assert gateway.strays == []
    finally:
        for name in names:
            delete_repo(client, client.user, name)


class _Holding:
    """A host that takes every connection and never answers."""

    def __init__(self):
        self.sock = socket.create_server(("127.0.0.1", 0))
        self.url = f"http://127.0.0.1:{self.sock.getsockname()[1]}/"
        self.held: list[socket.socket] = []
        self.arrived = threading.Event()
        threading.Thread(target=self._take, daemon=True).start()

    def _take(self) -> None:
        while True:
            try:
                conn, _ = self.sock.accept()
            except OSError:
                return
            self.held.append(conn)
            self.arrived.set()

    def close(self) -> None:
        self.sock.close()
        for conn in self.held:
            conn.close()


@pytest.mark.parametrize("stop", [True, False], ids=["stop", "end"])
def test_a_trials_end_cuts_off_a_held_host_answer(stop, monkeypatch):
    """#40: SIGTERM while a host request was held waited it out. On a stop the trial's
    end aborts it at once; at a trial's ordinary end, after END_WAIT. Either way its
    record says so (499, not the host's 5xx: nothing to charge the host with)."""
    monkeypatch.setattr(server, "END_WAIT", 1.0)
    host = _Holding()
    try:
        with Gateway(host.url) as gateway:
            grant = gateway.issue("o", "r", "t")
            outcome: list = []

            def ask() -> None:
                try:
                    outcome.append(requests.get(f"{grant.api_url}/repos/o/r", timeout=DEADLINE,
                                                headers={"Authorization": f"token {grant.token}"}))
                except requests.RequestException as error:
                    outcome.append(error)
            asking = threading.Thread(target=ask)
            asking.start()
            assert host.arrived.wait(DEADLINE)
            started = time.monotonic()
            gateway.end(grant, abort=lambda: stop)
            took = time.monotonic() - started
            asking.join(DEADLINE)
        assert took < (1.0 if stop else 2.0), took
        assert [(e["status"], e["scope"]) for e in grant.requests] == [(499, "repo")]
        assert isinstance(outcome[0], requests.RequestException)
    finally:
        host.close()


def test_the_recorded_duration_is_the_time_the_tool_waited(forge):
    """The clock starts at the request's first byte, not once the gateway has read its
    head (a probe that waited 51 s was recorded as 0.02 s)."""
    with Gateway(forge.url) as gateway:
        grant = gateway.issue(forge.user, "anything", forge.token)
        with socket.create_connection(("127.0.0.1", _port(grant.url)), timeout=DEADLINE) as conn:
            conn.sendall(b"GET /api/v1/version HTTP/1.1\r\n")
            time.sleep(0.6)  # the measured wait itself
            conn.sendall(f"Host: x\r\nAuthorization: token {grant.token}\r\n"
                         "Connection: close\r\n\r\n".encode())
            assert conn.recv(64).startswith(b"HTTP/1.1 200")
        assert gateway.idle(timeout=DEADLINE)
    assert grant.requests[0]["duration"] >= 0.6


# --- B08 through the real CLI --------------------------------------------------------

HOSTILE, INNOCENT = "close-csv-export-issue", "read-open-issue-count"


class StrayFromOne(ScriptedModel):
    """Two trials at once: the hostile one (its task's intent names the CSV export) sends
    a request with no token and a Sudo header from its sandbox, then ends; the innocent
    one waits in its first turn until that request is made, then answers."""

    def __init__(self):
        super().__init__([])
        self.sent = threading.Event()

    def turn_for(self, index: int, request: dict):
        text = json.dumps(request)
        step = len(tool_results(request))
        if "CSV export" in text:
            if step == 0:
                host = re.search(r"Host: (http://127\.0\.0\.1:[0-9]+/)", text)
                assert host, "the system prompt names no host"
                return bash(f"curl -s -o /dev/null -w '%{{http_code}}' -H 'Sudo: admin' "
                            f"{host.group(1)}api/v1/version")
            self.sent.set()
            return say("Done.")
        assert self.sent.wait(DEADLINE * 4), "the hostile trial never sent its request"
        return say("5 open issues.")


@pytest.mark.slow
@pytest.mark.skipif(missing() is not None, reason="needs bubblewrap and socat")
def test_a_stray_of_one_trial_never_marks_the_other(tmp_path):
    store, config, scratch = tmp_path / "results", tmp_path / "claude", tmp_path / "tmp"
    config.mkdir()
    scratch.mkdir()
    with Forge() as forge, StrayFromOne() as model:
        env = {**os.environ, "ANTHROPIC_BASE_URL": model.url, "ANTHROPIC_API_KEY": "sk-test",
               "CLAUDE_CONFIG_DIR": str(config), "BENCHKIT_CACHE_DIR": str(tmp_path / "cache"),
               "BENCHKIT_ROOT": str(CHECKOUT), "PYTHONPATH": str(CHECKOUT), "TMPDIR": str(scratch)}
        done = subprocess.run(
            [*BENCHKIT, "run", str(CHECKOUT / "arms.d/raw-api.yaml"), "--task", HOSTILE,
             "--task", INNOCENT, "--jobs", "2", "--host", forge.url, "--token", forge.token,
             "--store", str(store), "--no-report", "--no-replay-failures"],
            env=env, cwd=tmp_path, capture_output=True, text=True, timeout=DEADLINE * 10)
        assert model.sent.is_set(), done.stdout + done.stderr
    samples = {task: [json.loads(line) for line in
                      (store / "raw-api" / f"{task}.jsonl").read_text().splitlines()]
               for task in (HOSTILE, INNOCENT)}
    hostile, innocent = samples[HOSTILE][0], samples[INNOCENT][0]
    assert (hostile["outcome"], hostile["failure_class"]) == ("invalid", "leak"), hostile
    assert any("Sudo" in leak for leak in hostile["leaks"])
    assert innocent["valid"] and innocent["outcome"] == "passed", innocent
    assert not [r for r in innocent["requests"] if r["scope"] in ("refused", "unauthorized")]
    assert Path(store).is_dir()


# --- #40: SIGTERM while a host request is held, through the real CLI ------------------

class HoldingProxy:
    """A host in front of the forge that forwards every request but holds, until
    released, those whose User-Agent says `hold-me`."""

    def __init__(self, upstream: str):
        from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
        proxy = self
        self.held, self.release = threading.Event(), threading.Event()

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args) -> None:
                pass

            def _forward(self) -> None:
                if "hold-me" in self.headers.get("User-Agent", ""):
                    proxy.held.set()
                    proxy.release.wait(DEADLINE * 5)
                length = int(self.headers.get("Content-Length") or 0)
                headers = {k: v for k, v in self.headers.items()
                           if k.lower() not in ("host", "content-length", "connection")}
                reply = requests.request(self.command, upstream.rstrip("/") + self.path,
                                         headers=headers, data=self.rfile.read(length),
                                         allow_redirects=False, timeout=DEADLINE)
                self.send_response(reply.status_code)
                for name, value in reply.headers.items():
                    if name.lower() not in ("content-length", "transfer-encoding", "connection",
                                            "content-encoding"):
                        self.send_header(name, value)
                self.send_header("Content-Length", str(len(reply.content)))
                self.end_headers()
                self.wfile.write(reply.content)

            do_GET = do_POST = do_PATCH = do_PUT = do_DELETE = do_HEAD = _forward

        self._server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._server.daemon_threads = True
        self.url = f"http://127.0.0.1:{self._server.server_address[1]}/"
        threading.Thread(target=self._server.serve_forever, daemon=True).start()

    def close(self) -> None:
        self.release.set()
        self._server.shutdown()
        self._server.server_close()


@pytest.mark.slow
@pytest.mark.skipif(missing() is not None, reason="needs bubblewrap and socat")
def test_sigterm_while_a_host_request_is_held_stops_the_run_at_once(tmp_path):
    """The agent's request is held by the host; SIGTERM: the run ends (143) within a few
    seconds, not once the held request gives up (the old gateway waited 30 s for it)."""
    store, config, scratch = tmp_path / "results", tmp_path / "claude", tmp_path / "tmp"
    config.mkdir()
    scratch.mkdir()
    with Forge() as forge, ScriptedModel([]) as model:
        proxy = HoldingProxy(forge.url)

        def turn_for(index: int, request: dict):
            if tool_results(request):
                return say("Done.")
            text = json.dumps(request)
            api = re.search(r"API base URL: (http://127\.0\.0\.1:[0-9]+/api/v1)", text)
            token = re.search(r"access token is (bk_[0-9a-f]+)", text)
            assert api and token, "the system prompt names no API or token"
            return bash(f"curl -s -A hold-me -H 'Authorization: token {token.group(1)}' "
                        f"{api.group(1)}/version")
        model.turn_for = turn_for  # type: ignore[method-assign]
        env = {**os.environ, "ANTHROPIC_BASE_URL": model.url, "ANTHROPIC_API_KEY": "sk-test",
               "CLAUDE_CONFIG_DIR": str(config), "BENCHKIT_CACHE_DIR": str(tmp_path / "cache"),
               "BENCHKIT_ROOT": str(CHECKOUT), "PYTHONPATH": str(CHECKOUT), "TMPDIR": str(scratch)}
        process = subprocess.Popen(
            [*BENCHKIT, "run", str(CHECKOUT / "arms.d/raw-api.yaml"), "--task", INNOCENT,
             "--host", proxy.url, "--token", forge.token, "--store", str(store), "--no-report",
             "--no-replay-failures"],
            env=env, cwd=tmp_path, text=True, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
            start_new_session=True)
        try:
            assert proxy.held.wait(DEADLINE * 4), "the agent's request never reached the host"
            started = time.monotonic()
            process.send_signal(15)
            stdout, stderr = process.communicate(timeout=DEADLINE * 2)
            took = time.monotonic() - started
        finally:
            if process.poll() is None:
                process.kill()
                process.communicate()
            proxy.close()
    assert process.returncode == 143, stdout + stderr
    assert took < 10, f"the run took {took:.1f} s to stop"


def _pkt(line: str) -> bytes:
    return b"%04x" % (len(line) + 4) + line.encode()


def test_a_gzip_git_body_is_inflated_within_the_limit_never_forwarded_as_a_bomb(gitea):
    """Gitea inflates a git body sent with `Content-Encoding: gzip` before git reads it:
    10 MiB of gzip made 3 GB of `have` lines, ~50 s of the host's work per request (a
    slow host is not charged to the arm, and the maintainer's host pays). The gateway
    inflates it itself within a request's limit and sends it plain: a fetch still
    works, a body inflating past the limit is refused before the host sees it."""
    client = Client(gitea.url, gitea.token)
    name = f"gw-gzip-{uuid.uuid4().hex[:6]}"
    client.post("/user/repos", json={"name": name, "auto_init": True, "default_branch": "main"})
    try:
        sha = client.get(f"/repos/{client.user}/{name}/branches/main")["commit"]["id"]
        want = _pkt(f"want {sha} side-band-64k ofs-delta\n") + b"0000"
        have = _pkt("have " + "1" * 40 + "\n") * 20000  # 1 MB plain, a few KiB in gzip
        with Gateway(gitea.url, limits=Limits(request_bytes=MIB // 2)) as gateway:
            grant = gateway.issue(client.user, name, gitea.token)

            def fetch(plain: bytes) -> requests.Response:
                return requests.post(
                    f"{grant.url}{client.user}/{name}.git/git-upload-pack",
                    data=gzip.compress(plain), timeout=DEADLINE,
                    headers={"Authorization": f"token {grant.token}",
                             "Content-Type": "application/x-git-upload-pack-request",
                             "Content-Encoding": "gzip"})

            fetched = fetch(want + _pkt("done\n"))
            assert fetched.status_code == 200 and b"PACK" in fetched.content
            bomb = fetch(want + have + _pkt("done\n"))
            assert bomb.status_code == 403, bomb.content[:200]
            assert gateway.idle(timeout=DEADLINE)
        first, second = grant.requests
        assert first["scope"] == "git" and second["scope"] == "refused"
        assert "inflated" in second["reason"] and "host_s" not in second
    finally:
        delete_repo(client, client.user, name)


def test_a_trials_record_stays_bounded_and_keeps_what_decides():
    """An agent looping on quick requests until its backstop would grow the record (and
    the sample) without end: the first KEPT requests are kept whole, then only those the
    audit and the attribution read, and the rest are counted."""
    from benchkit.gateway.grant import KEPT, Grant
    grant = Grant("t", "o", "r", "u")
    for n in range(3 * KEPT):
        grant.keep({"status": 200, "scope": "repo", "n": n})
        if n % 2 == 0:
            grant.keep({"status": 403, "scope": "refused", "n": n})
    assert len(grant.requests) == 2 * KEPT  # of 4.5 x KEPT sent
    assert all(e["scope"] == "refused" for e in grant.requests[KEPT:])  # past KEPT: what decides
    assert grant.unrecorded == 3 * KEPT + 3 * KEPT // 2 - 2 * KEPT
