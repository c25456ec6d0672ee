"""The REST API's table: each route names the `Lanes` method it calls and the parameters it takes. The
dispatcher, the OpenAPI document and the tests all read this one table, so a route cannot be served
without being documented, nor documented without being served."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from git_lanes.errors import UserError

Handler = Callable[[Any, dict[str, Any]], Any]


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
        if self.minimum is not None and value < self.minimum or self.maximum is not None and value > self.maximum:
            raise UserError(f"{self.name} must be between {self.minimum} and {self.maximum}", code="usage")
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
    call: Handler
    tag: str
    query: tuple[Param, ...] = ()
    body: tuple[Param, ...] = ()
    returns: str = "object"  # or "array"
    needs: str | None = None  # an API method this route calls that not every version has (served if present)

    @property
    def writes(self) -> bool:
        return self.method != "GET"

    @property
    def path_params(self) -> list[str]:
        return [part[1:-1].split(":")[0] for part in self.path.split("/") if part.startswith("{")]

    @property
    def operation_id(self) -> str:
        words = [p for p in self.path.split("/") if p and not p.startswith("{")]
        return f"{self.method.lower()}_{'_'.join(words) or 'root'}" + ("_item" if self.path.endswith("}") else "")


def S(name: str, required: bool = False, help: str = "", choices: tuple[str, ...] = ()) -> Param:
    return Param(name, "string", required, help, choices=choices)


def B(name: str, help: str = "") -> Param:
    return Param(name, "boolean", False, help)


def I(name: str, required: bool = False, help: str = "", minimum: float | None = 0,  # noqa: E743
      maximum: float | None = None) -> Param:
    return Param(name, "integer", required, help, minimum=minimum, maximum=maximum)


def N(name: str, help: str = "") -> Param:
    return Param(name, "number", False, help, minimum=0)


def A(name: str, required: bool = False, help: str = "") -> Param:
    return Param(name, "array", required, help)


COST = (I("tokens_in"), I("tokens_out"), I("api_calls"), N("wall_time"), N("cost_usd"))
INTENT = (S("agent_type"), S("model"), A("tags"))
ACTOR = S("actor", help="who acts (default: git's user.name)")


def _cost(p: dict) -> Any:
    from git_lanes.model.records import Cost

    fields = {k: p[k] for k in ("tokens_in", "tokens_out", "api_calls", "wall_time", "cost_usd") if k in p}
    return Cost(**fields) if fields else None


def _promote(a: Any, p: dict) -> Any:
    return a.promote(p["lane"], p.get("into"), prompt=p.get("prompt"), agent_id=p.get("agent_id"),
                     agent_type=p.get("agent_type"), model=p.get("model"), tags=tuple(p.get("tags") or ()),
                     cost=_cost(p), dry_run=p.get("dry_run", False), force=p.get("force", False),
                     auto_accept=p.get("auto_accept", False))


def _commit(a: Any, p: dict) -> Any:
    return a.commit(p["prompt"], p["agent_id"], lane=p["name"], agent_type=p.get("agent_type"),
                    model=p.get("model"), tags=tuple(p.get("tags") or ()), cost=_cost(p),
                    auto_accept=p.get("auto_accept", False))


ROUTES: tuple[Route, ...] = (
    # -- inspection
    Route("GET", "/status", "Lanes, workspaces, pending proposals and unsnapshotted edits", lambda a, p: a.status(),
          "inspect"),
    Route("GET", "/radar", "Each lane's ahead/behind the trunk, and the pairs of lanes that would collide",
          lambda a, p: a.radar(), "inspect"),
    Route("GET", "/cost", "Cumulative tokens and dollars over time, per agent and per lane",
          lambda a, p: a.cost(), "inspect"),
    Route("GET", "/transitions", "Transitions newest first, with totals (history)",
          lambda a, p: a.history(lane=p.get("lane"), status=p.get("status"), agent=p.get("agent"),
                                 limit=p.get("limit")), "transitions",
          query=(S("lane"), S("status", choices=("proposed", "accepted", "rejected")), S("agent"), I("limit"))),
    Route("GET", "/transitions/{id}", "One transition with its changed paths", lambda a, p: a.show(p["id"]),
          "transitions"),
    Route("GET", "/diff", "The difference between two states (lanes, transition ids or revisions)",
          lambda a, p: a.diff(p["from"], p["to"], p.get("mode", "patch")), "transitions",
          query=(S("from", True), S("to", True), S("mode", choices=("patch", "stat", "name-only")))),
    Route("GET", "/proposals", "Pending proposals", lambda a, p: a.history(status="proposed")["transitions"],
          "transitions", returns="array"),
    Route("POST", "/transitions/{id}/accept", "Accept a proposal: run the gates, then move its lane",
          lambda a, p: a.accept(p["id"]), "transitions"),
    Route("POST", "/transitions/{id}/reject", "Reject a proposal (kept as signal)",
          lambda a, p: a.reject(p["id"], p.get("reason")), "transitions", body=(S("reason"),)),
    Route("POST", "/transitions/{id}/evaluate", "Re-run the gates on a pending proposal",
          lambda a, p: a.evaluate(p["id"]), "transitions"),
    Route("POST", "/promote", "Promote a lane into another (the trunk by default); dry_run only plans",
          _promote, "transitions",
          body=(S("lane", True), S("into"), S("prompt"), S("agent_id"), *INTENT, *COST, B("dry_run"), B("force"),
                B("auto_accept"))),
    # -- lanes
    Route("GET", "/lanes", "Every lane", lambda a, p: a.lane_list(), "lanes", returns="array"),
    Route("POST", "/lanes", "Create a lane and its workspace",
          lambda a, p: a.lane_create(p["name"], p.get("from")), "lanes", body=(S("name", True), S("from"))),
    Route("GET", "/lanes/{name:path}", "One lane: head, workspace, edits, proposals, recent transitions",
          lambda a, p: a.lane_show(p["name"]), "lanes"),
    Route("DELETE", "/lanes/{name:path}", "Delete a lane (its head is kept under refs/lanes/deleted/)",
          lambda a, p: a.lane_delete(p["name"], force=p.get("force", False)), "lanes", query=(B("force"),)),
    Route("POST", "/lanes/{name:path}/commit", "Snapshot the lane's workspace as a proposal", _commit, "lanes",
          body=(S("prompt", True), S("agent_id", True), *INTENT, *COST, B("auto_accept"))),
    Route("POST", "/lanes/{name:path}/reset", "Move the lane and its workspace to another lane's head",
          lambda a, p: a.lane_reset(p["name"], p.get("onto"), force=p.get("force", False),
                                    reason=p.get("reason"), agent_id=p.get("agent_id")), "lanes",
          body=(S("onto"), B("force"), S("reason"), S("agent_id"))),
    # -- agents
    Route("GET", "/agents", "Agents with their leases, tasks, claims and dirty sets", lambda a, p: a.agent_list(),
          "agents", returns="array"),
    Route("POST", "/agents", "Register an agent", lambda a, p: a.agent_register(p["agent"], p.get("kind"),
                                                                               p.get("lane")), "agents",
          body=(S("agent", True), S("kind"), S("lane"))),
    Route("POST", "/agents/{agent}/heartbeat", "Extend an agent's lease and publish its dirty set",
          lambda a, p: a.agent_heartbeat(p["agent"]), "agents"),
    # -- tasks and tickets
    Route("GET", "/tasks", "Tasks in creation order", lambda a, p: a.task_list(
        ready=p.get("ready", False), status=p.get("status"), owner=p.get("owner")), "tasks",
          query=(B("ready"), S("status"), S("owner")), returns="array"),
    Route("POST", "/tasks", "Create a task", lambda a, p: a.task_create(
        p["title"], actor=p.get("actor"), description=p.get("description"), depends=tuple(p.get("depends") or ()),
        ticket=p.get("ticket"), files=tuple(p.get("files") or ())), "tasks",
          body=(S("title", True), S("description"), A("depends"), S("ticket"), A("files"), ACTOR)),
    Route("GET", "/tasks/{id}", "One task", lambda a, p: a.task_show(p["id"]), "tasks"),
    Route("POST", "/tasks/{id}/claim", "Claim a task (compare-and-swap on its version)",
          lambda a, p: a.task_claim(p["id"], p["agent"], p.get("version"), p.get("lane")), "tasks",
          body=(S("agent", True), I("version"), S("lane"))),
    Route("POST", "/tasks/{id}/done", "Mark a task done", lambda a, p: a.task_done(p["id"], p.get("actor")),
          "tasks", body=(ACTOR,)),
    Route("POST", "/tasks/{id}/block", "Block a task with a reason",
          lambda a, p: a.task_block(p["id"], p["reason"], p.get("actor")), "tasks", body=(S("reason", True), ACTOR)),
    Route("POST", "/tasks/{id}/resume", "Resume a blocked task", lambda a, p: a.task_resume(p["id"], p.get("actor")),
          "tasks", body=(ACTOR,)),
    Route("POST", "/tasks/{id}/handoff", "Hand a task to another agent",
          lambda a, p: a.task_handoff(p["id"], p["to"], p.get("actor"), p.get("note")), "tasks",
          body=(S("to", True), S("note"), ACTOR)),
    Route("POST", "/tasks/{id}/depends", "Make a task depend on another",
          lambda a, p: a.task_dep_add(p["id"], p["depends_on"], p.get("actor")), "tasks",
          body=(S("depends_on", True), ACTOR)),
    Route("GET", "/tickets", "Tickets", lambda a, p: a.ticket_list(), "tasks", returns="array"),
    Route("POST", "/tickets", "Open a ticket", lambda a, p: a.ticket_open(p["title"], p.get("actor")), "tasks",
          body=(S("title", True), ACTOR)),
    Route("GET", "/tickets/{id}", "One ticket with its tasks", lambda a, p: a.ticket_show(p["id"]), "tasks"),
    Route("POST", "/tickets/{id}/link", "Link a task to a ticket",
          lambda a, p: a.ticket_link(p["id"], p["task"], p.get("actor")), "tasks", body=(S("task", True), ACTOR)),
    # -- claims and dirty sets
    Route("GET", "/claims", "File claims", lambda a, p: a.claim_list(p.get("agent")), "claims",
          query=(S("agent"),), returns="array"),
    Route("POST", "/claims", "Claim paths (globs) for an agent",
          lambda a, p: a.claim_add(p["globs"], p["agent"], p.get("task")), "claims",
          body=(A("globs", True), S("agent", True), S("task"))),
    Route("POST", "/claims/release", "Release an agent's claims (all, or the globs given)",
          lambda a, p: a.claim_release(p["agent"], p.get("globs") or ()), "claims",
          body=(S("agent", True), A("globs"))),
    Route("GET", "/dirty", "Published dirty sets", lambda a, p: a.dirty_list(), "claims", returns="array"),
    Route("POST", "/dirty", "Publish an agent's dirty set, computed from its workspace",
          lambda a, p: a.dirty_publish(p["agent"]), "claims", body=(S("agent", True),)),
    # -- board
    Route("GET", "/board", "The board's recent posts (marks nothing read)",
          lambda a, p: a.board_read(None, limit=p.get("limit", 50)), "board", query=(I("limit", maximum=1000),)),
    Route("POST", "/board", "Post on the board", lambda a, p: a.board_post(
        p["text"], p["agent"], p.get("kind", "note"), p.get("to")), "board",
          body=(S("text", True), S("agent", True), S("kind", choices=("note", "question", "handoff")), S("to"))),
    Route("POST", "/board/read", "Read an agent's posts and mark them read",
          lambda a, p: a.board_read(p["agent"], unread_only=p.get("unread", False), everything=p.get("all", False),
                                    limit=p.get("limit", 20)), "board",
          body=(S("agent", True), B("unread"), B("all"), I("limit", maximum=1000))),
    Route("POST", "/board/{post}/resolve", "Resolve a post", lambda a, p: a.board_resolve(p["post"], p.get("actor")),
          "board", body=(ACTOR,)),
    Route("POST", "/board/{post}/answer", "Answer a question: a post to its asker, and the question resolved",
          lambda a, p: a.board_answer(p["post"], p["text"], p["agent"]), "board",
          body=(S("text", True), S("agent", True))),
    # -- the ledger and sync
    Route("GET", "/ledger", "The coordination log's latest ops", lambda a, p: a.ledger_log(p.get("limit", 20)),
          "ledger", query=(I("limit", maximum=10000),), returns="array"),
    Route("POST", "/sync", "Pull, merge and push lane state with a remote",
          lambda a, p: getattr(a, p.get("mode", "sync"))(p.get("remote")), "ledger",
          body=(S("remote"), S("mode", choices=("pull", "push", "sync")))),
)

# The control plane's runs: served once the API has them.
RUN_ROUTES: tuple[Route, ...] = (
    Route("GET", "/runs", "Agent runs, newest first: phase, budgets, blocked and in-flight calls, tokens, cost",
          lambda a, p: a.run_list(active=p.get("active", False), budgets=p.get("budgets", False)), "runs",
          query=(B("active"), B("budgets", "with each run's phase budgets")), returns="array",
          needs="run_list"),
    Route("GET", "/runs/stats", "Spending per agent, lane or day", lambda a, p: a.run_stats(
        by=p.get("by", "agent"), since=p.get("since")), "runs", query=(S("by"), S("since")), needs="run_stats"),
    Route("GET", "/runs/{run}", "One run", lambda a, p: a.run_show(p["run"]), "runs", needs="run_show"),
    Route("GET", "/runs/{run}/events", "One run's event log", lambda a, p: a.run_events(p["run"]), "runs",
          returns="array", needs="run_events"),
)


def available(api_class: type) -> tuple[Route, ...]:
    """The routes this version of the API can serve."""
    return tuple(r for r in ROUTES + RUN_ROUTES if r.needs is None or hasattr(api_class, r.needs))


# Path parameters that are integers (board posts).
INTEGER_PATH_PARAMS = {"post"}
