"""The operations the trial gateway forwards, and how a request's path is matched to one.

The list is data (operations.yaml beside this module); this module reads it and matches
a request's method and path the way Gitea routes them: trailing slashes and repeated
slashes do not count (Gitea's router strips them), letter case of the route's own words
is taken either way, and a percent-encoded character is decoded only inside a parameter.
A path that cannot be read one way only (an encoded separator or dot, a dot segment, an
encoded character in a route word) matches nothing: the gateway fails closed.

    found = match("PATCH", "/api/v1/repos/o/r/issues/3/", "o", "r")
    found.operation.body     # "EditIssueOption": the body it takes
    found.path               # "/api/v1/repos/o/r/issues/3": what the host is sent
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from urllib.parse import quote, unquote

import yaml

DATA = Path(__file__).with_name("operations.yaml")
REPO = "/api/v1/repos/{owner}/{repo}"
# Characters no parameter of the suite holds and no host reads one way only.
_UNSAFE = re.compile(r"%(2f|5c|2e|00)|[\\\x00-\x1f\x7f]", re.IGNORECASE)
_LINE = re.compile(r"(?P<method>[A-Z]+) (?P<route>\S+)(?: <(?P<body>\w+)>)?"
                   r"(?: \?(?P<query>[\w,-]+))?(?P<confined> !confined)?")
_PARAM = re.compile(r"\{(\w+)(?::(int|hex|path))?\}")
# Where the list has `{x:int}`, Gitea reads another segment as the number 0 (nothing):
# not `+N` (N) nor its own routes' words there (issues/pinned, pulls/pinned,
# releases/latest), and a dot may begin a route's suffix (`{index}.{diffType}`).
_NOT_NOTHING = re.compile(r"\+[0-9]+|pinned|latest|.*\..*", re.IGNORECASE)
_KINDS = {"int": r"[0-9]{1,18}", "hex": r"[0-9a-fA-F]{4,64}", "path": r"[^/]+(?:/[^/]+)*"}


@dataclass(frozen=True)
class Operation:
    method: str
    route: str                        # the template, e.g. /api/v1/repos/{owner}/{repo}/issues
    body: str | None = None           # a body definition's name, "git", or None: no body
    query: frozenset[str] = frozenset()  # the query parameters it takes
    confined: bool = False            # answered from the trial's repository alone
    pattern: re.Pattern = re.compile("")

    @property
    def write(self) -> bool:
        return self.method not in ("GET", "HEAD")

    @property
    def git(self) -> bool:
        """One of git's smart HTTP routes (`/{owner}/{repo}/...`)."""
        return self.route.startswith("/{owner}/")


@dataclass(frozen=True)
class MatchedOperation:
    operation: Operation
    path: str                    # the canonical path: the template filled in, re-encoded
    params: dict[str, str]       # the parameters, decoded


@dataclass(frozen=True)
class Catalogue:
    operations: tuple[Operation, ...]
    bodies: dict[str, frozenset[str]]  # a body definition: the fields it takes


@cache
def catalogue(path: Path = DATA) -> Catalogue:
    data = yaml.safe_load(path.read_text())
    operations = tuple(_operation(line) for line in data["operations"])
    bodies = {name: frozenset(fields) for name, fields in data["bodies"].items()}
    for op in operations:
        if op.body not in (None, "git") and op.body not in bodies:
            raise ValueError(f"{path}: {op.method} {op.route} takes <{op.body}>, not under bodies")
    return Catalogue(operations, bodies)


def _operation(line: str) -> Operation:
    parsed = _LINE.fullmatch(line.strip())
    if parsed is None:
        raise ValueError(f"{DATA}: not an operation line: {line!r}")
    route = parsed["route"].replace("$R", REPO)
    return Operation(parsed["method"], route, parsed["body"],
                     frozenset((parsed["query"] or "").split(",")) - {""},
                     bool(parsed["confined"]), _compile(route))


@cache
def _compile(route: str, typed: bool = True) -> re.Pattern:
    """A template as a regex over the normalised, still encoded path: its words in any
    letter case, `{x}` one segment, `{x:int}` digits, `{x:path}` one or more segments;
    not `typed`, `{x:int}` is any one segment too."""
    out, at = [], 0
    for param in _PARAM.finditer(route):
        out.append("(?i:" + re.escape(route[at:param.start()]) + ")")
        kind = param[2] if typed or param[2] != "int" else None
        out.append(f"(?P<{param[1]}>{_KINDS.get(kind or '', r'[^/]+')})")
        at = param.end()
    out.append("(?i:" + re.escape(route[at:]) + ")")
    return re.compile("".join(out))


def normalise(path: str) -> str | None:
    """The path as Gitea's router reads it (no trailing or repeated slashes), or None
    when it cannot be read one way only."""
    if not path.startswith("/") or _UNSAFE.search(path):
        return None
    path = "/" + "/".join(part for part in path.split("/") if part)
    segments = [unquote(part) for part in path.split("/")[1:]]
    if any(segment in (".", "..") for segment in segments):
        return None
    return path


def match(method: str, path: str, owner: str, repo: str) -> MatchedOperation | None:
    """The operation `method path` is, on the trial's repository `owner/repo`; None when
    it is none of the list's (another repository's included)."""
    normal = normalise(path)
    if normal is None:
        return None
    asked = "GET" if method == "HEAD" else method
    for operation in catalogue().operations:
        if operation.method != asked:
            continue
        hit = operation.pattern.fullmatch(normal)
        if hit is None:
            continue
        params = {name: unquote(value) for name, value in hit.groupdict().items()}
        if "owner" in params:
            if not _theirs(params["owner"], params["repo"], owner, repo):
                return None
            params.update(owner=owner, repo=repo)  # forwarded as the trial's own names
        return MatchedOperation(operation, _fill(operation.route, params), params)
    return None


def misshapen(method: str, path: str, owner: str, repo: str) -> MatchedOperation | None:
    """The operation `method path` would be on the trial's repository `owner/repo` but
    for an index that is not a number (`issues/null`): the same method, segments and
    route words. Gitea routes it and finds nothing (it reads the index as 0), so the
    gateway answers it itself. None for a path that matches as it is, names another
    repository, cannot be read one way only, or whose index Gitea reads as something.
    (A sha that is not hex is not such: Gitea reads it as a branch or tag name.)"""
    normal = normalise(path)
    if normal is None or match(method, path, owner, repo) is not None:
        return None
    asked = "GET" if method == "HEAD" else method
    for operation in catalogue().operations:
        if operation.method != asked or ":int}" not in operation.route:
            continue
        hit = _compile(operation.route, typed=False).fullmatch(normal)
        if hit is None:
            continue
        params = {name: unquote(value) for name, value in hit.groupdict().items()}
        if "owner" not in params or not _theirs(params["owner"], params["repo"], owner, repo):
            return None
        indexes = [params[param[1]] for param in _PARAM.finditer(operation.route)
                   if param[2] == "int"]
        if any(_NOT_NOTHING.fullmatch(index) for index in indexes):
            continue  # `pulls/x.diff` is `{index}.diff` with an index x
        return MatchedOperation(operation, normal, params)
    return None


def _theirs(named_owner: str, named_repo: str, owner: str, repo: str) -> bool:
    """Whether the route names the trial's repository (Gitea matches names in any letter
    case; git's routes take a `.git` suffix)."""
    return (named_owner.lower() == owner.lower()
            and named_repo.lower() in (repo.lower(), repo.lower() + ".git"))


def _fill(route: str, params: dict[str, str]) -> str:
    def one(param: re.Match) -> str:
        return quote(params[param[1]], safe="/" if param[2] == "path" else "")
    return _PARAM.sub(one, route)
