"""`gc` through the API: prune what is older than an age, keep tombstones so sync does not bring it back,
and let git drop the objects nothing reaches any more, reporting what went and the bytes freed."""

from __future__ import annotations

from collections.abc import Callable
from contextlib import AbstractContextManager, ExitStack
from typing import TYPE_CHECKING, Any

from git_lanes.api.held import held
from git_lanes.domain.context import Context
from git_lanes.errors import LanesError
from git_lanes.model import refs
from git_lanes.store import RefUpdate, lock

if TYPE_CHECKING:
    # gc's domain loads inside its methods: no other command needs it (test_startup_imports).
    from git_lanes.domain import upkeep
    from git_lanes.store import Store
    from git_lanes.store.queue_leftovers import Leftovers


@held
class UpkeepApi:
    """Mixed into `Lanes`, next to CoreApi (`ctx`, `_writing`) and LedgerApi (`_append`)."""

    ctx: Context
    _writing: Callable[[], AbstractContextManager[Context]]
    _append: Callable[[str, str, dict[str, Any]], dict[str, Any]]

    def gc(self, *, older_than: float | str = "30d", dry_run: bool = False, actor: str | None = None) \
            -> dict[str, Any]:
        """Remove rejected states (superseded proposals among them), backups, the logs (and agents' output) of
        ended runs and of spawned runs stopped or whose agent exited or died, and workspaces whose lane was
        deleted, once older than `older_than` seconds; record tombstones for what travels;
        then `git gc` drops the objects nothing reaches. Lane heads, pending proposals, deletion markers and
        open tasks' lanes, and all they reach, stay. `dry_run` reports and changes nothing. `older_than` is
        seconds, or an age as `30d`, `12h`, `90m`, `2w`, `45s`. `actor`: the agent acting, recorded on the
        tombstones and in the operation log (default: git's user name)."""
        from git_lanes.domain import oplog, upkeep
        from git_lanes.model.ids import AgentId
        from git_lanes.store import housekeeping
        from git_lanes.store.runlog import LOCK_FILE as RUNS_LOCK

        actor = AgentId(actor) if actor is not None else None
        given = older_than
        older_than = upkeep.parse_age(older_than) if isinstance(older_than, str) else older_than
        older_than = upkeep.check_age(older_than, self.ctx.now(), given)
        cutoff = self.ctx.now() - older_than
        found = upkeep.find(self.ctx, cutoff, self._ended_runs())
        report: dict[str, Any] = {"dry_run": dry_run, "older_than": older_than, "cutoff": cutoff,
                                  "removed": found.to_dict(), "kept": found.kept, "notes_removed": 0,
                                  "tombstones": 0, "queue": queue_report(queue_leftovers(self.ctx.store)),
                                  "bytes_before": housekeeping.object_bytes(self.ctx.store)}
        if dry_run:
            return report | {"bytes_after": None, "bytes_freed": None}
        travelling = [{"ref": e["ref"], "oid": e["oid"]} for e in found.refs() if e["ref"].startswith(upkeep.TRAVELLING)]
        if travelling:
            # first, so a gc killed after it only leaves refs that the next sync or gc removes
            report["tombstones"] = self._append("gc.prune", actor or self.ctx.store.signature().name or "git-lanes",
                                                {"refs": travelling})["pruned"]
        with oplog.operation(self.ctx, None, actor), self._writing() as ctx:
            report["removed"], report["notes_removed"] = self._remove(ctx, found)
        report["queue"] = clear_queue(self.ctx.store)
        with ExitStack() as held:
            held.enter_context(self.ctx.store.locked())
            held.enter_context(lock.exclusive(self.ctx.store.common_dir / RUNS_LOCK))
            housekeeping.collect(self.ctx.store, "now" if older_than == 0 else f"@{int(cutoff)}")
        after = housekeeping.object_bytes(self.ctx.store)
        return report | {"bytes_after": after, "bytes_freed": max(0, report["bytes_before"] - after)}

    def _ended_runs(self) -> dict[str, tuple[str, float]]:
        """Each run that is done with, the head of its log read, and since when: ended, or a spawned run that
        was stopped or whose agent exited or died, with nothing of it running (spawning.done_at). A run log
        that cannot be read is left alone (doctor reports it)."""
        from git_lanes.domain import control, spawning
        from git_lanes.store import processes

        ended = {}
        repo = control.open_repo(self.ctx.store.root, trunk=self.ctx.trunk)
        host = processes.hostname()
        for ref in self.ctx.store.list_refs(refs.RUNS):
            run = ref[len(refs.RUNS):]
            try:
                head, state = control.read_state(repo, run)
            except (LanesError, ValueError):
                continue
            done = spawning.done_at(state, host, processes.running) if state is not None else None
            if head is not None and done is not None:
                ended[run] = (head, done)
        return ended

    def _remove(self, ctx: Context, found: upkeep.Candidates) -> tuple[dict[str, Any], int]:
        """Delete each candidate ref still where gc saw it (one another writer moved since is left alone), and
        the transition records of the pruned states with them, in one transaction: a gc killed midway has
        removed states and their records together or not at all (records left behind would name states that
        are gone, and no later gc would find them). Run logs go one by one (no records; their own lock), each
        with the run's local files (its agents' output)."""
        from git_lanes.domain import upkeep
        from git_lanes.store.runlog import RunLog

        removed = found.to_dict()
        updates: list[RefUpdate] = []
        for kind in ("rejected", "superseded", "backups"):
            removed[kind] = [e for e in removed[kind] if ctx.store.read_ref(e["ref"]) == e["oid"]]
            for entry in removed[kind]:
                updates += [RefUpdate(entry["ref"], None, entry["oid"], f"lanes: gc {kind}"),
                            *_tracking_copies(ctx, entry["ref"], entry["oid"])]
        states = upkeep.pruned_records(ctx, removed["rejected"] + removed["superseded"])
        if states:
            updates.append(ctx.store.write_notes(refs.NOTES, dict.fromkeys(states), f"lanes: gc drops {len(states)} "
                                                 "pruned transition records"))
        ctx.store.update_refs(updates)
        gone = []
        for entry in removed["runs"]:
            if ctx.store.read_ref(entry["ref"]) != entry["oid"]:
                continue
            ctx.store.update_refs([RefUpdate(entry["ref"], None, entry["oid"], "lanes: gc runs")]
                                  + _tracking_copies(ctx, entry["ref"], entry["oid"]))
            RunLog(ctx.store.common_dir).remove_files(entry["run"])
            gone.append(entry)
        removed["runs"] = gone
        for entry in list(removed["workspaces"]):
            upkeep.remove_workspace(ctx, entry)
        return removed, len(states)


def _tracking_copies(ctx: Context, ref: str, oid: str) -> list[RefUpdate]:
    """The remotes' cached copies of a pruned ref, which would keep its objects: the next sync fetches
    them again if a remote still has them, and then deletes them there by their tombstone."""
    tail = ref[len("refs/"):]
    return [RefUpdate(name, None, oid, "lanes: gc (remote copy)")
            for name, found in ctx.store.list_refs(refs.REMOTE_PREFIX).items()
            if found == oid and name.endswith("/" + tail) and name.count("/") == tail.count("/") + 3]


def queue_leftovers(store: Store) -> Leftovers:
    """What the ledger's append queue holds that no live process owns (store/queue_leftovers.py); its round
    journal only when no holder is at work (the writers' lock is free)."""
    from git_lanes.store import queue_leftovers as leftovers

    with store.locked_if_free() as free:
        return leftovers.survey(store.common_dir, holder_gone=free)


def clear_queue(store: Store) -> dict[str, Any]:
    """Under the writers' lock: settle a dead holder's round journal as the next append would (its ops'
    waiters get their outcomes), then remove the entries of writers that are gone and the stale files."""
    from git_lanes.ledger.combine import recover
    from git_lanes.store import queue_leftovers as leftovers

    with store.locked():
        journal = leftovers.survey(store.common_dir, holder_gone=True).journal
        if journal:
            recover(store, store.append_queue())
        gone = leftovers.clear(store.common_dir)
    return queue_report(gone) | {"journal": journal}


def queue_report(found: Leftovers) -> dict[str, Any]:
    return {"dead_entries": list(found.dead), "stale_files": list(found.stale), "journal": found.journal}
