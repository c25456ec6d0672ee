"""Many machines, one project: pull, push and sync all lane state with an ordinary git remote."""

from __future__ import annotations

import os

from git_lanes.api.held import held
from git_lanes.api.recording import recorded
from git_lanes.domain.context import Context
from git_lanes.errors import NotARepository, UserError, command, option
from git_lanes.model import refs
from git_lanes.store.remote import DEFAULT_REMOTE

TYPE_CHECKING = False  # not `from typing import …`: the light sync loads no typing
if TYPE_CHECKING:
    from typing import Any

    from git_lanes.domain import setup, sync
    from git_lanes.model.sync_results import SyncReport
    from git_lanes.store import Store, open_store
    from git_lanes.store import remote as transport



def _sync_line(arguments: dict[str, Any]) -> str:
    from git_lanes.domain import sync

    return sync.describe(arguments["remote"])


@held
class SyncApi:
    ctx: Context

    @recorded(lambda a: f"pull {a['remote'] or ''}".strip())
    def pull(self, remote: str | None = None, *, actor: str | None = None) -> SyncReport:
        """Fetch the remote's lane state and merge it here; nothing is pushed. `actor`: the agent acting,
        recorded in the operation log (default: git's user name)."""
        from git_lanes.domain import sync
        from git_lanes.model.sync_results import SyncReport

        return SyncReport.from_dict(sync.run(self.ctx, self._remote(remote), "pull"))

    @recorded(lambda a: f"push {a['remote'] or ''}".strip())
    def push(self, remote: str | None = None) -> SyncReport:
        """Push what is strictly ahead here, under a lease; what needs a merge is held back for `sync`.
        Nothing here moves, so there is no agent to record: it takes none."""
        from git_lanes.domain import sync
        from git_lanes.model.sync_results import SyncReport

        return SyncReport.from_dict(sync.run(self.ctx, self._remote(remote), "push"))

    @recorded(_sync_line)
    def sync(self, remote: str | None = None, *, actor: str | None = None) -> SyncReport:
        """Pull, merge, push; retried after a fresh merge when another machine pushed first. Lane heads only
        fast-forward (a diverged lane is reported, nothing overwritten); notes merge per record; local ledger
        ops are replayed on the remote's head, and one that no longer holds is reported refused. `actor`: as
        for `pull`; the replayed ops keep their own actors."""
        from git_lanes.domain import sync
        from git_lanes.model.sync_results import SyncReport

        return SyncReport.from_dict(sync.run(self.ctx, self._remote(remote), "sync"))

    def _remote(self, remote: str | None) -> str:
        # Only a remote not given defaults: an empty name is refused, as `git push ""` is.
        return remote if remote is not None else self.ctx.store.config_get("lanes.remote") or DEFAULT_REMOTE

    @classmethod
    def open_for_sync(cls, path: str | os.PathLike[str] | None = None, trunk: str | None = None,
                      remote: str | None = None) -> tuple[Any, dict[str, Any] | None]:
        """The repository opened for lanes, setting up a plain `git clone` first (its checked-out branch, or
        `trunk`, becomes the trunk; a trunk the clone has only as `<remote>/<trunk>` is made a local branch
        as `git checkout` would). Returns (api, the init report or None when it was already set up)."""
        from git_lanes.store import open_store, remote as transport

        try:
            return cls(path), None  # type: ignore[call-arg]
        except NotARepository as exc:
            if exc.code != "not_initialized":
                raise
        store = open_store(path)
        remote = remote if remote is not None else store.config_get("lanes.remote") or DEFAULT_REMOTE
        transport.check_remote(store, remote)  # a mistyped remote sets nothing up
        branch = trunk or _remote_trunk(store, remote) or store.head_branch()
        if branch and store.read_ref(f"refs/heads/{branch}") is None:
            store.branch_from_remote(remote, branch)
        if not branch or store.read_ref(f"refs/heads/{branch}") is None:
            # A remote whose HEAD names no branch leaves a clone on an unborn branch with nothing checked out.
            known = store.remote_branches(remote)
            hint = (f"name the trunk: {option('trunk', known[0] if len(known) == 1 else 'NAME')}"
                    + (f" ({remote} has {', '.join(known[:10])})" if len(known) > 1 else "")
                    if known else f"nothing to pull: {remote} has no branches here yet (fetch it first); to start "
                                  f"the project, commit and run {command('init')}, then {command('push')}")
            raise UserError(f"{store.root} has no trunk to sync yet"
                            + (f": no branch {branch!r} here or on {remote}" if branch else ""),
                            code="no_trunk", hint=hint)
        api, report = cls.init(path, branch)  # type: ignore[attr-defined]
        return api, report


def _remote_trunk(store: Store, remote: str) -> str | None:
    """The trunk the remote's refs/lanes/meta/trunk names: the remote's HEAD may be another branch."""
    from git_lanes.domain import setup
    from git_lanes.store import remote as transport

    return setup.recorded_trunk(store, transport.fetch_meta(store, remote).get(refs.TRUNK_META))
