"""Where a request to Gitea carries its token, every place Gitea reads one:
`Authorization: token T` or `Bearer T` (any case), basic auth with the token as the
password (or as the user name, with an empty or `x-oauth-basic` password), and the
`token` / `access_token` query parameters. The gateway finds the trial's throwaway
token in whichever of them the tool used and puts the host's token in the same form.
A request that carries two different credentials, another scheme, or asks to act as
another user (`Sudo`) is refused, and so is a second Authorization header; the tokens it carried are kept so that the refusal
is recorded for the trial whose token came with it.
"""

from __future__ import annotations

import base64
import binascii
from dataclasses import dataclass
from typing import Protocol
from urllib.parse import unquote_plus

QUERY_TOKENS = ("token", "access_token")
PLACEHOLDER_PASSWORDS = ("", "x-oauth-basic")


class Headers(Protocol):
    def get(self, name: str, default: None = None) -> str | None: ...
    def get_all(self, name: str, failobj: None = None) -> list[str] | None: ...


@dataclass(frozen=True)
class CarriedCredentials:
    token: str | None = None       # the one credential the request carries (None: none)
    problem: str | None = None     # why the request's credentials are refused
    query: str = ""                # the query without its token parameters
    form: str = "token"            # "token", "basic-password", "basic-user" or "query"
    user: str = ""                 # the basic-auth user name when the token was the password
    tokens: tuple[str, ...] = ()   # every credential the request carried

    def upstream_authorization(self, real: str) -> str:
        """The Authorization header for the host: basic (with the token as the user name,
    which Gitea takes whatever user the token belongs to) when the tool used basic, else
    the token header."""
        if self.form.startswith("basic"):  # git's form; the user name the tool gave is moot
            return "Basic " + base64.b64encode(f"{real}:x-oauth-basic".encode()).decode()
        return f"token {real}"


def find_token(headers: Headers, query: str) -> CarriedCredentials:
    """The request's token, its form, and its query without the token parameters. A
    request whose credentials are refused still names the tokens it carried (`tokens`),
    so that the gateway records it for the trial whose token came with it."""
    kept, found, problem = [], [], None
    for piece in query.split("&") if query else []:
        key, _, value = piece.partition("=")
        name = unquote_plus(key).lower()
        if name in QUERY_TOKENS:
            found.append((unquote_plus(value), "query", ""))
        elif name == "sudo":
            problem = "acting as another user (sudo) is refused"
        else:
            kept.append(piece)
    rest = "&".join(kept)
    if headers.get("Sudo") is not None:
        problem = "acting as another user (Sudo) is refused"
    if len(headers.get_all("Authorization") or ()) > 1:
        problem = problem or "more than one Authorization header"
    header = headers.get("Authorization")
    if header is not None:
        parsed = _from_header(header)
        if parsed is None:
            problem = problem or "an Authorization the gateway does not take"
            word = header.strip().partition(" ")[2].strip()
            found.append((word, "other", ""))  # the trial's token under another scheme
        else:
            found.append(parsed)
    tokens = tuple(dict.fromkeys(token for token, _, _ in found if token))
    if len(tokens) > 1:
        problem = problem or "more than one credential in one request"
    if not found:
        return CarriedCredentials(query=rest, problem=problem)
    token, form, user = next((f for f in found if f[1] != "query"), found[0])
    return CarriedCredentials(token=token or None, problem=problem, query=rest, form=form, user=user,
                              tokens=tokens)


def _from_header(header: str) -> tuple[str, str, str] | None:
    scheme, _, value = header.strip().partition(" ")
    value = value.strip()
    if scheme.lower() in ("token", "bearer") and value:
        return value, "token", ""
    if scheme.lower() == "basic":
        try:
            user, colon, password = base64.b64decode(value, validate=True).decode().partition(":")
        except (binascii.Error, UnicodeDecodeError):
            return None
        if not colon:
            return None
        if password in PLACEHOLDER_PASSWORDS:
            return (user, "basic-user", "") if user else None
        return password, "basic-password", user
    return None
