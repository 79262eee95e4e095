"""A script written while other threads start processes runs at once: never ETXTBSY."""

from __future__ import annotations

import stat
import subprocess
import threading

from benchkit.executable import write_executable


def test_a_script_runs_the_moment_it_is_written_while_other_threads_fork(tmp_path):
    # Written in-process, about 7 in 400 of these runs fail with "Text file busy".
    done = threading.Event()

    def fork_all_along():
        while not done.is_set():
            subprocess.run(["true"])

    forkers = [threading.Thread(target=fork_all_along) for _ in range(3)]
    for forker in forkers:
        forker.start()
    try:
        for number in range(300):
            script = tmp_path / f"s{number}"
            write_executable(script, f"#!/bin/sh\necho {number}\n")
            ran = subprocess.run([str(script)], capture_output=True, text=True, check=True)
            assert ran.stdout == f"{number}\n"
    finally:
        done.set()
        for forker in forkers:
            forker.join()


def test_the_script_is_its_owners_alone(tmp_path):
    script = tmp_path / "s"
    write_executable(script, "#!/bin/sh\n")
    assert stat.S_IMODE(script.stat().st_mode) == 0o700
    assert script.read_text() == "#!/bin/sh\n"
