"""`git lanes mcp`: every capability as MCP tools, on the official MCP SDK (2.x, `MCPServer`).

`launch` starts the server and answers `initialize` before the SDK has finished importing (it takes a
second); `server` builds the SDK's server from the tool modules (`coordination`, `workspaces`, `publisher`); `binding` is
what the tools share (the repository held open, the server's agent, results and errors in MCP's shapes).
This module stays import-free: the CLI reads the tool set names from it."""

from __future__ import annotations

TOOLSETS = ("core", "publisher", "maintenance")
DEFAULT_TOOLSETS = ("core",)

NAME = "git-lanes"
INSTRUCTIONS = """\
git-lanes coordinates many agents in one git repository. A typical turn: register_agent, then list_tasks
(ready_only) and claim_task (a `conflict` error means another agent won: take another task), assign_worktree
for a workspace of your own (work only in the path it returns), claim_files for what you will change, commit
your work (auto_accept to have the gates judge it at once), task_done. When nothing is ready, wait_for_unblock
returns as soon as a task of yours becomes ready or a post for you arrives; post_board and read_board talk to
the other agents. Errors come back as {"error": {"code", "reason", "message", "hint"}}: the hint says what to
do next."""
