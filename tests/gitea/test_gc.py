"""`kill -9` of a real `benchkit run` in its trial (the real CLI against the scripted
model), on the forge and on a real Gitea: nothing the run made is lost track of. While
it lives, a concurrent `benchkit gc --yes` with this machine's clock an hour behind or
a day ahead (tests/skewed.py), or on another machine holding a copy of its store (a pid
namespace of its own: the run's lease on the host decides), touches none of its users; once it is dead, the next
`benchkit run` on the store, or `benchkit gc --yes --store`, removes every temp
directory it made, its trial user, its run user and their repositories, and says so,
at once (no age to wait for: the journal's process is gone)."""

from __future__ import annotations

import contextlib
import os
import shutil
import signal
import subprocess
import sys
import uuid
from pathlib import Path

import pytest
import requests
from conftest import BENCHKIT, CHECKOUT
from test_run_stop_phases import (
    DEADLINE,
    TOKEN,
    TRIAL_SLEEP,
    adopting_orphans,
    leftovers,
    processes,
    sleeping,
    survivors,
    wait_for,
)

from benchkit.agent.scripted import ScriptedModel, bash
from benchkit.forge import Forge

pytestmark = pytest.mark.slow
TASK = "close-csv-export-issue"
SKEWED = [sys.executable, str(CHECKOUT / "tests" / "skewed.py")]
HOUR, DAY = 3600, 86400


@contextlib.contextmanager
def on(where: str, request):
    if where == "forge":
        with Forge(token=TOKEN) as forge:
            yield forge
    else:
        yield request.getfixturevalue("gitea")


def _gc(host, store: Path, env: dict, skew: float, *extra: str,
        wrap: tuple[str, ...] = ()) -> subprocess.CompletedProcess:
    return subprocess.run([*wrap, *SKEWED, str(skew), "gc", "--store", str(store), "--host", host.url,
                           "--token", host.token, *extra], capture_output=True, text=True,
                          cwd=CHECKOUT, env=env, timeout=DEADLINE)


@pytest.mark.parametrize("sweeper", ["run", "gc"])
@pytest.mark.parametrize("where", ["forge", "gitea"])
def test_kill_9_in_a_trial_then_everything_it_made_is_swept(where, sweeper, tmp_path, request):
    store, scratch, config = tmp_path / "results", tmp_path / "tmp", tmp_path / "claude"
    scratch.mkdir()
    config.mkdir()
    marker = f"BENCHKIT_GC_TEST={uuid.uuid4().hex}"
    model = ScriptedModel([bash(f"echo waiting; sleep {TRIAL_SLEEP}")])
    with on(where, request) as host, model, adopting_orphans():
        # After the host started: a Gitea this test starts is no process of the run.
        children = {pid for pid, row in processes().items() if row[0] == os.getpid()}
        before = set(leftovers(host.url, host.token))
        env = {**os.environ, "ANTHROPIC_BASE_URL": model.url, "ANTHROPIC_API_KEY": "sk-test",
               "CLAUDE_CONFIG_DIR": str(config), "BENCHKIT_ROOT": str(CHECKOUT),
               "PYTHONPATH": str(CHECKOUT), "TMPDIR": str(scratch),
               marker.split("=")[0]: marker.split("=")[1]}
        run = subprocess.Popen(
            [*BENCHKIT, "run", "arms.d/raw-api.yaml", "--task", TASK, "--host", host.url,
             "--token", host.token, "--store", str(store), "--no-report"],
            env=env, cwd=CHECKOUT, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
            start_new_session=True)
        try:
            def in_trial() -> bool:
                assert run.poll() is None, "the run ended before its trial"
                return sleeping(TRIAL_SLEEP, run.pid)
            wait_for(in_trial, "the trial's sleep")
            made = sorted(set(leftovers(host.url, host.token)) - before)
            users = [line.split()[1] for line in made if line.startswith("user ")]
            assert sorted(u.split("-")[1] for u in users) == ["run", "trial"], made
            if sweeper == "gc":  # the run is alive: no clock makes its users collectable
                for skew in (-HOUR, DAY):
                    for extra in ((), ("--older-than", "0")):
                        done = _gc(host, tmp_path / "elsewhere", env, skew, "--yes", *extra)
                        assert done.returncode == 0, done.stdout + done.stderr
                        assert set(made) <= set(leftovers(host.url, host.token)), (skew, extra)
                # A copy of its store on another machine (a pid namespace of its own):
                # the journal's pid says nothing there; the run's lease on the host does.
                shutil.copytree(store, tmp_path / "copy")
                done = _gc(host, tmp_path / "copy", {**env, "BENCHKIT_STATE_DIR": str(
                    tmp_path / "elsewhere-state")}, DAY, "--yes", "--older-than", "0",
                           wrap=("bwrap", "--dev-bind", "/", "/", "--unshare-pid", "--proc",
                                 "/proc"))
                assert done.returncode == 0, done.stdout + done.stderr
                assert "spared run " in done.stdout + done.stderr, done.stdout + done.stderr
                assert set(made) <= set(leftovers(host.url, host.token))
                assert run.poll() is None
            run.send_signal(signal.SIGKILL)
            run.wait(timeout=DEADLINE)
        finally:
            if run.poll() is None:
                run.kill()
                run.wait()
        # What outlives a SIGKILL is another change's (a parent-death signal); here the
        # orphans are ended so that only what the run made on disk and on the host stays.
        for line in survivors(children, marker.encode()):
            with contextlib.suppress(ProcessLookupError):
                os.kill(int(line.split(":")[0]), signal.SIGKILL)
        wait_for(lambda: not survivors(children, marker.encode()), "the run's orphans gone")
        temp = sorted(p.name for p in scratch.iterdir() if p.name.startswith("benchkit-"))
        assert any(name.startswith("benchkit-agent-") for name in temp), temp
        assert set(made) <= set(leftovers(host.url, host.token))

        if sweeper == "run":
            swept = subprocess.run(
                [*BENCHKIT, "run", "arms.d/raw-api.yaml", "--task", "read-open-issue-count",
                 "--driver", "replay", "--no-report", "--store", str(store), "--host", host.url,
                 "--token", host.token], capture_output=True, text=True, cwd=CHECKOUT, env=env,
                timeout=DEADLINE)
            assert swept.returncode == 0, swept.stdout + swept.stderr
        else:  # this machine's clock a day ahead: the journal, not a stamp, decides
            swept = _gc(host, store, env, DAY, "--yes")
            assert swept.returncode == 0, swept.stdout + swept.stderr
        said = swept.stdout + swept.stderr
        for user in users:
            assert f"deleted user {user} of run {run.pid} (gone) and its repositories" in said, said
        for name in temp:
            assert f"removed {scratch / name}, a temp directory of run {run.pid} (gone)" in said, said
        assert sorted(set(leftovers(host.url, host.token)) - before) == []
        assert [p.name for p in scratch.iterdir() if p.name.startswith("benchkit-")] == []
        assert not (store / ".journal").exists()


def test_a_run_that_cannot_delete_its_users_says_what_deletes_them_and_exits_non_zero(tmp_path):
    """As with a revoked admin token: the host refuses every user deletion. The run
    exits 1, its last warning names the command, and that command, run at once, deletes
    them (the journal's run is over: no age to wait for)."""
    store = tmp_path / "results"
    env = {k: v for k, v in os.environ.items() if not k.startswith("GITEA_")}
    env.update(BENCHKIT_ROOT=str(CHECKOUT), TMPDIR=str(tmp_path))
    with Forge(token=TOKEN) as forge:
        refused = requests.post(f"{forge.url}_forge/faults", timeout=30,
                                headers={"Authorization": f"token {forge.token}"},
                                json={"method": "DELETE", "path": "^/api/v1/admin/users/",
                                      "status": 403, "times": 1000})
        assert refused.status_code == 201
        before = set(leftovers(forge.url, forge.token))
        done = subprocess.run(
            [*BENCHKIT, "run", "arms.d/raw-api.yaml", "--task", "read-open-issue-count",
             "--driver", "replay", "--no-report", "--no-replay-failures", "--store", str(store),
             "--host", forge.url, "--token", forge.token], capture_output=True, text=True,
            cwd=CHECKOUT, env=env, timeout=DEADLINE)
        said = done.stdout + done.stderr
        assert done.returncode == 1, said
        left = sorted(set(leftovers(forge.url, forge.token)) - before)
        assert sorted(line.split()[1].split("-")[1] for line in left) == ["run", "trial"], left
        [warning] = [line for line in said.splitlines() if "deletes them now" in line]
        command = warning.split("`")[1].split()
        assert command[:3] == ["benchkit", "gc", "--yes"] and "--store" in command, warning
        requests.delete(f"{forge.url}_forge/faults", timeout=30,
                        headers={"Authorization": f"token {forge.token}"})
        swept = subprocess.run([*BENCHKIT, *command[1:]], capture_output=True, text=True,
                               cwd=CHECKOUT, env={**env, "GITEA_TOKEN": forge.token},
                               timeout=DEADLINE)
        assert swept.returncode == 0, swept.stdout + swept.stderr
        for line in left:
            assert f"deleted user {line.split()[1]} of run" in swept.stdout, swept.stdout
        assert sorted(set(leftovers(forge.url, forge.token)) - before) == []
        assert not (store / ".journal").exists()
