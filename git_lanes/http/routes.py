"""The REST API's table: each route names the `Lanes` method it calls and the parameters it takes. The
dispatcher, the OpenAPI document and the tests all read this one table, so a route cannot be served
without being documented, nor documented without being served."""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from git_lanes.domain import BOARD_LIMIT
from git_lanes.errors import UserError
from git_lanes.model.coordination import TASK_STATUSES
from git_lanes.model.format import MAX_CALLS, MAX_SECONDS, MAX_TOKENS, MAX_USD
from git_lanes.model.runs import STATS_GROUPS

Handler = Callable[[Callable[..., Any], dict[str, Any]], Any]


@dataclass(frozen=True)
class Param:
    """One parameter: `kind` is string, integer, number, boolean or array (of strings)."""

    name: str
    kind: str = "string"
    required: bool = False
    help: str = ""
    minimum: float | None = None
    maximum: float | None = None
    choices: tuple[str, ...] = ()
    # Former spellings still taken (and documented as deprecated), so a caller written for them keeps
    # working: one concept is spelt as the MCP tools spell it (agent_id, task_id, to_agent, unread_only...)
    # in every face, and a field spelt otherwise before takes that spelling as well.
    aliases: tuple[str, ...] = ()

    def schema(self) -> dict:
        found: dict[str, Any] = {"type": self.kind}
        if self.kind == "array":
            found["items"] = {"type": "string"}
        if self.minimum is not None:
            found["minimum"] = self.minimum
        if self.maximum is not None:
            found["maximum"] = self.maximum
        if self.choices:
            found["enum"] = list(self.choices)
        if self.help:
            found["description"] = self.help
        return found

    @property
    def bounds(self) -> str:
        """The range a number must lie in, as an error message says it (`between 0 and None` said nothing)."""
        # a whole bound in full (`1e+12` is no figure a person types), any other as short as it goes
        low, high = (None if b is None else str(int(b)) if b == int(b) else f"{b:g}"
                     for b in (self.minimum, self.maximum))
        return f"between {low} and {high}" if low and high else f"at least {low}" if low else f"at most {high}"

    def convert(self, value: Any, *, from_text: bool) -> Any:
        if from_text:
            value = _from_text(self, value)
        ok = {"string": lambda v: isinstance(v, str),
              "integer": lambda v: isinstance(v, int) and not isinstance(v, bool),
              "number": lambda v: isinstance(v, (int, float)) and not isinstance(v, bool),
              "boolean": lambda v: isinstance(v, bool),
              "array": lambda v: isinstance(v, list) and all(isinstance(x, str) for x in v)}[self.kind]
        if not ok(value):
            raise UserError(f"{self.name} must be {'an' if self.kind[0] in 'aei' else 'a'} {self.kind}", code="usage")
        if self.kind == "number" and not math.isfinite(value):  # JSON as Python reads it has NaN and Infinity
            raise UserError(f"{self.name} must be a finite number", code="usage")
        if self.minimum is not None and value < self.minimum or self.maximum is not None and value > self.maximum:
            raise UserError(f"{self.name} must be {self.bounds}", code="usage")
        if self.choices and value not in self.choices:
            raise UserError(f"{self.name} must be one of {', '.join(self.choices)}", code="usage")
        return value


def _from_text(param: Param, text: str) -> Any:
    try:
        if param.kind == "integer":
            return int(text)
        if param.kind == "number":
            return float(text)
    except ValueError:
        raise UserError(f"{param.name} must be {'an' if param.kind == 'integer' else 'a'} {param.kind}",
                        code="usage") from None
    if param.kind == "boolean":
        if text.lower() not in ("true", "false", "1", "0"):
            raise UserError(f"{param.name} must be true or false", code="usage")
        return text.lower() in ("true", "1")
    return text


@dataclass(frozen=True)
class Route:
    method: str
    path: str  # under /api/v1; {name} is one path segment, {name:path} may hold slashes (lane names)
    summary: str
    api: str  # the `Lanes` method the route calls; its return type gives the route's response schema
    call: Handler  # (the bound method, the request's parameters) -> the method's result
    tag: str
    query: tuple[Param, ...] = ()
    body: tuple[Param, ...] = ()
    returns: str = "object"  # or "array"
    derive: bool = True  # False where the route reshapes the method's result (its schema is then generic)

    @property
    def writes(self) -> bool:
        return self.method != "GET"

    @property
    def documented_path(self) -> str:
        """The path as the OpenAPI document writes it: `{name}`, without the dispatcher's `:path`."""
        return "/".join(part.split(":")[0] + ("}" if ":" in part else "") for part in self.path.split("/"))

    @property
    def path_params(self) -> list[str]:
        return [part[1:-1].split(":")[0] for part in self.path.split("/") if part.startswith("{")]

    @property
    def operation_id(self) -> str:
        words = [p for p in self.path.split("/") if p and not p.startswith("{")]
        return f"{self.method.lower()}_{'_'.join(words) or 'root'}" + ("_item" if self.path.endswith("}") else "")


def S(name: str, required: bool = False, help: str = "", choices: tuple[str, ...] = (),
      aliases: tuple[str, ...] = ()) -> Param:
    return Param(name, "string", required, help, choices=choices, aliases=aliases)


def B(name: str, help: str = "", aliases: tuple[str, ...] = ()) -> Param:
    return Param(name, "boolean", False, help, aliases=aliases)


def I(name: str, required: bool = False, help: str = "", minimum: float | None = 0,  # noqa: E743
      maximum: float | None = None) -> Param:
    return Param(name, "integer", required, help, minimum=minimum, maximum=maximum)


def N(name: str, help: str = "", maximum: float | None = None) -> Param:
    return Param(name, "number", False, help, minimum=0, maximum=maximum)


def A(name: str, required: bool = False, help: str = "") -> Param:
    return Param(name, "array", required, help)


# Bounded as the record bounds them (Cost), so the document says so and a refusal names this field.
COST = (I("tokens_in", maximum=MAX_TOKENS), I("tokens_out", maximum=MAX_TOKENS), I("api_calls", maximum=MAX_CALLS),
        N("wall_time", maximum=MAX_SECONDS), N("cost_usd", maximum=MAX_USD))
INTENT = (S("agent_type"), S("model"), A("tags"))
ACTOR = S("agent_id", help="who acts (default: git's user.name)", aliases=("actor",))
AGENT = S("agent_id", True, help="the agent acting", aliases=("agent",))
LIMIT_HELP = f"how many recent posts (default {BOARD_LIMIT}, as in every face)"
UNANSWERED_HELP = "only the questions nobody answered or resolved yet, every one however old (limit aside)"
UNANSWERED = B("unanswered_only", UNANSWERED_HELP, aliases=("unanswered",))


def _cost(p: dict) -> Any:
    from git_lanes.model.records import Cost

    fields = {k: p[k] for k in ("tokens_in", "tokens_out", "api_calls", "wall_time", "cost_usd") if k in p}
    return Cost(**fields) if fields else None


def _promote(promote: Any, p: dict) -> Any:
    return promote(p["lane"], p.get("into"), prompt=p.get("prompt"), agent_id=p.get("agent_id"),
                     agent_type=p.get("agent_type"), model=p.get("model"), tags=tuple(p.get("tags") or ()),
                     cost=_cost(p), dry_run=p.get("dry_run", False), force=p.get("force", False),
                     auto_accept=p.get("auto_accept", False))


def _commit(commit: Any, p: dict) -> Any:
    return commit(p["prompt"], p["agent_id"], lane=p["name"], agent_type=p.get("agent_type"),
                    model=p.get("model"), tags=tuple(p.get("tags") or ()), cost=_cost(p),
                    auto_accept=p.get("auto_accept", False))


ROUTES: tuple[Route, ...] = (
    # -- inspection
    Route("GET", "/status", "Lanes, workspaces, pending proposals and unsnapshotted edits", "status", lambda m, p: m(),
          "inspect"),
    Route("GET", "/radar", "Each lane's ahead/behind the trunk, and the pairs of lanes that would collide",
          "radar", lambda m, p: m(), "inspect"),
    Route("GET", "/cost", "Cumulative tokens and dollars over time, per agent and per lane",
          "cost", lambda m, p: m(), "inspect"),
    Route("GET", "/transitions", "Transitions newest first, with totals (history)",
          "history", lambda m, p: m(lane=p.get("lane"), status=p.get("status"), agent=p.get("agent"),
                                 limit=p.get("limit")), "transitions",
          query=(S("lane"), S("status", choices=("proposed", "accepted", "rejected")), S("agent"), I("limit"))),
    Route("GET", "/transitions/{id}", "One transition with its changed paths", "show", lambda m, p: m(p["id"]),
          "transitions"),
    Route("GET", "/diff", "The difference between two states (lanes, transition ids or revisions)",
          "diff", lambda m, p: m(p["from"], p["to"], p.get("mode", "patch")), "transitions",
          query=(S("from", True), S("to", True), S("mode", choices=("patch", "stat", "name-only")))),
    Route("GET", "/proposals", "Pending proposals", "history", lambda m, p: m(status="proposed")["transitions"],
          "transitions", returns="array", derive=False),
    Route("POST", "/transitions/{id}/accept", "Accept a proposal: run the gates, then move its lane",
          "accept", lambda m, p: m(p["id"]), "transitions"),
    Route("POST", "/transitions/{id}/reject", "Reject a proposal (kept as signal)",
          "reject", lambda m, p: m(p["id"], p.get("reason")), "transitions", body=(S("reason"),)),
    # The same two decisions under the pending proposals' own collection, where a client listing them looks.
    Route("POST", "/proposals/{id}/accept", "Accept a proposal: run the gates, then move its lane",
          "accept", lambda m, p: m(p["id"]), "transitions"),
    Route("POST", "/proposals/{id}/reject", "Reject a proposal (kept as signal)",
          "reject", lambda m, p: m(p["id"], p.get("reason")), "transitions", body=(S("reason"),)),
    Route("POST", "/transitions/{id}/evaluate", "Re-run the gates on a pending proposal",
          "evaluate", lambda m, p: m(p["id"]), "transitions"),
    Route("POST", "/promote", "Promote a lane into another (the trunk by default); dry_run only plans",
          "promote", _promote, "transitions",
          body=(S("lane", True), S("into"), S("prompt"), S("agent_id"), *INTENT, *COST, B("dry_run"), B("force"),
                B("auto_accept"))),
    # -- lanes
    Route("GET", "/lanes", "Every lane", "lane_list", lambda m, p: m(), "lanes", returns="array"),
    Route("POST", "/lanes", "Create a lane and its workspace",
          "lane_create", lambda m, p: m(p["name"], p.get("from")), "lanes", body=(S("name", True), S("from"))),
    Route("GET", "/lanes/{name:path}", "One lane: head, workspace, edits, proposals, recent transitions",
          "lane_show", lambda m, p: m(p["name"]), "lanes"),
    Route("DELETE", "/lanes/{name:path}", "Delete a lane (its head is kept under refs/lanes/deleted/)",
          "lane_delete", lambda m, p: m(p["name"], force=p.get("force", False)), "lanes", query=(B("force"),)),
    Route("POST", "/lanes/{name:path}/commit", "Snapshot the lane's workspace as a proposal", "commit", _commit,
          "lanes",
          body=(S("prompt", True), S("agent_id", True), *INTENT, *COST, B("auto_accept"))),
    Route("POST", "/lanes/{name:path}/reset", "Move the lane and its workspace to another lane's head",
          "lane_reset", lambda m, p: m(p["name"], p.get("onto"), force=p.get("force", False),
                                    reason=p.get("reason"), agent_id=p.get("agent_id")), "lanes",
          body=(S("onto"), B("force"), S("reason"), S("agent_id"))),
    # -- agents
    Route("GET", "/agents", "Agents with their leases, tasks, claims and dirty sets", "agent_list", lambda m, p: m(),
          "agents", returns="array"),
    Route("POST", "/agents", "Register an agent", "agent_register", lambda m, p: m(p["agent_id"], p.get("kind"),
                                                                               p.get("lane")), "agents",
          body=(AGENT, S("kind"), S("lane"))),
    Route("POST", "/agents/{agent}/heartbeat", "Extend an agent's lease and publish its dirty set",
          "agent_heartbeat", lambda m, p: m(p["agent"]), "agents"),
    # -- tasks and tickets
    Route("GET", "/tasks", "Tasks in creation order", "task_list", lambda m, p: m(
        ready=p.get("ready_only", False), status=p.get("status"), owner=p.get("owner")), "tasks",
          query=(B("ready_only", "only the open tasks whose dependencies are all done", aliases=("ready",)),
                 S("status", choices=TASK_STATUSES), S("owner")), returns="array"),
    Route("POST", "/tasks", "Create a task", "task_create", lambda m, p: m(
        p["title"], actor=p.get("agent_id"), description=p.get("description"), depends=tuple(p.get("depends") or ()),
        ticket=p.get("ticket_id"), files=tuple(p.get("files") or ())), "tasks",
          body=(S("title", True), S("description"), A("depends"), S("ticket_id", aliases=("ticket",)), A("files"),
                ACTOR)),
    Route("GET", "/tasks/{id}", "One task", "task_show", lambda m, p: m(p["id"]), "tasks"),
    Route("POST", "/tasks/{id}/claim", "Claim a task (compare-and-swap on its version)",
          "task_claim", lambda m, p: m(p["id"], p["agent_id"], p.get("version"), p.get("lane"),
                                       ahead=p.get("ahead", True)), "tasks",
          body=(AGENT, I("version"), S("lane"), B("ahead"))),
    Route("POST", "/tasks/{id}/done", "Mark a task done, integrating its lane first (integrate: false skips that)",
          "task_done", lambda m, p: m(p["id"], p.get("agent_id"), integrate=p.get("integrate", True)), "tasks",
          body=(ACTOR, B("integrate"))),
    Route("POST", "/tasks/{id}/block", "Block a task with a reason",
          "task_block", lambda m, p: m(p["id"], p["reason"], p.get("agent_id")), "tasks",
          body=(S("reason", True), ACTOR)),
    Route("POST", "/tasks/{id}/resume", "Resume a blocked task", "task_resume",
          lambda m, p: m(p["id"], p.get("agent_id")),
          "tasks", body=(ACTOR,)),
    Route("POST", "/tasks/{id}/handoff", "Hand a task to another agent",
          "task_handoff", lambda m, p: m(p["id"], p["to_agent"], p.get("agent_id"), p.get("note")), "tasks",
          body=(S("to_agent", True, aliases=("to",)), S("note"), ACTOR)),
    Route("POST", "/tasks/{id}/depends", "Make a task depend on another",
          "task_dep_add", lambda m, p: m(p["id"], p["depends_on"], p.get("agent_id")), "tasks",
          body=(S("depends_on", True), ACTOR)),
    Route("GET", "/tickets", "Tickets", "ticket_list", lambda m, p: m(), "tasks", returns="array"),
    Route("POST", "/tickets", "Open a ticket", "ticket_open", lambda m, p: m(p["title"], p.get("agent_id")), "tasks",
          body=(S("title", True), ACTOR)),
    Route("GET", "/tickets/{id}", "One ticket with its tasks", "ticket_show", lambda m, p: m(p["id"]), "tasks"),
    Route("POST", "/tickets/{id}/link", "Link a task to a ticket",
          "ticket_link", lambda m, p: m(p["id"], p["task_id"], p.get("agent_id")), "tasks",
          body=(S("task_id", True, aliases=("task",)), ACTOR)),
    # -- claims and dirty sets
    Route("GET", "/claims", "File claims", "claim_list", lambda m, p: m(p.get("agent")), "claims",
          query=(S("agent"),), returns="array"),
    Route("POST", "/claims", "Claim paths (globs) for an agent",
          "claim_add", lambda m, p: m(p["globs"], p["agent_id"], p.get("task_id")), "claims",
          body=(A("globs", True), AGENT, S("task_id", aliases=("task",)))),
    Route("POST", "/claims/release", "Release an agent's claims (all, or the globs given)",
          "claim_release", lambda m, p: m(p["agent_id"], p.get("globs") or ()), "claims",
          body=(AGENT, A("globs"))),
    Route("GET", "/dirty", "Published dirty sets", "dirty_list", lambda m, p: m(), "claims", returns="array"),
    Route("POST", "/dirty", "Publish an agent's dirty set, computed from its workspace",
          "dirty_publish", lambda m, p: m(p["agent_id"]), "claims", body=(AGENT,)),
    # -- board
    Route("GET", "/board", "The board's recent posts, or every unanswered question (marks nothing read)",
          "board_read", lambda m, p: m(None, limit=p.get("limit", BOARD_LIMIT),
                                    unanswered=p.get("unanswered_only", False)),
          "board", query=(I("limit", maximum=1000, help=LIMIT_HELP), UNANSWERED)),
    Route("POST", "/board", "Post on the board", "board_post", lambda m, p: m(
        p["text"], p["agent_id"], p.get("kind", "note"), p.get("to_agent")), "board",
          body=(S("text", True), AGENT, S("kind", choices=("note", "question", "handoff")),
                S("to_agent", aliases=("to",)))),
    Route("POST", "/board/read", "Read an agent's posts and mark them read",
          "board_read", lambda m, p: m(p["agent_id"], unread_only=p.get("unread_only", False),
                                    everything=p.get("all_posts", False), limit=p.get("limit", BOARD_LIMIT),
                                    unanswered=p.get("unanswered_only", False)),
          "board", body=(AGENT, B("unread_only", aliases=("unread",)), UNANSWERED,
                         B("all_posts", "include posts sent to other agents", aliases=("all",)),
                         I("limit", maximum=1000, help=LIMIT_HELP))),
    Route("POST", "/board/{post}/resolve", "Resolve a post", "board_resolve",
          lambda m, p: m(p["post"], p.get("agent_id")),
          "board", body=(ACTOR,)),
    Route("POST", "/board/{post}/answer", "Answer a question: a post to its asker, and the question resolved",
          "board_answer", lambda m, p: m(p["post"], p["text"], p["agent_id"]), "board",
          body=(S("text", True), AGENT)),
    # -- the ledger and sync
    Route("GET", "/ledger", "The coordination log's latest ops", "ledger_log", lambda m, p: m(p.get("limit", 20)),
          "ledger", query=(I("limit", maximum=10000),), returns="array"),
    *(Route("POST", f"/{verb}", what, verb, lambda m, p: m(p.get("remote"), actor=p.get("agent_id")), "ledger",
            body=(S("remote"), ACTOR))
      for verb, what in (("pull", "Fetch a remote's lane state and merge it here"),
                         ("sync", "Pull, merge and push lane state with a remote"))),
    # push moves nothing here: no one to record
    Route("POST", "/push", "Push what is strictly ahead here, under a lease", "push", lambda m, p: m(p.get("remote")),
          "ledger", body=(S("remote"),)),
)

# The control plane's runs: served once the API has them.
RUN_ROUTES: tuple[Route, ...] = (
    Route("GET", "/runs", "Agent runs, newest first: phase, budgets, blocked and in-flight calls, tokens, cost",
          "run_list", lambda m, p: m(active=p.get("active", False), budgets=p.get("budgets", False)), "runs",
          query=(B("active"), B("budgets", "with each run's phase budgets")), returns="array"),
    Route("GET", "/runs/stats", "Calls, blocked calls, tokens, cost and wall time, per agent, lane, run, task or day",
          "run_stats", lambda m, p: m(by=p.get("by", "agent"), since=p.get("since")), "runs",
          query=(S("by", help="how to group (default agent)", choices=STATS_GROUPS),
                 S("since", help="count only the UTC days from the one this moment falls in on, as git's --since "
                                "takes it (2026-11-01, yesterday, 1.week.ago, @1700000000)"))),
    Route("GET", "/runs/{run}", "One run", "run_show", lambda m, p: m(p["run"]), "runs"),
    Route("GET", "/runs/{run}/events", "One run's event log", "run_events", lambda m, p: m(p["run"]), "runs",
          returns="array"),
)


def available(api_class: type) -> tuple[Route, ...]:
    """The routes this version of the API can serve."""
    return tuple(r for r in ROUTES + RUN_ROUTES if hasattr(api_class, r.api))
