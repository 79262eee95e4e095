"""The sandbox shows an allow-list of the host, not the host minus a deny-list: markers
in every place a deny-list would miss (/srv, /opt, /var/lib, /data, /mnt, /media,
/usr/local, /etc, and a copy of a benchkit checkout with its answer key, store and
reports outside /tmp and /home) are out of reach of every shell arm's sandbox, built as
the agent's is (the arm's real tool and curated PATH, real bubblewrap), and of Python
interpreter arms run from an installation and from a virtual environment; the arm's
tool still runs there, and of the checkout that holds it (`.tools/`) nothing but its
own build is visible. Once more through the real Claude CLI (scripted model). The
start-of-run probe fails when the root is shown. The MCP arms' server, which runs
outside any sandbox, offers no tool that reads a file (its pinned source, read here)."""

import os
import re
import secrets
import shutil
import subprocess
import sys
import tarfile
import venv
from dataclasses import dataclass
from pathlib import Path

import pytest
from conftest import CHECKOUT, IN_CI, real_tool

from benchkit.agent.claude import ClaudeDriver
from benchkit.agent.driver import AgentRequest, ToolDecision
from benchkit.agent.scripted import ScriptedModel, bash, say
from benchkit.documents import load_arm, load_suite
from benchkit.gitea.tools import pin
from benchkit.isolation import assemble
from benchkit.isolation import sandbox as sandbox_module
from benchkit.isolation.sandbox import Sandbox, missing, probe
from benchkit.isolation.system import SystemView

ARCHIVES = Path(os.environ.get("BENCHKIT_TOOL_ARCHIVES") or CHECKOUT.parent / "shared" / "tools")
PLACES = ("/srv", "/opt", "/var/lib", "/data", "/mnt", "/media", "/usr/local", "/etc")
SUITE = load_suite(CHECKOUT / "suite.yaml")
PY_ARM = """\
id: py
description: Python, as an interpreter arm.
tool:
  kind: shell
  binary: python3
  install: "a Python 3"
  version: [--version]
  probe:
    run: python3 -c "print(1)"
bootstrap: Python.
"""

pytestmark = pytest.mark.skipif(missing() is not None and not IN_CI, reason="needs bubblewrap")


@dataclass
class Markers:
    tag: str             # in the name of every place's marker directory
    secret: str          # in every marker file's name and text
    files: list[Path]    # each must be unreadable
    checkout: Path       # the copy of a checkout, outside /tmp and /home


@pytest.fixture(scope="module")
def markers():
    """A marker file in each place, and a checkout's copy under /opt with a store and
    reports; all removed again (with any place this made, /data say)."""
    tag = "benchkit-marker-" + secrets.token_hex(4)
    secret = "benchkit-secret-" + secrets.token_hex(4)
    made: list[Path] = []
    try:
        try:
            files = []
            for place in map(Path, PLACES):
                if not place.exists():
                    place.mkdir()
                    made.append(place)
                (place / tag).mkdir()
                made.append(place / tag)
                files.append(place / tag / f"{secret}.txt")
                files[-1].write_text(f"{secret} in {place}\n")
            checkout = Path("/opt") / tag / "benchkit"
            for name in ("tasks.d", "refs.d", "arms.d", "seeds", "benchkit"):
                shutil.copytree(CHECKOUT / name, checkout / name,
                                ignore=shutil.ignore_patterns("__pycache__"))
            for relative in ("results/raw-api/close-csv-export-issue.jsonl",
                             "reports/report.md", f"tasks.d/{secret}.yaml"):
                (checkout / relative).parent.mkdir(parents=True, exist_ok=True)
                (checkout / relative).write_text(f"{secret}\n")
                files.append(checkout / relative)
        except PermissionError as exc:
            (pytest.fail if IN_CI else pytest.skip)(f"markers need root: {exc}")
        yield Markers(tag, secret, files, checkout)
    finally:
        for path in reversed(made):
            shutil.rmtree(path, ignore_errors=True)


def looking(m: Markers) -> str:
    """The agent's ways to look: read each marker, list its place, search the root."""
    return "; ".join([
        *(f"cat {f} 2>/dev/null" for f in m.files),
        f"ls {' '.join(PLACES)} {m.checkout} {CHECKOUT} 2>/dev/null",
        f"cat {CHECKOUT}/tasks.d/*.yaml {CHECKOUT}/refs.d/*.yaml 2>/dev/null",
        f"find / -name 'benchkit-marker-*' -o -name '{m.secret}*' -o -name tasks.d "
        "-o -name refs.d 2>/dev/null",
        "echo looked"])


def assert_nothing_found(out: str, m: Markers, shown: str | None = None) -> None:
    """Nothing of the markers, of a task or of a reference in what the agent saw; not
    even a marker's directory, unless it lies on the way to `shown`."""
    assert out.rstrip().endswith("looked"), out
    if shown is None or m.tag not in shown:
        assert m.tag not in out, f"a marker's place visible from inside:\n{out}"
    for seen in (m.secret, "tasks.d", "refs.d", "any_of", "steps:"):
        assert seen not in out, f"{seen} visible from inside:\n{out}"


def confined_run(tmp_path: Path, arm, command: str, search: str | None = None) -> str:
    """`command` in the arm's sandbox, built as the agent's is (its credential files,
    its config directory, its curated PATH made from `search`, default PATH and the
    checkout's builds); stdout and stderr together."""
    work = tmp_path / "work"
    work.mkdir(exist_ok=True)
    assembly = assemble(arm, SUITE, host_url="http://127.0.0.1:9/",
                        api_url="http://127.0.0.1:9/api/v1", token="t0k3n", owner="o",
                        repo="r", user="u", workdir=work, search_path=search)
    with assembly, Sandbox(tmp_path / "box", workdir=work, home=tmp_path / "home",
                           tmp=tmp_path / "tmp", env=dict(assembly.env),
                           writable=(assembly.config_dir,),
                           readonly=assembly.credential_files) as box:
        done = subprocess.run([str(box.prefix), command], cwd=work, capture_output=True,
                              text=True, timeout=120)
    return done.stdout + done.stderr


def beside_the_tool(tool: str) -> str:
    """The command that lists what the sandbox shows of the checkout whose `.tools/`
    holds the arm's tool (nothing to list for a tool installed elsewhere)."""
    real = Path(os.path.realpath(tool))
    if ".tools" not in real.parts:
        return "true"
    return f"find {Path(*real.parts[:real.parts.index('.tools')])} -maxdepth 2 2>/dev/null"


@pytest.mark.parametrize("name,binary", [("raw-api", "curl"), ("tea", "tea"),
                                         ("gitea-axi", "gitea-axi")])
def test_a_shell_arm_s_sandbox_shows_no_marker_and_runs_its_tool(name, binary, markers,
                                                                 tmp_path):
    """Of the checkout that holds the tool's build, only the way down to it is there."""
    tool = shutil.which(binary) if name == "raw-api" else real_tool(name)
    assert tool is not None
    listing = beside_the_tool(tool)
    out = confined_run(tmp_path, load_arm(CHECKOUT / "arms.d" / f"{name}.yaml"),
                       f"{binary} --version | head -1; echo ---; {looking(markers)}; "
                       f"echo ---; {listing}")
    version, looked, listed = out.split("---\n")
    assert version.strip(), out  # the tool ran: its version line
    assert_nothing_found(looked, markers)
    real = os.path.realpath(tool)
    assert [line for line in listed.splitlines()
            if not (real == line or real.startswith(line + "/"))] == [], listed


def py_arm(tmp_path: Path):
    (tmp_path / "py.yaml").write_text(PY_ARM)
    return load_arm(tmp_path / "py.yaml")


PY_LOOK = ("import os, sys; print(sys.prefix); "
           "print([p for p in sys.argv[1:] if os.path.exists(p)])")


def test_an_interpreter_shows_its_installation_and_no_marker(markers, tmp_path):
    search = os.pathsep.join([os.path.dirname(os.path.realpath(sys.executable)),
                              os.environ["PATH"]])
    files = " ".join(map(str, markers.files))
    out = confined_run(tmp_path, py_arm(tmp_path),
                       f"python3 -c {PY_LOOK!r} {files}; {looking(markers)}", search)
    prefix, found = out.splitlines()[:2]
    assert (prefix, found) == (sys.base_prefix, "[]"), out
    assert_nothing_found(out, markers)


def test_a_virtual_environment_inside_a_checkout_shows_itself_not_the_checkout(markers,
                                                                               tmp_path):
    """The environment is shown whole, with the installation it was made from (its
    python3 a link to that installation's, itself a link beside unrelated programs);
    the checkout around it is not."""
    where = markers.checkout / ".venv"
    venv.create(where, with_pip=False, symlinks=True)
    try:
        search = os.pathsep.join([str(where / "bin"), os.environ["PATH"]])
        files = " ".join(map(str, markers.files))
        out = confined_run(tmp_path, py_arm(tmp_path),
                           f"python3 -c {PY_LOOK!r} {files}; {looking(markers)}", search)
    finally:
        shutil.rmtree(where)
    prefix, found = out.splitlines()[:2]
    assert (prefix, found) == (str(where), "[]"), out
    assert_nothing_found(out, markers, shown=str(where))


@pytest.mark.slow
def test_the_agent_finds_no_marker_through_the_real_cli(markers, forge, tmp_path):
    """The raw-api arm as a trial runs it, every command allowed (the sandbox alone
    stands): `cat`, `ls` and `find /` find nothing, and curl still reaches the host."""
    workdir = tmp_path / "work"
    workdir.mkdir()
    assembly = assemble(load_arm(CHECKOUT / "arms.d/raw-api.yaml"), SUITE,
                        host_url=forge.url, api_url=forge.api_url, token=forge.token,
                        owner=forge.user, repo="demo", user=forge.user, workdir=workdir)
    script = [bash(looking(markers)), bash(f"curl -s {forge.api_url}/version"), say("done")]
    with assembly, ScriptedModel(script, model=SUITE.model) as model:
        run = ClaudeDriver(base_url=model.url).run(AgentRequest(
            system_prompt=assembly.system_prompt, prompt="Look around.", model=SUITE.model,
            tools=assembly.tools, mcp_servers=assembly.mcp_servers, env=assembly.env,
            cwd=workdir, guard=lambda name, tool_input: ToolDecision(), max_turns=10,
            backstop_seconds=120, network=forge.url))
    assert run.stop == "end" and run.confined, run.error
    results = [e["excerpt"] for e in run.transcript if e["event"] == "tool_result"]
    assert len(results) == 2, results
    assert_nothing_found(results[0], markers)
    assert '"version"' in results[1]


def test_the_probe_fails_when_the_sandbox_shows_the_root(monkeypatch):
    assert probe() is None
    monkeypatch.setattr(sandbox_module, "system_view",
                        lambda: SystemView(binds=("/",), links=()))
    reason = probe()
    assert reason is not None and "benchkit's own files are visible" in reason, reason


# Every call of a Go server's own code that touches a file, runs a program or serves a
# resource (MCP resources can be files).
FILE_CALLS = re.compile(r"\b(?:os\.(?:Open|OpenFile|ReadFile|ReadDir|DirFS|Stat|Lstat|Readlink|"
                        r"Create|CreateTemp|WriteFile|Mkdir|MkdirAll|MkdirTemp|Remove|RemoveAll|"
                        r"Rename|Symlink|Link|Chdir)|ioutil\.\w+|filepath\.(?:Walk|WalkDir|Glob)|"
                        r"exec\.Command\w*|\w*\.AddResource\w*|\w*\.AddPrompt\w*)\(")
# gitea-mcp a5dd03c: the `download_job_log` method of `actions_run_read` writes a job's
# log where the agent says (`output_path`), after fetching it through the gateway, whose
# list has no Actions route (so it is refused, the trial a leak); its log directory.
GITEA_MCP_FILE_CALLS = {("operation/actions/runs.go", "os.MkdirAll"),
                        ("operation/actions/runs.go", "os.WriteFile"),
                        ("pkg/log/log.go", "os.MkdirAll")}


def test_the_pinned_gitea_mcp_offers_no_way_to_read_a_file():
    """Read from the pinned source: a new file call (a pin moved) fails here, to be
    judged, and the MCP server confined as the shell is when it reads files."""
    archive = ARCHIVES / pin("gitea-mcp").source
    if not archive.is_file():
        (pytest.fail if IN_CI else pytest.skip)(f"no source archive {archive} "
                                                "(BENCHKIT_TOOL_ARCHIVES)")
    found = set()
    with tarfile.open(archive) as tar:
        for member in tar:
            if member.isfile() and member.name.endswith(".go") and not member.name.endswith(
                    "_test.go"):
                text = tar.extractfile(member).read().decode()  # type: ignore[union-attr]
                found |= {(member.name.split("/", 1)[1], call.group(0)[:-1])
                          for call in FILE_CALLS.finditer(text)}
    assert found == GITEA_MCP_FILE_CALLS
    assert "/actions/" not in (CHECKOUT / "benchkit/gateway/operations.yaml").read_text()
