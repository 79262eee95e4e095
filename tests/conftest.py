"""Fixtures shared across areas. Keep them generic."""

import contextlib
import os
import shutil
import signal
import socket
import sys
import tempfile
import uuid
from pathlib import Path

import pytest

from benchkit.documents import load_arm
from benchkit.documents.tree import load_tree

CHECKOUT = Path(__file__).resolve().parent.parent
IN_CI = os.environ.get("CI") == "true"
# This checkout's `benchkit` command line, for a subprocess: the `benchkit` on PATH may
# be another checkout's.
BENCHKIT = [sys.executable, "-c", "from benchkit.cli import main; main()"]

# The arms' real tools: scripts/test-setup builds the pinned ones into .tools/; they go
# first on PATH, for the tests and for every harness they start.
REAL_TOOLS = ("tea", "gitea-mcp", "gitea-axi")
HOW_TO_INSTALL = {name: load_arm(CHECKOUT / "arms.d" / f"{name}.yaml").tool.install
                  for name in REAL_TOOLS}


def _built_tools_first_on_path() -> dict[str, str]:
    """Prepends each built tool's directory to PATH; returns why each other one is not built."""
    from benchkit.gitea.tools import ToolUnavailable, built
    found, why = [], {}
    for name in REAL_TOOLS:
        try:
            found.append(str(built(name).parent))
        except ToolUnavailable as exc:
            why[name] = str(exc)
    os.environ["PATH"] = os.pathsep.join([*found, os.environ.get("PATH", os.defpath)])
    return why


NOT_BUILT = _built_tools_first_on_path()


def real_tool(name: str) -> str:
    """The path of the arm's real tool `name`. Without it a test skips, saying why and how
    to install it; in CI, where every real-tool test must run, it fails instead."""
    found = shutil.which(name)
    if found is not None and (name not in NOT_BUILT or not IN_CI):
        return found
    why = NOT_BUILT.get(name, f"`{name}` is not on PATH")
    (pytest.fail if IN_CI else pytest.skip)(
        f"no real {name}: {why}; install it with {HOW_TO_INSTALL[name]}")
    raise AssertionError("unreachable")


@pytest.fixture
def forge():
    """A fresh embedded forge on a loopback port, its own in-memory database."""
    from benchkit.forge import Forge
    with Forge() as running:
        yield running


@pytest.fixture(scope="session")
def gitea():
    """One real Gitea (the pinned build of scripts/test-setup) for the whole session,
    on a loopback port, in a fresh work directory removed at the end. Tests share it:
    each works in repositories of its own. Without a build it skips saying why, except
    in CI, where the real-Gitea tier must run: there it fails saying why. A Gitea that
    is built but will not start always fails."""
    with real_gitea() as running:
        yield running


@contextlib.contextmanager
def real_gitea(**options):
    """A real Gitea of the pinned build, started with `options` (benchkit.gitea.server.Gitea)
    and removed after; without a build it skips saying why, failing in CI."""
    from benchkit.gitea.server import Gitea
    from benchkit.gitea.tools import ToolUnavailable
    try:
        running = Gitea(**options)
    except ToolUnavailable as exc:
        (pytest.fail if IN_CI else pytest.skip)(f"no real Gitea: {exc}")
    with running:
        yield running


@pytest.fixture(params=["forge", "gitea"])
def host(request):
    """Each host-facing test twice: on a fresh forge and on the session's real Gitea.
    Both give url, api_url, user, token, create_user() and create_token()."""
    return request.getfixturevalue(request.param)


@pytest.fixture
def repo_with_issue(host):
    """`repo_with_issue(prefix, title)` -> (client, name): a new repository of the
    host's user with issue #1 titled so; each is deleted after the test."""
    from benchkit.gitea import Client, delete_repo
    client, made = Client(host.url, host.token), []

    def make(prefix: str, title: str) -> tuple[Client, str]:
        name = f"{prefix}-{uuid.uuid4().hex[:8]}"
        client.post("/user/repos", json={"name": name, "auto_init": True})
        made.append(name)
        client.post(f"/repos/{client.user}/{name}/issues", json={"title": title})
        return client, name
    yield make
    for name in made:
        delete_repo(client, client.user, name)


@pytest.fixture(autouse=True, scope="session")
def _ctrl_c_raises():
    """The Ctrl-C tests signal this process (and its children, which inherit what it
    does with SIGINT): a suite started in the background of a script or a CI runner
    starts ignoring SIGINT, and Python keeps ignoring it."""
    previous = signal.signal(signal.SIGINT, signal.default_int_handler)
    yield
    signal.signal(signal.SIGINT, previous)


@pytest.fixture(autouse=True, scope="session")
def _private_host_cache(tmp_path_factory):
    """The self-review answers tests probe stay out of the user's ~/.cache (keyed by
    URL, a loopback port reused by another test host would read a stale answer)."""
    os.environ["BENCHKIT_CACHE_DIR"] = str(tmp_path_factory.mktemp("benchkit-cache"))


@pytest.fixture(autouse=True, scope="session")
def _private_run_registry(tmp_path_factory):
    """The runs' journal registry (benchkit.journal) stays out of the user's state
    directory: a test's `benchkit gc` sweeps its own runs' journals, no one else's."""
    os.environ["BENCHKIT_STATE_DIR"] = str(tmp_path_factory.mktemp("benchkit-state"))


@pytest.fixture
def dead_url():
    """A loopback URL that nothing listens on (a host that is down)."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    return f"http://127.0.0.1:{port}/"


@pytest.fixture
def tree_copy(tmp_path):
    """A temporary copy of the shipped tree (suite.yaml, seeds/, tasks.d/, arms.d/,
    refs.d/), to break or extend freely; returns its root. Point BENCHKIT_ROOT at it,
    or chdir into it, to make commands use it."""
    root = tmp_path / "tree"
    root.mkdir()
    for name in ("suite.yaml", "seeds", "tasks.d", "arms.d", "refs.d"):
        source = CHECKOUT / name
        if source.is_dir():
            shutil.copytree(source, root / name)
        elif source.is_file():
            shutil.copy2(source, root / name)
    return root


@pytest.fixture
def npm_axi(tmp_path):
    """An npm-style install of the suite's own gitea-axi stand-in (a `#!/usr/bin/env
    node` script): `<prefix>/bin/gitea-axi` links to the package's dist/main.js, and the
    package ships skills/gitea-axi/SKILL.md. Returns the bin directory."""
    package = tmp_path / "npm" / "lib" / "node_modules" / "gitea-axi"
    (package / "dist").mkdir(parents=True)
    shutil.copy2(CHECKOUT / "tests/data/axi-standin/main.js", package / "dist" / "main.js")
    (package / "skills" / "gitea-axi").mkdir(parents=True)
    (package / "skills" / "gitea-axi" / "SKILL.md").write_text(
        "---\nname: gitea-axi\n---\n\n# gitea-axi (from the package)\n")
    bin_dir = tmp_path / "npm" / "bin"
    bin_dir.mkdir()
    (bin_dir / "gitea-axi").symlink_to("../lib/node_modules/gitea-axi/dist/main.js")
    return bin_dir


@pytest.fixture
def work_tree(tree_copy, monkeypatch):
    """The tree copy as the working directory (BENCHKIT_ROOT unset): commands find it
    as they find a user's own tree."""
    monkeypatch.chdir(tree_copy)
    monkeypatch.delenv("BENCHKIT_ROOT", raising=False)
    return tree_copy


@pytest.fixture(scope="module")
def shipped_tree():
    """The checkout's own tree, loaded (benchkit.documents.tree.load_tree)."""
    return load_tree(CHECKOUT)


@pytest.fixture
def quiet(tmp_path, monkeypatch):
    """No GITEA_*, tea login, model URL or host cache of the machine reaches a run started
    in the test's own directory."""
    for name in ("GITEA_URL", "GITEA_TOKEN", "BENCHKIT_ROOT", "ANTHROPIC_BASE_URL"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "xdg"))
    monkeypatch.setenv("BENCHKIT_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.chdir(tmp_path)


@pytest.fixture
def private_dirs(tmp_path, monkeypatch):
    """The probe cache and every temporary directory of a run, inside the test's own
    directory, so what a cell leaves behind can be seen."""
    monkeypatch.setenv("BENCHKIT_CACHE_DIR", str(tmp_path / "cache"))
    (tmp_path / "tmp").mkdir()
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path / "tmp"))
