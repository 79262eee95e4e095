"""HTTP plumbing shared by the forge's routes: Gitea's responses, errors, body binding,
pagination, and the RouteSpec record each resource module's ROUTES holds (routes.py
assembles them into the app's table).
"""

import json
import re
import urllib.parse
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any, Protocol

from starlette.requests import Request
from starlette.responses import Response

from benchkit.errors import BenchkitError

# Gitea (Go's encoder) sends compact JSON with a trailing newline and HTML-escaped text.
JSON_TYPE = "application/json;charset=utf-8"
BASE_HEADERS = {
    "Cache-Control": "max-age=0, private, must-revalidate, no-transform",
    "X-Content-Type-Options": "nosniff",
}
GO_ESCAPES = {"<": "\\u003c", ">": "\\u003e", "&": "\\u0026", "\u2028": "\\u2028", "\u2029": "\\u2029"}
GO_ESCAPE_RE = re.compile("[<>&\u2028\u2029]")

DEFAULT_PAGE, MAX_PAGE = 30, 50
INT64_MAX = 2**63 - 1
GITEA_VERSION = "1.26.0"  # the release the forge is held to; Go clients parse it as a semver


def encode(data: object) -> bytes:
    """JSON as Go's encoder writes it: compact, HTML-escaped, ending in a newline."""
    text = json.dumps(data, ensure_ascii=False, separators=(",", ":"))
    return (GO_ESCAPE_RE.sub(lambda m: GO_ESCAPES[m.group()], text) + "\n").encode()


def respond(data: object, status: int = 200, headers: dict | None = None) -> Response:
    """A JSON response with Gitea's headers."""
    return Response(encode(data), status, {**BASE_HEADERS, **(headers or {})}, media_type=JSON_TYPE)


def empty(status: int = 204) -> Response:
    """An empty response with Gitea's headers (204 by default)."""
    return Response(b"", status, dict(BASE_HEADERS))


def text(body: str, status: int = 200) -> Response:
    """A plain-text response with Gitea's headers."""
    return Response(body.encode(), status, dict(BASE_HEADERS), media_type="text/plain; charset=utf-8")


class ApiError(BenchkitError):
    """An error answered with Gitea's body: {"message", "url"} (404s add "errors")."""

    def __init__(self, status: int, message: str = "", *, body: bool = True, errors: list | None = None) -> None:
        super().__init__(message)
        self.status, self.message, self.body, self.errors = status, message, body, errors

    def response(self, root: str) -> Response:
        """The error as Gitea answers it, its swagger URL under `root`."""
        if not self.body:
            return empty(self.status)
        data: dict[str, object] = {"message": self.message, "url": f"{root}api/swagger"}
        if self.status == 404:
            data = {"errors": self.errors, **data}
        return respond(data, self.status)


def not_found(message: str = "not found", errors: list | None = None) -> ApiError:
    """Gitea's 404, with its `errors` list."""
    return ApiError(404, message, errors=errors)


def invalid(message: str) -> ApiError:
    """Gitea's 422 for a request it cannot take."""
    return ApiError(422, message)


def parse_time(value: str | None) -> int | None:
    """RFC 3339 to Unix seconds; Gitea answers 422 for anything else."""
    if not value:
        return None
    try:
        return int(datetime.fromisoformat(value.replace("Z", "+00:00")).timestamp())
    except ValueError:
        raise invalid(f"parsing time \"{value}\" as \"2006-01-02T15:04:05Z07:00\": "
                      f"cannot parse \"{value}\" as \"2006\"") from None


def parse_deadline(value: str | None) -> int | None:
    """A due date: as parse_time, and Go's zero time (what the Go SDK sends for none) is
    none, as Gitea takes it."""
    if value and value.startswith("0001-01-01"):
        return None
    return parse_time(value)


# -- body binding (Gitea's go-chi binding: by Content-Type, then the struct's rules) --
@dataclass(frozen=True)
class F:
    """One field of a request body: its JSON name, Python type and binding rules."""
    name: str
    kind: type | str = str          # str, int, bool, dict, "ints", "strs", "any-list"
    required: bool = False
    go: str = ""                     # the Go struct field, as Gitea names it in errors

    @property
    def go_name(self) -> str:
        """The Go struct field's name, as Gitea's binding errors give it."""
        return self.go or "".join(part.capitalize() for part in self.name.split("_"))

    @property
    def form_name(self) -> str:
        """The name a form sends the field by."""
        # Gitea binds forms by the snake_case Go field name, not the JSON name.
        return snake_case(self.go_name)


def snake_case(name: str) -> str:
    """Gitea's util.ToSnakeCase: MergeCommitID -> merge_commit_id, ContentBase64 -> content_base64."""
    out = []
    for i, char in enumerate(name):
        if char.isupper() and i > 0 and (name[i - 1].islower() or name[i - 1].isdigit()
                                         or (i + 1 < len(name) and name[i + 1].islower())):
            out.append("_")
        out.append(char.lower())
    return "".join(out)


class Body(dict):
    """The bound body; `given` remembers which fields the client actually sent."""

    def __init__(self, values: dict, given: set) -> None:
        super().__init__(values)
        self.given = given


def _go_type(kind: type | str) -> str:
    return {str: "string", int: "int64", bool: "bool", dict: "object",
            "ints": "[]int64", "strs": "[]string", "any-list": "[]interface {}"}.get(kind, "value")


def _coerce_json(field: F, value: Any, struct: str) -> Any:
    kind = field.kind
    ok = {
        str: lambda v: isinstance(v, str),
        int: lambda v: isinstance(v, int) and not isinstance(v, bool),
        bool: lambda v: isinstance(v, bool),
        dict: lambda v: isinstance(v, dict),
        "ints": lambda v: isinstance(v, list) and all(isinstance(i, int) and not isinstance(i, bool) for i in v),
        "strs": lambda v: isinstance(v, list) and all(isinstance(i, str) for i in v),
        "any-list": lambda v: isinstance(v, list),
    }[kind]
    if value is None or ok(value):
        numbers = value if kind == "ints" and value else [value] if kind is int and value else []
        for number in numbers:
            if abs(number) > INT64_MAX:
                raise invalid(f"[]: json: cannot unmarshal number {number} into Go struct field "
                              f"{struct}.{field.name} of type int64")
        return value
    if isinstance(value, float) and kind is int and value.is_integer():
        return int(value)
    got = {str: "string", bool: "bool", list: "array", dict: "object"}.get(type(value), "number")
    raise invalid(f"[]: json: cannot unmarshal {got} into Go struct field {struct}.{field.name} "
                  f"of type {_go_type(kind)}")


def _coerce_form(field: F, values: list[str]) -> Any:
    kind = field.kind
    try:
        if kind in ("ints",):
            return [_int64(v) for v in values]
        if kind in ("strs", "any-list"):
            return values
        value = values[-1]
        if kind is int:
            return _int64(value)
        if kind is bool:
            return value.lower() in ("1", "true", "on", "t", "yes")
        return value
    except ValueError:
        what = "integer" if kind in (int, "ints") else "boolean"
        raise invalid(f"[{field.go_name}]: Value could not be parsed as {what}") from None


JSON_STRING = re.compile(rb'"(?:\\.|[^"\\])*"')
JSON_NESTING = re.compile(rb"[\[\]{}]")
MAX_DEPTH = 10000  # encoding/json's maxNestingDepth


def _too_deep(raw: bytes) -> str:
    """The bracket at which Go's decoder gives up (nesting beyond 10000), or ""."""
    depth = 0
    for match in JSON_NESTING.finditer(JSON_STRING.sub(b'""', raw)):
        if match.group() in (b"[", b"{"):
            depth += 1
            if depth > MAX_DEPTH:
                return match.group().decode()
        else:
            depth -= 1
    return ""


def _int64(text: str) -> int:
    """strconv.ParseInt(text, 10, 64): a ValueError outside int64, as Go refuses it."""
    value = int(text)
    if abs(value) > INT64_MAX:
        raise ValueError(text)
    return value


async def bind(request: Request, fields: Sequence[F], struct: str) -> Body:
    """The request body bound to `fields` as Gitea's binding does: by Content-Type, then each
    field's rules; 422 with Gitea's message otherwise."""
    content_type = request.headers.get("content-type", "")
    raw = await request.body()
    if "form-urlencoded" in content_type or "multipart/form-data" in content_type:
        form = urllib.parse.parse_qs(raw.decode(errors="replace"), keep_blank_values=True)
        data = {f.name: _coerce_form(f, form[f.form_name]) for f in fields if f.form_name in form}
    elif "json" in content_type:
        too_deep = _too_deep(raw)
        if too_deep:
            raise invalid(f"[]: invalid character '{too_deep}' exceeded max depth")
        try:
            parsed = json.loads(raw) if raw.strip() else {}
        except RecursionError:  # Python's own limit (about 1000) is below Go's
            raise invalid("[]: exceeded max depth") from None
        except json.JSONDecodeError as error:
            if error.pos >= len(raw.rstrip()):  # Go's words for a body that stops short
                raise invalid("[]: unexpected EOF") from None
            raise invalid(f"[]: {error}") from None
        except ValueError as error:
            raise invalid(f"[]: {error}") from None
        if not isinstance(parsed, dict):
            raise invalid(f"[]: json: cannot unmarshal {type(parsed).__name__} into Go value of type {struct}")
        # encoding/json matches keys exactly first, then case-insensitively.
        folded = {key.lower(): key for key in reversed(list(parsed))}
        keys = {f.name: f.name if f.name in parsed else folded.get(f.name.lower()) for f in fields}
        data = {f.name: _coerce_json(f, parsed[keys[f.name]], struct) for f in fields if keys[f.name]}
    elif not content_type:
        raise invalid("[]: Empty Content-Type")
    else:
        raise invalid("[]: Unsupported Content-Type")
    for field in fields:
        if field.required and data.get(field.name) in (None, "", 0, []):  # Go's zero values
            raise invalid(f"[{field.go_name}]: Required")
    return Body(data, {f.name for f in fields if data.get(f.name) is not None})


# -- pagination ---------------------------------------------------------------------
def paging(request: Request, default: int = DEFAULT_PAGE) -> tuple[int, int]:
    """(page, limit) from the query, as Gitea reads them: bad values fall back, limit at most 50."""
    def number(name: str, fallback: int) -> int:
        try:
            return int(request.query_params.get(name, fallback))
        except ValueError:
            return fallback
    page = max(number("page", 1), 1)
    limit = number("limit", default)
    limit = default if limit <= 0 else min(limit, MAX_PAGE)
    return page, limit


def link_header(root: str, request: Request, total: int, page: int, limit: int) -> str:
    """Gitea's Link header: next, last, first, prev, absolute from ROOT_URL."""
    pages = max((total + limit - 1) // limit, 1)
    query = [(k, v) for k, v in request.query_params.multi_items()
             if k not in ("token", "access_token", "page")]

    def url(target: int) -> str:
        # url.Values.Encode sorts by key and keeps each key's values in order.
        params = sorted(query + [("page", str(target))], key=lambda item: item[0])
        return f"<{root}{request.url.path.lstrip('/')}?{urllib.parse.urlencode(params)}>"
    links = []
    if page < pages:
        links.append(f'{url(page + 1)}; rel="next"')
        links.append(f'{url(pages)}; rel="last"')
    if page > 1:
        links.append(f'{url(1)}; rel="first"')
        links.append(f'{url(min(page - 1, pages))}; rel="prev"')
    return ",".join(links)


class Paged(Protocol):
    """What a listing needs of a handler's context (context.Ctx is one)."""
    request: Request
    root: str


def listing(ctx: Paged, rows: list, render: Callable[[Any], object], *, link: bool = True,
            default: int = DEFAULT_PAGE, wrap: Callable[[list], object] | None = None) -> Response:
    """One page of rows, rendered, with X-Total-Count (and Link where Gitea sends it)."""
    page, limit = paging(ctx.request, default)
    chunk = rows[(page - 1) * limit: page * limit]
    headers = {"X-Total-Count": str(len(rows)), "Access-Control-Expose-Headers": "X-Total-Count"}
    if link:
        value = link_header(ctx.root, ctx.request, len(rows), page, limit)
        if value:
            headers["Link"] = value
            headers["Access-Control-Expose-Headers"] = "X-Total-Count, Link"
    rendered = [render(row) for row in chunk]
    return respond(wrap(rendered) if wrap else rendered, 200, headers)


# -- routes as data -----------------------------------------------------------------
Handler = Callable[..., Response]  # handler(ctx, **path_params)


@dataclass(frozen=True)
class RouteSpec:
    """One route of the forge: what it matches, the handler that answers, and what the
    handler needs bound and checked before it runs."""
    method: str
    path: str          # Starlette syntax, under /api/v1 unless absolute
    handler: Handler
    body: tuple[F, ...] | None  # fields to bind, or None for no body
    struct: str         # the Go option struct's name, for binding errors
    auth: bool          # a token is required ("token is required" otherwise)
    absolute: bool = False
    admin: bool = False  # the forge's own admin routes: an admin's token only
    summary: str = ""    # the Swagger description's words for it (else the handler's name)

    @property
    def url_path(self) -> str:
        """The path Starlette matches: under /api/v1 unless the route is absolute."""
        return self.path if self.absolute else "/api/v1" + self.path


def route(method: str, path: str, handler: Handler, *, body: list[F] | None = None, struct: str = "",
          auth: bool = False, absolute: bool = False, admin: bool = False, summary: str = "") -> RouteSpec:
    """One route, for a resource module's ROUTES: handler(ctx, **path_params) answers it.
    Every method but GET needs a token, as every write on Gitea does."""
    needs_token = auth or admin or method != "GET"
    return RouteSpec(method, path, handler, tuple(body) if body is not None else None, struct,
                     needs_token, absolute, admin, summary)
