"""Transitions: propose a state for a lane, then accept or reject it. Each step is one compare-and-swap
transaction over the notes ref and the lane's refs; `recover` finishes any step a killed process left."""

from __future__ import annotations

from pathlib import Path

from git_lanes.domain import attention, lanes
from git_lanes.domain.context import Context
from git_lanes.domain.wording import some
from git_lanes.errors import (Conflict, LanesError, MalformedRecord, NotFound, StaleState, UnsupportedFormat, UserError,
                              command)
from git_lanes.model import refs
from git_lanes.model.ids import random_hex
from git_lanes.model.names import id_text, resolve_prefix
from git_lanes.model.record import Unreadable
from git_lanes.model.records import Cost, Intent, PromotionExtra, Transition
from git_lanes.store import RefUpdate



TRAILER = "Lanes-Transition: "
NO_RECORD = "the note on this lanes state holds no transition record (no JSON object with a format and an id)"


def new_id() -> str:
    return random_hex(8)


def commit_message(intent: Intent, lane: str, transition_id: str, kind: str) -> str:
    body = intent.prompt.strip()
    trailers = [f"Lanes-Agent: {intent.agent_id}", f"Lanes-Lane: {lane}", f"{TRAILER}{transition_id}"]
    if kind != "commit":
        trailers.append(f"Lanes-Kind: {kind}")
    return f"{body}\n\n" + "\n".join(trailers) + "\n"


def load(ctx: Context, state: str) -> Transition | None:
    text = ctx.store.read_note(refs.NOTES, state)
    return Transition.from_note(text) if text is not None else None


def load_readable(ctx: Context, state: str) -> Transition | None:
    """`load`, with a malformed note (a peer's) taken as none: for upkeep, which judges a state by its ref
    and commit when its record is unreadable, and leaves that note as it is."""
    try:
        return load(ctx, state)
    except MalformedRecord:
        return None


def all_transitions(ctx: Context) -> list[Transition]:
    """Every readable recorded transition, oldest first (see `scan`)."""
    return scan(ctx)[0]


def scan(ctx: Context) -> tuple[list[Transition], list[Unreadable]]:
    """Every recorded transition, oldest first, and the notes set aside as unreadable. A `proposed` record
    whose proposal ref is gone was left by a process killed before it acknowledged anything, so it is not
    shown. One malformed note (a peer's notes ref fast-forwards as is), or one a newer git-lanes wrote, must
    not hide every other transition, nor vanish without a word: it is reported, as is a note on a lanes
    state that holds no record at all, with the transition and lane its state's commit message names."""
    pending = set(ctx.store.list_refs(refs.PROPOSALS))
    found = []
    unreadable = []
    for target, text in ctx.store.iter_notes(refs.NOTES):
        try:
            record = Transition.from_note(text)
        except MalformedRecord as exc:  # one of a newer format fails clearly: upgrade to read it (DESIGN §1)
            unreadable.append(_unreadable(ctx, target, exc.message))
            continue
        if record is None:
            if _trailers(ctx, target) is not None:
                unreadable.append(_unreadable(ctx, target, NO_RECORD))
            continue
        if record.status == "proposed" and refs.proposal_ref(record.id) not in pending:
            continue
        found.append(record)
    return sorted(found, key=lambda t: (t.created_at, t.id)), unreadable


def _unreadable(ctx: Context, target: str, reason: str) -> Unreadable:
    said = _trailers(ctx, target) or {}
    return Unreadable(refs.NOTES, target, reason, transition=said.get("Lanes-Transition"),
                      lane=said.get("Lanes-Lane"))


def _trailers(ctx: Context, target: str) -> dict[str, str] | None:
    """The `Lanes-*` trailers of `target` when it is a commit git-lanes made for a transition (its message
    has the transition trailer), so a note there that holds no record hides one; None for anything else:
    notes people add to other commits are theirs."""
    if ctx.store.object_kind(target) != "commit":
        return None
    message = ctx.store.commit_info(target).message
    if f"\n{TRAILER}" not in message:
        return None
    said = {}
    for line in message.splitlines():
        name, colon, value = line.partition(": ")
        if colon and name.startswith("Lanes-") and value.strip():
            said[name] = value.strip()  # the last one wins: the real trailers follow any in the prompt
    return said


def unreadable_notes(ctx: Context) -> list[Unreadable]:
    return scan(ctx)[1]


def find(ctx: Context, prefix: str) -> Transition:
    """A transition by unique id prefix; pending proposals are searched first, as they are what one decides.
    One whose note cannot be read is an error saying why (MalformedRecord, or UnsupportedFormat for a newer
    format), not "no such transition"."""
    # Ids are lowercase hex; git takes an abbreviated name in either case, as every other id here does.
    prefix = id_text(prefix, "transition").strip().lower()
    if not prefix:  # a prefix of every id: with one proposal pending it would pick that one
        raise UserError("empty transition id", code="invalid_id")
    pending = {ref[len(refs.PROPOSALS):]: oid for ref, oid in ctx.store.list_refs(refs.PROPOSALS).items()}
    matches = [tid for tid in pending if tid.startswith(prefix)]
    if len(matches) == 1:
        record = load(ctx, pending[matches[0]])
        if record is not None:
            return record
    readable, unreadable = scan(ctx)
    records = {t.id: t for t in readable}
    try:
        return records[resolve_prefix(prefix, records, "transition", f"list them with {command('history')}")]
    except NotFound:
        wanted = prefix.strip()
        bad = [u for u in unreadable if (u.transition or "").startswith(wanted)
               or f"'{wanted}" in u.reason or u.key.startswith(wanted)] if wanted else []
        if len(bad) == 1:
            hint = f"fix or remove the note with `git notes --ref lanes`; {command('doctor')} lists every " \
                   "unreadable record"
            try:
                load(ctx, bad[0].key)  # its own error: malformed, or of a newer format
            except UnsupportedFormat as exc:
                raise type(exc)(f"transition {wanted} cannot be read: {exc.message}",
                                hint=exc.hint if not isinstance(exc, MalformedRecord) else hint) from None
            raise MalformedRecord(f"transition {wanted} cannot be read: {bad[0].reason}", hint=hint) from None
        raise


def record_updates(ctx: Context, records: list[Transition], message: str) -> RefUpdate:
    return ctx.store.write_notes(refs.NOTES, {t.state: t.to_json() for t in records}, message)


def propose(ctx: Context, lane: str, workspace: Path, intent: Intent, cost: Cost) -> Transition | None:
    """Snapshot the workspace as a proposed next state of `lane`; None when nothing changed."""
    head, parent = lanes.ensure_current(ctx, lane, workspace)
    attention.check(ctx, lane, workspace)
    operation = ctx.store.operation_in_progress(workspace)
    if operation is not None:
        finish = "commit" if operation == "merge" else f"{operation} --continue"
        raise Conflict(f"a git {operation} is in progress in {workspace}; a snapshot now would cut it short",
                       code="operation_in_progress",
                       hint=f"finish it with `git {finish}` or drop it with `git {operation} --abort`, then "
                            "commit again")
    unmerged = ctx.store.unmerged_paths(workspace)
    if unmerged:
        raise Conflict(f"{some(unmerged)} still {'has' if len(unmerged) == 1 else 'have'} unresolved merge conflicts; "
                       "a snapshot would record the conflict markers", code="unmerged_paths",
                       details={"paths": unmerged},
                       hint="resolve them and `git add` each (as `git commit` requires), then commit again")
    tree = ctx.store.snapshot(workspace)
    if tree == ctx.store.tree_of(head):
        return None
    lanes.require_no_internal(ctx, tree, f"the workspace of {lane!r}")
    from git_lanes.domain import exclusive  # the ledger loads only for a snapshot

    exclusive.enforce(ctx, lane, (c.path for c in ctx.store.diff_trees(ctx.store.tree_of(head), tree)),
                      f"this snapshot of {lane}")
    return propose_state(ctx, lane, head, tree, [parent], intent, cost, "commit")


def propose_state(ctx: Context, lane: str, base: str, tree: str, parents: list[str], intent: Intent,
                  cost: Cost, kind: str, extra: PromotionExtra | None = None) -> Transition:
    transition_id = new_id()
    state = ctx.store.write_commit(tree, parents, commit_message(intent, lane, transition_id, kind),
                                   author_name=intent.agent_id, author_email=f"{intent.agent_id}@lanes")
    record = Transition(id=transition_id, lane=lane, base=base, state=state, tree=tree, status="proposed",
                        intent=intent, cost=cost, kind=kind, created_at=ctx.now(), extra=extra or {})
    ctx.store.update_refs([
        record_updates(ctx, [record], f"lanes: propose {transition_id[:8]} on {lane}"),
        RefUpdate(refs.proposal_ref(transition_id), state, None, f"lanes: propose on {lane}: {intent.summary}"),
    ])
    return record


def save(ctx: Context, record: Transition, message: str) -> None:
    ctx.store.update_refs([record_updates(ctx, [record], message)])


def accept(ctx: Context, record: Transition) -> Transition:
    _require_pending(record)
    lanes.require_no_internal(ctx, record.tree, f"proposal {record.id[:8]}")
    ref = refs.lane_ref(record.lane, ctx.trunk)
    current = ctx.store.read_ref(ref)
    if current is None:
        raise Conflict(f"lane {record.lane!r} no longer exists, so {record.id[:8]} cannot be accepted",
                       code="stale_proposal", hint=f"reject it with {command('reject', record.id[:8])}; its "
                                                   f"state stays at refs/lanes/rejected/ as signal")
    if current != record.base:
        promoted = record.promotion
        # A promotion is redone by promoting again (a fresh merge onto the new head), not by hand.
        way = (f"promote it again: {command('promote', promoted.promoted_lane, into=record.lane)} (this one "
               f"is then superseded)" if promoted is not None else
               f"reject it with {command('reject', record.id[:8])} and redo its change on the lane's new head "
               f"({command('diff', str(record.base)[:8], record.id[:8])} shows it)")
        raise Conflict(f"lane {record.lane!r} moved since {record.id[:8]} was proposed "
                       f"(proposed on {str(record.base)[:8]}, now {str(current)[:8]})", code="stale_proposal",
                       hint=way)
    accepted = record.decided("accepted", ctx.now())
    # libgit2 commits a transaction's refs one at a time, so a kill can land between any two. The decision
    # (record and lane) goes first; the proposal ref goes last, so while it exists `recover` sees the
    # proposal and can finish whatever part of the decision is missing.
    ctx.store.update_refs([
        record_updates(ctx, [accepted], f"lanes: accept {record.id[:8]}"),
        RefUpdate(ref, record.state, record.base, f"lanes: accept {record.id[:8]}: {record.intent.summary}"),
    ])
    _drop_proposal(ctx, record, "accept")
    _follow_lane(ctx, record.lane, record.base, record.state)
    _supersede_same(ctx, accepted)
    return accepted


def _supersede_same(ctx: Context, accepted: Transition) -> None:
    """Other proposals of the same content on the head `accepted` was proposed on (a propose retried, or
    followed by `commit --auto-accept` with nothing new) can never be accepted now that the lane left that
    head, and hold nothing the lane lacks: reject them as superseded, kept as signal with their cost."""
    for state in ctx.store.list_refs(refs.PROPOSALS).values():
        if state == accepted.state or ctx.store.tree_of(state) != accepted.tree:
            continue
        record = load_readable(ctx, state)
        if record is not None and record.status == "proposed" and record.lane == accepted.lane \
                and record.base == accepted.base:
            reject(ctx, record, f"superseded by {accepted.id[:8]}, accepted with the same content")


def reject(ctx: Context, record: Transition, reason: str | None) -> Transition:
    _require_pending(record)
    rejected = record.decided("rejected", ctx.now(), reason)
    kept = refs.rejected_ref(record.id)
    # As in accept: the proposal ref goes last. A kill that left only the rejected ref leaves the proposal
    # pending, and deciding it again finds that ref already pointing at the state.
    ctx.store.update_refs([
        record_updates(ctx, [rejected], f"lanes: reject {record.id[:8]}"),
        RefUpdate(kept, record.state, ctx.store.read_ref(kept), f"lanes: reject {record.id[:8]}"),
    ])
    _drop_proposal(ctx, record, "reject")
    return rejected


def _drop_proposal(ctx: Context, record: Transition, verb: str) -> None:
    ctx.store.update_refs([RefUpdate(refs.proposal_ref(record.id), None, record.state,
                                     f"lanes: {verb} {record.id[:8]}")])


def _require_pending(record: Transition) -> None:
    if record.status != "proposed":
        raise StaleState(f"transition {record.id[:8]} is already {record.status}", code="already_decided")


def _follow_lane(ctx: Context, lane: str, old: str | None, new: str) -> None:
    """Keep a linked workspace's HEAD on its lane head after the lane moved from `old`: from `old` itself,
    or from a commit made there with plain git that the new state was built on."""
    path, _ = lanes.workspace_state(ctx, lane)  # after the lane moved: a broken workspace is left alone
    if path is None or lane == ctx.trunk:
        return
    current = ctx.store.workspace_head(path)
    if current == old or (current is not None and old is not None and ctx.store.is_ancestor(old, current)
                          and ctx.store.is_ancestor(current, new)):
        try:
            ctx.store.set_workspace_head(path, new)
        except LanesError:  # HEAD locked by a git command: the decision stands; ensure_current catches up
            pass


def recover(ctx: Context) -> list[str]:
    """Finish decisions a killed process recorded but did not complete. Call with the lock held."""
    finished = []
    for state in ctx.store.list_refs(refs.PROPOSALS).values():
        record = load_readable(ctx, state)  # a peer's malformed note records no decision to finish
        lane_ref = refs.lane_ref(record.lane, ctx.trunk) if record is not None else ""
        if record is not None and record.status == "proposed" and ctx.store.read_ref(lane_ref) == state:
            # libgit2 commits a transaction's refs one by one: the lane moved, the note did not follow.
            record = record.decided("accepted", ctx.now())
            save(ctx, record, f"lanes: finish accept {record.id[:8]}")
        if record is None or record.status == "proposed":
            continue
        updates = []
        if record.status == "accepted" and ctx.store.read_ref(lane_ref) == record.base:
            updates.append(RefUpdate(lane_ref, record.state, record.base, f"lanes: finish accept {record.id[:8]}"))
        rejected = refs.rejected_ref(record.id)
        if record.status == "rejected" and ctx.store.read_ref(rejected) is None:
            updates.append(RefUpdate(rejected, record.state, None, f"lanes: finish reject {record.id[:8]}"))
        ctx.store.update_refs(updates)
        _drop_proposal(ctx, record, f"finish {record.status}")  # last, as in accept and reject
        if record.status == "accepted":
            _follow_lane(ctx, record.lane, record.base, record.state)
        finished.append(record.id)
    return finished


def pending_for(ctx: Context, lane: str | None = None) -> list[Transition]:
    """The pending proposals (of `lane`) whose notes can be read, oldest first (see `pending`)."""
    return pending(ctx, lane)[0]


def pending(ctx: Context, lane: str | None = None) -> tuple[list[Transition], list[Unreadable]]:
    """The pending proposals (of `lane`), oldest first, and those set aside because a peer's note on them is
    malformed (the lane their commit message names): one must not fail `status`, `lane show` or, through
    `recover`, every write of the repository. One of a newer format still fails clearly (DESIGN §1)."""
    found, unreadable = [], []
    for state in ctx.store.list_refs(refs.PROPOSALS).values():
        text = ctx.store.read_note(refs.NOTES, state)
        try:
            record = Transition.from_note(text) if text is not None else None
            if record is None and text is not None:
                raise MalformedRecord(NO_RECORD)
        except MalformedRecord as exc:
            bad = _unreadable(ctx, state, exc.message)
            if lane is None or bad.lane == lane:
                unreadable.append(bad)
            continue
        if record is not None and (lane is None or record.lane == lane):
            found.append(record)
    return sorted(found, key=lambda t: t.created_at), unreadable
