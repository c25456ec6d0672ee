"""The OpenAPI 3.1 document, derived from the route table (routes.py) so it cannot drift from what is
served. A response's schema is the one its record publishes (`result_schema` of the type the API method
says it returns: a record, one of several records, or a list of records); a method still returning a plain
dict is a JSON object. Every error is the one shape `--json` prints."""

from __future__ import annotations

import builtins
import functools
import importlib
import pkgutil
import sys
from typing import Any

from git_lanes.http.routes import Route
from git_lanes.http.security import COOKIE
from git_lanes.model.schema import result_schema

ERROR_STATUSES = {"400": "user error or bad request (code `usage` for a malformed one)", "401": "token required",
                  "403": "wrong origin or host", "404": "not found", "409": "conflict: something moved, or a collision",
                  "410": "the repository was removed or moved while the server ran (`repository_gone`)",
                  "422": "a required gate failed", "500": "an internal error (a bug)",
                  "502": "the git remote was unreachable or refused",
                  "507": "the server's file system refused a write: full, read-only, or no permission"}


def _error_schema() -> dict:
    # Every error sends all three; `hint` is null where there is no advice.
    return {"type": "object", "required": ["error", "message", "hint"],
            "properties": {"error": {"type": "string", "description": "the stable error code"},
                           "message": {"type": "string"},
                           "hint": {"type": ["string", "null"], "description": "what to do next, or null"}}}


def response_schema(route: Route, api_class: type) -> dict[str, Any]:
    generic = {"type": "array" if route.returns == "array" else "object"}
    if not route.derive:
        return generic
    try:
        returns = return_type(getattr(api_class, route.api))
    except Exception:  # an annotation naming what is not a record: the generic shape stands
        return generic
    return result_schema(returns) or generic


def return_type(method: Any) -> Any:
    """What an API method says it returns. The API imports its records only for the type checker (start-up
    stays lean), so the annotation is read against the model's classes as well as the method's module."""
    annotation = method.__annotations__.get("return")
    if not isinstance(annotation, str):
        return annotation
    return eval(annotation, {}, _Names(vars(sys.modules[method.__module__])))  # noqa: S307


class _Names(dict):  # type: ignore[type-arg]
    """An annotation's names: the module's own, the builtins, then the model's classes; any other name is a
    model module the type checker alone imports (`results.TaskCreated`)."""

    def __init__(self, module: dict[str, Any]) -> None:
        super().__init__()
        self.module = module

    def __missing__(self, name: str) -> Any:
        if name in self.module:
            return self.module[name]
        if hasattr(builtins, name):
            return getattr(builtins, name)
        return _model_classes().get(name) or _ModelModule()


class _ModelModule:
    def __getattr__(self, name: str) -> type:
        return _model_classes()[name]


@functools.cache
def _model_classes() -> dict[str, type]:
    import git_lanes.model

    found: dict[str, type] = {}
    for info in pkgutil.iter_modules(git_lanes.model.__path__):
        module = importlib.import_module(f"git_lanes.model.{info.name}")
        found |= {name: value for name, value in vars(module).items()
                  if isinstance(value, type) and value.__module__ == module.__name__}
    return found


def _operation(route: Route, api_class: type) -> dict[str, Any]:
    parameters = [{"name": name, "in": "path", "required": True, "schema": {"type": "string", "minLength": 1}}
                  for name in route.path_params]
    parameters += [{"name": p.name, "in": "query", "required": p.required, "schema": p.schema()} for p in route.query]
    parameters += [{"name": alias, "in": "query", "required": False, "deprecated": True, "schema": former(p)}
                   for p in route.query for alias in p.aliases]
    operation: dict[str, Any] = {
        "operationId": route.operation_id, "summary": route.summary, "tags": [route.tag],
        "parameters": parameters,
        "responses": {"200": {"description": "the API's record, as `--json` prints it",
                              "content": {"application/json": {"schema": response_schema(route, api_class)}}},
                      **{code: {"description": what, "content": {"application/json": {
                          "schema": {"$ref": "#/components/schemas/Error"}}}}
                         for code, what in ERROR_STATUSES.items()}},
    }
    if route.writes:
        operation["security"] = [{"bearer": []}, {"cookie": []}]
        operation["requestBody"] = {"required": any(p.required for p in route.body), "content": {
            "application/json": {"schema": {
                "type": "object", "additionalProperties": False,
                "properties": {p.name: p.schema() for p in route.body}
                | {alias: former(p) | {"deprecated": True} for p in route.body for alias in p.aliases},
                "required": [p.name for p in route.body if p.required]}}}}
    return operation


def document(routes: tuple[Route, ...], prefix: str, version: str, api_class: type, cookie: str = COOKIE) -> dict:
    """The document of `routes` under `prefix`; `cookie` is the session cookie's name on this server."""
    paths: dict[str, dict] = {}
    for route in routes:
        path = prefix + route.documented_path
        paths.setdefault(path, {})[route.method.lower()] = _operation(route, api_class)
    paths[prefix + "/events"] = {"get": {
        "operationId": "get_events", "summary": "Server-sent events of what changed (a ref moved, ops appended)",
        "tags": ["events"], "responses": {"200": {"description": "text/event-stream of `change` events, each "
                                                                 "`{\"events\": [...]}`",
                                                  "content": {"text/event-stream": {"schema": {"type": "string"}}}},
                                          "410": {"description": ERROR_STATUSES["410"], "content": {"application/json": {
                                              "schema": {"$ref": "#/components/schemas/Error"}}}}}}}
    paths[prefix + "/session"] = {"get": {
        "operationId": "get_session", "summary": "Whether this client holds the token, and what it serves",
        "tags": ["events"], "responses": {"200": {"description": "the session",
                                                  "content": {"application/json": {"schema": {"type": "object"}}}}}}}
    return {
        "openapi": "3.1.0",
        "info": {"title": "git-lanes", "version": version,
                 "description": "The git-lanes API over HTTP: the same records and error codes as `--json`."},
        "paths": paths,
        "components": {"schemas": {"Error": _error_schema()},
                       "securitySchemes": {"bearer": {"type": "http", "scheme": "bearer"},
                                           "cookie": {"type": "apiKey", "in": "cookie", "name": cookie}}},
    }


def former(param: Any) -> dict:
    """The schema of a parameter's former spelling: still taken, documented as the canonical one's."""
    return param.schema() | {"description": f"the former spelling of {param.name}, still taken; give one of them"}
