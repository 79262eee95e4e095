"""A request body read the way the host reads it, checked, and written anew.

Gitea binds a body by the first of these its Content-Type contains: `form-urlencoded`
(a form, with the query string's fields), `multipart/form-data`, `json`; Go's JSON
decoder keeps the last of two equal keys and takes a key in any letter case for a field.
The gateway takes what the operation takes (a JSON object; git's own bodies on git's
routes) and nothing else: a form or multipart body, another Content-Type, a duplicate
key, two keys equal but for letter case, a key that is a field in another letter case,
a credential field (`sudo`, `token`, `access_token`, ...) at any depth, or a number
Go cannot read is refused, and so is text that would cost the host superlinear work
(benchkit.gateway.hostwork) and text in it that acts elsewhere: a reference to an
issue of another repository (benchkit.gateway.crossrefs) or a mention of anyone but the
trial's own user (benchkit.gateway.mentions; not in a commit's `author` or `committer`,
whose e-mail addresses Gitea does not read for mentions). What it forwards is its own
serialisation of what it checked, with the operation's fields only (a field the host
does not know, the host ignores too), never the agent's bytes.
"""

from __future__ import annotations

import json
from email.message import Message

from benchkit.errors import BenchkitError
from benchkit.gateway.crossrefs import acts_elsewhere
from benchkit.gateway.hostwork import body_too_costly
from benchkit.gateway.mentions import mentions_other
from benchkit.gateway.names import allowed_users

IDENTITIES = frozenset({"author", "committer"})  # a commit's: names and e-mail addresses
# Fields that carry or change a credential, refused wherever they appear.
CREDENTIALS = frozenset({"sudo", "token", "access_token", "password", "authorization",
                         "authorization_header", "private_key", "secret"})


class Refused(ValueError, BenchkitError):
    """A body the gateway does not forward; its text is the reason."""


def media_type(content_type: str) -> str:
    """Which reader Gitea's binding picks for `content_type` (its substring order)."""
    if "form-urlencoded" in content_type:
        return "form"
    if "multipart/form-data" in content_type:
        return "multipart"
    if "json" in content_type:
        return "json"
    return "other" if content_type else "none"


def canonical(body: bytes, content_type: str, fields: frozenset[str] | None,
              owner: str, repo: str, user: str = "") -> tuple[bytes, dict | None]:
    """(the bytes to forward, the object they hold) for a body of an operation taking
    `fields` (None: no body at all). Raises Refused."""
    if fields is None:
        if body.strip() not in (b"", b"{}", b"null"):  # what a client sends for "nothing"
            raise Refused("a body on an operation that takes none")
        return b"", None
    if not body:
        return b"", None
    kind = media_type(content_type)
    if kind != "json" or _essence(content_type) != "application/json":
        raise Refused(f"a {kind} body (Content-Type {content_type[:60]!r}); this operation "
                      "takes application/json")
    data = strict_json(body)
    if not isinstance(data, dict):
        raise Refused("a JSON body that is not an object")
    kept = {}
    for key, value in data.items():
        if key in fields:
            kept[key] = value
        elif any(key.casefold() == field.casefold() for field in fields):
            raise Refused(f"the field {_quote(key)} in another letter case than the host's")
    if reason := body_too_costly(kept):  # first: it bounds what the text checks read
        raise Refused(reason)
    _no_text_acting_elsewhere(kept, owner, repo, allowed_users(owner, user))
    return json.dumps(kept, ensure_ascii=True).encode(), kept


def _essence(content_type: str) -> str:
    message = Message()
    message["Content-Type"] = content_type
    return message.get_content_type()


def strict_json(body: bytes) -> object:
    """The JSON `body` holds, read so that no reader could read it otherwise."""
    try:
        text = body.decode("utf-8", errors="strict")
        return json.loads(text, object_pairs_hook=_object, parse_constant=_constant)
    except Refused:
        raise
    except (UnicodeDecodeError, ValueError, RecursionError) as error:
        raise Refused(f"a body that is not JSON in UTF-8 ({type(error).__name__})") from None


def _object(pairs: list[tuple[str, object]]) -> dict:
    seen: dict[str, str] = {}
    for key, _ in pairs:
        folded = key.casefold()
        if folded in CREDENTIALS:
            raise Refused(f"a credential field ({_quote(key)}) in the body")
        if folded in seen:
            what = "a duplicate key" if seen[folded] == key else "keys equal but for letter case"
            raise Refused(f"{what} ({_quote(seen[folded])}, {_quote(key)})")
        seen[folded] = key
    return dict(pairs)


def _constant(name: str) -> object:
    raise Refused(f"a number JSON does not have ({name})")


def _no_text_acting_elsewhere(value: object, owner: str, repo: str,
                              users: frozenset[str] | None) -> None:
    """Refuses a string anywhere in `value` that refers to an issue of another
    repository or (unless `users` is None) mentions a user other than `users`."""
    if isinstance(value, str):
        if found := acts_elsewhere(value, owner, repo):
            raise Refused(f"text referring to an issue of another repository "
                          f"({_quote(found)})")
        if users is not None and (found := mentions_other(value, users)):
            raise Refused(f"text mentioning a user other than the trial's own "
                          f"({_quote(found)})")
    elif isinstance(value, dict):
        for key, item in value.items():
            _no_text_acting_elsewhere(item, owner, repo, None if key in IDENTITIES else users)
    elif isinstance(value, list):
        for item in value:
            _no_text_acting_elsewhere(item, owner, repo, users)


def _quote(text: str) -> str:
    """A short quotation of the agent's text for the record's reason."""
    return repr(text[:40])
