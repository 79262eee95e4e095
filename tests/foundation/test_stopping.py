"""The stop (benchkit.stopping) at its seam, in this process: what the first stop
signal does, that one within a second of it is the same interrupt, that a later one
leaves at once, what a shielded block defers; that the report's files are put in place
as one set or not at all; and that the SDK's noise about a CLI the stop killed is
silenced while its real errors are not. A real `benchkit run` stopped in each phase:
test_run_stop_phases.py."""

from __future__ import annotations

import errno
import logging
import os
import signal
import subprocess
import threading
import time

import pytest
from conftest import BENCHKIT, CHECKOUT
from synthetic import sample, write_store

from benchkit import stopping
from benchkit.lifetime import dies_with_thread
from benchkit.report import write_reports
from benchkit.stopping import RUN_TAG, SAME_INTERRUPT, Interrupted, Stop


class Clock:
    def __init__(self):
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


@pytest.fixture
def clock(monkeypatch):
    clock = Clock()
    monkeypatch.setattr(stopping.time, "monotonic", clock)
    return clock


class Left(Exception):
    """os._exit, caught."""


@pytest.fixture
def exits(monkeypatch):
    codes: list[int] = []

    def leave(code):
        codes.append(code)
        raise Left(code)
    monkeypatch.setattr(stopping.os, "_exit", leave)
    return codes


def test_the_first_signal_stops_kills_the_tagged_processes_and_interrupts(clock):
    notes: list[str] = []
    before = signal.getsignal(signal.SIGTERM)
    with Stop(note=lambda: notes.append("interrupted")) as stop:
        tagged = subprocess.Popen(["sleep", "600"], env=stopping.marked(dict(os.environ)))
        assert stopping.marked({}) == {RUN_TAG: stop.tag}
        other = subprocess.Popen(["sleep", "600"])
        try:
            with pytest.raises(Interrupted):
                signal.raise_signal(signal.SIGTERM)
            assert stop.is_set() and stop.status == 143 and notes == ["interrupted"]
            assert tagged.wait(timeout=60) == -signal.SIGKILL
            assert other.poll() is None
        finally:
            for process in (tagged, other):
                process.kill()
                process.wait()
    assert signal.getsignal(signal.SIGTERM) is before  # restored


def test_a_second_signal_within_a_second_is_the_same_interrupt(clock, exits):
    said: list[str] = []
    with Stop(say=said.append) as stop:
        with pytest.raises(Interrupted):
            signal.raise_signal(signal.SIGINT)
        clock.now += SAME_INTERRUPT / 2  # `timeout -s INT` signals the group too
        signal.raise_signal(signal.SIGINT)
        signal.raise_signal(signal.SIGTERM)
        assert exits == [] and said == [] and stop.status == 130
        clock.now += SAME_INTERRUPT  # one later: the maintainer will not wait
        with pytest.raises(Left):
            signal.raise_signal(signal.SIGINT)
    assert exits == [130]
    assert said and said[0].startswith("interrupted again: leaving now")


def test_a_shielded_block_ends_before_the_interrupt_which_comes_once(clock):
    done = []
    with Stop() as stop:
        with pytest.raises(Interrupted):
            with stop.shielded():
                signal.raise_signal(signal.SIGHUP)
                done.append("the block")
        assert done == ["the block"] and stop.status == 129
        with stop.shielded():  # clean-up after the interrupt is not interrupted again
            done.append("clean-up")
        stop.check()
    assert done == ["the block", "clean-up"]


def test_no_stop_no_shield_no_mark():
    with stopping.shielded():
        pass
    assert not stopping.stopping() and stopping.marked({"A": "1"}) == {"A": "1"}


def test_the_report_set_is_replaced_whole_or_not_at_all(tmp_path, monkeypatch):
    store, reports = tmp_path / "results", tmp_path / "reports"
    store.mkdir()
    write_reports(store, reports)
    (reports / "trials" / "stale.html").write_text("a page of a trial no longer stored")
    for name in ("report.md", "report.html", "report.json", "report.csv"):  # an older run's
        (reports / name).write_text(f"the previous {name}")
    before = {str(p.relative_to(reports)): p.read_bytes() for p in reports.rglob("*")
              if p.is_file()}
    import benchkit.report.render as report  # what write_reports renders with
    rendered = []

    def render_then_stop(data, format_):
        if len(rendered) == 2:  # report.md and report.html written, then the signal
            raise Interrupted()
        rendered.append(format_)
        return original(data, format_)
    original = report.render
    monkeypatch.setattr(report, "render", render_then_stop)
    with pytest.raises(Interrupted):
        write_reports(store, reports)
    after = {str(p.relative_to(reports)): p.read_bytes() for p in reports.rglob("*")
             if p.is_file()}
    assert after == before  # nothing of the new set, no staging directory left
    monkeypatch.setattr(report, "render", original)
    paths = write_reports(store, reports)
    assert [p.name for p in paths] == ["report.md", "report.html", "report.json", "report.csv"]
    assert all(b"previous" not in p.read_bytes() for p in paths)
    assert not (reports / "trials" / "stale.html").exists()  # the pages are the new set's
    assert sorted(p.name for p in reports.iterdir()) == [*sorted(p.name for p in paths), "trials"]


def test_the_sdk_noise_about_a_cli_the_stop_killed_is_silenced(clock):
    from benchkit.agent.claude import _QuietBackstop
    quiet = _QuietBackstop()

    def record(message: str) -> logging.LogRecord:
        return logging.LogRecord("claude_agent_sdk._internal.query", logging.ERROR, __file__,
                                 1, message, None, None)
    interrupted = record("Fatal error in message reader: Command failed with exit code -2")
    assert quiet.filter(interrupted)  # no stop: a CLI that died of SIGINT is news
    assert quiet.filter(record("Fatal error in message reader: something else broke"))
    with Stop() as stop:  # a terminal's Ctrl-C: the CLI may die before the run hears it
        threading.Timer(0.05, stop.event.set).start()
        assert not quiet.filter(interrupted)
        assert stop.is_set()
        assert not quiet.filter(record("Fatal error in message reader: exit code -9"))
    assert not quiet.filter(record("Fatal error in message reader: Command failed with "
                                   "exit code -9"))  # the backstop's kill, as before


def test_benchkit_report_stopped_while_it_writes_leaves_the_previous_set(tree_copy, tmp_path):
    """`benchkit report` as a process, stopped while the trial pages read a transcript
    (a FIFO, so the moment is an event): exit 143, one line, the previous set whole."""
    store, reports = tmp_path / "results", tmp_path / "reports"
    env = {**os.environ, "BENCHKIT_ROOT": str(tree_copy), "PYTHONPATH": str(CHECKOUT)}
    write_store(store, [sample("raw-api", "read-open-issue-count", transcript="fifo.json")])
    done = subprocess.run([*BENCHKIT, "report", "--store", store, "--reports", reports], env=env,
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    before = {str(p.relative_to(reports)): p.read_bytes() for p in reports.rglob("*")
              if p.is_file()}
    os.mkfifo(store / "fifo.json")
    (reports / "trials" / ".pages.json").unlink()  # every page rendered anew: none reused
    before.pop("trials/.pages.json")
    process = subprocess.Popen([*BENCHKIT, "report", "--store", store, "--reports", reports],
                               env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                               text=True)
    writer = None
    try:
        deadline = time.monotonic() + 120
        while writer is None:  # until the pages' reader opens the transcript
            assert process.poll() is None and time.monotonic() < deadline
            try:
                writer = os.open(store / "fifo.json", os.O_WRONLY | os.O_NONBLOCK)
            except OSError as error:
                assert error.errno == errno.ENXIO
                time.sleep(0.02)
        process.send_signal(signal.SIGTERM)
        stdout, stderr = process.communicate(timeout=120)
    finally:
        if process.poll() is None:
            process.kill()
            process.communicate()
        if writer is not None:
            os.close(writer)
    assert process.returncode == 143, stderr
    assert stderr.strip().splitlines() == [f"interrupted: {reports} left as it was"]
    after = {str(p.relative_to(reports)): p.read_bytes() for p in reports.rglob("*")
             if p.is_file()}
    assert after == before


def test_a_process_of_the_command_ends_with_its_stop():
    """The stop's watchdog (benchkit.lifetime) ends a marked process the command left."""
    with Stop():
        stray = subprocess.Popen(["sleep", "987654"], env=stopping.marked({"PATH": os.defpath}))
    assert stray.wait(timeout=60) == -signal.SIGKILL


def test_a_command_killed_outright_takes_its_processes_along(tmp_path):
    """SIGKILL runs no clean-up of the command's: its watchdog notices it gone and ends
    every process marked with its tag, one it started and one started by that one."""
    code = ("import os, subprocess, sys, time\n"
            "from benchkit.stopping import Stop, marked\n"
            "with Stop():\n"
            "    env = marked({'PATH': os.defpath})\n"
            "    child = subprocess.Popen(['sh', '-c', 'sleep 987655 & exec sleep 987656'],\n"
            "                             env=env, start_new_session=True)\n"
            "    print(child.pid, flush=True)\n"
            "    time.sleep(600)\n")
    command = subprocess.Popen([*BENCHKIT[:1], "-c", code], stdout=subprocess.PIPE, text=True,
                               env={**os.environ, "PYTHONPATH": str(CHECKOUT)})
    assert command.stdout is not None
    child = int(command.stdout.readline())
    marked_ones = []
    deadline = time.monotonic() + 60
    while len(marked_ones) < 2:  # both sleeps started
        assert time.monotonic() < deadline
        marked_ones = [pid for pid in os.listdir("/proc") if pid.isdigit()
                       and _cmdline(pid) in (b"sleep\x00987655\x00", b"sleep\x00987656\x00")]
    command.kill()
    command.wait()
    deadline = time.monotonic() + 5
    while any(_alive(pid) for pid in marked_ones):
        assert time.monotonic() < deadline, "a process of the killed command lives on"
        time.sleep(0.02)
    assert not _alive(str(child))


def _cmdline(pid: str) -> bytes:
    try:
        with open(f"/proc/{pid}/cmdline", "rb") as f:
            return f.read()
    except OSError:
        return b""


def _alive(pid: str) -> bool:
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rsplit(")", 1)[1].split()[0] != "Z"
    except OSError:
        return False


def test_a_program_started_to_die_with_its_thread_dies_with_it():
    """The Claude CLI's parent-death signal (setpriv --pdeathsig KILL): the kernel ends
    the program when the thread that started it ends, with no watchdog to look."""
    started: list[subprocess.Popen] = []

    def start():
        started.append(subprocess.Popen(dies_with_thread(["sleep", "987659"])))
        deadline = time.monotonic() + 60
        while _cmdline(str(started[0].pid)) != b"sleep\x00987659\x00":  # setpriv has set it
            assert time.monotonic() < deadline
            time.sleep(0.01)
    thread = threading.Thread(target=start)
    thread.start()
    thread.join()
    assert started[0].wait(timeout=60) == -signal.SIGKILL
