"""The setup, dispatch and undo tools through the MCP SDK's own client, against a real server process."""

from __future__ import annotations

import anyio
from mcp_helpers import call, fails, mcp_session
from test_dispatch import PLAN
from test_gates import declare


def test_a_lead_dispatches_a_plan_agents_read_it_and_the_lead_undoes_it(repo, api):
    declare(api, repo, '[setup]\nports = 1\nport_range = "35000-35999"\nenv = { PORT = "{port0}" }\n')

    async def scenario():
        async with mcp_session(repo, "--agent", "lead", "--toolsets", "maintenance") as lead, \
                mcp_session(repo, "--agent", "coder-1") as coder:
            overlapping = await fails(lead, "dispatch", plan=PLAN.replace('["web/**"]', '["src/types.py"]'))
            assert overlapping["code"] == "refused" and overlapping["reason"] == "ownership_overlap"
            plan = await call(lead, "dispatch", plan=PLAN)
            assert plan["lanes_created"][0]["lane"] == "login/foundation"
            status = await call(coder, "dispatch_status", plan="login")
            assert [t["key"] for t in status["tasks"]] == ["foundation", "api", "ui"]
            env = await call(coder, "lane_env", lane="login/foundation")
            assert env["env"] == {"PORT": "35000"}
            log = await call(coder, "op_log", limit=5)
            assert log[0]["description"].startswith("dispatch plan from mcp")
            assert (await fails(coder, "undo"))["reason"] == "unknown_tool"  # not in the core tool set
            undone = await call(lead, "undo")
            assert undone["undone"] == log[0]["id"]
            return await call(coder, "op_log", limit=1)

    newest = anyio.run(scenario)
    assert newest[0]["description"].startswith("undo ")
