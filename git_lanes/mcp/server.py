"""The MCP server: the SDK's `MCPServer` with the tools of the chosen tool sets, each result in the CLI's
`--json` shape and every failure a tool error (`isError`) carrying `{"error": {code, reason, message, hint}}`.
Loading this module loads the SDK and the API; `launch` loads it only after answering `initialize`."""

from __future__ import annotations

import functools
import inspect
import json
import logging
import re
from collections.abc import Callable, Container, Iterable, Sequence
from typing import Annotated, Any, TypedDict, get_origin

from mcp.server.mcpserver import Context, MCPServer
from mcp.server.mcpserver.exceptions import ToolError, UnexpectedToolError
from mcp.types import CallToolResult, TextContent, ToolAnnotations
from pydantic import BaseModel, ConfigDict, ValidationError

from git_lanes import __version__
from git_lanes.errors import EXIT_INTERNAL, EXIT_USAGE, EXIT_USER, LanesError, take_notices, write_failed
from git_lanes.mcp import INSTRUCTIONS, NAME, coordination, planning, publisher, workspaces
from git_lanes.mcp.advice import advise, advised_result
from git_lanes.mcp.binding import Binding, ToolSpec, cli_json, error_payload
from git_lanes.model.schema import result_schema

log = logging.getLogger("git_lanes.mcp")
_SURROGATE = re.compile(r"[\ud800-\udfff]")  # how Python holds bytes that are not UTF-8


class ListResult(TypedDict):
    """The CLI's JSON list under `result`: structured content is an object in MCP."""

    result: list[dict[str, Any]]


class LanesToolError(ToolError):
    """A LanesError on its way to the client as a tool error; `payload` is what the client gets."""

    def __init__(self, payload: dict) -> None:
        super().__init__(payload["error"]["message"])
        self.payload = payload


class LanesMCPServer(MCPServer):
    """The SDK's server, with two changes: a failed call answers with the error payload as both its text
    and its structured content, not the SDK's "Error executing tool X: ..." text; and an argument the tool
    does not take is refused rather than dropped, since a misspelt optional one would silently change what
    the call does (`release_files` with `glob` releasing every claim)."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.arguments: dict[str, frozenset[str]] = {}  # tool name -> the arguments it takes

    def offer(self, spec: ToolSpec, face: Binding) -> None:
        name = spec.fn.__name__
        self.add_tool(guarded(spec, face), name=name, description=inspect.cleandoc(spec.fn.__doc__ or ""),
                      annotations=ToolAnnotations(read_only_hint=True) if spec.read_only else None)
        self.arguments[name] = argument_names(spec.fn)

    async def list_tools(self) -> list[Any]:
        return [tool.model_copy(update={"input_schema": {**tool.input_schema, "additionalProperties": False}})
                for tool in await super().list_tools()]

    async def call_tool(self, name: str, arguments: dict[str, Any], context: Any = None) -> Any:
        unknown = sorted(set(arguments or {}) - self.arguments.get(name, frozenset(arguments or {})))
        if unknown:
            return error_result(name, _unknown_arguments(name, unknown, self.arguments[name]))
        tool = self._tool_manager.get_tool(name)
        mistyped = _mistyped(name, arguments or {}, tool.parameters if tool else {})
        if mistyped:
            return error_result(name, mistyped)
        try:
            return await super().call_tool(name, arguments, context)
        except ToolError as exc:
            return error_result(name, exc)


def argument_names(fn: Callable[..., Any]) -> frozenset[str]:
    """The arguments a tool function takes from the client (the SDK's Context is its own to give)."""
    signature = inspect.signature(fn, eval_str=True)
    return frozenset(name for name, p in signature.parameters.items() if p.annotation is not Context)


def _unknown_arguments(tool: str, unknown: list[str], known: frozenset[str]) -> LanesToolError:
    listed = ", ".join(sorted(known)) or "none"
    return LanesToolError(_payload("usage", "unknown_argument", f"{tool} takes no argument "
                                   f"{', '.join(map(repr, unknown))}; it takes {listed}", EXIT_USAGE,
                                   "see the tool's input schema (tools/list)"))


_JSON_TYPES = {type(None): "null", bool: "boolean", int: "integer", float: "number", str: "string", list: "array",
               dict: "object"}
_NAMED = {"null": "null", "integer": "an integer", "array": "an array", "object": "an object"}


def _mistyped(tool: str, arguments: dict[str, Any], schema: dict[str, Any]) -> LanesToolError | None:
    """Arguments of a JSON type their published schema does not allow. The SDK validates laxly, and `true`
    where a number goes became 1 (resolve_question(post=true) resolved post #1). A number or a boolean
    written as a string ("12", "true") still passes: some clients (Claude Desktop among them) send every
    argument as a string, and such a string cannot mean anything else."""
    problems = []
    for name, value in arguments.items():
        allowed = _types_of(schema.get("properties", {}).get(name, {}))
        given = _JSON_TYPES.get(type(value))
        if given == "number" and float(value).is_integer():
            given = "integer"  # JSON has one kind of number: 2.0 is 2
        if given == "string" and "string" not in allowed:
            given = _spelled(value)
        if allowed and given not in allowed and not (given == "integer" and "number" in allowed):
            shown = json.dumps(value)
            shown = shown if len(shown) <= 40 else shown[:40] + "\u2026"
            problems.append(f"{name}: {shown} is not {' or '.join(_NAMED.get(t, 'a ' + t) for t in allowed)}")
    if not problems:
        return None
    return LanesToolError(_payload("usage", "invalid_arguments", f"invalid arguments for {tool}: "
                                   f"{'; '.join(problems)}", EXIT_USAGE, "see the tool's input schema (tools/list)"))


def _spelled(text: str) -> str:
    """The JSON type a string argument spells out where no string goes: "integer" for "12", "boolean" for
    "true", else "string"."""
    if text in ("true", "false"):
        return "boolean"
    body = text[1:] if text[:1] == "-" else text
    return "integer" if body.isascii() and body.isdigit() and len(body) <= 18 else "string"


def _types_of(schema: dict[str, Any]) -> list[str]:
    """The JSON types a parameter's schema allows, in its order; none when it (or one of its alternatives)
    says nothing about them, so that nothing is refused on a guess."""
    declared = schema.get("type")
    found = [declared] if isinstance(declared, str) else list(declared or [])
    for member in schema.get("anyOf", []) + schema.get("oneOf", []):
        types = _types_of(member)
        if not types:
            return []
        found += [t for t in types if t not in found]
    return found


def error_result(tool: str, exc: ToolError) -> CallToolResult:
    """The tool error the client gets: a LanesError's own payload; arguments that do not fit the schema and
    unknown tools as `usage`; anything else (a bug) as `internal`, its traceback logged to standard error."""
    cause = exc if isinstance(exc, LanesToolError) else exc.__cause__
    if isinstance(cause, LanesToolError):
        payload = cause.payload
    elif isinstance(exc, UnexpectedToolError):
        log.error("tool %s failed", tool, exc_info=cause)
        payload = _payload("internal", "internal", f"{tool} failed: {type(cause).__name__}", EXIT_INTERNAL,
                           "a bug: the server's standard error has the traceback")
    elif isinstance(cause, ValidationError):
        problems = "; ".join(f"{'.'.join(str(p) for p in e['loc']) or 'arguments'}: {e['msg']}"
                             for e in cause.errors())
        payload = _payload("usage", "invalid_arguments", f"invalid arguments for {tool}: {problems}", EXIT_USAGE,
                           "see the tool's input schema (tools/list)")
    elif str(exc).startswith("Unknown tool"):
        payload = _payload("usage", "unknown_tool", f"no tool named {tool!r} in the tool sets this server "
                           "offers", EXIT_USAGE, "list them with tools/list; start the server with --toolsets "
                           "core,publisher,maintenance for more")
    else:
        payload = _payload("error", "tool_error", str(exc), EXIT_USER, None)
    return CallToolResult(content=[TextContent(type="text", text=json.dumps(payload, indent=2, sort_keys=True))],
                          structured_content=carried(payload), is_error=True)


def _payload(code: str, reason: str, message: str, exit_code: int, hint: str | None) -> dict:
    return {"error": {"code": code, "reason": reason, "message": message, "hint": hint, "exit_code": exit_code}}


def result_of(value: Any, notices: Sequence[str] = (), offered: Container[str] = ()) -> CallToolResult:
    """A tool's result: the CLI's `--json` text as content, the same data as structured content; what the
    call went on past (errors.notice: the CLI's `warning:` lines) as `warnings` there and one more text each.
    The hints it carries name the tools in `offered` (this server's) for the commands they advise."""
    text = cli_json(value)
    data = json.loads(text)
    advised = advised_result(data, offered)
    if advised != data:
        data, text = advised, json.dumps(advised, indent=2, sort_keys=True)
    structured = data if isinstance(data, dict) else {"result": data}
    if isinstance(value, list) and getattr(value, "unreadable", ()):  # a listing that left records out
        structured["unreadable"] = [u.to_dict() for u in value.unreadable]  # type: ignore[attr-defined]
    notices = [advise(message, offered) or message for message in notices]  # a notice may advise a command
    if notices:
        structured["warnings"] = list(notices)
    warned = [TextContent(type="text", text=f"warning: {message}") for message in notices]
    return CallToolResult(content=[TextContent(type="text", text=text), *warned],
                          structured_content=carried(structured))


def carried(data: Any) -> Any:
    """`data` as the SDK can write it: a file name that is not UTF-8 is held as lone surrogates (as Python
    reads it), which the SDK's UTF-8 cannot encode, and the whole call failed as a protocol error. Each
    becomes U+FFFD here; the text content, ASCII JSON as the CLI prints it, keeps the exact name."""
    if isinstance(data, str):
        return data if data.isascii() else _SURROGATE.sub("\ufffd", data)
    if isinstance(data, dict):
        return {carried(key): carried(value) for key, value in data.items()}
    if isinstance(data, list):
        return [carried(value) for value in data]
    return data


def told(payload: dict, notices: list[str]) -> dict:
    """An error payload with what the failed call went on past before it failed, as `warnings`."""
    return {**payload, "warnings": notices} if notices else payload


def guarded(spec: ToolSpec, face: Binding) -> Callable[..., Any]:
    """The tool function the SDK sees: the spec's own signature (the input schema) and docstring (the
    description), returning `result_of(...)`, and any LanesError as a LanesToolError."""
    fn = spec.fn
    signature = inspect.signature(fn, eval_str=True)

    def call(kwargs: dict[str, Any]) -> Any:
        if spec.touches:
            return face.touched(kwargs.get("agent_id"), lambda: fn(**kwargs))
        return fn(**kwargs)

    if inspect.iscoroutinefunction(fn):
        @functools.wraps(fn)
        async def tool(**kwargs: Any) -> Any:
            try:
                return result_of(await fn(**kwargs), offered=face.offered)
            except Exception as exc:
                found = _lanes_error(exc)
                if found is None:
                    raise
                raise LanesToolError(error_payload(found, face.offered)) from exc
    else:
        @functools.wraps(fn)
        def tool(**kwargs: Any) -> Any:  # the SDK runs it on a worker thread, which a pool reuses
            take_notices()  # what an earlier call on this thread left is not this call's to tell
            try:
                value = call(kwargs)
            except Exception as exc:
                notices = take_notices()
                found = _lanes_error(exc)
                if found is None:
                    raise
                raise LanesToolError(told(error_payload(found, face.offered), notices)) from exc
            return result_of(value, take_notices(), face.offered)

    returns = Annotated[CallToolResult, output_shape(signature.return_annotation)]
    tool.__signature__ = signature.replace(return_annotation=returns)  # type: ignore[attr-defined]
    tool.__annotations__ = {name: p.annotation for name, p in signature.parameters.items()} | {"return": returns}
    del tool.__wrapped__  # the SDK must read the signature above, not the spec function's
    return tool


def _lanes_error(exc: Exception) -> LanesError | None:
    """The LanesError the client gets for `exc`: itself, or the file system refusing a write (a full disk, no
    permission: errors.write_failed); None for any other exception, a bug the SDK reports as one."""
    return exc if isinstance(exc, LanesError) else write_failed(exc)


def output_shape(returns: Any) -> Any:
    """The type the SDK derives a tool's output schema from (and checks its structured content against),
    from what the tool function says it returns (`result_schema`): a record class publishes its own schema, a
    union of records one of theirs; a list sits under `result`; anything else is a JSON object."""
    schema = result_schema(returns)
    if schema is None:
        return ListResult if get_origin(returns) in (list, tuple) else dict[str, Any]
    if schema["type"] == "array":
        title = f"{schema['items']['title']}List"
        return _publishing(title, {"type": "object", "title": title, "required": ["result"],
                                   "properties": {"result": schema}})
    return _publishing(schema["title"], schema)


def _publishing(title: str, schema: dict[str, Any]) -> type[BaseModel]:
    """A model the SDK publishes as `schema` (a record's own) and that accepts any object."""
    def json_schema(cls: type, core_schema: Any, handler: Any) -> dict[str, Any]:
        return schema

    return type(title, (BaseModel,), {"model_config": ConfigDict(extra="allow"),
                                      "__get_pydantic_json_schema__": classmethod(json_schema)})


def catalog(face: Binding) -> list[ToolSpec]:
    """Every tool this server can offer, in every tool set."""
    return coordination.tools(face) + workspaces.tools(face) + publisher.tools(face) + planning.tools(face)


def build(face: Binding, toolsets: Iterable[str]) -> MCPServer:
    """The server with the tools of `toolsets` (core is always on)."""
    chosen = set(toolsets) | {"core"}
    server = LanesMCPServer(NAME, version=__version__, instructions=INSTRUCTIONS, log_level="WARNING")
    for spec in catalog(face):
        if spec.toolset in chosen:
            server.offer(spec, face)
    face.offered = frozenset(server.arguments)
    return server
