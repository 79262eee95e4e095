"""Where the host URL and token come from: flags, then `GITEA_URL` / `GITEA_TOKEN`, then
the `tea` CLI's own login config, the way gitea-axi and tea users already have them.

Each field is taken from the first source that has it, except that a tea login's token
is only used for the host it was made for, so a token is never sent to another host.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path

import yaml

from benchkit.errors import HarnessError
from benchkit.gitea.client import Client, split_url


class CredentialsError(HarnessError):
    """No usable host URL or token, or an unreadable tea config."""


@dataclass(frozen=True)
class Credentials:
    url: str  # root URL, trailing slash
    api_url: str  # url + "api/v1", no trailing slash
    token: str = field(repr=False)
    source: str = ""  # where they came from, for messages; never the token

    def client(self, **kwargs) -> Client:
        return Client(self.url, self.token, **kwargs)


def tea_config_path(env: Mapping[str, str] = os.environ) -> Path:
    """tea's config file: `$XDG_CONFIG_HOME/tea/config.yml`, else `~/.config/tea/...`."""
    base = env.get("XDG_CONFIG_HOME") or str(Path(env.get("HOME") or Path.home()) / ".config")
    return Path(base) / "tea" / "config.yml"


def resolve_credentials(host: str | None = None, token: str | None = None,
                        login: str | None = None, env: Mapping[str, str] = os.environ,
                        tea_config: str | Path | None = None) -> Credentials:
    """The host and token to use, raising `CredentialsError` naming what was tried."""
    config = Path(tea_config) if tea_config else tea_config_path(env)
    url, url_from = _first((host, "flags"), (None if login else env.get("GITEA_URL"),
                                               "GITEA_URL"))
    secret, secret_from = _first((token, "flags"), (None if login else env.get("GITEA_TOKEN"),
                                                    "GITEA_TOKEN"))
    if not (url and secret):
        entry = _tea_login(config, login, url)
        if entry is not None:
            tea_from = f"tea login {entry['name']!r} in {config}"
            if not url:
                url, url_from = entry["url"], tea_from
            if not secret:
                secret, secret_from = entry["token"], tea_from
    if not url:
        raise CredentialsError(
            f"no Gitea host: pass --host, set GITEA_URL, or add a tea login ({config})")
    try:
        root, api = split_url(url)
    except ValueError as exc:
        raise CredentialsError(f"{exc} (from {url_from})") from None
    if not secret:
        raise CredentialsError(
            f"no token for {root}: pass --token, set GITEA_TOKEN, or add a tea login for "
            f"that host ({config})")
    source = url_from if url_from == secret_from else f"host from {url_from}, token from {secret_from}"
    return Credentials(root, api, secret, source)


def _first(*candidates: tuple[str | None, str]) -> tuple[str | None, str]:
    for value, source in candidates:
        if value and value.strip():
            return value.strip(), source
    return None, ""


def _tea_login(config: Path, name: str | None, host: str | None) -> dict | None:
    """The tea login named `name`; else the one for `host`; else tea's default login."""
    logins = _read_logins(config)
    if name:
        for entry in logins:
            if entry["name"] == name:
                return entry
        known = ", ".join(entry["name"] for entry in logins) or "none"
        raise CredentialsError(f"{config}: no tea login named {name!r} (logins: {known})")
    if host:
        return next((entry for entry in logins if _same_host(entry["url"], host)), None)
    # tea's own rule: the login marked default, else the first one.
    return next((entry for entry in logins if entry["default"]), logins[0] if logins else None)


def _read_logins(config: Path) -> list[dict]:
    if not config.is_file():
        return []
    try:
        data = yaml.safe_load(config.read_text()) or {}
    except (OSError, yaml.YAMLError) as exc:
        # Not str(exc): a YAML error quotes the offending line, which may be a token.
        mark = getattr(exc, "problem_mark", None)
        where = f":{mark.line + 1}" if mark else ""
        raise CredentialsError(f"{config}{where}: unreadable tea config "
                               f"({type(exc).__name__})") from None
    raw = data.get("logins") if isinstance(data, dict) else None
    if raw is None:
        return []
    if not isinstance(raw, list):
        raise CredentialsError(f"{config}: `logins` should be a list")
    logins = []
    for index, entry in enumerate(raw):
        if not isinstance(entry, dict) or not entry.get("url"):
            raise CredentialsError(f"{config}: login #{index + 1} has no url")
        logins.append({"name": str(entry.get("name") or f"#{index + 1}"),
                       "url": str(entry["url"]), "token": str(entry.get("token") or ""),
                       "default": bool(entry.get("default"))})
    return logins


def _same_host(a: str, b: str) -> bool:
    try:
        return split_url(a)[0].lower() == split_url(b)[0].lower()
    except ValueError:
        return False
