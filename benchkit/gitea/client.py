"""A small Gitea REST client on requests: one session per host, bounded retries for
idempotent calls, Gitea's error bodies turned into `GiteaError`, pagination to the end.

The token travels only in the Authorization header. It is never put in a URL, a log
line, an exception message or a repr.
"""

from __future__ import annotations

import logging
import re
import time
from collections.abc import Iterator
from typing import Any
from urllib.parse import quote, urlsplit

import requests

from benchkit import __version__
from benchkit.errors import HostError

log = logging.getLogger(__name__)

DEFAULT_USER_AGENT = f"benchkit/{__version__}"
# Methods whose repetition cannot change the outcome; POST and PATCH are retried only
# when the caller says so, since a 5xx may come after the host already applied them.
IDEMPOTENT = frozenset({"GET", "HEAD", "OPTIONS", "PUT", "DELETE"})
RETRYABLE = frozenset({429})  # besides every 5xx
PAGE_LIMIT = 50  # Gitea's default max_response_items; larger limits are clamped
MAX_PAGES = 1000  # a host that never stops paginating is a host bug, not a loop


def split_url(url: str) -> tuple[str, str]:
    """(root URL with a trailing slash, API base URL) from a root or `/api/v1` URL."""
    base = (url or "").strip().rstrip("/")
    if base.endswith("/api/v1"):
        base = base[: -len("/api/v1")].rstrip("/")
    parts = urlsplit(base)
    if parts.scheme not in ("http", "https") or not parts.netloc or parts.query:
        raise ValueError(f"not a Gitea URL (want http(s)://host[:port][/path]): {url!r}")
    return base + "/", base + "/api/v1"


def repo_path(owner: str, name: str) -> str:
    return f"/repos/{quote(owner, safe='')}/{quote(name, safe='')}"


class GiteaError(HostError):
    """A Gitea API call answered with an error status (keyed on the status, not text)."""

    def __init__(self, status: int, message: str, method: str, path: str):
        self.status, self.message, self.method, self.path = status, message, method, path
        super().__init__(f"{method} {path}: HTTP {status}: {message}")


class Client:
    """One host, one token, one `requests.Session`."""

    def __init__(self, url: str, token: str | None, *, user_agent: str = DEFAULT_USER_AGENT,
                 retries: int = 3, backoff: float = 0.25, timeout: float = 30.0):
        self.url, self.api_url = split_url(url)
        self.token = token
        self.retries, self.backoff, self.timeout = retries, backoff, timeout
        self.session = requests.Session()
        self.session.headers.update({"Accept": "application/json", "User-Agent": user_agent})
        if token:
            self.session.headers["Authorization"] = f"token {token}"
        self._user: str | None = None

    def __repr__(self) -> str:  # never the token
        return f"Client({self.url!r})"

    def __enter__(self) -> Client:
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def close(self) -> None:
        self.session.close()

    @property
    def user(self) -> str:
        """The token owner's login (GET /user, once per client)."""
        if self._user is None:
            self._user = self.get("/user")["login"]
        return self._user

    # -- requests ---------------------------------------------------------------------

    def request(self, method: str, path: str, *, params: dict | None = None,
                json: Any = None, idempotent: bool | None = None,
                timeout: float | None = None, stream: bool = False) -> requests.Response:
        """Send one call; retry connection errors, 5xx and 429 only when repeating is safe.
        `stream`: the body is left unread, for the caller to read in pieces."""
        method = method.upper()
        safe = method in IDEMPOTENT if idempotent is None else idempotent
        attempts = 1 + (self.retries if safe else 0)
        for attempt in range(attempts):
            last = attempt == attempts - 1
            started = time.monotonic()
            try:
                response = self.session.request(
                    method, self.api_url + path, params=params, json=json,
                    timeout=timeout or self.timeout, stream=stream)
            except (requests.ConnectionError, requests.Timeout) as exc:
                log.debug("%s %s -> %s", method, path, type(exc).__name__)
                if last:
                    raise HostError(self._unreachable(method, path, exc, safe)) from None
            else:
                log.debug("%s %s -> %s in %.3fs", method, path, response.status_code,
                          time.monotonic() - started)
                if response.status_code < 400:
                    return response
                transient = response.status_code >= 500 or response.status_code in RETRYABLE
                if last or not transient:
                    raise self._error(response, method, path)
            time.sleep(self.backoff * 2 ** attempt)
        raise AssertionError("unreachable")

    def _unreachable(self, method: str, path: str, exc: Exception, safe: bool) -> str:
        reason = self.scrub(unreachable_reason(exc))
        applied = "" if safe else " (the call may or may not have been applied)"
        return f"cannot reach Gitea host {self.url} for {method} {path}{applied}: {reason}"

    def _error(self, response: requests.Response, method: str, path: str) -> GiteaError:
        message = ""
        try:
            body = response.json()
            if isinstance(body, dict):
                message = str(body.get("message") or "")
        except ValueError:
            message = response.text.strip()[:300]
        return GiteaError(response.status_code, self.scrub(message or response.reason or ""),
                          method, path)

    def scrub(self, text: str) -> str:
        """Text with the token replaced, for anything a host might echo back."""
        return text.replace(self.token, "***") if self.token else text

    def call(self, method: str, path: str, **kwargs) -> Any:
        """Send one call; return its JSON body, its text, or None when empty."""
        response = self.request(method, path, **kwargs)
        if not response.content:
            return None
        if "json" in response.headers.get("Content-Type", ""):
            return response.json()
        return response.text

    def get(self, path: str, params: dict | None = None, **kwargs) -> Any:
        return self.call("GET", path, params=params, **kwargs)

    def post(self, path: str, json: Any = None, **kwargs) -> Any:
        return self.call("POST", path, json={} if json is None else json, **kwargs)

    def patch(self, path: str, json: Any = None, **kwargs) -> Any:
        return self.call("PATCH", path, json={} if json is None else json, **kwargs)

    def delete(self, path: str, **kwargs) -> Any:
        return self.call("DELETE", path, **kwargs)

    def paginate(self, path: str, params: dict | None = None, *,
                 limit: int = PAGE_LIMIT, **kwargs) -> Iterator[dict]:
        """Every item of a paged list, page by page until the host says it is done.

        The end is taken from `Link` (no rel="next"), else `X-Total-Count`, else a short
        page; an empty page always ends it.
        """
        seen = 0
        for page in range(1, MAX_PAGES + 1):
            response = self.request("GET", path, params={**(params or {}), "page": page,
                                                         "limit": limit}, **kwargs)
            items = response.json() if response.content else []
            if not isinstance(items, list):
                raise HostError(f"GET {path}: expected a JSON list, got {type(items).__name__}")
            yield from items
            seen += len(items)
            if not items or not has_next(response, seen, len(items), limit):
                return
        raise HostError(f"GET {path}: more than {MAX_PAGES} pages")


def has_next(response: requests.Response, seen: int, count: int, limit: int) -> bool:
    """Whether a paged list goes on past this page (`seen` items so far, `count` on it)."""
    if response.headers.get("Link"):
        return "next" in response.links
    total = response.headers.get("X-Total-Count")
    if total is not None and total.isdigit():
        return seen < int(total)
    return count >= limit


def unreachable_reason(exc: Exception) -> str:
    """Why a host could not be reached, in plain words (not urllib3's retry wrapper):
    the operating system's words for a refused connection or an unknown name."""
    if isinstance(exc, requests.Timeout):
        return "no answer in time"
    text = str(exc)
    found = re.findall(r"\[Errno -?\d+\] ([^'\")\]]+)", text)
    if found:
        return found[-1].strip().rstrip(".").lower()
    if "Failed to resolve" in text or "NameResolutionError" in text:
        return "the name does not resolve"
    return type(exc).__name__
