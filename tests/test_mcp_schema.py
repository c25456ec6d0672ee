"""Tool output schemas come from what a tool returns: a record's own `json_schema()`, a list of records under
`result`, or a plain JSON object; and a result (record or dict) is rendered as the CLI's `--json` renders it."""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

import anyio

from git_lanes.mcp.binding import Binding, ToolSpec, cli_json, plain
from git_lanes.mcp.server import LanesMCPServer, guarded


@dataclass(frozen=True)
class Claimed:
    """A record as the model defines them: `to_dict()` and `json_schema()`."""

    task: str
    version: int

    def to_dict(self) -> dict:
        return {"task": self.task, "version": self.version}

    @classmethod
    def json_schema(cls) -> dict[str, Any]:
        return {"type": "object", "title": "Claimed", "required": ["task", "version"],
                "properties": {"task": {"type": "string"}, "version": {"type": "integer"}}}


def served(repo, *functions) -> LanesMCPServer:
    face = Binding(repo, None)
    server = LanesMCPServer("test")
    for fn in functions:
        server.add_tool(guarded(ToolSpec(fn, touches=False), face), name=fn.__name__, description="test tool")
    return server


def test_schemas_follow_the_return_type(repo):
    def one() -> Claimed:
        return Claimed("3fa2", 2)

    def many() -> list[Claimed]:
        return [Claimed("3fa2", 2), Claimed("7c1e", 1)]

    def anything() -> dict:
        return {"nested": {"record": Claimed("3fa2", 2)}}

    server = served(repo, one, many, anything)

    async def scenario():
        tools = {t.name: t for t in await server.list_tools()}
        results = {name: await server.call_tool(name, {}) for name in tools}
        return tools, results

    tools, results = anyio.run(scenario)
    assert tools["one"].output_schema == Claimed.json_schema()
    assert tools["many"].output_schema["properties"]["result"]["items"] == Claimed.json_schema()
    assert tools["anything"].output_schema["type"] == "object"
    assert results["one"].structured_content == {"task": "3fa2", "version": 2}
    assert results["many"].structured_content == {"result": [{"task": "3fa2", "version": 2},
                                                             {"task": "7c1e", "version": 1}]}
    assert json.loads(results["many"].content[0].text) == results["many"].structured_content["result"]
    assert results["anything"].structured_content == {"nested": {"record": {"task": "3fa2", "version": 2}}}


def test_records_and_dicts_render_alike():
    assert plain([Claimed("a", 1), {"b": (Claimed("c", 2),)}]) == [{"task": "a", "version": 1},
                                                                  {"b": [{"task": "c", "version": 2}]}]
    assert cli_json({"b": 1, "a": Claimed("x", 3)}) == json.dumps({"a": {"task": "x", "version": 3}, "b": 1},
                                                                  indent=2, sort_keys=True)
