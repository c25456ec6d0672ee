"""Undoing a ledger op by its inverse op (`op.undo`), never by rewriting the append-only log.

The inverse is computed from the op's own commit: every record it changed goes back to what it was before,
provided it still holds exactly what the op left (else something depends on it since: refused, naming the
record). Records the op created on the board are not deleted but marked `retracted` (a post keeps its place
in the board's order), and listed as retracted so no unread count holds them. Bookkeeping an op does on the
side (leases, wake queues, read cursors, dirty sets) is left alone. An `op.undo` is itself undone the same way, which redoes the original."""

from __future__ import annotations

import json
from typing import Any

from git_lanes.domain import board, board_index, ports, questions
from git_lanes.errors import Conflict, Refused, UnsupportedFormat, UserError, command
from git_lanes.ledger import Op, Tx, last_change, make_op, read_op, state_at
from git_lanes.model.budgets import decode_key
from git_lanes.model.frozen import replace
from git_lanes.store import Store

TYPE = "op.undo"
# What an undo can act on; the rest (heartbeats, reads, wake-takes, registrations) is bookkeeping.
UNDOABLE = frozenset({"claim.add", "claim.release", "board.post", "board.resolve", "board.answer", "task.create",
                      "task.dep_add", "task.claim", "task.done", "task.block", "task.resume", "ticket.open",
                      "ticket.link", "plan.dispatch", "ports.reserve", "ports.release", "budget.set", "budget.clear",
                      TYPE})
# What an undo given no operation passes over without a word, where it undoes the newest operation it can:
# bookkeeping that decides nothing (heartbeats, reads, wake-takes, registrations, a sync's refusal notices,
# dirty sets, an undo's own relisting, a publish lock's lease). Every other op it cannot reverse stops it.
PASSED_OVER = frozenset({"agent.register", "agent.heartbeat", "agent.touch", "board.read", "wake.take", "refused",
                         "dirty.publish", board_index.RETRACTIONS, "publish.lock", "publish.unlock"})
# The board's two lists (`retracted/`, `questions/`) are not restored as they were: the undo's fold keeps
# them in step with the posts it rewrites, so undoing one post does not undo what later posts added to them.
BOOKKEEPING = ("agents/", "wakes/", "board/readers/", "dirty/", "retracted/", "questions/")
# An inverse op with this arg leaves the board's retraction list to the `board.retractions` op its undo
# appends after all its inverse ops (`relisting`): the list is one record, so an undo of a sync that brought
# 3,000 posts rewrote it (and carried it whole in each commit) 3,000 times, 44 s of a 45 s undo.
LIST_LATER = "list_later"
RELIST = board_index.RETRACTIONS


def stops_undo(op_type: str) -> bool:
    """Whether an undo given no operation stops at an op of `op_type`: one it cannot reverse (a handoff, a
    review, a publication, a closed ticket, gc's tombstones...), where it would reach past it and undo an older
    operation unasked. Derived from what undo can reverse, so an op type added later stops it too until it is
    made undoable or listed as bookkeeping."""
    return op_type not in UNDOABLE and op_type not in PASSED_OVER


def describe(path: str) -> str:
    """A record's path as a person names it."""
    name = path.rsplit("/", 1)[-1].removesuffix(".json")
    if path.startswith("tasks/"):
        return f"task {name[:8]}"
    if path.startswith("board/"):
        return f"post #{int(name)}" if name.isdigit() else path
    if path.startswith("claims/"):
        return f"{name}'s file claims"
    if path.startswith("tickets/"):
        return f"ticket {name[:8]}"
    if path.startswith("ports/"):
        return f"the ports of lane {name.replace('%2F', '/').replace('%25', '%')}"
    if path.startswith("plans/"):
        return f"plan {name[:8]}"
    if path.startswith("budgets/"):
        scope, _, key = path.removeprefix("budgets/").rpartition("/")
        key = decode_key(key.removesuffix(".json"))
        return f"the budget of {scope} {key if scope == 'lane' else key[:8]}"
    return path


def inverse(store: Store, commit: str, actor: str, time: float) -> Op:
    """The `op.undo` that reverses the op at ledger commit `commit`."""
    original = read_op(store, commit)
    if original.type not in UNDOABLE:
        raise Refused(f"ledger op {original.id[:8]} ({original.type}) cannot be undone", code="not_undoable",
                      hint="only operations that change lanes, tasks, tickets, claims, posts, ports or budgets can")
    parents = store.commit_info(commit).parents
    before, after = state_at(store, parents[0] if parents else None), state_at(store, commit)
    changes = []
    for path in before.changed_paths(after):
        if path.startswith(BOOKKEEPING):
            continue
        old, new = before.get(path), after.get(path)
        if old is None and new is not None and path.startswith("board/") and path.split("/")[-1][:-5].isdigit():
            restore: dict | None = {**new, "retracted": {"by": actor, "time": time, "undoes": original.id}}
        else:
            restore = old
        changes.append({"path": path, "expect": new, "restore": restore})
    return make_op(TYPE, actor, {"undoes": original.id, "type": original.type, "changes": changes}, time)


def list_later(ops: list[Op]) -> list[Op]:
    """`ops`, the inverse ops of one undo in the order they apply, with those that retract posts or put them
    back marked to leave the retraction list to one `relisting` op after them, when more than one does."""
    if sum(1 for op in ops if relisted_posts(op)) < 2:
        return ops
    return [replace(op, args={**op.args, LIST_LATER: True}) if relisted_posts(op) else op for op in ops]


def relisted_posts(op: Op) -> list[int]:
    """The posts inverse op `op` takes onto the retraction list or off it."""
    return [change["restore"]["seq"] for change in op.args["changes"]
            if change["path"].startswith("board/") and change["restore"] is not None
            and board.retraction_flips(change["expect"], change["restore"])]


def relisting(ops: list[Op], actor: str, time: float) -> Op | None:
    """The `board.retractions` op that lists (or unlists) at once the posts of `ops` marked `list_later`."""
    posts = [seq for op in ops if op.args.get(LIST_LATER) for seq in relisted_posts(op)]
    return make_op(RELIST, actor, {"posts": posts}, time) if posts else None


def blockers(store: Store, head: str | None, op: Op, stop: str) -> list[dict]:
    """Each record `op` expects that no longer holds it, with the ledger op that changed it since (found by
    walking back from `head` to the undone op's commit `stop`)."""
    state = state_at(store, head)
    found = []
    for change in op.args["changes"]:
        if _same(state.get(change["path"]), change["expect"]):
            continue
        by = _changed_by(store, head, stop, change["path"])
        found.append({"record": describe(change["path"]), "path": change["path"],
                      "by": by.id if by else None, "by_type": by.type if by else None,
                      "by_actor": by.actor if by else None})
    return found


def _changed_by(store: Store, head: str | None, stop: str, path: str) -> Op | None:
    commit = last_change(store, head, stop, path)
    return read_op(store, commit) if commit else None


def apply(tx: Tx, op: Op) -> dict[str, Any]:
    """The fold of `op.undo`: refuse unless every record still holds what the undone op left."""
    changes = op.args.get("changes")
    undoes = op.args.get("undoes")
    if not isinstance(changes, list) or not isinstance(undoes, str):
        raise UserError("an undo names the op it undoes and its changes", code="invalid_undo")
    for change in changes:
        if not _same(tx.get(change["path"]), change["expect"]):
            raise Conflict(f"{describe(change['path'])} changed since op {undoes[:8]}; undoing it would overwrite "
                           "that", code="changed_since", details={"path": change["path"]},
                           hint=f"undo the later operations first ({command('op log')} lists them)")
    posts = []
    for change in changes:
        path, restore = change["path"], change["restore"]
        if restore is None:
            tx.delete(path)
            continue
        if path.startswith(ports.DIRECTORY + "/"):
            _check_ports_free(tx, restore)
        tx.put(path, restore)
        if path.startswith("board/"):
            posts.append((change["expect"], restore))
    if not op.args.get(LIST_LATER):
        board.note_retractions(tx, posts)
    questions.note_changes(tx, posts)  # one small record, rewritten only when a question opens or closes
    return {"undoes": undoes, "type": op.args.get("type"), "records": [describe(c["path"]) for c in changes]}


def _check_ports_free(tx: Tx, record: dict) -> None:
    mine = set(record.get("ports") or ())
    for lane, held in ports.held(tx).items():
        if lane != record.get("lane") and mine & set(held):
            raise Conflict(f"port(s) {', '.join(map(str, sorted(mine & set(held))))} went to lane {lane} since",
                           code="changed_since", hint="delete that lane first, or leave this undone")


def _same(current: dict | None, expected: dict | None) -> bool:
    return json.dumps(current, sort_keys=True) == json.dumps(expected, sort_keys=True)


def ledger_ops(store: Store, head: str | None, limit: int) -> list[tuple[str, Op]]:
    """(commit, op) for the ledger ops among the newest `limit` ledger commits, newest first. A commit holding
    no op this version reads (one an older git-lanes cut at a NUL, which sync reports and skips) is no
    operation to list or undo: it is passed over, where it made `op log` and `undo` fail on every machine."""
    found = []
    commit = head
    for _ in range(limit):
        if commit is None:
            break
        try:
            found.append((commit, read_op(store, commit)))
        except UnsupportedFormat:
            pass
        parents = store.commit_info(commit).parents
        commit = parents[0] if parents else None
    return found
