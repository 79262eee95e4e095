"""A real Gitea on loopback, started like the forge: the pinned build (`bash scripts/setup
--host gitea`) as a throwaway host for a run (`benchkit run --host gitea`,
benchkit.preflight.host), for `validate --live --host gitea`, the tests and the benchmarks.

    with Gitea() as gitea:            # the pinned build (scripts/setup --host gitea), a free port
        gitea.url, gitea.api_url      # "http://127.0.0.1:PORT/", ".../api/v1"
        gitea.user, gitea.token       # the admin user ("bench") and its all-scopes token
        gitea.create_token("bench")   # another token of that user
        gitea.startup_seconds         # how long migrate + admin user + web took

The server dies with the thread that starts it (start it from one that lives as long
as it must), and with the command's stop (benchkit.stopping: its processes are marked).
Each instance has a fresh work directory (app.ini, SQLite database, repositories,
indexers, logs), removed on exit; under a command's stop its watchdog removes it even
after a SIGKILL (benchkit.lifetime), and the run's journal lists it (benchkit.journal).
The issue indexer keeps Gitea's default (bleve behind an asynchronous queue), so
keyword search lags creation as on a live host.
Unlike the forge, it serves no request log over HTTP (benchkit's audit finds none) and
has no fault injection; `requests()` reads Gitea's own access log from its work
directory, for benchmarks and tests.
"""

from __future__ import annotations

import atexit
import os
import pwd
import secrets
import shutil
import socket
import subprocess
import time
from pathlib import Path

import requests

from benchkit import journal, stopping
from benchkit.errors import HarnessError
from benchkit.gitea.tools import ToolUnavailable, built
from benchkit.lifetime import dies_with_thread

BINARY_ENV = "BENCHKIT_GITEA"  # another Gitea binary (its directory must hold templates/, options/)
START_TIMEOUT = 120.0  # a cold SQLite migration on a slow, shared machine
_RUNNING: set[Gitea] = set()

APP_INI = """\
APP_NAME = benchkit test Gitea
RUN_MODE = prod
RUN_USER = {run_user}
WORK_PATH = {work}

[server]
PROTOCOL = http
HTTP_ADDR = 127.0.0.1
HTTP_PORT = {port}
ROOT_URL = http://127.0.0.1:{port}/
DISABLE_SSH = true
START_SSH_SERVER = false
LFS_START_SERVER = false
OFFLINE_MODE = true
STATIC_ROOT_PATH = {static}
APP_DATA_PATH = {work}/data

[database]
DB_TYPE = sqlite3
; A private cache: Gitea 1.26.0 appends `?cache=shared&...` to PATH as it is, so its own
; `cache` reaches SQLite as a key it does not know (`?cache`) and this one holds. Shared,
; connections block each other on table locks and wait for go-sqlite3's unlock
; notification, which under concurrent writes can wait for ever (seen: every request
; held, the process idle); one connection deadlocks instead on the settings cache (a
; transaction waits for its lock while the lock's holder waits for the connection; seen
; in a goroutine dump). Private, with WAL, readers never wait on a writer, and a writer
; waits for another up to SQLITE_TIMEOUT (ms; Gitea's 500 fails writes under load).
PATH = {work}/data/gitea.db?cache=private&
SQLITE_JOURNAL_MODE = WAL
SQLITE_TIMEOUT = {sqlite_timeout}

[repository]
ROOT = {work}/repositories

[security]
INSTALL_LOCK = true
SECRET_KEY = {secret}

[service]
DISABLE_REGISTRATION = true
DEFAULT_KEEP_EMAIL_PRIVATE = true

[mailer]
ENABLED = false

[session]
PROVIDER = memory

[actions]
ENABLED = false

[cron]
ENABLED = false

[log]
MODE = file
LEVEL = Info
ROOT_PATH = {work}/log
logger.access.MODE = file
; the path alone: a token sent as ?token= never reaches the log
ACCESS_LOG_TEMPLATE = {{{{.Ctx.Req.Method}}}} {{{{.Ctx.Req.URL.Path}}}} {{{{.ResponseWriter.Status}}}} {{{{.Ctx.Req.UserAgent}}}}
"""


class GiteaStartError(HarnessError):
    """The real Gitea would not start or answer (the message names the step and its output)."""


class Gitea:
    def __init__(self, user: str = "bench", *, binary: str | os.PathLike | None = None,
                 start_timeout: float = START_TIMEOUT, sqlite_timeout_ms: int = 30_000):
        self.binary = Path(binary) if binary else built("gitea", BINARY_ENV)
        self.static_root = self.binary.parent
        missing = [d for d in ("templates", "options") if not (self.static_root / d).is_dir()]
        if missing:
            raise ToolUnavailable(f"{self.static_root} lacks {', '.join(missing)}/ (Gitea is "
                                  "built without bindata): run `bash scripts/setup --host gitea`")
        self.version = ""  # as the running server reports it
        self.user = user
        self.password = secrets.token_urlsafe(18)
        self.start_timeout = start_timeout
        self.sqlite_timeout_ms = sqlite_timeout_ms  # how long a write waits for another's
        self.token: str | None = None
        self.work: Path | None = None
        self.port = 0
        self.url = self.api_url = ""
        self.startup_seconds = 0.0
        self._process: subprocess.Popen | None = None
        self._passwords = {user: self.password}
        self._token_names: dict[str, tuple[str, str]] = {}  # token -> (user, token name)

    # -- lifecycle ----------------------------------------------------------------
    def start(self) -> Gitea:
        started = time.monotonic()
        self.work = Path(journal.mkdtemp("benchkit-gitea-"))  # a kill leaves none
        stopping.removed_with_command(self.work)
        _RUNNING.add(self)
        try:
            self.port = _free_port()
            self.url = f"http://127.0.0.1:{self.port}/"
            self.api_url = f"{self.url}api/v1"
            self._write_ini()
            self._cli("migrate")
            output = self._cli("admin", "user", "create", "--username", self.user,
                               "--password", self.password, "--email", f"{self.user}@example.com",
                               "--admin", "--must-change-password=false", "--access-token",
                               "--access-token-name", "benchkit", "--access-token-scopes", "all")
            self.token = _token_from(output)
            self._token_names[self.token] = (self.user, "benchkit")
            self._serve()
            self.version = requests.get(f"{self.api_url}/version", timeout=10).json()["version"]
        except BaseException:
            self.stop()
            raise
        self.startup_seconds = round(time.monotonic() - started, 3)
        return self

    def stop(self) -> None:
        process, self._process = self._process, None
        if process is not None and process.poll() is None:
            process.terminate()
            try:
                process.wait(timeout=15)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait(timeout=5)
        work, self.work = self.work, None
        if work is not None:
            shutil.rmtree(work, ignore_errors=True)
            journal.remove("tempdir", path=str(work))
            stopping.removed_already(work)
        _RUNNING.discard(self)

    def __enter__(self) -> Gitea:
        return self.start()

    def __exit__(self, *exc) -> None:
        self.stop()

    def __repr__(self) -> str:  # never the token
        return f"Gitea(url={self.url!r}, user={self.user!r})"

    # -- the Python API the tests use (mirrors the forge's where Gitea can) ---------
    def create_user(self, name: str, *, admin: bool = False) -> str:
        """Create a user and return a new all-scopes token for it."""
        password = secrets.token_urlsafe(18)
        response = requests.post(f"{self.api_url}/admin/users", timeout=30,
                                 headers={"Authorization": f"token {self.token}"},
                                 json={"username": name, "email": f"{name}@example.com",
                                       "password": password, "must_change_password": False,
                                       "admin": admin})
        _expect(response, 201, f"create user {name}")
        if admin:
            patched = requests.patch(f"{self.api_url}/admin/users/{name}", timeout=30,
                                     headers={"Authorization": f"token {self.token}"},
                                     json={"login_name": name, "source_id": 0, "admin": True})
            _expect(patched, 200, f"make {name} an admin")
        self._passwords[name] = password
        return self.create_token(name)

    def create_token(self, user: str) -> str:
        """A new all-scopes token of a user this instance created (Gitea mints tokens
        only for the user's own basic credentials)."""
        name = f"benchkit-{secrets.token_hex(4)}"
        response = requests.post(f"{self.api_url}/users/{user}/tokens", timeout=30,
                                 auth=(user, self._passwords[user]),
                                 json={"name": name, "scopes": ["all"]})
        _expect(response, 201, f"create a token for {user}")
        token = response.json()["sha1"]
        self._token_names[token] = (user, name)
        return token

    def revoke_token(self, token: str) -> bool:
        """Delete a token this instance minted; whether there was one."""
        owner = self._token_names.pop(token, None)
        if owner is None:
            return False
        user, name = owner
        response = requests.delete(f"{self.api_url}/users/{user}/tokens/{name}", timeout=30,
                                   auth=(user, self._passwords[user]))
        return response.status_code == 204

    def requests(self) -> list[dict]:
        """Gitea's access log so far: method, path, status, user_agent per client request
        (its own git hooks' calls to /api/internal/ left out). It is written
        asynchronously: a request answered a moment ago may not be in yet."""
        path = self.work / "log" / "access.log" if self.work else None
        if path is None or not path.is_file():
            return []
        entries = []
        for line in path.read_text(encoding="utf-8", errors="replace").splitlines():
            method, path_, status, agent = (line.split(" ", 3) + ["", "", "", ""])[:4]
            if status.isdigit() and not path_.startswith("/api/internal/"):
                entries.append({"method": method, "path": path_, "status": int(status),
                                "user_agent": agent})
        return entries

    def log_text(self) -> str:
        """Gitea's console output and its own log so far (for a failure's message)."""
        if self.work is None:
            return ""
        texts = [path.read_text(encoding="utf-8", errors="replace")
                 for path in (self.work / "log" / "console.log", self.work / "log" / "gitea.log")
                 if path.is_file()]
        return "\n".join(text.strip() for text in texts if text.strip())

    # -- internals ----------------------------------------------------------------
    @property
    def _work(self) -> Path:
        """The work directory, which exists from `start` to `stop`."""
        if self.work is None:
            raise GiteaStartError("gitea is not started")
        return self.work

    def _write_ini(self) -> None:
        for sub in ("custom", "data", "log", "repositories"):
            (self._work / sub).mkdir()
        ini = APP_INI.format(run_user=_current_user(), work=self._work, port=self.port,
                             static=self.static_root, secret=secrets.token_hex(32),
                             sqlite_timeout=self.sqlite_timeout_ms)
        (self._work / "custom" / "app.ini").write_text(ini, encoding="utf-8")

    def _command(self, *args: str) -> list[str]:
        return [str(self.binary), "--config", str(self._work / "custom" / "app.ini"),
                "--work-path", str(self._work), *args]

    def _environment(self) -> dict:
        env = stopping.marked({k: v for k, v in os.environ.items() if not k.startswith("GITEA_")})
        env.update(HOME=str(self._work), GITEA_WORK_DIR=str(self._work),
                   GITEA_CUSTOM=str(self._work / "custom"))
        if os.geteuid() == 0:  # CI containers run as root; Gitea refuses it unless told
            env["GITEA_I_AM_BEING_UNSAFE_RUNNING_AS_ROOT"] = "true"
        return env

    def _cli(self, *args: str) -> str:
        try:
            done = subprocess.run(self._command(*args), env=self._environment(), cwd=self._work,
                                  capture_output=True, text=True, timeout=self.start_timeout)
        except subprocess.TimeoutExpired:
            raise GiteaStartError(f"gitea {args[0]} took over {self.start_timeout:g} s") from None
        if done.returncode != 0:
            tail = (done.stderr or done.stdout).strip()[-1500:]
            raise GiteaStartError(f"gitea {' '.join(args[:3])} exited {done.returncode}: {tail}")
        return done.stdout

    def _serve(self) -> None:
        # Its console output goes to a file: a pipe nobody reads would stall it once full.
        with open(self._work / "log" / "console.log", "wb") as console:
            # Under a parent-death signal: a test session killed outright (SIGKILL, a CI
            # timeout) leaves no Gitea serving on behind it.
            self._process = subprocess.Popen(dies_with_thread(self._command("web")),
                                             env=self._environment(),
                                             cwd=self._work, stdin=subprocess.DEVNULL,
                                             stdout=console, stderr=subprocess.STDOUT,
                                             start_new_session=True)
        deadline = time.monotonic() + self.start_timeout
        while time.monotonic() < deadline:
            if self._process.poll() is not None:
                raise GiteaStartError(f"gitea web exited {self._process.returncode} on start: "
                                      f"{self.log_text()[-1500:]}")
            try:
                if requests.get(f"{self.api_url}/version", timeout=2).status_code == 200:
                    return self._answers_as_ours()
            except requests.RequestException:
                pass
            time.sleep(0.1)
        raise GiteaStartError(f"gitea web did not answer on {self.url} within "
                         f"{self.start_timeout:g} s: {self.log_text()[-1500:]}")

    def _answers_as_ours(self) -> None:
        """The port was chosen free, and another server may have taken it before Gitea
        bound it: it answers as the Gitea started here only if it knows its admin."""
        me = requests.get(f"{self.api_url}/user", timeout=10,
                          headers={"Authorization": f"token {self.token}"})
        body = me.json() if me.status_code == 200 else None
        if not isinstance(body, dict) or body.get("login") != self.user:
            raise GiteaStartError(f"127.0.0.1:{self.port} answers as another server (it took "
                                  f"the port after it was chosen free): not the Gitea started "
                                  f"here; run again")


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def _current_user() -> str:
    return pwd.getpwuid(os.geteuid()).pw_name


def _token_from(output: str) -> str:
    """The token `admin user create --access-token` prints on its last line."""
    for line in reversed(output.splitlines()):
        if "Access token was successfully created" in line:
            return line.rsplit(" ", 1)[-1].strip()
    raise GiteaStartError("gitea admin user create printed no access token")


def _expect(response: requests.Response, status: int, what: str) -> None:
    if response.status_code != status:
        raise GiteaStartError(f"Gitea would not {what}: HTTP {response.status_code}: "
                         f"{response.text.strip()[:300]}")


def _stop_all() -> None:
    """No Gitea outlives the interpreter that started it (a test run cut short)."""
    for gitea in list(_RUNNING):
        gitea.stop()


atexit.register(_stop_all)
