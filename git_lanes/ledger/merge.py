"""Merging two ledgers (DESIGN.md §2): the remote's head is the linearization point, so the local-only ops are
replayed on top of it, in their order. An op that no longer holds there (a task someone else claimed first)
is not lost: a `refused` op takes its place, naming its actor, the original op and the refusal, so the
actor learns of it on its next heartbeat. The result descends from the remote head: a fast-forward for it."""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Protocol

from git_lanes.errors import UnsupportedFormat
from git_lanes.ledger.log import Fold, apply_op, roll_up_after
from git_lanes.ledger.op import Op, decode_message, make_op, newer_format
from git_lanes.model.format import FORMAT_VERSION
from git_lanes.model.ids import Actor
from git_lanes.store import Store
from git_lanes.store.remote import count_between

REFUSED = "refused"
UNREADABLE = "unreadable"  # the type a refused record gives a local commit that holds no op to replay


class Rebase(Protocol):
    """The model's knowledge of arguments that name a position in the log (a post's sequence number, a read
    cursor), which a replay on another head renumbers. Generic ids (op ids) need none."""

    def op(self, op: Op, head: str) -> Op:
        """The op to apply on `head` (the replay's head so far), its positional arguments translated."""
        ...

    def applied(self, original: Op, result: dict[str, Any]) -> None:
        """Learn where a replayed op landed (`original.result` is where it had landed before)."""
        ...


@dataclass(frozen=True)
class Replay:
    head: str
    came_in: int
    replayed: int
    # one record per op that no longer held: {"id", "type", "actor", "time", "args", "refusal", "refused_as"}
    refused: list[dict[str, Any]] = field(default_factory=list)


def refused_op(op: Op, refusal: dict[str, Any]) -> Op:
    """The op recorded in place of `op`: same actor and time, the original op and why it failed as args."""
    return make_op(REFUSED, op.actor, {"op": op.to_dict(), "refusal": refusal}, op.time)


def replay(store: Store, local: str, remote: str, fold: Fold,
           rebase: Callable[[str | None, str], Rebase] | None = None) -> Replay:
    """Replay the ops of `local` that `remote` lacks on top of `remote`, writing commits but moving no ref.
    `rebase(merge_base, remote)` gives the model's translation of positional arguments, if it has any."""
    base = store.merge_base(local, remote)
    came_in = count_between(store, base, remote)
    translate = rebase(base, remote) if rebase else None
    head = remote
    replayed = 0
    refused = []
    local_ops = _local_ops(store, base, local)
    landed = _landed_there(store, base, remote, local_ops)
    for commit, original in local_ops:
        if not isinstance(original, UnsupportedFormat) and original.id in landed:
            # Already on the remote (a force-push cut it there and another machine replayed it back): once.
            there = landed[original.id]
            if translate and there is not None:
                translate.applied(original, there)
            continue
        if isinstance(original, UnsupportedFormat):
            stand_in, record = _unreadable(store, commit, original)
            head = _record_refusal(store, head, stand_in, fold)
            refused.append(record)
            continue
        op = translate.op(original, head) if translate else original
        new_head, result = apply_op(store, head, op, fold)
        if new_head is None:
            stand_in = refused_op(op, result)
            new_head = _record_refusal(store, head, stand_in, fold)
            refused.append({"id": op.id, "type": op.type, "actor": op.actor, "time": op.time, "args": op.args,
                            "refusal": result, "refused_as": stand_in.id})
        else:
            replayed += 1
            if translate:
                translate.applied(original, result)
        head = new_head
    roll_up_after(store, len(local_ops))
    return Replay(head, came_in, replayed, refused)


def _landed_there(store: Store, base: str | None, remote: str,
                  local_ops: list[tuple[str, Op | UnsupportedFormat]]) -> dict[str, dict[str, Any] | None]:
    """The local ops the remote's own commits since `base` already hold: op id -> the result it had there (None
    when it was recorded refused). Only a remote history rewritten by hand holds any, so a message is decoded
    only when one of the wanted ids is in its text: the usual replay pays one commit read per remote op.

    Raises UnsupportedFormat where one of those commits holds an op of a newer format (a peer's newer
    git-lanes): the local ops would be decided against a state this version cannot read, and one refused for
    what it cannot read would stay refused. Upgraded, this machine syncs as before."""
    wanted = {op.id for _, op in local_ops if not isinstance(op, UnsupportedFormat)}
    found: dict[str, dict[str, Any] | None] = {}
    if not local_ops:
        return found
    commit: str | None = remote
    while commit is not None and commit != base:
        info = store.commit_info(commit)
        newer = newer_format(info.message)
        if newer is not None:
            raise UnsupportedFormat(f"the remote ledger holds op {commit[:8]} of format {newer}; this git-lanes "
                                    f"reads format {FORMAT_VERSION}, so nothing was replayed onto it",
                                    hint="upgrade git-lanes on this machine, then sync again")
        op = None
        if _may_name(info.message, wanted):
            try:
                op = decode_message(info.message, commit)
            except UnsupportedFormat:
                pass
        if op is not None and op.id in wanted:
            found[op.id] = op.result if isinstance(op.result, dict) else {}
        elif op is not None and op.type == REFUSED and isinstance(op.args.get("op"), dict):
            refused_id = op.args["op"].get("id")
            if refused_id in wanted:
                found[refused_id] = None
        commit = info.parents[0] if info.parents else None
    return found


# An op id as it stands in a message: 16 hex digits, not part of a longer run (a commit id).
_OP_ID = re.compile(r"(?<![0-9a-f])[0-9a-f]{16}(?![0-9a-f])")
# Up to this many ids are looked for one by one; past it, the message's ids are read out once: a machine back
# with 1,000 local ops replayed onto 1,000 remote ones made a million searches of whole messages.
_FEW_IDS = 16


def _may_name(message: str, ids: set[str]) -> bool:
    """Whether `message` may hold an op with one of `ids` (to be confirmed by decoding it)."""
    if len(ids) <= _FEW_IDS:
        return any(op_id in message for op_id in ids)
    return not ids.isdisjoint(_OP_ID.findall(message))


def _record_refusal(store: Store, head: str, stand_in: Op, fold: Fold) -> str:
    new_head, recorded = apply_op(store, head, stand_in, fold)
    if new_head is None:
        original = stand_in.args["op"]
        raise UnsupportedFormat(f"cannot record that ledger op {original.get('id')} ({original.get('type')}) was "
                                f"refused: {recorded.get('message')}", code="ledger_replay_failed",
                                hint="upgrade git-lanes on this machine")
    return new_head


def _local_ops(store: Store, base: str | None, local: str) -> list[tuple[str, Op | UnsupportedFormat]]:
    """The local commits after `base`, oldest first, each with its op, or why it holds none (as `ops_between`
    reads them, but one unreadable commit does not stop the rest)."""
    found: list[tuple[str, Op | UnsupportedFormat]] = []
    commit: str | None = local
    while commit is not None and commit != base:
        info = store.commit_info(commit)
        try:
            found.append((commit, decode_message(info.message, commit)))
        except UnsupportedFormat as exc:
            if newer_format(info.message) is not None:
                raise  # a newer git-lanes's op is not lost here: that version replays it
            found.append((commit, exc))
        commit = info.parents[0] if info.parents else None
    if commit != base:
        raise UnsupportedFormat(f"{base[:8] if base else '-'} is not an ancestor of ledger commit {local[:8]}")
    found.reverse()
    return found


def _unreadable(store: Store, commit: str, why: UnsupportedFormat) -> tuple[Op, dict[str, Any]]:
    """A local ledger commit with no op in its message (an older git-lanes let a NUL cut it there) cannot be
    replayed: rather than fail this sync and every later one, it is refused like an op that no longer holds,
    in the name of its author (a ledger commit's author is its op's actor)."""
    info = store.commit_info(commit)
    name = info.author.rpartition(" <")[0] or info.author
    actor = name if Actor.valid(name) else "git-lanes"
    summary = info.message.partition("\n")[0][:200]
    original = {"id": commit[:16], "type": UNREADABLE, "args": {"commit": commit, "summary": summary}}
    refusal = {"error": "unreadable_op", "message": why.message, "exit_code": 1,
               "hint": f"its effect is not replayed; `git show {commit[:12]}` shows the state it left, so redo "
                       f"the op if it still matters"}
    stand_in = make_op(REFUSED, actor, {"op": original, "refusal": refusal}, float(info.time))
    record = {"id": original["id"], "type": UNREADABLE, "actor": actor, "time": float(info.time),
              "args": original["args"], "refusal": refusal, "refused_as": stand_in.id}
    return stand_in, record
