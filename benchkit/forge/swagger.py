"""/swagger.v1.json and /api/swagger: a Swagger 2.0 description of what the forge serves."""

from .web import ROUTES, respond, route


def document(root: str) -> dict:
    paths: dict = {}
    for spec in ROUTES:
        if spec.absolute:
            continue
        path = spec.path.replace(":int}", "}").replace(":path}", "}")
        operation = {"operationId": spec.handler.__name__,
                     "summary": (spec.handler.__doc__ or spec.handler.__name__.replace("_", " ")).strip()}
        paths.setdefault(path, {})[spec.method.lower()] = operation
    host = root.split("://", 1)[-1].rstrip("/")
    return {"swagger": "2.0", "info": {"title": "Gitea API (benchkit forge)", "version": "1.24.6"},
            "host": host, "basePath": "/api/v1", "schemes": [root.split("://", 1)[0]],
            "consumes": ["application/json", "text/plain"], "produces": ["application/json", "text/html"],
            "paths": paths}


@route("GET", "/swagger.v1.json", absolute=True)
def swagger_json(ctx):
    return respond(document(ctx.root))
