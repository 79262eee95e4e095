"""SIGTERM (and SIGHUP, SIGINT) in each phase of a real `benchkit run` (the command
line as a subprocess, the real CLI against the scripted model): pre-flight's tool
probe, a trial, the end-of-run failure replay, and the report's rendering. Each phase
is caught on an event, never after a sleep: a process of its own (`sleep N`, an N no
other phase uses) running under the run, or the report's reader opening a transcript
that is a FIFO. Then: exit 128 + the signal, no process of the run alive (this test
adopts the run's orphans while it runs, and looks for processes marked with the run's
environment), no temporary directory or file holding the host's token, no repository
on the host, and the report set from before the run byte for byte, with the line that
says so. On the forge for every phase, and on a real Gitea for the trial and the
failure replay, where leftover repositories matter.
"""

from __future__ import annotations

import contextlib
import ctypes
import errno
import json
import os
import re
import shutil
import signal
import subprocess
import time
import uuid
from pathlib import Path

import pytest
from conftest import BENCHKIT, CHECKOUT

from benchkit.agent.scripted import ScriptedModel, bash, say
from benchkit.forge import Forge
from benchkit.gitea import Client

pytestmark = pytest.mark.slow
TASK = "close-csv-export-issue"  # a mutation: an agent that only talks fails it
TOKEN = "benchkit-stop-phases-token-0123456789"
# The `sleep` each phase is caught in (its argument names the phase).
PROBE_SLEEP, TRIAL_SLEEP, REPLAY_SLEEP = "987651", "987650", "987652"
PR_SET_CHILD_SUBREAPER = 36
DEADLINE = 300  # seconds: bounds a hang, never paces the test


class StallsOnReplay(ScriptedModel):
    """The agent's one command passes at once on the trial's own repository and sleeps
    on any other: only the failure replay, which repeats it on a fresh repository (its
    name swapped in wherever it stands whole), sleeps. Then the agent claims success:
    the trial fails, and is replayed."""

    def turn_for(self, index: int, request: dict):
        if index == 0:
            found = re.search(r"Repository: [^/\s\"]+/([\w.-]+)", json.dumps(request))
            assert found, "the system prompt names no repository"
            repo = found.group(1)
            return bash(f'[ "{repo}" = "{repo[:4]}""{repo[4:]}" ] || sleep {REPLAY_SLEEP}')
        return say("Done: the issue is closed.")


def wait_for(condition, what: str) -> None:
    deadline = time.monotonic() + DEADLINE
    while not condition():
        assert time.monotonic() < deadline, f"never happened: {what}"
        time.sleep(0.05)


def processes() -> dict[int, tuple[int, str, bytes, bytes]]:
    """pid -> (parent, state, command line, environment) of every process readable."""
    found = {}
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            stat = Path(f"/proc/{entry}/stat").read_text()
            cmdline = Path(f"/proc/{entry}/cmdline").read_bytes()
            try:
                environ = Path(f"/proc/{entry}/environ").read_bytes()
            except OSError:
                environ = b""
        except OSError:
            continue
        state, parent = stat.rsplit(")", 1)[1].split()[:2]
        found[int(entry)] = (int(parent), state, cmdline, environ)
    return found


def sleeping(argument: str, run: int) -> bool:
    """Whether a `sleep ARGUMENT` (by any path to sleep) runs under the process `run`."""
    table = processes()
    for pid, (_, _, cmdline, _) in table.items():
        words = cmdline.split(b"\0")
        if len(words) > 1 and words[0].rsplit(b"/", 1)[-1] == b"sleep" \
                and words[1] == argument.encode():
            while pid in table and pid != run:
                pid = table[pid][0]
            if pid == run:
                return True
    return False


@contextlib.contextmanager
def adopting_orphans():
    """While inside, this process is a child subreaper: a process of the run whose
    parent dies becomes its child, not init's, so none escapes the count."""
    libc = ctypes.CDLL(None, use_errno=True)
    assert libc.prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0) == 0
    try:
        yield
    finally:
        libc.prctl(PR_SET_CHILD_SUBREAPER, 0, 0, 0, 0)


def survivors(children_before: set[int], marker: bytes) -> list[str]:
    """The run's live processes: those adopted by this process since it started (and
    their descendants), and any carrying the run's marker in its environment. Adopted
    zombies are reaped."""
    table = processes()
    me = os.getpid()
    for pid, (parent, state, _, _) in table.items():
        if parent == me and state == "Z" and pid not in children_before:
            with contextlib.suppress(ChildProcessError):
                os.waitpid(pid, os.WNOHANG)
    live = {pid: row for pid, row in table.items() if row[1] != "Z"}
    roots = {pid for pid, (parent, *_) in live.items()
             if parent == me and pid not in children_before}

    def of_the_run(pid: int) -> bool:
        seen = set()
        while pid in live and pid not in seen:
            if pid in roots:
                return True
            seen.add(pid)
            pid = live[pid][0]
        return False

    return [f"{pid}: {shown(row[2])}" for pid, row in live.items()
            if of_the_run(pid) or marker in row[3]]


def shown(cmdline: bytes) -> str:
    return cmdline.replace(b"\0", b" ").decode(errors="replace")[:120]


def report_set(reports: Path) -> dict[str, bytes]:
    return {str(p.relative_to(reports)): p.read_bytes()
            for p in sorted(reports.rglob("*")) if p.is_file()}


def holding(directory: Path, secret: str) -> list[str]:
    found = []
    for path in directory.rglob("*"):
        with contextlib.suppress(OSError):
            if path.is_file() and secret.encode() in path.read_bytes():
                found.append(str(path))
    return found


@pytest.fixture(scope="module")
def previous(tmp_path_factory):
    """A store and the report set its run rendered: the main job on one read task
    (embedded forge, replay driver), run once for the module."""
    root = tmp_path_factory.mktemp("previous")
    env = {**os.environ, "BENCHKIT_ROOT": str(CHECKOUT), "PYTHONPATH": str(CHECKOUT),
           "BENCHKIT_CACHE_DIR": str(root / "cache")}
    done = subprocess.run([*BENCHKIT, "run", str(CHECKOUT / "arms.d/raw-api.yaml"), "--driver",
                           "replay", "--task", "read-open-issue-count", "--store",
                           str(root / "results"), "--reports", str(root / "reports")],
                          env=env, cwd=root, capture_output=True, text=True, timeout=DEADLINE)
    assert done.returncode == 0, done.stdout + done.stderr
    assert (root / "reports/report.html").is_file() and (root / "reports/trials").is_dir()
    return root


def probe_sleeps(directory: Path) -> Path:
    """raw-api, its tool probe made to sleep first."""
    text = (CHECKOUT / "arms.d/raw-api.yaml").read_text()
    assert "    run: >-\n      curl" in text
    directory.mkdir()
    arm = directory / "raw-api.yaml"
    arm.write_text(text.replace("    run: >-\n      curl",
                                f"    run: >-\n      sleep {PROBE_SLEEP};\n      curl"))
    return arm


def sending(signum: int):
    def send(process: subprocess.Popen) -> int:
        process.send_signal(signum)
        return 128 + signum
    return send


sigterm = sending(signal.SIGTERM)


def sigint_as_timeout_sends_it(process: subprocess.Popen) -> int:
    """`timeout -s INT` signals the command, then its process group: twice at once."""
    process.send_signal(signal.SIGINT)
    os.killpg(process.pid, signal.SIGINT)
    return 130


def leftovers(url: str, admin_token: str) -> list[str]:
    """What a run may leave on a host: run and trial users (each with its repositories)
    and the administrator's own repositories."""
    with Client(url, admin_token) as client:
        users = client.get("/admin/users", params={"limit": 50})
        repos = client.get("/user/repos", params={"limit": 50})
    return sorted([f"user {u['login']}" for u in users
                   if u["login"].startswith(("benchkit-run-", "benchkit-trial-"))]
                  + [f"repository {r['full_name']}" for r in repos])


def stop_in(phase: str, tmp_path: Path, previous: Path, *, url: str, token: str, repos,
            send=sigterm):
    """Start the run, signal it (`send`: SIGTERM) once it is in `phase`, and check what
    it left."""
    store, reports = tmp_path / "results", tmp_path / "reports"
    shutil.copytree(previous / "results", store)
    shutil.copytree(previous / "reports", reports)
    if phase == "report":  # every trial page rendered anew, none taken from the last set
        (reports / "trials" / ".pages.json").unlink()
    before = report_set(reports)
    config, scratch = tmp_path / "claude", tmp_path / "tmp"
    config.mkdir()
    scratch.mkdir()
    marker = f"BENCHKIT_STOP_TEST={uuid.uuid4().hex}"
    arm, extra = CHECKOUT / "arms.d/raw-api.yaml", []
    fifo = None
    if phase == "preflight":
        arm = probe_sleeps(tmp_path / "arms")
    if phase == "report":  # the previous trial's transcript, which the trial pages read
        sample = json.loads((store / "raw-api/read-open-issue-count.jsonl").read_text()
                            .splitlines()[0])
        fifo = store / sample["transcript"]
        fifo.unlink()
        os.mkfifo(fifo)
        extra = ["--no-replay-failures"]
    script = {"trial": [bash(f"echo waiting; sleep {TRIAL_SLEEP}")]}.get(phase, [say("Done.")])
    model = StallsOnReplay([]) if phase == "failure-replay" else ScriptedModel(script)
    writer = None
    children = {pid for pid, row in processes().items() if row[0] == os.getpid()}
    with model, adopting_orphans():
        env = {**os.environ, "ANTHROPIC_BASE_URL": model.url, "ANTHROPIC_API_KEY": "sk-test",
               "CLAUDE_CONFIG_DIR": str(config), "BENCHKIT_CACHE_DIR": str(tmp_path / "cache"),
               "BENCHKIT_ROOT": str(CHECKOUT), "PYTHONPATH": str(CHECKOUT),
               "TMPDIR": str(scratch), marker.split("=")[0]: marker.split("=")[1]}
        process = subprocess.Popen(
            [*BENCHKIT, "run", str(arm), "--task", TASK, "--host", url, "--token", token,
             "--store", str(store), "--reports", str(reports), *extra],
            env=env, cwd=tmp_path, text=True, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
            start_new_session=True)
        try:
            if phase == "report":
                def reading() -> bool:
                    nonlocal writer
                    assert process.poll() is None, "the run ended before its report"
                    try:
                        writer = os.open(fifo, os.O_WRONLY | os.O_NONBLOCK)
                    except OSError as error:
                        assert error.errno == errno.ENXIO
                        return False
                    return True
                wait_for(reading, "the report reading the trial pages' transcripts")
            else:
                argument = {"preflight": PROBE_SLEEP, "trial": TRIAL_SLEEP,
                            "failure-replay": REPLAY_SLEEP}[phase]
                def started() -> bool:
                    assert process.poll() is None, (f"the run ended before its {phase}: "
                                                    f"{process.communicate()}")
                    return sleeping(argument, process.pid)
                wait_for(started, f"the {phase} phase's sleep {argument}")
            status = send(process)
            stdout, stderr = process.communicate(timeout=DEADLINE)
        finally:
            if process.poll() is None:
                process.kill()
                process.communicate()
            if writer is not None:
                os.close(writer)
        assert process.returncode == status, stdout + stderr
        assert "interrupted again" not in stdout + stderr
        leftover: list[str] = []

        def none_left() -> bool:
            leftover[:] = survivors(children, marker.encode())
            return not leftover
        with contextlib.suppress(AssertionError):
            wait_for(none_left, "the run's processes gone")
        assert leftover == [], "processes of the run outlived it"
    assert repos() == [], "a repository of the run was left on the host"
    assert [p.name for p in scratch.iterdir() if p.name.startswith("benchkit-")] == []
    assert holding(scratch, token) == []
    if fifo is not None:
        fifo.unlink()
    assert report_set(reports) == before, "the report set is not the previous one, whole"
    assert f"{reports} keeps the previous report, whole" in stdout + stderr
    assert "Fatal error in message reader" not in stdout + stderr
    assert token not in stdout + stderr
    if phase == "preflight":  # nothing ran: the store is as it was
        assert sorted(p.name for p in (store / "raw-api").iterdir()) == sorted(
            p.name for p in (previous / "results/raw-api").iterdir())
    replays = store / "failure-replays.jsonl"  # an interrupted replay gives no verdict:
    verdicts = {entry["trial"]: entry["verdict"] for entry in  # its trial's last line is pending
                map(json.loads, replays.read_text().splitlines())} if replays.exists() else {}
    assert set(verdicts.values()) <= {"pending"}, verdicts
    return stdout + stderr


@pytest.mark.parametrize("phase,signum", [
    ("preflight", signal.SIGTERM), ("trial", signal.SIGTERM), ("failure-replay", signal.SIGTERM),
    ("report", signal.SIGTERM), ("preflight", signal.SIGHUP), ("report", signal.SIGINT)],
    ids=lambda value: value if isinstance(value, str) else signal.Signals(value).name)
def test_a_stop_signal_in_each_phase_on_the_forge(phase, signum, tmp_path, previous):
    with Forge(token=TOKEN) as forge:
        def repos():
            return leftovers(forge.url, forge.token)
        stop_in(phase, tmp_path, previous, url=forge.url, token=forge.token, repos=repos,
                send=sending(signum))
        agent_tokens = forge.state.store.value(
            "SELECT COUNT(*) FROM tokens WHERE scope LIKE 'api%'")
        assert agent_tokens == 0, "an agent token of the run was left unrevoked"


def test_sigint_twice_at_once_is_one_interrupt(tmp_path, previous):
    """As `timeout -s INT 5 benchkit run ...` delivers it: the same clean stop, once."""
    with Forge(token=TOKEN) as forge:
        def repos():
            return leftovers(forge.url, forge.token)
        said = stop_in("failure-replay", tmp_path, previous, url=forge.url, token=forge.token,
                       repos=repos, send=sigint_as_timeout_sends_it)
    assert said.count("interrupted: stopping") == 1


@pytest.mark.parametrize("phase", ["trial", "failure-replay"])
def test_sigterm_on_a_live_gitea(phase, tmp_path, previous, gitea):
    """As a maintainer runs it, with a site administrator's token: the run acts as a user
    of its own, and neither that user nor a repository of the run may stay."""
    before = set(leftovers(gitea.url, gitea.token))
    stop_in(phase, tmp_path, previous, url=gitea.url, token=gitea.token,
            repos=lambda: sorted(set(leftovers(gitea.url, gitea.token)) - before))
