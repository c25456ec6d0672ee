"""Planning a sync: from the local refs and the remote's (as just fetched), decide every ref move on each side.

Nothing moves here. New objects (a notes merge, a replayed ledger) are written, but stay unreferenced until
the plan is applied with compare-and-swap locally and pushed with a lease remotely."""

from __future__ import annotations


from git_lanes import ledger as op_log
from git_lanes.domain import lanes, tombstones
from git_lanes.domain.context import Context
from git_lanes.domain.sync_rules import DECIDED, DIVERGED, PULL, PUSH, Move, canonical_ref, classify, folder_clash, \
    folders_of, how, kind_of, merge_note, note_status, ref_problem
from git_lanes.errors import command
from git_lanes.model import refs
from git_lanes.model.text import is_text
from git_lanes.store import remote as transport

TYPE_CHECKING = False  # collections.abc for annotations only: collections costs a light sync ~1 ms
if TYPE_CHECKING:
    from collections.abc import Callable


class Plan:
    """Every move of one sync attempt, and what it reports. (A plain class, not a dataclass: the light sync
    path loads neither `dataclasses` nor `inspect`.)"""

    def __init__(self) -> None:
        self.local: list[Move] = []
        self.remote: list[Move] = []
        self.diverged: list[dict] = []
        self.held_back: list[dict] = []
        # lanes deleted on the remote that keep their ref here because a workspace here still uses them
        self.kept: list[dict] = []
        self.notes: dict = {"merged": 0, "conflicts": []}
        self.ledger: dict = {"came_in": 0, "went_out": 0, "replayed": 0}
        self.refused: list[dict] = []
        # refs on either side that git-lanes would never have written (a lane named like the trunk, a blob as
        # a lane head, a name `lane create` refuses): left alone on both sides and reported
        self.invalid: list[dict] = []

    def keep_only(self, kinds: tuple[str, ...]) -> None:
        """Move only refs of `kinds`, and report only on them: the rest waits for a full sync."""
        self.local = [move for move in self.local if move.kind in kinds]
        self.remote = [move for move in self.remote if move.kind in kinds]
        self.diverged = [found for found in self.diverged if found["kind"] in kinds]
        self.held_back = [found for found in self.held_back if found["kind"] in kinds]
        self.kept, self.invalid = [], []
        if "notes" not in kinds:
            self.notes = {"merged": 0, "conflicts": []}

    def push_updates(self) -> list[transport.PushUpdate]:
        return [transport.PushUpdate(move.ref, move.new, move.old) for move in self.remote]


def build(ctx: Context, remote: str, fetched: dict[str, str], mode: str,
          unstorable: dict[str, str] | None = None) -> Plan:
    """Decide every move. `mode` is pull, push or sync; a push moves nothing here and pushes only what needs
    no merge, holding the rest back for a sync."""
    plan = Plan()
    local, fetched = _screen(ctx, remote, transport.synced_refs(ctx.store, ctx.trunk), fetched, unstorable or {}, plan)
    planner = _Planner(ctx, remote, local, fetched, plan)
    planner.ledger(replay_ops=mode != "push")  # first: its tombstones decide what gc pruned, below
    notes_head = planner.notes()
    planner.lanes()
    planner.meta()
    for kind in ("rejected", "deleted", "run"):
        planner.fast_forward_only(kind)
    planner.proposals(notes_head)
    if mode == "push":
        _hold_back(planner.plan, local)
    return planner.plan


_INTERNAL = f"its state tracks paths under {refs.LANES_DIR}/, git-lanes' own folder"


def _screen(ctx: Context, remote: str, local: dict[str, str], fetched: dict[str, str], unstorable: dict[str, str],
            plan: Plan) -> tuple[dict[str, str], dict[str, str]]:
    """Drop every ref that is not what git-lanes writes, on whichever side holds it, and report it. A name
    refused on one side is left alone on the other too: planning it from one side only would push over, or
    pull under, the refused copy."""
    problems = [("remote", ref, None, f"cannot be stored here: {why}") for ref, why in sorted(unstorable.items())]
    tracks_internal: dict[str, bool] = {}  # by commit: a lane both sides hold alike is read once, not twice
    for side, found in (("local", local), ("remote", fetched)):
        for ref, oid in sorted(found.items()):
            problem = ref_problem(ref, ctx.trunk, ctx.store.object_kind(oid))
            if problem is None and kind_of(ref, ctx.trunk)[0] == "lane":
                if oid not in tracks_internal:
                    tracks_internal[oid] = bool(lanes.internal_paths(ctx, ctx.store.tree_of(oid)))
                if tracks_internal[oid]:
                    problem = _INTERNAL
            if problem is not None:
                problems.append((side, ref, oid, problem))
    for side, ref, oid, problem in problems:
        shown = _shown(ref)
        named = shown if shown == ref else f"$'{shown}'"  # bash's spelling of the bytes that are not UTF-8
        fix = f"git update-ref -d {named}" if side == "local" else f"git push {remote} :{named}"
        hint = f"nothing moved for it; someone with access removes it: `{fix}`"
        if side == "local" and problem != _INTERNAL and _only_its_object(ctx, ref):
            # a lane head here that is no commit may have a workspace: removing the ref would orphan it
            hint = f"nothing moved for it; {lanes.head_repair(ctx, kind_of(ref, ctx.trunk)[1])}"
        if problem == _INTERNAL:  # the lane (or the trunk) holds work: keep it, drop only the paths
            hint = f"nothing moved for it; someone with access commits on top of it with those paths untracked " \
                   f"(`git rm -r --cached {refs.LANES_DIR}`; the files stay) and moves {shown} there"
        plan.invalid.append({"ref": shown, "side": side, "oid": oid, "reason": _shown(problem), "hint": hint})
    refused = {ref for _, ref, _, _ in problems}
    return ({r: o for r, o in local.items() if r not in refused},
            {r: o for r, o in fetched.items() if r not in refused})


def _only_its_object(ctx: Context, ref: str) -> bool:
    """True for a lane head here whose one fault is the object it points at (its name is a lane's)."""
    return kind_of(ref, ctx.trunk)[0] == "lane" and ref_problem(ref, ctx.trunk, "commit") is None


def _shown(text: str) -> str:
    """`text` as a report can carry it: bytes of a ref name that are not UTF-8 (which arrive as lone
    surrogates, which strict JSON readers refuse) written as \\xff."""
    if is_text(text):
        return text
    return text.encode("utf-8", "surrogateescape").decode("utf-8", "backslashreplace").replace("\0", "\\x00")


class _Planner:
    def __init__(self, ctx: Context, remote: str, local: dict[str, str], fetched: dict[str, str],
                 plan: Plan) -> None:
        self.ctx, self.store, self.remote = ctx, ctx.store, remote
        self.local, self.fetched, self.plan = local, fetched, plan
        self.is_ancestor: Callable[[str, str], bool] = self.store.is_ancestor
        self.kept_markers: set[str] = set()
        self.tombstones = op_log.state_at(self.store, None)  # the merged ledger's, once ledger() ran
        self._folders: dict[str, tuple[set[str], set[str]]] = {}

    def _names(self, kind: str) -> dict[str, str]:
        """name -> ref for every ref of `kind` on either side. Were two refs to name one lane (screening
        refuses the second spelling), the one git-lanes writes is taken, whatever order the refs come in."""
        found: dict[str, str] = {}
        for ref in sorted(set(self.local) | set(self.fetched)):
            ref_kind, name = kind_of(ref, self.ctx.trunk)
            if ref_kind == kind and (name not in found or ref == canonical_ref(kind, name, self.ctx.trunk)):
                found[name] = ref
        return dict(sorted(found.items()))

    def _move(self, side: str, kind: str, name: str, ref: str, old: str | None, new: str | None,
              how_: str | None = None) -> None:
        if old is None and new is not None and self._clashes(side, ref):
            # Lane `a` on one side, `a/b` on the other: git cannot hold both, and one failed ref would fail
            # the whole local transaction or atomic push, so everything else still travels.
            self.plan.diverged.append({"kind": kind, "name": name, "ref": ref, "local": self.local.get(ref),
                                       "remote": self.fetched.get(ref), "clash": side})
            return
        move = Move(kind, name, ref, old, new, how_ or how(old, new))
        (self.plan.local if side == "local" else self.plan.remote).append(move)

    def _clashes(self, side: str, ref: str) -> bool:
        if side not in self._folders:
            names = set(self.local if side == "local" else self.fetched)
            self._folders[side] = (names, folders_of(names))
        names, folders = self._folders[side]
        return folder_clash(names, folders, ref)

    def _travel(self, kind: str, name: str, ref: str, decision: str) -> None:
        mine, theirs = self.local.get(ref), self.fetched.get(ref)
        if decision == PULL:
            self._move("local", kind, name, ref, mine, theirs)
        elif decision == PUSH:
            self._move("remote", kind, name, ref, theirs, mine)
        elif decision == DIVERGED:
            self.plan.diverged.append({"kind": kind, "name": name, "ref": ref, "local": mine, "remote": theirs,
                                       "base": self.store.merge_base(mine, theirs),
                                       "remote_copy": transport.tracking_ref(self.remote, ref)})

    def fast_forward_only(self, kind: str) -> None:
        for name, ref in self._names(kind).items():
            if ref in self.kept_markers or self._pruned(kind, name, ref):
                continue
            self._travel(kind, name, ref, classify(self.local.get(ref), self.fetched.get(ref), self.is_ancestor))

    def _pruned(self, kind: str, name: str, ref: str) -> bool:
        """A ref gc pruned (its tombstone in the merged ledger names it at that commit) goes on whichever side
        still has it there, instead of travelling back. A value it has since moved to travels as usual."""
        mine, theirs = self.local.get(ref), self.fetched.get(ref)
        gone = {side: oid for side, oid in (("local", mine), ("remote", theirs))
                if oid is not None and ref in tombstones.pruned_refs(self.tombstones, oid)}
        if not gone:
            return False
        kept = theirs if "local" in gone and "remote" not in gone else mine if "remote" in gone and \
            "local" not in gone else None
        for side, oid in gone.items():  # a later value the other side holds replaces the pruned one
            self._move(side, kind, name, ref, oid, kept, "pruned" if kept is None else None)
        return True

    def pruned_note(self, state: str) -> bool:
        return any(ref.startswith(tombstones.TRAVELLING) for ref in tombstones.pruned_refs(self.tombstones, state))

    def meta(self) -> None:
        """Shared facts (the trunk's name) only fast-forward. Two machines that each ran `init` hold
        different commits saying the same thing: the remote's is taken. Saying different things diverges."""
        for name, ref in self._names("meta").items():
            mine, theirs = self.local.get(ref), self.fetched.get(ref)
            decision = classify(mine, theirs, self.is_ancestor)
            if decision == DIVERGED and self.store.tree_of(mine) == self.store.tree_of(theirs):
                self._move("local", "meta", name, ref, mine, theirs, "same content")
            else:
                self._travel("meta", name, ref, decision)

    def lanes(self) -> None:
        """Lane heads only fast-forward. A lane missing on one side was either created on the other or
        deleted on this one; refs/lanes/deleted/<lane> (where a deletion leaves the last head) tells which."""
        for name, ref in self._names("lane").items():
            mine, theirs = self.local.get(ref), self.fetched.get(ref)
            decision = classify(mine, theirs, self.is_ancestor)
            if decision == DIVERGED and name == self.ctx.trunk and self._holds_nothing(mine):
                self._move("local", "lane", name, ref, mine, theirs, "replaced the empty initial state")
                continue
            if decision == PULL and mine is None and self._deleted_over(self.local, self.fetched, name, theirs):
                self._move("remote", "lane", name, ref, theirs, None)
            elif decision == PUSH and theirs is None and self._deleted_over(self.fetched, self.local, name, mine):
                if any(lanes.workspace_state(self.ctx, name)):
                    # The remote's marker stays out too: holding it would make the kept lane look created
                    # after the deletion, and the next sync would push it back to every machine.
                    self.kept_markers.add(refs.deleted_ref(name))
                    self.plan.kept.append({"lane": name, "head": mine,
                                           "reason": "deleted on the remote; its workspace here keeps it",
                                           "hint": f"{command('lane delete', name)} to follow the remote, or "
                                                   f"commit to it to bring it back"})
                else:
                    self._move("local", "lane", name, ref, mine, None)
            else:
                self._travel("lane", name, ref, decision)

    def _holds_nothing(self, head: str) -> bool:
        """True for the empty root commit `init` starts with: the trunk's first state in a repository with
        no commits yet (`git init`, `git lanes init`, then a pull), or the notes' empty record set. Taking
        the remote's over it loses nothing, where a merge would put an empty root into shared history."""
        info = self.store.commit_info(head)
        return not info.parents and info.tree == self.store.empty_tree()

    def _deleted_over(self, side: dict[str, str], other: dict[str, str], name: str, head: str | None) -> bool:
        """True when `side` deleted lane `name` at `head` (or past it) and `other` has not heard of it yet.
        Once both sides hold the same marker, a lane of that name on one side was created after it."""
        marker = refs.deleted_ref(name)
        graveyard = side.get(marker)
        return name != self.ctx.trunk and head is not None and graveyard is not None \
            and graveyard != other.get(marker) and self.is_ancestor(head, graveyard)

    def proposals(self, notes_head: str | None) -> None:
        """A proposal decided on either side (its merged note says so) disappears on both."""
        for name, ref in self._names("proposal").items():
            mine, theirs = self.local.get(ref), self.fetched.get(ref)
            if mine is not None and theirs is not None and mine != theirs:
                self._travel("proposal", name, ref, DIVERGED)
                continue
            state = mine or theirs
            decided = note_status(transport.note_at(self.store, notes_head, state or "")) in DECIDED
            if decided and mine is not None:
                self._move("local", "proposal", name, ref, mine, None, "decided")
            if decided and theirs is not None:
                self._move("remote", "proposal", name, ref, theirs, None, "decided")
            if not decided and mine != theirs:
                self._travel("proposal", name, ref, PULL if mine is None else PUSH)

    def notes(self) -> str | None:
        """Plan the notes ref and return the merged notes commit the proposals are judged by."""
        ref = refs.NOTES
        mine, theirs = self.local.get(ref), self.fetched.get(ref)
        decision = classify(mine, theirs, self.is_ancestor)
        if decision == DIVERGED and self._holds_nothing(mine):
            # `init` starts the notes with an empty record set; a clone that ran it takes the remote's.
            self._move("local", "notes", "lanes", ref, mine, theirs, "replaced the empty start")
            return theirs
        if decision != DIVERGED:
            self._travel("notes", "lanes", ref, decision)
            return theirs if decision == PULL else mine
        assert mine is not None and theirs is not None
        edits = {}
        differing = transport.differing_notes(self.store, mine, theirs)
        for target in sorted(differing):
            ours_text = transport.note_at(self.store, mine, target)
            theirs_text = transport.note_at(self.store, theirs, target)
            if theirs_text is None:
                continue
            if ours_text is None:
                if not self.pruned_note(target):  # a record gc dropped with its state stays dropped
                    edits[target] = theirs_text
                continue
            merged = merge_note(ours_text, theirs_text)
            if merged.text != ours_text:
                edits[target] = merged.text
            if merged.conflict:
                self.plan.notes["conflicts"].append({"state": target, "reason": merged.conflict})
        merge = transport.write_notes_merge(self.store, mine, theirs, edits,
                                            f"lanes: merge notes from {self.remote}")
        self.plan.notes["merged"] = len(differing)
        self._move("local", "notes", "lanes", ref, mine, merge, "merged")
        self._move("remote", "notes", "lanes", ref, theirs, merge, "merged")
        return merge

    def ledger(self, replay_ops: bool) -> None:
        ref = refs.LEDGER
        mine, theirs = self.local.get(ref), self.fetched.get(ref)
        decision = classify(mine, theirs, self.is_ancestor)
        if decision == PULL:
            self.plan.ledger["came_in"] = transport.count_between(self.store, mine, theirs)
        elif decision == PUSH:
            self.plan.ledger["went_out"] = transport.count_between(self.store, theirs, mine)
        if decision != DIVERGED:
            self._travel("ledger", "ledger", ref, decision)
            self.tombstones = op_log.state_at(self.store, theirs if decision == PULL else mine)
            return
        assert mine is not None and theirs is not None
        self.tombstones = op_log.state_at(self.store, mine)
        if not replay_ops:
            self.plan.held_back.append({"kind": "ledger", "name": "ledger", "ref": ref, "from": theirs,
                                        "to": mine, "how": "replayed", "side": "remote"})
            return
        # The coordination model loads only for a replay: a sync with nothing to replay does not pay for it.
        from git_lanes.domain import sync_ledger
        from git_lanes.domain.coordination import FOLD
        from git_lanes.ledger import merge as ledger_merge

        replay = ledger_merge.replay(self.store, mine, theirs, FOLD, rebase=sync_ledger.rebase_for(self.store))
        self.plan.ledger.update(came_in=replay.came_in, went_out=replay.replayed + len(replay.refused),
                                replayed=replay.replayed)
        self.plan.refused.extend(replay.refused)
        self.tombstones = op_log.state_at(self.store, replay.head)
        self._move("local", "ledger", "ledger", ref, mine, replay.head, "replayed")
        if replay.head != theirs:  # every local op was there already (another machine put it back first)
            self._move("remote", "ledger", "ledger", ref, theirs, replay.head, "replayed")


def _hold_back(plan: Plan, local: dict[str, str]) -> None:
    """A push moves nothing here: incoming moves and anything that needs a merge wait for a sync."""
    held = [move.to_dict() | {"side": "local"} for move in plan.local]
    notes_merged = any(move.kind == "notes" for move in plan.local)
    keep = []
    for move in plan.remote:
        needs_merge = move.kind in ("notes", "ledger") and move.new != local.get(move.ref)
        # a proposal decided only in notes that cannot be pushed yet would vanish without its decision
        if needs_merge or (move.kind == "proposal" and move.how == "decided" and notes_merged):
            held.append(move.to_dict() | {"side": "remote"})
        else:
            keep.append(move)
    plan.local, plan.remote, plan.held_back = [], keep, plan.held_back + held
    plan.refused = []
