"""The forge's route table: every resource module's routes are in it, and none is
shadowed by one before it (Starlette answers with the first route that matches)."""

import importlib
import pkgutil
import re

from starlette.routing import Match

import benchkit.forge
from benchkit.forge.routes import ROUTES

SAMPLE = {"int": "7", "path": "a/b"}  # a value each path converter accepts


def test_every_resource_modules_routes_are_in_the_table():
    declared = []
    for info in pkgutil.iter_modules(benchkit.forge.__path__):
        module = importlib.import_module(f"benchkit.forge.{info.name}")
        declared += [spec for spec in getattr(module, "ROUTES", ()) if module.__name__ != "benchkit.forge.routes"]
    assert declared and all(spec in ROUTES for spec in declared)
    assert len({(spec.method, spec.url_path) for spec in ROUTES}) == len(ROUTES)


def test_each_route_answers_its_own_paths(forge):
    routes = forge.app.app.routes
    for index, route in enumerate(routes):
        sample = re.sub(r"{\w+(?::(\w+))?}", lambda m: SAMPLE.get(m.group(1) or "", "x"), route.path)
        for method in route.methods or ():
            scope = {"type": "http", "method": method, "path": sample}
            first = next(i for i, r in enumerate(routes) if r.matches(scope)[0] == Match.FULL)
            assert first == index, f"{method} {route.path} is shadowed by {routes[first].path}"
