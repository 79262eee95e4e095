"""The guard against its corpus (tests/data/guard_corpus.yaml): the commands agents
really write are allowed, every evasion is denied for the right reason (its twin, the
same line without the construct, is allowed), and what real bash runs for an allowed
line is never more than the guard said it would run."""

import os
import shutil
import subprocess
from pathlib import Path

import pytest
import yaml
from conftest import CHECKOUT, IN_CI

from benchkit.documents import load_arm
from benchkit.isolation import UTILITIES, Guard

CORPUS = yaml.safe_load((CHECKOUT / "tests/data/guard_corpus.yaml").read_text())
SHELL_ARMS = ("raw-api", "tea", "gitea-axi")
GUARDS = {arm: Guard.for_tool(arm, load_arm(CHECKOUT / "arms.d" / f"{arm}.yaml").tool)
          for arm in SHELL_ARMS}


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


@pytest.mark.parametrize("arm,line", ALLOWED, ids=[f"{a}:{line[:60]}" for a, line in ALLOWED])
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
    mcp = Guard.for_tool("gitea-mcp", load_arm(CHECKOUT / "arms.d/gitea-mcp.yaml").tool)
    assert mcp.decide_tool("mcp__gitea__create_issue", {"title": "x"}).allowed
    for tool in ("Bash", "Read", "mcp__other__create_issue"):
        assert not mcp.decide_tool(tool, {"command": "ls"}).allowed
    assert not mcp.decide("ls").allowed and "no shell" in mcp.decide("ls").reason


# --- what bash really runs -------------------------------------------------------------

# Inside a mount namespace (bubblewrap) /usr/bin (and so /bin) is a directory of stubs,
# one for every program of the host's PATH (what an agent could reach), the arms'
# binaries and the utilities: each logs its name and does nothing, except the
# wrappers, which log their name and then run the real wrapper, which runs its operand
# (a stub again: even `env -i` finds only stubs on the default path). Any other name bash
# looks up lands in command_not_found_handle, which logs it too.
LOG = "/run/benchkit-stub/ran.log"
REAL = "/usr/bin/.real"
STUB = f'#!{REAL}/sh\nprintf "%s\\n" "${{0##*/}}" >> {LOG}\n'
WRAPPER = f'#!{REAL}/sh\nprintf "%s\\n" "${{0##*/}}" >> {LOG}\nexec {REAL}/"${{0##*/}}" "$@"\n'
WRAPPERS = ("env", "nice", "nohup", "timeout", "time", "xargs", "find")
PRELUDE = f'command_not_found_handle() {{ printf "%s\\n" "$1" >> {LOG}; return 127; }}\n'


def host_programs() -> set[str]:
    names = set()
    for directory in os.environ.get("PATH", os.defpath).split(os.pathsep) + ["/usr/sbin"]:
        if os.path.isdir(directory):
            names |= {n for n in os.listdir(directory) if n != ".real" and "/" not in n}
    return names


@pytest.fixture(scope="module")
def stubs(tmp_path_factory):
    if shutil.which("bwrap") is None:
        (pytest.fail if IN_CI else pytest.skip)("bubblewrap is not installed (scripts/test-setup installs it)")
    directory = tmp_path_factory.mktemp("stubs")
    (directory / ".real").mkdir()
    for name in ("sh", "bash", *WRAPPERS):
        shutil.copy(shutil.which(name), directory / ".real" / name)
    for name in {*UTILITIES, *(GUARDS[arm].binary for arm in SHELL_ARMS), *host_programs()}:
        path = directory / name
        path.write_text(WRAPPER if name in WRAPPERS else STUB)
        path.chmod(0o755)
    return directory


def run_in_stubs(stubs, line: str, workdir: Path) -> set[str]:
    """The programs bash ran for `line`, with the stubs as the only programs there are."""
    logs = workdir / "logs"
    logs.mkdir(exist_ok=True)
    subprocess.run(["bwrap", "--ro-bind", "/", "/", "--dev", "/dev", "--proc", "/proc",
                    "--ro-bind", str(stubs), "/usr/bin", "--tmpfs", "/run",
                    "--bind", str(logs), "/run/benchkit-stub",
                    "--bind", str(workdir), str(workdir), "--chdir", str(workdir),
                    "--clearenv", "--setenv", "PATH", "/usr/bin", "--setenv", "HOME", str(workdir),
                    "--die-with-parent", f"{REAL}/bash", "-c", PRELUDE + line],
                   stdin=subprocess.DEVNULL, capture_output=True, timeout=120)
    log = logs / "ran.log"
    return set(log.read_text().split()) if log.exists() else set()


def _twins():
    return [(arm, entry["twin"]) for arm, entry in DENIED]


@pytest.mark.parametrize("arm,line", ALLOWED + _twins(),
                         ids=[f"{a}:{line[:60]}" for a, line in ALLOWED + _twins()])
def test_bash_runs_no_more_than_the_guard_names(arm, line, stubs, tmp_path):
    decision = GUARDS[arm].decide(line)
    ran = run_in_stubs(stubs, line, tmp_path)
    functions = {"get", "fetch", "python3"}  # defined by corpus lines themselves
    assert ran - functions <= set(decision.binaries), (
        f"bash ran {sorted(ran)}, the guard named {decision.binaries}")


def test_the_stub_check_sees_what_bash_runs(stubs, tmp_path):
    """The harness of the test above: a hidden program would be caught, behind a
    substitution, a pipe, and each wrapper running its operand for real."""
    line = ("echo $(jq .) | python3 -c 1; env --uns curl perl; env -i gzip; "
            "timeout --sig KILL 5 od; nice --adj 5 stat; nohup ln; command time -o t.txt cp; "
            "echo x | xargs rm; find . -maxdepth 0 -exec mv {} \\;; hidden-program")
    assert run_in_stubs(stubs, line, tmp_path) == {
        "jq", "python3", "env", "perl", "gzip", "timeout", "od", "nice", "stat", "nohup",
        "ln", "time", "cp", "xargs", "rm", "find", "mv", "hidden-program"}
