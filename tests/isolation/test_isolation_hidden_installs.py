"""Tools installed under a directory the agent's sandbox hides (the test's own tmp_path
lies under /tmp, which the sandbox hides): an npm package under an nvm-like prefix, with
its node there too, and under ~/.npm-global; a Go binary in ~/go/bin. Each starts in the
agent's shell through the curated bin (real bubblewrap), with its package's node_modules/
and its interpreter, read-only, while every other file of the hidden directory stays out
of sight."""

import json
import os
import shutil
import subprocess
from pathlib import Path

import pytest
from conftest import CHECKOUT

from benchkit.documents import load_arm
from benchkit.isolation import make_bin_dir
from benchkit.isolation.sandbox import Sandbox, missing

AXI = load_arm(CHECKOUT / "arms.d" / "gitea-axi.yaml")
TEA = load_arm(CHECKOUT / "arms.d" / "tea.yaml")
NODE = shutil.which("node")
pytestmark = [pytest.mark.skipif(missing() is not None, reason="needs bubblewrap and socat"),
              pytest.mark.skipif(NODE is None, reason="node is not installed (scripts/test-setup)")]

# An ES module that imports a dependency from its package's own node_modules/ (what
# failed with ERR_MODULE_NOT_FOUND when only dist/ was visible).
MAIN = ('#!/usr/bin/env node\nimport { said } from "dep";\n'
        'console.log(process.argv[2] === "--version" ? "standin 1.0 " + said : said);\n')


def npm_package(prefix: Path) -> Path:
    """An npm-style install under `prefix`: lib/node_modules/gitea-axi with its own
    node_modules/, and bin/gitea-axi linked to its dist/main.js. Returns bin/."""
    package = prefix / "lib" / "node_modules" / "gitea-axi"
    write(package / "package.json", json.dumps({"name": "gitea-axi", "type": "module"}))
    write(package / "dist" / "package.json", json.dumps({"type": "module"}))  # not a root
    write(package / "dist" / "main.js", MAIN, mode=0o755)
    dep = package / "node_modules" / "dep"
    write(dep / "package.json", json.dumps({"name": "dep", "type": "module", "main": "index.js"}))
    write(dep / "index.js", 'export const said = "dep-loaded";\n')
    (prefix / "bin").mkdir(parents=True, exist_ok=True)
    (prefix / "bin" / "gitea-axi").symlink_to("../lib/node_modules/gitea-axi/dist/main.js")
    return prefix / "bin"


def write(path: Path, text: str, mode: int = 0o644) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    path.chmod(mode)
    return path


def confined(tmp_path: Path, arm, search: str, command: str) -> subprocess.CompletedProcess:
    """`command` in the agent's shell: the arm's curated bin made from `search`, the
    sandbox around it, its PATH the curated directory alone."""
    curated = make_bin_dir(arm.id, arm.tool, tmp_path / "harness" / "bin", search)
    box = Sandbox(tmp_path / "box", workdir=tmp_path / "work", home=tmp_path / "trial-home",
                  tmp=tmp_path / "trial-tmp", env={"PATH": str(curated)})
    with box:
        return subprocess.run([str(box.prefix), command], cwd=box.workdir, capture_output=True,
                              text=True, timeout=60)


def secrets_beside(home: Path) -> list[Path]:
    """Files of the hidden HOME that nothing the tool needs: they must stay invisible."""
    return [write(home / ".ssh" / "id_ed25519", "private-key"),
            write(home / ".npmrc", "//registry/:_authToken=npm-secret")]


def test_an_nvm_prefix_shows_the_package_and_its_node_and_nothing_else(tmp_path):
    home = tmp_path / "home"
    prefix = home / ".nvm" / "versions" / "node" / "v20.0.0"
    bin_dir = npm_package(prefix)
    node = prefix / "bin" / "node"
    try:
        os.link(os.path.realpath(NODE), node)  # the interpreter hidden too (cheap: same file)
    except OSError:
        shutil.copy2(NODE, node)
    write(prefix / "bin" / "npm", "#!/bin/sh\necho npm\n", mode=0o755)  # a sibling: hidden
    hidden = [*secrets_beside(home), prefix / "bin" / "npm"]
    listing = " ".join(f"[ -e {p} ] && echo VISIBLE:{p};" for p in hidden)
    ran = confined(tmp_path, AXI, f"{bin_dir}{os.pathsep}{os.environ['PATH']}",
                   f"gitea-axi --version; {listing} command -v node; true")
    assert ran.returncode == 0, ran.stderr
    lines = ran.stdout.splitlines()
    assert lines[0] == "standin 1.0 dep-loaded", ran.stderr
    assert not [line for line in lines if line.startswith("VISIBLE:")]
    assert os.path.realpath(os.path.join(tmp_path / "harness" / "bin", "node")) == str(node)


def test_an_npm_global_prefix_shows_the_package_read_only(tmp_path):
    home = tmp_path / "home"
    bin_dir = npm_package(home / ".npm-global")
    package = home / ".npm-global" / "lib" / "node_modules" / "gitea-axi"
    hidden = secrets_beside(home)
    ran = confined(tmp_path, AXI, f"{bin_dir}{os.pathsep}{os.environ['PATH']}",
                   f"gitea-axi; cat {hidden[0]} {hidden[1]}; : > {package}/written")
    assert ran.stdout.splitlines() == ["dep-loaded"], ran.stderr
    assert "No such file" in ran.stderr and "Read-only file system" in ran.stderr
    assert not (package / "written").exists()


def test_a_go_bin_shows_the_binary_alone(tmp_path):
    home = tmp_path / "home"
    tea = write(home / "go" / "bin" / "tea", "#!/bin/sh\necho tea-standin \"$@\"\n", mode=0o755)
    sibling = write(home / "go" / "bin" / "other-tool", "#!/bin/sh\n", mode=0o755)
    source = write(home / "go" / "pkg" / "mod" / "cache.txt", "module cache")
    hidden = [sibling, source, *secrets_beside(home)]
    listing = " ".join(f"[ -e {p} ] && echo VISIBLE:{p};" for p in hidden)
    ran = confined(tmp_path, TEA, f"{tea.parent}{os.pathsep}{os.environ['PATH']}",
                   f"tea --version; {listing} true")
    assert ran.stdout.splitlines() == ["tea-standin --version"], ran.stderr


def tea_login_box(tmp_path: Path) -> tuple[Path, Path, Sandbox]:
    """(tea's config directory in the harness's hidden /tmp, its login file, a sandbox
    whose HOME is that directory, writable, with the login read-only)."""
    config = tmp_path / "harness" / "config"
    login = write(config / "tea" / "config.yml", "logins: []\n", mode=0o600)
    box = Sandbox(tmp_path / "box", workdir=tmp_path / "work", home=tmp_path / "trial-home",
                  tmp=tmp_path / "trial-tmp", env={"PATH": "/usr/bin:/bin", "HOME": str(config)},
                  writable=(config,), readonly=(login,))
    return config, login, box


def test_the_arm_s_config_dir_is_there_and_its_credential_files_read_only(tmp_path):
    """tea's login lives in the harness's config directory under the hidden /tmp: the
    agent's shell sees it (the tool reads it), cannot rewrite it, and may still write
    beside it (the directory is the tool's HOME)."""
    config, login, box = tea_login_box(tmp_path)
    with box:
        ran = subprocess.run([str(box.prefix), f"cat {login}; echo changed > {login}; "
                              "echo note > ~/notes && echo wrote"], cwd=box.workdir,
                             capture_output=True, text=True, timeout=60)
    assert ran.stdout.splitlines() == ["logins: []", "wrote"], ran.stderr
    assert "Read-only file system" in ran.stderr
    assert login.read_text() == "logins: []\n" and (config / "notes").read_text() == "note\n"


def test_a_credential_file_swapped_for_a_link_mounts_nothing_of_the_host(tmp_path):
    """The agent may rename what holds a credential file (the directory above it is the
    tool's writable HOME) and leave a link in its place; the next command must not
    follow that link on the harness's side and mount what it names (a directory of the
    hidden /tmp here: another trial's files; the link's name made to exist inside, in the
    trial's own /tmp, so that the mount has somewhere to land)."""
    secret = write(tmp_path / "outside" / "secret.txt", "HARNESS-SECRET\n")
    config, login, box = tea_login_box(tmp_path)
    with box:
        swap = subprocess.run([str(box.prefix), f"cd {config} && mv tea tea.old && mkdir tea "
                               "&& ln -s ../../../outside tea/config.yml && mkdir -p ../../outside "
                               "&& echo swapped"],
                              cwd=box.workdir, capture_output=True, text=True, timeout=60)
        looked = subprocess.run([str(box.prefix), f"cat {login}; cat {login}/{secret.name}; true"],
                                cwd=box.workdir, capture_output=True, text=True, timeout=60)
    assert "HARNESS-SECRET" not in looked.stdout + looked.stderr
    assert swap.stdout == "" and "Device or resource busy" in swap.stderr  # refused: tea/ is a mount point
    assert looked.stdout.splitlines()[0] == "logins: []", looked.stderr


def test_a_package_json_above_a_go_binary_shows_nothing_more(tmp_path):
    """A named package.json higher up (a HOME that is a Node project) does not make the
    directory holding it the tool's package: only the binary is shown."""
    home = tmp_path / "home"
    write(home / "package.json", json.dumps({"name": "my-home"}))
    tea = write(home / ".local" / "bin" / "tea", "#!/bin/sh\necho tea-standin\n", mode=0o755)
    hidden = secrets_beside(home)
    listing = " ".join(f"[ -e {p} ] && echo VISIBLE:{p};" for p in [*hidden, home / "package.json"])
    ran = confined(tmp_path, TEA, f"{tea.parent}{os.pathsep}{os.environ['PATH']}",
                   f"tea; {listing} true")
    assert ran.stdout.splitlines() == ["tea-standin"], ran.stderr


def test_an_npm_linked_package_shows_its_checkout_and_nothing_beside_it(tmp_path):
    """`npm link` (or `npm install -g .`): the global node_modules/gitea-axi is a link to
    the checkout, whose package.json names dist/main.js as the binary."""
    home = tmp_path / "home"
    checkout = npm_package(tmp_path / "build").parent / "lib" / "node_modules" / "gitea-axi"
    write(checkout / "package.json", json.dumps(
        {"name": "gitea-axi", "type": "module", "bin": {"gitea-axi": "dist/main.js"}}))
    shutil.move(checkout, home / "src" / "gitea-axi")
    write(home / "src" / "package.json", json.dumps({"name": "workspace"}))
    beside = write(home / "src" / "other" / "notes.txt", "private notes")
    prefix = home / ".npm-global"
    (prefix / "lib" / "node_modules").mkdir(parents=True)
    (prefix / "lib" / "node_modules" / "gitea-axi").symlink_to(home / "src" / "gitea-axi")
    (prefix / "bin").mkdir()
    (prefix / "bin" / "gitea-axi").symlink_to("../lib/node_modules/gitea-axi/dist/main.js")
    hidden = [beside, *secrets_beside(home)]
    listing = " ".join(f"[ -e {p} ] && echo VISIBLE:{p};" for p in hidden)
    ran = confined(tmp_path, AXI, f"{prefix / 'bin'}{os.pathsep}{os.environ['PATH']}",
                   f"gitea-axi; {listing} true")
    assert ran.stdout.splitlines() == ["dep-loaded"], ran.stderr
