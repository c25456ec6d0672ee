"""Tool parameters, typed and described once: the SDK turns these into each tool's input schema."""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import Field

AgentId = Annotated[str | None, Field(
    description="The agent acting (1-64 letters, digits and . _ @ + -). Optional when the server was started "
                "with --agent or GIT_LANES_AGENT: that agent acts then.")]
TaskId = Annotated[str, Field(description="A task id, or a unique prefix of one (as list_tasks shows it).")]
TicketId = Annotated[str, Field(description="A ticket id, or a unique prefix of one (as list_tickets shows it).")]
TransitionId = Annotated[str, Field(description="A transition id, or a unique prefix of one (as history shows "
                                                "it).")]
Lane = Annotated[str | None, Field(description="A lane name, e.g. feature/auth. Default: the lane assigned to the "
                                               "agent (assign_worktree).")]
LaneFilter = Annotated[str | None, Field(description="Only this lane's entries.")]
Globs = Annotated[list[str], Field(
    description="Repository-relative globs: * ? [..] match within a path segment, ** spans directories, a "
                "plain path claims everything under it. A glob outside the repository is refused.")]
TaskStatus = Literal["open", "claimed", "blocked", "needs_review", "done"]
TransitionStatus = Literal["proposed", "accepted", "rejected"]
PostKind = Literal["note", "question", "handoff"]
DiffMode = Literal["patch", "stat", "name-only"]

Prompt = Annotated[str, Field(description="The instruction that caused this change; its first line becomes the "
                                          "commit subject.")]
Tags = Annotated[list[str], Field(description="Semantic tags kept with the intent, e.g. [\"auth\"].")]
TokensIn = Annotated[int, Field(ge=0, description="Input tokens spent on this change.")]
TokensOut = Annotated[int, Field(ge=0, description="Output tokens spent on this change.")]
ApiCalls = Annotated[int, Field(ge=0, description="Model API calls made for this change.")]
WallTime = Annotated[float, Field(ge=0, allow_inf_nan=False, description="Wall-clock seconds spent on this change.")]
CostUsd = Annotated[float, Field(ge=0, allow_inf_nan=False, description="Money spent on this change, in US dollars.")]
AgentType = Annotated[str | None, Field(description="The agent's role, e.g. feature_dev.")]
Model = Annotated[str | None, Field(description="The model behind the agent, e.g. sonnet.")]
AutoAccept = Annotated[bool, Field(description="Run the trunk's gates and accept at once when every required "
                                               "gate passes (a failing gate rejects it: error gate_failed).")]
