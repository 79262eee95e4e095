"""What of the host every sandbox shows, whatever the arm: the system's programs and
libraries (/usr's bin, lib and share directories, and the root's links into them, or
the directories a distribution without a merged /usr keeps there), and an /etc of its
own: copies of a few of the host's files, and files written for the sandbox alone
(its user, its hosts).

Nothing else of the host exists inside: not a benchkit checkout (its tasks.d, refs.d,
store, reports), not a host's data directory (/var/lib, /srv, /opt, /data, /mnt,
/media), not another user's files, not /etc's secrets (a Gitea's app.ini, npm's and
pip's tokens, git's credential helpers). An arm's own installation is added to this
by shown.py, one directory or file at a time.
"""

from __future__ import annotations

import functools
import grp
import os
import pwd
import shutil
from dataclasses import dataclass
from pathlib import Path

# The root's entries a distribution links into /usr (merged /usr) or keeps as directories.
ROOT_SYSTEM = ("/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32")
# /usr's programs, libraries and their data. Not /usr/local (installations of their own
# beside unrelated ones: shown a tool at a time, shown.py), /usr/src (where sources and
# checkouts are kept), /usr/etc (an npm prefix's npmrc, with its tokens).
USR = ("bin", "sbin", "lib", "lib32", "lib64", "libx32", "libexec", "share")
# /etc's files the tools read, as found by running each arm's tool, curl, git, jq, node
# and python under strace: the dynamic loader's cache, the time zone, the links of
# Debian's alternatives (awk, editor), TLS's configuration and CA bundle (node reads
# both at start). Not resolv.conf: there is no DNS in the sandbox's network namespace.
# The files are copied, with the written ones, into one directory shown as /etc (a
# mount each cost every command about 5 ms more on a loaded 2-core machine); the
# directories, hundreds of links (a link takes 1-2 ms to make here), are mounted.
ETC = ("ld.so.cache", "localtime", "ssl/openssl.cnf")
ETC_DIRS = ("alternatives", "ssl/certs")
NOBODY = 65534  # what the user namespace shows for every id it does not map


@dataclass(frozen=True)
class SystemView:
    """The host's part of every sandbox's root: each path bound read-only at itself
    (on the sandbox's own /etc, etc_copy, for those of /etc), and the root's links
    recreated as links."""

    binds: tuple[str, ...]
    links: tuple[tuple[str, str], ...]  # (where, its target as the host writes it)


@functools.cache
def system_view() -> SystemView:
    """The system's part of the root, as this host lays it out."""
    binds = [path for path in (os.path.join("/usr", name) for name in USR)
             if os.path.isdir(path) and not os.path.islink(path)]
    links = []
    for path in ROOT_SYSTEM:
        if os.path.islink(path):
            links.append((path, os.readlink(path)))
        elif os.path.isdir(path):
            binds.append(path)
    binds += [path for path in (os.path.join("/etc", name) for name in ETC_DIRS)
              if os.path.isdir(path)]
    return SystemView(tuple(binds), tuple(links))


def in_system(real: str) -> bool:
    """Whether every sandbox shows a real path already (a system program, one of
    Debian's alternatives), or shows its own in its place (anything else of /etc)."""
    return any(real == d or real.startswith(d + "/") for d in (*system_view().binds, "/etc"))


def etc_copy(directory: Path, home: str) -> None:
    """Fill `directory`, the sandbox's /etc: the host's ETC files as they are now
    (links kept as links), the files written for the sandbox (written_etc), and an
    empty directory where each of ETC_DIRS is mounted."""
    for name in ETC:
        source, copy = Path("/etc", name), directory / name
        copy.parent.mkdir(parents=True, exist_ok=True)
        if source.is_symlink() or source.is_file():
            shutil.copy2(source, copy, follow_symlinks=False)
    for name in ETC_DIRS:
        (directory / name).mkdir(parents=True, exist_ok=True)
    for name, content in written_etc(home).items():
        (directory / name).write_text(content, encoding="utf-8")


def written_etc(home: str) -> dict[str, str]:
    """/etc's files written for the sandbox (name -> content): the user it runs as,
    with the trial's HOME, and nobody; localhost alone; files alone for every lookup
    (no directory service, no DNS)."""
    uid, gid = os.getuid(), os.getgid()
    user = _name(pwd.getpwuid, uid, "benchkit")
    group = _name(grp.getgrgid, gid, user)
    passwd = [f"{user}:x:{uid}:{gid}:{user}:{home}:/bin/bash"]
    groups = [f"{group}:x:{gid}:"]
    if uid != NOBODY:
        passwd.append(f"nobody:x:{NOBODY}:{NOBODY}:nobody:/nonexistent:/usr/sbin/nologin")
    if gid != NOBODY:
        groups.append(f"nogroup:x:{NOBODY}:")
    return {"passwd": "\n".join(passwd) + "\n", "group": "\n".join(groups) + "\n",
            "hosts": "127.0.0.1 localhost\n::1 localhost ip6-localhost ip6-loopback\n",
            "nsswitch.conf": "passwd: files\ngroup: files\nhosts: files\n"}


def _name(lookup, number: int, default: str) -> str:
    try:
        return str(lookup(number)[0])
    except KeyError:
        return default
