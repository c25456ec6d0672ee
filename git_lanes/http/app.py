"""The ASGI app: the REST API from the route table, its OpenAPI document, the event stream, and the
dashboard's static files. It translates only: parameters in, the API's records out as JSON (the same ones
`--json` prints), errors to HTTP statuses with the error's `code` and `hint`."""

from __future__ import annotations

import contextlib
import json
import logging
import threading
from collections.abc import AsyncIterator, Callable, Collection
from pathlib import Path
from typing import Any

import anyio
from starlette.applications import Starlette
from starlette.exceptions import HTTPException
from starlette.requests import Request
from starlette.responses import FileResponse, JSONResponse, RedirectResponse, Response, StreamingResponse
from starlette.routing import Match, Mount, Route
from starlette.staticfiles import StaticFiles
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from git_lanes import __version__
from git_lanes.errors import (Conflict, GateFailed, InternalError, LanesError, NotFound, RemoteFailed, RepositoryGone,
                              UserError, WriteFailed, take_notices, write_failed)
from git_lanes.http import openapi, routes
from git_lanes.http.advice import advised_result
from git_lanes.http.events import Broadcaster
from git_lanes.http.security import Guard

STATIC = Path(__file__).resolve().parent / "static"
API = "/api/v1"
MAX_BODY = 1 << 20
# On a listing's reply: the stored records it left out because they cannot be read (JSON, ASCII).
UNREADABLE_HEADER = "X-Lanes-Unreadable"
WARNINGS_HEADER = "X-Lanes-Warnings"
log = logging.getLogger("git_lanes.http")

# The page loads only its own files; nothing inline runs, so injected markup could not run even if some
# text ever reached the DOM as HTML.
SECURITY_HEADERS = [
    (b"content-security-policy", b"default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' data:; "
                                 b"connect-src 'self'; object-src 'none'; base-uri 'none'; frame-ancestors 'none'; "
                                 b"form-action 'self'"),
    (b"x-content-type-options", b"nosniff"),
    (b"referrer-policy", b"no-referrer"),
    (b"x-frame-options", b"DENY"),
    (b"cache-control", b"no-store"),
]


class Service:
    """The repository held open for the server's life. Reads share one `Lanes`, one at a time; each write
    runs on a worker thread with a `Lanes` of that thread's own (libgit2 objects are not shared between
    threads), so writes are ordered by the repository's own lock and compare-and-swap, as the CLI's
    processes are: a gate running for minutes during an accept holds up neither the dashboard's reads nor
    a board post. Each kind waits for its threads on the event loop (`run`), never on a pool thread."""

    WRITERS = 4  # writes at once; a fifth waits for one of them

    def __init__(self, open_api: Callable[[], Any]) -> None:
        self.reader = open_api()
        self._read_lock = threading.Lock()
        self._writers = threading.local()
        self._limiters: dict[bool, anyio.CapacityLimiter] = {}
        self.feed = self.reader.watch()

    async def run(self, writes: bool, action: Callable[[Any], Any]) -> Any:
        """`action(api)` on a worker thread: a read on the shared reader, a write on the thread's own API."""
        limiter = self._limiters.get(writes)
        if limiter is None:  # made on the event loop, where it is used
            limiter = self._limiters[writes] = anyio.CapacityLimiter(self.WRITERS if writes else 1)
        return await anyio.to_thread.run_sync(self.write if writes else self.read, action, limiter=limiter)

    async def told(self, writes: bool, action: Callable[[Any], Any]) -> tuple[Any, list[str]]:
        """`run`, and what the action went on past (errors.notice), taken on its own worker thread (which a
        pool reuses) so that no notice waits for a later request; an error carries them as `notices`."""
        def noticed(api: Any) -> tuple[Any, list[str]]:
            take_notices()  # what an earlier request on this thread left is not this one's to tell
            try:
                result = action(api)
            except BaseException as exc:
                exc.notices = take_notices()  # type: ignore[attr-defined]
                raise
            return result, take_notices()

        return await self.run(writes, noticed)

    def read(self, action: Callable[[Any], Any]) -> Any:
        with self._read_lock:
            return action(self.reader)

    def write(self, action: Callable[[Any], Any]) -> Any:
        api = getattr(self._writers, "api", None)
        if api is None:
            api = self._writers.api = self.reader.another()
        return action(api)

    def poll(self) -> list[dict]:
        return self.read(lambda _: self.feed.poll())

    def dirty(self) -> Any:
        return self.read(lambda api: api.status()["dirty"])


class JSON(JSONResponse):
    """JSON as the CLI's `--json` writes it: ASCII, other characters as `\\uXXXX`. A file name that is not
    UTF-8 is held as lone surrogates (as Python reads it), which Starlette's UTF-8 cannot encode: one such
    name in a workspace made `/status` a plain-text 500. Escaped, it reads back as the CLI's does."""

    def render(self, content: Any) -> bytes:
        return json.dumps(content, allow_nan=False, separators=(",", ":")).encode("ascii")


def render(value: Any) -> Any:
    """Records (with `to_dict`) and plain dicts alike become JSON-ready values."""
    if hasattr(value, "to_dict"):
        return render(value.to_dict())
    if isinstance(value, dict):
        return {str(k): render(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [render(v) for v in value]
    if isinstance(value, (str, int, float, bool)) or value is None:
        return value
    return str(value)


def status_of(exc: LanesError) -> int:
    if isinstance(exc, RepositoryGone):
        return 410
    if isinstance(exc, NotFound):
        return 404
    if isinstance(exc, GateFailed):
        return 422
    if isinstance(exc, Conflict):
        return 409
    if isinstance(exc, RemoteFailed):
        return 502
    if isinstance(exc, WriteFailed):
        return 507  # Insufficient Storage: the server's file system refused (full, read-only, no permission)
    if isinstance(exc, InternalError):
        return 500
    return 400


def error(status: int, code: str, message: str, hint: str | None = None, **details: Any) -> JSON:
    """Every error's body: `error`, `message` and `hint` always (null when there is no advice, as the MCP
    server answers), so a client reads one shape whatever refused it."""
    body = {"error": code, "message": message, "hint": hint, **details}
    return JSON(render(body), status_code=status)


def lanes_error(exc: LanesError, query: Collection[str] = ()) -> JSON:
    """The error's record, its hints naming this API's routes for the commands they advise (and a flag
    that overrides it as a parameter of the request's `query` string where the route takes it there)."""
    record = render(exc.to_dict())
    ordered = {key: record.pop(key, None) for key in ("error", "message", "hint")}
    return JSON(advised_result(ordered | record, query), status_code=status_of(exc))


def route_doc(method: str, path: str) -> str:
    """The hint for a request a route could not take: where its parameters are described."""
    return f"see `{method} {path}` in `GET /api/openapi.json`"


def usage_hinted(exc: Exception, method: str, path: str) -> Exception:
    """`exc`, pointing to the route's description when it is a malformed request with no advice of its own."""
    if isinstance(exc, UserError) and exc.code == "usage" and not exc.hint:
        exc.hint = route_doc(method, path)
    return exc


class Headers:
    """Security headers on every response, and the Host check before anything else runs."""

    def __init__(self, app: ASGIApp, guard: Guard) -> None:
        self.app = app
        self.guard = guard

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return

        async def send_with_headers(message: Message) -> None:
            if message["type"] == "http.response.start":
                message["headers"] = list(message.get("headers", [])) + SECURITY_HEADERS
            await send(message)

        await self.app(scope, receive, send_with_headers)


def failed(exc: Exception, request: Request, query: Collection[str] = ()) -> JSON:
    """The answer to a request whose action raised `exc`; `query` as for `lanes_error`."""
    if isinstance(exc, LanesError):
        return lanes_error(exc, query)
    unwritable = write_failed(exc)  # a full disk, no permission: the user's to fix, not a bug
    if unwritable is not None:
        return lanes_error(unwritable)
    # a bug still answers in JSON, and the log keeps the traceback
    log.exception("%s %s failed", request.method, request.url.path, exc_info=exc)
    return error(500, "internal", f"{type(exc).__name__}: {exc}")


def warned(response: JSON, notices: list[str]) -> JSON:
    """`response` with what the request went on past (the CLI's `warning:` lines), as a JSON array in a
    header: every answer has room for one, whatever shape its body is."""
    if notices:
        response.headers[WARNINGS_HEADER] = json.dumps(notices)
    return response


def create_app(open_api: Callable[[], Any], token: str, host: str, port: int | None = None) -> Starlette:
    """The app for the repository `open_api()` opens, served on `port`, requiring `token` as security.py
    describes."""
    service = Service(open_api)
    guard = Guard(token, host, port)
    broadcaster = Broadcaster(service.poll, service.dirty)
    served = routes.available(type(service.reader))
    document = openapi.document(served, API, __version__, type(service.reader), guard.cookie_name)

    def refused(request: Request) -> JSON | None:
        verdict = guard.check(request.method, dict(request.headers), request.cookies, request.url.scheme)
        return error(verdict.status, verdict.code, verdict.message, verdict.hint) if verdict else None

    def endpoint(route: routes.Route) -> Callable:
        async def handle(request: Request) -> Response:
            denied = refused(request)
            if denied is not None:
                return denied
            try:
                params = await _params(route, request)
                result, notices = await service.told(route.writes,
                                                     lambda api: route.call(getattr(api, route.api), params))
            except Exception as exc:
                usage_hinted(exc, route.method, API + route.documented_path)
                return warned(failed(exc, request, [p.name for p in route.query]), getattr(exc, "notices", []))
            # A listing (an array) that left records out says so where an array has room: a header.
            set_aside = getattr(result, "unreadable", ()) if isinstance(result, list) else ()
            headers = {UNREADABLE_HEADER: json.dumps(render(list(set_aside)))} if set_aside else None
            return warned(JSON(advised_result(render(result)), headers=headers), notices)
        return handle

    async def index(request: Request) -> Response:
        offered = request.query_params.get("token")
        if offered is None:
            return FileResponse(STATIC / "index.html", media_type="text/html")
        if not guard.token_matches(offered):
            return error(401, "unauthorized", "that link's token is not this server's",
                         "open the link `git lanes serve` printed when it started, whole")
        # The token leaves the address bar at once; the cookie stands in for it from now on.
        response = RedirectResponse("/", status_code=303)
        response.set_cookie(guard.cookie_name, guard.cookie_value, httponly=True, samesite="strict", path="/")
        return response

    async def session(request: Request) -> Response:
        denied = refused(request) or _no_query(request)
        if denied is not None:
            return denied
        signed_in = guard.authenticated(dict(request.headers), request.cookies)
        return JSON({"authenticated": signed_in, "can_write": signed_in, "loopback": guard.loopback,
                             "trunk": service.reader.trunk, "repository": service.reader.root.name,
                             "version": __version__, "runs": any(r.tag == "runs" for r in served)})

    async def events(request: Request) -> Response:
        denied = refused(request) or _no_query(request)
        if denied is not None:
            return denied
        if broadcaster.gone is not None:  # a status the browser's EventSource does not retry
            return lanes_error(broadcaster.gone)
        return StreamingResponse(broadcaster.stream(), media_type="text/event-stream",
                                 headers={"x-accel-buffering": "no"})

    async def spec(request: Request) -> Response:
        return _no_query(request) or JSON(document)

    async def not_found(request: Request, exc: Exception) -> Response:
        status = getattr(exc, "status_code", 404)
        if status == 405:
            allowed = _methods_of(request)
            taken = [m for m in allowed if m != "HEAD"] or allowed
            refused = error(405, "method_not_allowed", f"{request.method} is not allowed on {request.url.path}",
                            f"this path takes {', '.join(taken)}" if taken else None)
            refused.headers["Allow"] = ", ".join(allowed)  # HTTP requires it of a 405
            return refused
        return error(status, "not_found" if status == 404 else "http_error", f"no route {request.url.path}",
                     hint=f"see {request.base_url}api/openapi.json")

    table = [Route(API + r.path, endpoint(r), methods=[r.method], name=r.operation_id) for r in served]

    @contextlib.asynccontextmanager
    async def lifespan(app: Starlette) -> AsyncIterator[None]:
        broadcaster.start()
        yield
        await broadcaster.stop()

    # The document is at /api/openapi.json, and under the API's own prefix too, where a client looks first.
    app = Starlette(routes=[Route("/", index), Route("/api/openapi.json", spec), Route(API + "/openapi.json", spec),
                            Route(API + "/session", session),
                            Route(API + "/events", events), *table,
                            Mount("/static", StaticFiles(directory=STATIC), name="static")],
                    exception_handlers={HTTPException: not_found}, lifespan=lifespan)
    app.state.broadcaster = broadcaster
    app.state.service = service
    app.add_middleware(Headers, guard=guard)
    return app


METHOD_ORDER = ("GET", "HEAD", "POST", "PUT", "PATCH", "DELETE")


def _methods_of(request: Request) -> list[str]:
    """Every method some route takes on the request's path. Each method is a route of its own, and the router
    names only the first route whose path matched: `PUT /tasks` was told "this path takes GET" alone."""
    methods: set[str] = set()
    for route in request.app.router.routes:
        if isinstance(route, Route) and route.matches(request.scope)[0] != Match.NONE:
            methods |= route.methods or set()
    return sorted(methods, key=lambda m: (METHOD_ORDER.index(m) if m in METHOD_ORDER else len(METHOD_ORDER), m))


def _unknown_query(request: Request, takes: list[str]) -> UserError | None:
    """A misspelt filter would otherwise answer as if none had been asked for (`?stauts=accepted`:
    everything), so every /api route names the query parameters it does not take, or takes only once."""
    unknown = sorted(set(request.query_params) - set(takes))
    if unknown:
        return UserError(f"unknown query parameter(s) {', '.join(unknown)}; this route takes "
                         f"{', '.join(takes) or 'none'}", code="usage")
    # Nor is one given twice half taken (`?status=accepted&status=rejected` listed the rejected ones only).
    twice = sorted({name for name, _ in request.query_params.multi_items()
                    if len(request.query_params.getlist(name)) > 1})
    if twice:
        return UserError(f"query parameter {', '.join(twice)} given more than once; give it once", code="usage")
    return None


def _no_query(request: Request) -> JSON | None:
    """The answer for a query parameter sent to a route that takes none (the event stream, the session,
    the API document), or None."""
    refusal = _unknown_query(request, [])
    return lanes_error(usage_hinted(refusal, "GET", request.url.path)) if refusal is not None else None


async def _params(route: routes.Route, request: Request) -> dict[str, Any]:
    # Path parameters stay text: a post is its number or a prefix of its id (`board.post_number`).
    params: dict[str, Any] = dict(request.path_params)
    refusal = _unknown_query(request, [name for param in route.query for name in (param.name, *param.aliases)])
    if refusal is not None:
        raise refusal
    for param in route.query:
        given = _spelling(param, request.query_params)
        if given is not None:
            params[param.name] = param.convert(request.query_params[given], from_text=True)
        elif param.required:
            raise UserError(f"missing query parameter {param.name!r}", code="usage")
    if route.writes:
        params.update(_body(route, await _bounded_body(request)))
    return params


async def _bounded_body(request: Request) -> bytes:
    """The request's body, refused as soon as it is known to be over MAX_BODY: from its Content-Length
    before any of it is read, else while it streams in. Reading it whole first let one request hold twice
    its size in memory, and one that announced more than it sent hold the request open."""
    too_big = UserError(f"the request body is over {MAX_BODY} bytes", code="usage")
    announced = request.headers.get("content-length", "")
    if announced.isdigit() and int(announced) > MAX_BODY:
        raise too_big
    chunks, size = [], 0
    async for chunk in request.stream():
        size += len(chunk)
        if size > MAX_BODY:
            raise too_big
        chunks.append(chunk)
    return b"".join(chunks)


def _body(route: routes.Route, raw: bytes) -> dict[str, Any]:
    try:
        data = json.loads(raw, object_pairs_hook=_once) if raw.strip() else {}
    except (ValueError, UnicodeDecodeError) as exc:
        raise UserError(f"the request body is not JSON: {exc}", code="usage") from None
    except RecursionError:
        raise UserError("the request body is not JSON this server reads: nested too deeply", code="usage") from None
    if not isinstance(data, dict):
        raise UserError("the request body must be a JSON object", code="usage")
    known = {p.name: p for p in route.body}
    unknown = sorted(set(data) - {name for p in route.body for name in (p.name, *p.aliases)})
    if unknown:
        raise UserError(f"unknown field(s) {', '.join(unknown)}; this route takes {', '.join(known) or 'none'}",
                        code="usage")
    values = {}
    for name, param in known.items():
        given = _spelling(param, {key: value for key, value in data.items() if value is not None})
        if given is not None:
            values[name] = param.convert(data[given], from_text=False)
        elif param.required:
            raise UserError(f"missing field {name!r}", code="usage")
    return values


def _once(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    """A JSON object whose every key is given once: Python keeps a repeated key's last value and drops the
    first without a word (`{"title": "a", "title": "b"}` made a task titled "b")."""
    found = dict(pairs)
    if len(found) < len(pairs):
        twice = sorted({key for key, _ in pairs if sum(1 for k, _ in pairs if k == key) > 1})
        raise UserError(f"field {', '.join(twice)} given more than once; give it once", code="usage")
    return found


def _spelling(param: routes.Param, given: Any) -> str | None:
    """Which of the parameter's spellings (its name, or a former one) `given` holds; both is refused, as
    they might say different things."""
    found = [name for name in (param.name, *param.aliases) if name in given]
    if len(found) > 1:
        raise UserError(f"{' and '.join(found)} are one field ({param.name}); give it once", code="usage")
    return found[0] if found else None
