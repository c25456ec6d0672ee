"""`sync` without pygit2, for the common case where nothing needs replaying (issue 15): this machine has
nothing the remote lacks, and what came in only fast-forwards the ledger, the notes, run logs and markers.

Every decision is the ordinary sync's (`domain.sync.run`, `domain.sync_plan`, the operation log): only the
store under them is the light one (`store/light.py`). Whatever that store cannot do exactly, or any plan that
is not a plain fast-forward here (a lane or the trunk to move, workspaces to bring along, local ops to replay,
notes to merge, a push, a proposal to settle, anything diverged or refused), stops the light sync before a
ref moves, and `run` returns None: the caller then runs `Lanes.sync`, which does the whole job."""

from __future__ import annotations

import os

from git_lanes.domain.context import Context
from git_lanes.errors import InternalError, LanesError, command
from git_lanes.model import refs
from git_lanes.store import remote as transport
from git_lanes.store.light import LightStore, open_light
from git_lanes.store.light_objects import NeedsFullStore

TYPE_CHECKING = False
if TYPE_CHECKING:
    from git_lanes.domain.sync_plan import Plan
    from git_lanes.model.sync_results import SyncReport

# What the light path may move here: refs whose moves need no workspace, no lane ancestry and no merge.
PLAIN_KINDS = ("ledger", "notes", "run", "rejected", "deleted", "meta")


class LightSync:
    """A repository opened for a light sync; `run` answers the report, or None for the ordinary path."""

    def __init__(self, path: str | os.PathLike[str] | None = None) -> None:
        self.store: LightStore | None = None
        self.trunk: str | None = None
        try:
            store = open_light(os.fspath(path or os.getcwd()))
            self.trunk = store.config_get("lanes.trunk")
        except NeedsFullStore:
            return
        except LanesError:
            raise
        except Exception:  # see `report`: the ordinary path opens the repository instead
            if os.environ.get("GIT_LANES_LIGHT_STRICT"):
                raise
            return
        if self.trunk:  # a clone not yet set up for lanes is set up by the ordinary path
            self.store = store

    def run(self, remote: str | None = None, actor: str | None = None) -> SyncReport | None:
        """`Lanes.sync(remote, actor=actor)`, or None when the light store cannot do it (nothing has moved
        then)."""
        found = self.report(remote, actor)
        if found is None:
            return None
        from git_lanes.model.sync_results import SyncReport

        return SyncReport.from_dict(found)

    def report(self, remote: str | None = None, actor: str | None = None) -> dict[str, object] | None:
        """`run`'s report as the domain gives it, before the record checks it (what the CLI prints: the record
        machinery reads its types through `typing`, which this path does not otherwise load)."""
        if actor is not None:  # refused as the ordinary sync refuses it, before anything moves
            from git_lanes.model.ids import AgentId

            actor = AgentId(actor)
        if self.store is None or self.trunk is None:
            return None
        store, trunk = self.store, self.trunk
        gate = _Gate(store)
        try:
            chosen = remote if remote is not None else store.config_get("lanes.remote") or transport.DEFAULT_REMOTE
            if not _nothing_to_send(store, trunk, chosen):
                return None  # decided before the domain loads: the ordinary path pays little for the try
            # The fetch the sync starts with runs while the domain loads (~10 ms of imports): sync.run's
            # first fetch takes its answer. A remote that is not a configured one is refused before git runs.
            transport.check_remote(store, chosen)  # type: ignore[arg-type]  # see _context
            fetching = transport.start_fetch(store, chosen, trunk)
            from git_lanes.domain import oplog, sync
            from git_lanes.store import packs  # noqa: F401  # what came in is a pack: its reader loads now too

            fetching.then = lambda: _read_ledger_ahead(store, chosen)

            ctx = _context(store, trunk)
            with oplog.operation(ctx, sync.describe(remote)[:200], actor):
                return sync.run(ctx, chosen, "sync", gate=gate)
        except NeedsFullStore as exc:
            if gate.passed:  # never: after the gate the light store only does what it can
                raise InternalError(f"the light sync stopped halfway: {exc}",
                                    hint=f"run {command('sync')} again: it finishes what this one started") from None
            return None
        except LanesError:
            raise  # the domain's own decision: the ordinary path would decide the same
        except Exception:
            # A light store that is not yet all a Store (a str where the domain does Path arithmetic, say),
            # met before the gate, when nothing has moved: the ordinary path does the whole sync instead of
            # the user seeing an internal error. The test suite sets GIT_LANES_LIGHT_STRICT to see such gaps.
            if gate.passed or os.environ.get("GIT_LANES_LIGHT_STRICT"):
                raise
            return None
        except KeyboardInterrupt:
            # Ctrl-C before sync.run took the fetch's answer: stopped, as an interrupted run_git stops its git,
            # not waited for to the end of a slow remote
            transport.settle_started(store, interrupted=True)
            raise
        finally:
            transport.settle_started(store)
            store.stop_logs()


def _read_ledger_ahead(store: LightStore, remote: str) -> None:
    """Once the fetch is in: start the `git log` of the ledger commits that came in, which the plan's ancestry
    check reads; the plan's Python runs meanwhile. Only ever a head start: the sync reads the same answers
    without it."""
    try:
        here, there = store.read_ref(refs.LEDGER), store.read_ref(transport.tracking_ref(remote, refs.LEDGER))
    except NeedsFullStore:
        return
    if there is not None and there != here:
        store.start_log(here, there)


def _context(store: LightStore, trunk: str) -> Context:
    """The domain's context over the light store. LightStore carries the part of Store's interface that a
    sync of fast-forwards touches, and raises NeedsFullStore for the rest, so the type checker is told it
    is a Store (a comment, not `typing.cast`: this path does not load typing)."""
    return Context(store, trunk)  # type: ignore[arg-type]


class _Gate:
    """Lets through only a plan the light store can carry out to the end."""

    def __init__(self, store: LightStore) -> None:
        self.store = store
        self.passed = False

    def __call__(self, plan: Plan) -> None:
        plain = not (plan.remote or plan.diverged or plan.invalid or plan.kept or plan.held_back or plan.refused
                     or plan.notes["merged"] or plan.notes["conflicts"]) \
            and all(m.kind in PLAIN_KINDS and m.new is not None and m.how in ("fast-forward", "created")
                    for m in plan.local) \
            and not self.store.linked_worktrees()
        if not plain:
            raise NeedsFullStore("the plan is not a plain fast-forward here")
        self.passed = True


def _nothing_to_send(store: LightStore, trunk: str, remote: str) -> bool:
    """True when every synced ref here is what the remote had at the last sync: nothing local to push or
    replay, so the light path is worth trying (a sync that must replay goes straight to the ordinary one)."""
    tracked = {transport.remote_ref_of(remote, name): oid
               for name, oid in store.list_refs(transport.tracking_prefix(remote)).items()}
    here = transport.synced_refs(store, trunk)  # type: ignore[arg-type]  # see _context
    return bool(here) and here == tracked and not any(ref.startswith(refs.PROPOSALS) for ref in here)
