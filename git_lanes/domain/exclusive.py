"""Exclusive claims in the ledger: `exclusive/<task>.json`, one per task a dispatch plan made, holding the
globs it owns and its lane. They hold until every task of their plan is done; the rule they enforce is
git_lanes/domain/ownership.py's."""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any

from git_lanes import ledger
from git_lanes.domain import stored
from git_lanes.domain.agents import Reader
from git_lanes.domain.context import Context
from git_lanes.domain.ownership import Exclusive, Violation, foreign, message
from git_lanes.errors import Conflict, MalformedRecord, command
from git_lanes.model.coordination import MAX_TIME
from git_lanes.ledger import Tx

DIRECTORY = "exclusive"


def exclusive_path(task: str) -> str:
    return f"{DIRECTORY}/{task}.json"


def held(state: Reader) -> list[Exclusive]:
    """The exclusive claims in `state`. One a peer wrote malformed (`"globs": 5`) is left out, as a listing
    leaves out any malformed record, and `git lanes doctor` names it; the agent hook's reader does the same
    (domain/control.py `read_exclusive`), so both enforce the same claims."""
    found = []
    for name in state.names(DIRECTORY):
        try:
            record = stored.read(state, f"{DIRECTORY}/{name}") or {}
        except MalformedRecord:
            continue
        if not record.get("task"):
            continue
        task = state.get(f"tasks/{record['task'][:2]}/{record['task']}.json") or {}
        found.append(Exclusive(record["task"], record.get("title") or "", record.get("lane") or "",
                               tuple(record.get("globs") or ()), record.get("plan"), task.get("owner")))
    return found


def claim_rows(state: Reader) -> list[dict[str, Any]]:
    """The exclusive claims as `claim list` shows them beside the agents' own: one row per glob."""
    rows = []
    for claim in held(state):
        try:
            plan = (state.get(f"plans/{claim.plan}.json") or {}) if claim.plan else {}
        except MalformedRecord:
            plan = {}
        created = plan.get("created") if isinstance(plan, dict) else None
        if isinstance(created, bool) or not isinstance(created, (int, float)) or not 0 <= created <= MAX_TIME:
            created = 0.0  # a plan a peer wrote in another shape (doctor names it) leaves the claim standing
        rows += [{"agent": claim.owner, "glob": glob, "time": created, "task": claim.task,
                  "exclusive": True, "lane": claim.lane or None} for glob in claim.globs]
    return rows


def enforce(ctx: Context, lane: str, paths: Iterable[str], doing: str,
            exempt: Callable[[str, Exclusive], bool] | None = None) -> None:
    """Refuse (exit 3, naming the path and its owner) a change from `lane` to a path another task owns."""
    claims = held(ledger.state_at(ctx.store, ledger.head(ctx.store)))
    if not claims:
        return
    violations = foreign(claims, lane, paths, exempt)
    if violations:
        raise refusal(violations, doing)


def refusal(violations: list[Violation], doing: str) -> Conflict:
    owner = violations[0].claim
    return Conflict(message(violations, doing), code="exclusive_claim",
                    details={"violations": [v.to_dict() for v in violations[:50]]},
                    hint=f"leave it to {owner.owner or 'the owner of task ' + owner.task[:8]} (ask on the board: "
                         f"{command('board post', '...', to=owner.owner or 'AGENT')}); "
                         "`git restore -SW --source=HEAD -- "
                         f"{violations[0].path}` in your workspace drops your change")


def release_if_done(tx: Tx, plan: str, done: Callable[[str], bool]) -> list[str]:
    """Once every task of `plan` is done, its exclusive claims end. Returns the tasks whose claims ended."""
    records = [tx.get(f"{DIRECTORY}/{name}") or {} for name in tx.names(DIRECTORY)]
    mine = [r["task"] for r in records if r.get("plan") == plan and r.get("task")]
    if not mine or not all(done(task) for task in mine):
        return []
    for task in mine:
        tx.delete(exclusive_path(task))
    return mine
