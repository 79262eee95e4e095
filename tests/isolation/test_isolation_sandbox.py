"""The sandbox prefix on its own (real bubblewrap, real socat, a listener on loopback):
what a command run through it can and cannot reach, the probe that proves it in force
and fails when it is not, and the scrubber's encodings."""

import base64
import json
import os
import socket
import subprocess
from urllib.parse import quote

import pytest
from click.testing import CliRunner
from conftest import CHECKOUT
from loopback import serve

from benchkit.cli import main
from benchkit.isolation import sandbox as sandbox_module
from benchkit.isolation.sandbox import Sandbox, SandboxError, bridge_target, missing, probe
from benchkit.scrub import SCRUBBED, environment_secrets, scrub

pytestmark = pytest.mark.skipif(missing() is not None, reason="needs bubblewrap and socat")


@pytest.fixture
def host():
    """An HTTP server on loopback standing for the Gitea host."""
    server = serve(b"host-ok")
    yield f"http://127.0.0.1:{server.server_port}"
    server.shutdown()


@pytest.fixture
def listener():
    """Another loopback port: it must see no connection."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        sock.listen(5)
        sock.setblocking(False)
        yield sock


def accepted(sock) -> bool:
    try:
        sock.accept()
        return True
    except BlockingIOError:
        return False


def run_in(box: Sandbox, command: str, env=None) -> subprocess.CompletedProcess:
    return subprocess.run([str(box.prefix), command], cwd=box.workdir, capture_output=True,
                          text=True, timeout=120, env={**os.environ, **(env or {})})


def test_a_command_reaches_its_own_dirs_and_the_host_alone(tmp_path, host, listener):
    outside = tmp_path / "outside"
    outside.mkdir()
    box = Sandbox(tmp_path / "box", workdir=tmp_path / "work", home=tmp_path / "home",
                  tmp=tmp_path / "tmp", env={"PATH": "/usr/bin:/bin", "ARM_VAR": "arm-value"},
                  host_url=host)
    port = listener.getsockname()[1]
    with box:
        done = run_in(box, f"""
            echo made > in-work; echo home > ~/.bashrc; echo tmp > /tmp/t.json
            echo escaped > {outside}/marker 2>/dev/null || echo outside-denied
            touch /usr/marker 2>/dev/null || echo usr-denied
            curl -s {host}/version; echo
            curl -s -m 2 http://127.0.0.1:{port}/ || echo other-port-unreachable
            (exec 3<>/dev/tcp/127.0.0.1/{port}) 2>/dev/null || echo devtcp-unreachable
            echo "env=$(env | cut -d= -f1 | sort | tr '\\n' ' ')"
            ls /proc | grep -c '^[0-9]'
            """, env={"HARNESS_SECRET_TOKEN": "s3cret-of-the-harness"})
        again = run_in(box, "cat /tmp/t.json ~/.bashrc")
    out = done.stdout
    assert done.returncode == 0, done.stderr
    for line in ("outside-denied", "usr-denied", "host-ok", "other-port-unreachable",
                 "devtcp-unreachable"):
        assert line in out
    assert not (outside / "marker").exists() and not accepted(listener)
    assert (tmp_path / "work/in-work").read_text() == "made\n"
    assert (tmp_path / "home/.bashrc").read_text() == "home\n"
    assert again.stdout == "tmp\nhome\n"  # the trial's /tmp and HOME persist between commands
    names = out.split("env=")[1].split("\n")[0].split()
    assert "ARM_VAR" in names and "HARNESS_SECRET_TOKEN" not in names
    assert set(names) <= {"ARM_VAR", "HOME", "LANG", "LC_ALL", "OLDPWD", "PATH", "PWD", "SHLVL",
                          "TERM", "TMPDIR", "_"}
    assert int(out.strip().splitlines()[-1]) <= 6  # the sandbox's own processes alone


def test_the_harness_environment_is_not_in_any_proc_environ(tmp_path):
    box = Sandbox(tmp_path / "box", workdir=tmp_path / "w", home=tmp_path / "h",
                  tmp=tmp_path / "t", env={"PATH": "/usr/bin:/bin"})
    with box:
        done = run_in(box, "cat /proc/[0-9]*/environ | tr '\\0' '\\n'; kill -9 -1; echo alive",
                      env={"ANTHROPIC_API_KEY": "sk-ant-harness-key-123456"})
    assert "sk-ant-harness-key" not in done.stdout
    assert os.getpid() > 0  # kill -9 -1 reached nothing outside (this test still runs)


def test_the_probe_passes_here_and_names_what_is_missing(monkeypatch):
    assert probe() is None
    monkeypatch.setattr(sandbox_module, "NAMESPACES", ("--die-with-parent", "--unshare-net"))
    reason = probe()
    assert reason.startswith("the sandbox is not in force:")
    assert "processes visible" in reason and "environment is visible" in reason


def test_a_missing_bwrap_is_one_line_naming_the_install(monkeypatch):
    monkeypatch.setattr(sandbox_module.shutil, "which",
                        lambda name, *a, **k: None if name == "bwrap" else "/usr/bin/" + name)
    reason = probe()
    assert "\n" not in reason and "apt-get install bubblewrap socat" in reason
    assert "--unconfined" not in reason  # a missing package is installed, not run around


def test_only_a_loopback_host_can_be_bridged():
    assert bridge_target("http://localhost:3000/") == ("127.0.0.1", 3000)
    with pytest.raises(SandboxError, match="--unconfined"):
        bridge_target("https://gitea.example.com/")


SECRET = "tok_0123456789abcdef0123456789abcdef01234567"


@pytest.mark.parametrize("start", [0, 1, 2])
def test_scrub_finds_base64_at_every_alignment(start):
    blob = base64.b64encode(b"x" * start + f"token={SECRET}&".encode()).decode()
    cleaned = scrub(f"data: {blob}", [SECRET])
    assert SCRUBBED in cleaned
    # What is left of the encoding decodes to no more than two bytes of the secret.
    rest = cleaned.split(SCRUBBED)
    assert all(len(part) < 12 or SECRET[:6] not in _b64_text(part) for part in rest)


def _b64_text(part: str) -> str:
    try:
        return base64.b64decode(part + "===").decode("latin-1")
    except ValueError:
        return ""


def test_scrub_finds_hex_url_and_json_forms():
    secret = 'pa ss/w"ord+1234'
    text = " ".join([secret.encode().hex(), secret.encode().hex().upper(),
                     quote(secret, safe=""), json.dumps(secret), base64.urlsafe_b64encode(
                         secret.encode()).decode()])
    cleaned = scrub(text, [secret])
    assert "pa ss" not in cleaned and "7061207373" not in cleaned.lower()
    assert "pa%20ss" not in cleaned and cleaned.count(SCRUBBED) == 5


def test_secret_looking_variables_are_secrets():
    found = environment_secrets({"MY_API_KEY": "abcdefgh12", "GH_TOKEN": "ghp_1234567890",
                                 "DB_PASSWORD": "hunter2hunter2", "SHORT_TOKEN": "1",
                                 "HOME": "/root/secret-looking-value"})
    assert set(found) == {"abcdefgh12", "ghp_1234567890", "hunter2hunter2"}


# --- `benchkit run`: confined by default, refused without bubblewrap, --unconfined marked

RAW_API = str(CHECKOUT / "arms.d/raw-api.yaml")


def benchkit_run(tmp_path, *args):
    return CliRunner().invoke(main, ["run", RAW_API, "--driver", "replay", "--task",
                                     "close-csv-export-issue", "--store", str(tmp_path / "results"),
                                     "--reports", str(tmp_path / "reports"), *args],
                              catch_exceptions=False)


def test_a_machine_without_bubblewrap_refuses_to_run_in_one_line(tmp_path, quiet, monkeypatch):
    real = sandbox_module.shutil.which
    monkeypatch.setattr(sandbox_module.shutil, "which",
                        lambda name, *a, **k: None if name == "bwrap" else real(name, *a, **k))
    result = benchkit_run(tmp_path)
    assert result.exit_code == 2
    lines = [line for line in result.output.splitlines() if "sandbox" in line]
    assert lines == [f"pre-flight sandbox: {missing()}"]
    assert "apt-get install bubblewrap socat" in lines[0]
    assert "--unconfined" not in result.output  # nothing offers to run around a package
    assert not (tmp_path / "results").exists()


@pytest.mark.slow
def test_unconfined_samples_are_marked_and_the_report_says_so(tmp_path, quiet):
    result = benchkit_run(tmp_path, "--unconfined")
    assert result.exit_code == 0, result.output
    sample = json.loads((tmp_path / "results/raw-api/close-csv-export-issue.jsonl").read_text())
    assert (sample["outcome"], sample["confined"]) == ("passed", False)
    report = (tmp_path / "reports/report.md").read_text()
    assert "1 sample ran unconfined (--unconfined)" in report
    confined = benchkit_run(tmp_path)
    assert confined.exit_code == 0, confined.output
    lines = (tmp_path / "results/raw-api/close-csv-export-issue.jsonl").read_text().splitlines()
    assert json.loads(lines[-1])["confined"] is True


def test_an_mcp_server_starts_with_its_declared_variables_alone():
    from benchkit.agent.private_inputs import mcp_allowlisted
    server = mcp_allowlisted({"type": "stdio", "command": "env", "args": [],
                              "env": {"GITEA_ACCESS_TOKEN": "agent-token-1234"}})
    env = {"PATH": "/usr/bin:/bin", "HOME": "/trial/home", "GITEA_ACCESS_TOKEN": "agent-token-1234",
           "ANTHROPIC_API_KEY": "sk-ant-harness-key", "CLAUDE_CODE_MESSAGING_TOKEN": "cli-own"}
    done = subprocess.run([server["command"], *server["args"]], env=env, capture_output=True,
                          text=True, timeout=120)
    seen = dict(line.split("=", 1) for line in done.stdout.splitlines())
    assert seen == {"PATH": "/usr/bin:/bin", "HOME": "/trial/home",
                    "GITEA_ACCESS_TOKEN": "agent-token-1234"}
    assert "agent-token-1234" not in " ".join(server["args"])  # values never in an argv


def test_a_directory_above_a_mount_swapped_for_a_link_creates_nothing_on_the_host(tmp_path):
    """bwrap follows links in a destination on the harness's side. The agent renames the
    directories above its mounts that it can write (the config directory's parent in
    its /tmp, tea/ above the login file) and leaves links to a host directory (through
    bwrap's /oldroot): no later command may create anything there. (The first rename
    succeeds, in an empty tmpfs that lasts one command.)"""
    planted = tmp_path / "host-dir"
    planted.mkdir()
    harness = tmp_path / "harness"
    config = harness / "config"
    login = config / "tea" / "config.yml"
    login.parent.mkdir(parents=True)
    login.write_text("logins: []\n")
    box = Sandbox(tmp_path / "box", workdir=tmp_path / "work", home=tmp_path / "trial-home",
                  tmp=tmp_path / "trial-tmp", writable=(config,), readonly=(login,))
    with box:
        swaps = [run_in(box, f"mv {harness} {tmp_path}/moved; ln -s /oldroot{planted} {harness}"),
                 run_in(box, f"cd {config} && mv tea old; mkdir tea; "
                             f"ln -s /oldroot{planted}/file tea/config.yml")]
        after = run_in(box, f"cat {login}")
    assert list(planted.iterdir()) == []
    assert "Device or resource busy" in swaps[1].stderr  # tea/ is a mount point
    assert after.stdout == "logins: []\n", after.stderr


def test_a_sandbox_whose_own_directory_the_agent_writes_does_not_start(tmp_path):
    """Its prefix script and read-only copies would be the agent's to rewrite."""
    box = Sandbox(tmp_path / "work" / "box", workdir=tmp_path / "work", home=tmp_path / "home",
                  tmp=tmp_path / "tmp")
    with pytest.raises(SandboxError, match="lies in a directory the agent's shell writes"):
        box.start()
    assert not box.prefix.exists()


def test_the_clis_login_files_are_out_of_the_agents_reach(tmp_path, host):
    """The CLI builds its shell snapshot outside the sandbox by sourcing HOME's login
    files, and under load does so after the agent's first commands: whatever the agent's
    shell writes to its ~ must never be a login file of the CLI."""
    from benchkit.agent.claude import ClaudeDriver
    from benchkit.agent.driver import AgentRequest
    driver = ClaudeDriver(base_url=host)
    request = AgentRequest(system_prompt="", prompt="", model="m", tools=["Bash"],
                           mcp_servers={}, env={}, cwd=None, guard=None, max_turns=1,
                           backstop_seconds=60, network=host)
    work = tmp_path / "work"
    work.mkdir()
    box = driver._sandbox(request, "marker", tmp_path, work)
    cli = driver._env(request, "marker", tmp_path, box)
    with box:
        done = run_in(box, "for f in .bashrc .profile .bash_profile .bash_login; do "
                           "echo 'touch /tmp/x' >> ~/$f; done; echo \"$HOME\" \"$TMPDIR\"")
    assert done.returncode == 0, done.stderr
    assert (box.home / ".bashrc").is_file()  # the agent's own ~ took the writes
    for name in ("HOME", "TMPDIR"):
        theirs = os.path.realpath(cli[name])
        assert not any(theirs == d or theirs.startswith(d + os.sep) for d in box._agent_writable())
    assert sorted(os.listdir(cli["HOME"])) == []
