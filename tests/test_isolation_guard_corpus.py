"""The guard against its corpus (tests/data/guard_corpus.yaml): the commands agents
really write are allowed, every evasion is denied for the right reason (its twin, the
same line without the construct, is allowed), and what real bash runs for an allowed
line is never more than the guard said it would run."""

import os
import subprocess
from pathlib import Path

import pytest
import yaml

from benchkit.isolation import UTILITIES, Guard
from benchkit.spec import load_arm

CHECKOUT = Path(__file__).resolve().parent.parent
CORPUS = yaml.safe_load((CHECKOUT / "tests/data/guard_corpus.yaml").read_text())
SHELL_ARMS = ("raw-api", "tea", "gitea-axi")
GUARDS = {arm: Guard.for_arm(load_arm(CHECKOUT / "arms.d" / f"{arm}.yaml")) for arm in SHELL_ARMS}


def _entries(kind):
    """(arm, entry) for every corpus entry of a kind, `every-shell-arm` expanded."""
    found = []
    for section, lists in CORPUS.items():
        arms = SHELL_ARMS if section == "every-shell-arm" else (section,)
        for arm in arms:
            for entry in lists.get(kind, []):
                found.append((arm, _for_arm(entry, GUARDS[arm].binary)))
    return found


def _for_arm(entry, binary):
    if isinstance(entry, str):
        return entry.replace("{tool}", binary)
    return {key: value.replace("{tool}", binary) for key, value in entry.items()}


ALLOWED = _entries("allow")
DENIED = _entries("deny")


def test_the_corpus_is_large_and_covers_every_shell_arm():
    pairs = {(arm, line) for arm, line in ALLOWED} | {(arm, e["command"]) for arm, e in DENIED}
    assert len(pairs) == len(ALLOWED) + len(DENIED) >= 150
    for arm in SHELL_ARMS:
        assert any(a == arm for a, _ in ALLOWED) and any(a == arm for a, _ in DENIED)


@pytest.mark.parametrize("arm,line", ALLOWED, ids=[f"{a}:{l[:60]}" for a, l in ALLOWED])
def test_allowed(arm, line):
    decision = GUARDS[arm].decide(line)
    assert decision.allowed, decision.reason
    assert decision.reason.startswith("allowed: runs ")
    assert set(decision.binaries) <= set(GUARDS[arm].allowed_binaries)


@pytest.mark.parametrize("arm,entry", DENIED, ids=[f"{a}:{e['command'][:60]}" for a, e in DENIED])
def test_denied_for_the_right_reason(arm, entry):
    guard = GUARDS[arm]
    decision = guard.decide(entry["command"])
    assert not decision.allowed
    assert entry["because"] in decision.reason
    twin = guard.decide(entry["twin"])
    assert twin.allowed, f"the twin is denied too: {twin.reason}"


def test_a_denial_names_the_foreign_program_and_the_arm_tool():
    decision = GUARDS["tea"].decide("tea issues list | python3 -m json.tool")
    assert decision.binaries == ("tea", "python3")
    assert decision.reason.startswith("`python3` is not available in this session: use `tea`")


def test_tool_calls_shell_arms_run_bash_alone_and_the_mcp_arm_its_tools_alone():
    raw = GUARDS["raw-api"]
    assert raw.decide_tool("Bash", {"command": "curl -s x | jq ."}).allowed
    assert not raw.decide_tool("Bash", {"command": "python3 -c 1"}).allowed
    assert not raw.decide_tool("Bash", {}).allowed
    for tool in ("Read", "WebFetch", "mcp__gitea__list_repo_issues"):
        denied = raw.decide_tool(tool, {"command": "curl x"})
        assert not denied.allowed and denied.reason.startswith(f"`{tool}` is not available")
    mcp = Guard.for_arm(load_arm(CHECKOUT / "arms.d/gitea-mcp.yaml"))
    assert mcp.decide_tool("mcp__gitea__create_issue", {"title": "x"}).allowed
    for tool in ("Bash", "Read", "mcp__other__create_issue"):
        assert not mcp.decide_tool(tool, {"command": "ls"}).allowed
    assert not mcp.decide("ls").allowed and "no shell" in mcp.decide("ls").reason


# --- what bash really runs -------------------------------------------------------------

# Every program an allowed line may run is a stub that logs its name; any other name
# bash looks up lands in command_not_found_handle, which logs it too.
STUB = '#!/bin/sh\nprintf "%s\\n" "${0##*/}" >> "$BENCHKIT_STUB_LOG"\n'
PRELUDE = ('command_not_found_handle() { printf "%s\\n" "$1" >> "$BENCHKIT_STUB_LOG"; '
           'return 127; }\n')


@pytest.fixture(scope="module")
def stubs(tmp_path_factory):
    directory = tmp_path_factory.mktemp("stubs")
    for name in (*UTILITIES, *(GUARDS[arm].binary for arm in SHELL_ARMS)):
        path = directory / name
        path.write_text(STUB)
        path.chmod(0o755)
    return directory


def _twins():
    return [(arm, entry["twin"]) for arm, entry in DENIED]


@pytest.mark.parametrize("arm,line", ALLOWED + _twins(),
                         ids=[f"{a}:{l[:60]}" for a, l in ALLOWED + _twins()])
def test_bash_runs_no_more_than_the_guard_names(arm, line, stubs, tmp_path):
    decision = GUARDS[arm].decide(line)
    log = tmp_path / "ran.log"
    subprocess.run(["/bin/bash", "-c", PRELUDE + line], cwd=tmp_path, stdin=subprocess.DEVNULL,
                   capture_output=True, timeout=20,
                   env={"PATH": str(stubs), "HOME": str(tmp_path), "BENCHKIT_STUB_LOG": str(log)})
    ran = set(log.read_text().split()) if log.exists() else set()
    functions = {"get", "fetch", "python3"}  # defined by corpus lines themselves
    assert ran - functions <= set(decision.binaries), (
        f"bash ran {sorted(ran)}, the guard named {decision.binaries}")


def test_the_stub_check_sees_what_bash_runs(stubs, tmp_path):
    """The harness of the test above: a hidden program would be caught."""
    log = tmp_path / "ran.log"
    subprocess.run(["/bin/bash", "-c", PRELUDE + "echo $(jq .) | python3 -c 1"], cwd=tmp_path,
                   stdin=subprocess.DEVNULL, capture_output=True, timeout=20,
                   env={"PATH": str(stubs), "BENCHKIT_STUB_LOG": str(log)})
    assert set(log.read_text().split()) == {"jq", "python3"}
    assert os.access(stubs / "curl", os.X_OK)
