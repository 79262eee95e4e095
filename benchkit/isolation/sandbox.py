"""The OS boundary around an agent's shell: every Bash command of a trial runs in a
bubblewrap sandbox (what it costs per call: benchmarks/sandbox_bench.py, in docs/testing.md).

    sandbox = Sandbox(root, workdir=..., home=..., tmp=..., env=..., host_url=...)
    with sandbox:                       # the prefix script written, the bridge started
        CLAUDE_CODE_SHELL_PREFIX=sandbox.prefix   # the CLI runs `prefix SCRIPT` per call

Inside: of the host, only what the arm's tool needs, read-only (an allow-list: the
system's programs and libraries and a minimal /etc, system.py; the tool's own
installation, shown.py; no checkout, store, host data directory or other user's file);
the trial's work directory, HOME, TMPDIR and /tmp (one private directory) writable; no
other process visible (own PID namespace); capabilities dropped; no nested namespaces;
an environment built from an allowlist (PATH, LANG, TERM, HOME, TMPDIR, the arm's own
variables), with `env -i` before bwrap so not even /proc/1/environ holds the harness's;
a network namespace whose only way out is a socat bridge to one loopback port, the
trial gateway's (benchkit.gateway), never the Gitea host's own (127.0.0.1:PORT inside
-> a UNIX socket -> the gateway's 127.0.0.1:PORT outside). Nothing a command
leaves behind steers the next one's mounts: read-only files are mounted from copies in
`root`, and no mount's source or destination passes through a directory the agent
could have replaced (mounts.py).

`probe()` proves all of that through the same prefix, once per run, before a token is
spent: a run that cannot confine refuses to start (benchkit run --unconfined aside).
"""

from __future__ import annotations

import os
import secrets
import shlex
import shutil
import signal
import socket
import subprocess
import time
from dataclasses import dataclass, field
from pathlib import Path
from urllib.parse import urlsplit

from benchkit import journal
from benchkit.executable import write_executable
from benchkit.lifetime import dies_with_thread
from benchkit.stopping import marked

from .errors import IsolationError
from .mounts import Mounts
from .shown import inside, outermost_kept, tool_view
from .system import etc_copy, system_view

INSTALL = "apt-get install bubblewrap socat"
NAMESPACES = ("--die-with-parent", "--new-session", "--unshare-user", "--disable-userns",
              "--cap-drop", "ALL", "--unshare-pid", "--unshare-ipc", "--unshare-uts",
              "--unshare-cgroup-try", "--unshare-net")
# Variables of the harness's own that may pass into the sandbox (values, not secrets).
PASSED = ("LANG", "LC_ALL", "TERM")
BRIDGE_WAIT_S = 2.0
# The bridge's processes on the harness's side, one a connection: bounded (a flood
# waits in the socket's backlog), above what the gateway serves a trial at once.
BRIDGE_CHILDREN = 64
# The connections that wait there for a process, as the kernel holds them (socat's default
# is 5: a burst of parallel requests beyond the children met a refused connection).
BRIDGE_BACKLOG = 1024


class SandboxError(IsolationError):
    """The agent's shell cannot be confined here: the run must not start confined."""


def missing() -> str | None:
    """Why this machine cannot confine (a one-line reason naming the fix), or None."""
    absent = [name for name in ("bwrap", "socat") if shutil.which(name) is None]
    if absent:
        return (f"{' and '.join(absent)} not installed: the agent's shell cannot be confined; "
                f"install with `{INSTALL}` (in a checkout, `bash scripts/setup` does)")
    return None


def bridge_target(host_url: str) -> tuple[str, int]:
    """(address, port) of the host the agent's shell may reach; a SandboxError when the
    sandbox cannot offer it at the same address inside (only loopback hosts can be)."""
    parts = urlsplit(host_url)
    port = parts.port or {"http": 80, "https": 443}.get(parts.scheme, 0)
    address = parts.hostname or ""
    if address == "localhost":
        address = "127.0.0.1"
    if not address.startswith("127.") or port < 1024:
        raise SandboxError(f"the sandbox bridges only a loopback host on a port >= 1024, not "
                           f"{host_url} (pass --unconfined to run without the sandbox)")
    return address, port


@dataclass
class Sandbox:
    """One trial's sandbox. `root` is a private directory of the harness (0700), in no
    directory the agent writes: the prefix script and the read-only files' copies
    live there. `env` is the arm's declared environment (its curated PATH included);
    `writable` more trial directories (the arm's config directory, the CLI's own
    temporary directory, where it tracks the shell's cwd); `host_url` the one host
    reachable (None: no network)."""

    root: Path
    workdir: Path
    home: Path
    tmp: Path
    env: dict[str, str] = field(default_factory=dict, repr=False)
    host_url: str | None = None
    writable: tuple[Path, ...] = ()
    masked: tuple[Path, ...] = ()  # directories inside those, emptied (the CLI's sockets)
    readonly: tuple[Path, ...] = ()  # files inside those, read-only (the arm's credential files)
    markers: dict[str, str] = field(default_factory=dict)  # outside the sandbox: kill_marked finds bwrap
    _bridge: subprocess.Popen[bytes] | None = field(default=None, repr=False)
    _net: Path | None = field(default=None, repr=False)

    @property
    def prefix(self) -> Path:
        return self.root / "shell-prefix"

    @property
    def socket(self) -> Path:
        """The bridge's socket, in a directory of its own with a short path (a UNIX
        socket's path is limited to 107 bytes)."""
        if self._net is None:
            self._net = Path(journal.mkdtemp("benchkit-net-", _short_tmp()))  # journalled: a kill leaves none
        return self._net / "host.sock"

    def shell_env(self) -> dict[str, str]:
        """The allowlist: what the agent's shell sees, and nothing else."""
        env = {key: os.environ[key] for key in PASSED if os.environ.get(key)}
        env.setdefault("LANG", "C.UTF-8")
        env.update(HOME=str(self.home), TMPDIR="/tmp", PATH="/usr/bin:/bin")
        env.update(self.env)  # the arm's own (tea's HOME, its PATH) win
        return env

    def __enter__(self) -> Sandbox:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def start(self) -> Sandbox:
        reason = missing()
        if reason:
            raise SandboxError(reason)
        target = bridge_target(self.host_url) if self.host_url else None
        for directory in (self.root, self.workdir, self.home, self.tmp):
            directory.mkdir(parents=True, exist_ok=True)
        self.root.chmod(0o700)
        self._keep_pristine()
        if target is not None:
            self._bridge = subprocess.Popen(  # it dies with this thread, even a SIGKILL's
                dies_with_thread([shutil.which("socat") or "socat",
                                  f"UNIX-LISTEN:{self.socket},fork,max-children={BRIDGE_CHILDREN},"
                                  f"backlog={BRIDGE_BACKLOG}",
                                  f"TCP:{target[0]}:{target[1]}"]),
                stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                env={"PATH": os.defpath, **self.markers})
            _wait_for(self.socket)
        write_executable(self.prefix, self.script(target))
        return self

    def stop(self) -> None:
        bridge, self._bridge = self._bridge, None
        if bridge is not None and bridge.poll() is None:
            bridge.send_signal(signal.SIGKILL)
            bridge.wait()
        net, self._net = self._net, None
        if net is not None:
            shutil.rmtree(net, ignore_errors=True)
        shutil.rmtree(self._pristine, ignore_errors=True)

    @property
    def _pristine(self) -> Path:
        """Where the read-only files' copies live: in `root`, which no bind shows."""
        return self.root / "readonly"

    def _keep_pristine(self) -> None:
        """Copy each read-only file, as it is before the agent's first command, into
        `root`; every command mounts the copy. The file's own path lies in a directory
        the agent writes: swapped for a link there, bwrap would follow it on the
        harness's side and mount whatever it names. The sandbox's /etc is made
        beside them (system.etc_copy)."""
        if inside(str(self.root), self._agent_writable()):
            raise SandboxError(f"the sandbox's own directory {self.root} lies in a directory "
                               "the agent's shell writes")
        shutil.rmtree(self._pristine, ignore_errors=True)
        self._pristine.mkdir(mode=0o700)
        for number, path in enumerate(self.readonly):
            try:
                fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW)
            except OSError as exc:
                raise SandboxError(f"read-only file {path}: {exc.strerror}") from None
            with os.fdopen(fd, "rb") as source, \
                    open(self._pristine / str(number), "xb", opener=_private) as copy:
                shutil.copyfileobj(source, copy)
        etc_copy(self._etc, self.shell_env()["HOME"])

    @property
    def _etc(self) -> Path:
        """This sandbox's /etc (system.etc_copy), in `root`."""
        return self._pristine / "etc"

    def _agent_writable(self) -> list[str]:
        """The directories the agent's shell writes, as the harness sees them."""
        return [os.path.realpath(p) for p in (self.tmp, self.home, self.workdir, *self.writable)]

    def script(self, target: tuple[str, int] | None) -> str:
        """The prefix: `prefix SCRIPT` runs SCRIPT confined. Only fixed arguments are
        written here; SCRIPT reaches the inner bash as "$1", never re-parsed."""
        mounts = Mounts()  # on bwrap's own empty root, made read-only once built
        mounts.ro_bind(str(self._etc), "/etc")  # first: system's binds of /etc go on it
        system = system_view()
        for shown in system.binds:
            mounts.ro_bind(shown, shown)
        for where, link in system.links:
            mounts.symlink(link, where)
        mounts.fresh("/dev", "--dev")
        mounts.fresh("/proc", "--proc")
        mounts.bind(str(self.tmp), "/tmp")
        writable = self._agent_writable()
        tool = tool_view(self.env.get("PATH", ""), _inner_programs(target))
        for shown in tool.binds:
            if not inside(shown, writable):  # shown already, and the agent's to swap
                mounts.ro_bind(shown, shown)
        for where, link in tool.links:
            if not inside(os.path.dirname(where), writable):  # `where` itself is a link
                mounts.symlink(link, where)
        mounts.ro_bind(str(self.socket.parent), str(self.socket.parent))
        for kept in outermost_kept((self.tmp, self.home, self.workdir, *self.writable)):
            mounts.bind(kept, kept)
        for path in self.masked:
            mounts.fresh(str(path))
        for number, path in enumerate(self.readonly):
            mounts.ro_bind(str(self._pristine / str(number)), str(path))
        bwrap = [shutil.which("bwrap") or "bwrap", *NAMESPACES, *mounts.args]
        bwrap += ["--remount-ro", "/", "--clearenv"]
        for key, value in self.shell_env().items():
            bwrap += ["--setenv", key, value]
        inner = _inner(target, self.socket)
        markers = [f"{key}={value}" for key, value in self.markers.items()]
        return ("#!/bin/bash\n"
                "# benchkit: this trial's Bash commands run confined "
                "(benchkit/isolation/sandbox.py)\n"
                f"exec /usr/bin/env -i {shlex.join(markers)} {shlex.join(bwrap)} "
                f'--chdir "$PWD" -- /bin/bash -c {shlex.quote(inner)} benchkit-sandbox "$1"\n')


def _inner_programs(target: tuple[str, int] | None) -> list[str]:
    """The programs the prefix runs inside before the agent's script (the bridge's end
    and its wait), wherever this host installed them."""
    if target is None:
        return []
    return [shutil.which("socat") or "socat", shutil.which("sleep") or "/bin/sleep"]


def _inner(target: tuple[str, int] | None, sock: Path) -> str:
    """What runs first inside: the bridge to the gateway's port (when there is one),
    ready before the agent's script starts, then the script itself."""
    if target is None:
        return 'exec /bin/bash -c "$1"'
    address, port = target
    listen = f"TCP-LISTEN:{port},bind={address},fork,reuseaddr"
    hexport = f"{port:04X}"
    socat, sleep = shutil.which("socat") or "socat", shutil.which("sleep") or "/bin/sleep"
    return (f"{shlex.quote(socat)} {listen} UNIX-CONNECT:{shlex.quote(str(sock))} "
            f"</dev/null >/dev/null 2>&1 &\n"
            "for _ in {1..400}; do\n"
            f"  while read -r _ local _ state _; do\n"
            f"    [[ $local == *:{hexport} && $state == 0A ]] && break 2\n"
            f"  done </proc/net/tcp\n"
            f"  {shlex.quote(sleep)} 0.005\n"
            f"done\n"
            f'exec /bin/bash -c "$1"')


def _private(path: str, flags: int) -> int:
    return os.open(path, flags, 0o600)


def _short_tmp() -> str | None:
    """/tmp when it is there to write (the shortest path), else the default."""
    return "/tmp" if os.access("/tmp", os.W_OK) else None


def _wait_for(path: Path) -> None:
    deadline = time.monotonic() + BRIDGE_WAIT_S
    while not path.exists():
        if time.monotonic() > deadline:
            raise SandboxError(f"the network bridge did not start (no {path})")
        time.sleep(0.005)


# --- the check at the start of a run ------------------------------------------------

PROBE = r"""
out=
w=0; for p in "$1"/x /usr/x /etc/x; do ( : > "$p" ) 2>/dev/null && w=1; done; out+="write=$w "
n=0; for d in /proc/[0-9]*; do n=$((n+1)); done; out+="procs=$n "
s=0; for e in /proc/[0-9]*/environ; do
  [[ $(tr '\0' '\n' < "$e" 2>/dev/null) == *"$2"* ]] && s=1
done
[[ $(env) == *"$2"* ]] && s=1; out+="secret=$s "
r=0; ( exec 3<>/dev/tcp/127.0.0.1/"$3" ) 2>/dev/null && r=1; out+="reach=$r "
u=1; /usr/bin/unshare -U true 2>/dev/null || u=0; out+="userns=$u "
m=0; [[ -e $4 ]] && m=1; out+="shown=$m"
echo "$out"
"""


def probe() -> str | None:
    """Run a probe command through a real prefix; None when every property holds, else
    a one-line reason. It proves: the host read-only (a write outside the trial's
    directories reaches nothing), no foreign process visible, no secret of the harness
    in any environment visible (a canary planted in the prefix's own), other loopback
    ports unreachable (a listener that must see no connection), no nested namespace,
    and the host shown as an allow-list: benchkit's own files (a checkout's, where the
    answer key lies) are not there."""
    reason = missing()
    if reason:
        return reason
    canary = "benchkit-canary-" + secrets.token_hex(8)
    with journal.tempdir("benchkit-probe-") as scratch, \
            socket.socket() as listener:
        root = Path(scratch)
        outside = root / "outside"
        outside.mkdir()
        listener.bind(("127.0.0.1", 0))
        listener.listen(1)
        listener.setblocking(False)
        port = listener.getsockname()[1]
        sandbox = Sandbox(root / "sandbox", workdir=root / "work", home=root / "home",
                          tmp=root / "tmp")
        # A process of the harness's side holding the canary: its environment must
        # stay out of sight, as must the prefix's own (bwrap's, without `env -i`).
        sibling = subprocess.Popen(["sleep", "30"],  # marked: it dies with a killed run
                                   env=marked({**os.environ, "BENCHKIT_PROBE_SECRET": canary}))
        try:
            with sandbox:
                done = subprocess.run(
                    [str(sandbox.prefix), f"bash -c {shlex.quote(PROBE)} probe "
                     f"{shlex.quote(str(outside))} {canary} {port} {shlex.quote(__file__)}"],
                    cwd=sandbox.workdir, capture_output=True, text=True, timeout=30,
                    env={**os.environ, "BENCHKIT_PROBE_SECRET": canary})
        except (OSError, subprocess.TimeoutExpired, SandboxError) as exc:
            return f"the sandbox did not start ({exc})"
        finally:
            sibling.kill()
            sibling.wait()
        try:
            listener.accept()
            reached = True
        except BlockingIOError:
            reached = False
        return _verdict(done, reached, list(outside.iterdir()))


def _verdict(done: subprocess.CompletedProcess[str], reached: bool, written: list[Path]) -> str | None:
    fields = dict(item.split("=", 1) for item in done.stdout.split() if "=" in item)
    if done.returncode != 0 or len(fields) < 6:
        detail = (done.stderr.strip().splitlines() or ["no output"])[-1]
        return f"bubblewrap cannot confine here: {detail} (try `{INSTALL}`, or --unconfined)"
    problems = []
    if fields.get("write") != "0" or written:
        problems.append("the host is writable from inside")
    if int(fields.get("procs", "99")) > 6:
        problems.append(f"{fields['procs']} processes visible")
    if fields.get("secret") != "0":
        problems.append("the harness's environment is visible")
    if fields.get("reach") != "0" or reached:
        problems.append("another loopback port is reachable")
    if fields.get("userns") != "0":
        problems.append("nested namespaces are allowed")
    if fields.get("shown") != "0":
        problems.append(f"benchkit's own files are visible ({__file__})")
    return f"the sandbox is not in force: {'; '.join(problems)}" if problems else None
