"""Lanes: named heads with a real worktree each. The trunk is `refs/heads/<trunk>` in the main worktree."""

from __future__ import annotations

import os

from git_lanes.domain.context import Context
from git_lanes.domain.wording import some
from git_lanes.errors import Conflict, LanesError, NotFound, Refused, StaleState, UserError, command, option
from git_lanes.model import refs
from git_lanes.model.frozen import Frozen
from git_lanes.model.ids import LaneName, random_hex
from git_lanes.model.names import validate_lane_name
from git_lanes.model.text import is_text
from git_lanes.store import RefUpdate

TYPE_CHECKING = False  # the light sync loads no pathlib
if TYPE_CHECKING:
    from pathlib import Path


class Lane(Frozen):
    name: str
    ref: str
    head: str
    is_trunk: bool
    workspace: Path | None
    # why the lane's workspace (or head) cannot be used; the lane is still listed, every other lane works
    broken: str | None = None

    def to_dict(self) -> dict:
        record = {"name": self.name, "ref": self.ref, "head": self.head, "trunk": self.is_trunk,
                  "workspace": str(self.workspace) if self.workspace else None}
        return record | ({"broken": self.broken} if self.broken else {})


def lane_names(ctx: Context) -> list[str]:
    """The trunk, then every lane under refs/lanes/heads/ in name order. A ref there that no lane could be
    (one named like the trunk, a name `lane create` refuses) is not a lane: sync reports it."""
    names = [ref[len(refs.LANE_HEADS):] for ref in ctx.store.list_refs(refs.LANE_HEADS)]
    trunk = [ctx.trunk] if ctx.store.read_ref(refs.lane_ref(ctx.trunk, ctx.trunk)) else []
    return trunk + sorted(name for name in names if name != ctx.trunk and _plausible_lane(name))


def lane_head(ctx: Context, name: str) -> str:
    if not is_text(name):  # git cannot even be asked about it
        validate_lane_name(name)
    head = ctx.store.read_ref(refs.lane_ref(name, ctx.trunk))
    if head is None:
        validate_lane_name(name)
        raise NotFound(f"no lane named {name!r}", code="unknown_lane", hint=f"see {command('lane list')}")
    kind = ctx.store.object_kind(head)
    if kind != "commit":
        ref = refs.lane_ref(name, ctx.trunk)
        raise Refused(f"{ref} points at {('a ' + kind) if kind else 'a missing object'}, not a state",
                      code="invalid_lane_head", hint=f"git-lanes never writes that; {head_repair(ctx, name)}")
    return head


def head_repair(ctx: Context, name: str) -> str:
    """How a person repairs lane `name` whose head is no commit (what an older sync took, or plain git
    wrote), losing nothing: a lane with a workspace is pointed back at the state the workspace holds, since
    removing the ref would leave that workspace to no lane, which no command then takes; any other is removed."""
    ref = refs.lane_ref(name, ctx.trunk)
    path, _ = workspace_state(ctx, name)
    held = ctx.store.workspace_head(path) if path is not None else None
    if held is not None and ctx.store.object_kind(held) == "commit":
        return f"point it back at the state its workspace holds: " \
               f"`git update-ref {ref} {held} {ctx.store.read_ref(ref)}`"
    return f"point it at a commit, or remove it: `git update-ref -d {ref}`"


def get_lane(ctx: Context, name: str) -> Lane:
    head = lane_head(ctx, name)
    path, problem = workspace_state(ctx, name)
    return Lane(name, refs.lane_ref(name, ctx.trunk), head, name == ctx.trunk, path, problem)


def list_lanes(ctx: Context) -> list[Lane]:
    """Every lane; one whose head or workspace is broken is listed as such, never failing the others."""
    found = []
    for name in lane_names(ctx):
        try:
            found.append(get_lane(ctx, name))
        except LanesError as exc:
            ref = refs.lane_ref(name, ctx.trunk)
            found.append(Lane(name, ref, ctx.store.read_ref(ref) or "", name == ctx.trunk, None, exc.message))
    return found


def default_workspace(ctx: Context, name: str) -> Path:
    # The light sync's store names its root by a string (it loads no pathlib); the callers want a Path.
    from pathlib import Path

    return Path(ctx.store.root, refs.WORKSPACES_DIR, name)


def workspace_state(ctx: Context, name: str) -> tuple[Path | None, str | None]:
    """(where the lane is checked out or None, why what stands there is not its workspace or None). The
    trunk's workspace is the main worktree while it is on the trunk. Something at a lane's workspace path
    that is not the worktree git made there for it (a symlink to another lane's workspace, a folder whose
    .git is gone) is broken: no command reads or writes through it."""
    if name == ctx.trunk:
        main = ctx.store.main_worktree()
        return (main.path if main.branch == refs.lane_ref(ctx.trunk, ctx.trunk) else None), None
    path = default_workspace(ctx, name)
    if not os.path.lexists(path) or ctx.store.unfinished_worktree(path) or \
            (path.is_dir() and not path.is_symlink() and not any(path.iterdir())):
        return None, None
    problem = ctx.store.workspace_problem(path)
    return (None, problem) if problem else (path, None)


def workspace_path(ctx: Context, name: str) -> Path | None:
    """Where the lane is checked out, or None; a broken workspace is refused (`workspace_broken`)."""
    path, problem = workspace_state(ctx, name)
    if problem is not None:
        raise Refused(f"the workspace of lane {name!r} is broken: {problem}", code="workspace_broken",
                      hint=repair_hint(ctx, name))
    return path


def repair_hint(ctx: Context, name: str) -> str:
    """How a person gives a lane with a broken workspace its own workspace back, losing nothing."""
    where = default_workspace(ctx, name)
    again = f"{command('lane create', name)} gives the lane its workspace back (nothing of the lane is lost)"
    link = next((folder for folder in [*reversed(where.parents), where]
                 if ctx.store.root in folder.parents and folder.is_symlink()), None)
    if link is not None:  # the workspace's own path, or a folder on the way (.lanes/workspaces itself)
        return f"remove the link (`rm {link}`; what it points at stays), then {again}"
    return f"if its .git file was lost or the repository was moved, `git worktree repair {where}` (run in the " \
           f"main worktree) reconnects it; else move {where} away, and {again}"


def has_workspace_here(ctx: Context, lane: Lane) -> bool:
    """Whether something stands where the lane is checked out here: its workspace, or a broken one."""
    return lane.workspace is not None or (lane.broken is not None and not lane.is_trunk
                                          and os.path.lexists(default_workspace(ctx, lane.name)))


def lane_at(ctx: Context, directory: Path) -> tuple[str, Path]:
    """The lane whose workspace holds `directory`."""
    directory = directory.resolve()
    for git_dir in {ctx.store.common_dir, ctx.store.discovered_git_dir}:
        # A git directory (the main one, or a lane's under worktrees/) lies inside no work tree; taking the
        # main worktree for it would snapshot what git itself refuses to touch from there.
        if directory == git_dir or git_dir in directory.parents:
            raise UserError(f"{directory} is inside a git directory, not a work tree", code="not_in_work_tree",
                            hint="cd into the work tree or a lane's workspace, or pass -w LANE")
    workspaces = (ctx.store.root / refs.WORKSPACES_DIR).resolve()
    probe = directory
    while probe != workspaces and workspaces in probe.parents:
        name = probe.relative_to(workspaces).as_posix()
        if ctx.store.is_workspace(probe):
            lane_head(ctx, name)
            workspace_path(ctx, name)  # a .git pointing at another lane's worktree: refused, naming the repair
            return name, probe
        if _plausible_lane(name) and ctx.store.read_ref(refs.lane_ref(name, ctx.trunk)) is not None:
            workspace_path(ctx, name)  # the lane's folder, whose .git was lost: refused, naming the repair
        probe = probe.parent
    trunk_workspace = workspace_path(ctx, ctx.trunk)
    lanes_dir = workspaces.parent  # excluded from the trunk's worktree: nothing under it is trunk content
    if trunk_workspace and (directory == trunk_workspace or trunk_workspace in directory.parents) \
            and lanes_dir not in directory.parents and directory != lanes_dir:
        return ctx.trunk, trunk_workspace
    main = ctx.store.root.resolve()
    if trunk_workspace is None and (directory == main or main in directory.parents) \
            and lanes_dir not in directory.parents and directory != lanes_dir:
        branch = ctx.store.head_branch()
        where = f"branch {branch!r}" if branch else "a detached HEAD"
        raise UserError(f"{directory} is in the main worktree, which is on {where}, not the trunk "
                        f"{ctx.trunk!r}", code="not_in_workspace",
                        hint=f"`git switch {ctx.trunk}` to work on the trunk there, or pass -w LANE")
    raise UserError(f"{directory} is not inside a lane's workspace", code="not_in_workspace",
                    hint="pass -w LANE, or cd into .lanes/workspaces/<lane>")


def start_point(ctx: Context, source: str | None) -> str:
    if source is None:
        return lane_head(ctx, ctx.trunk)
    head = ctx.store.read_ref(refs.lane_ref(source, ctx.trunk)) if _plausible_lane(source) else None
    return head or ctx.store.resolve(source)


def _plausible_lane(name: str) -> bool:
    try:
        validate_lane_name(name)
    except UserError:
        return False
    return True


def create(ctx: Context, name: str, source: str | None) -> tuple[Lane, bool]:
    """Create the lane and its workspace. For an existing lane with no workspace here (a clone, a crash
    between the two steps), only the workspace is made. Returns the lane and whether the ref was new."""
    validate_lane_name(name)
    ref = refs.lane_ref(name, ctx.trunk)
    existing = ctx.store.read_ref(ref)
    if existing is not None and (name == ctx.trunk or workspace_path(ctx, name) is not None):
        raise Refused(f"lane {name!r} already exists", code="lane_exists",
                      hint=f"its workspace is at {command('lane path', name)}")
    refuse_name_clash(ctx, name)
    created = existing is None
    # an existing head git-lanes never wrote (a blob, a tag: plain git or an older sync) is refused as such
    head = lane_head(ctx, name) if existing else start_point(ctx, source)
    require_no_internal(ctx, ctx.store.tree_of(head), f"state {head[:8]}")
    path = default_workspace(ctx, name)
    ctx.store.forget_missing_worktree(path)
    ctx.store.clear_unfinished_worktree(path)
    blocker = _in_the_way(ctx, path)
    if blocker is not None:
        # Checked before the lane's ref is made, so a refusal writes nothing.
        raise Refused(f"{blocker} is in the way of the workspace of lane {name!r}", code="workspace_exists",
                      hint=f"move {blocker} away, or choose another lane name")
    if created:
        ctx.store.update_refs([RefUpdate(ref, head, None, f"lanes: create lane {name}")])
    ctx.store.add_worktree(path, head)
    return Lane(name, ref, head, False, path), created


def name_clash(ctx: Context, name: str) -> str | None:
    """The lane that lane `name` could not exist beside: lane names are ref and directory paths, so `a` and
    `a/b` cannot both exist, in git or on disk."""
    return next((other for other in lane_names(ctx) if other != ctx.trunk
                 and (other.startswith(name + "/") or name.startswith(other + "/"))), None)


def refuse_name_clash(ctx: Context, name: str) -> None:
    clash = name_clash(ctx, name)
    if clash is not None:
        raise Refused(f"lane {name!r} cannot exist beside lane {clash!r}: one name is a folder of the other",
                      code="lane_name_clash",
                      hint="choose a name that is not a folder of, or inside, another lane's")


def _in_the_way(ctx: Context, path: Path) -> Path | None:
    """What stands where the workspace must go: anything but an empty directory at `path`, or something
    not a directory on the way to it."""
    if path.is_symlink() or (path.exists() and (not path.is_dir() or any(path.iterdir()))):
        return path
    top = ctx.store.root / refs.WORKSPACES_DIR
    for folder in reversed(path.parents):
        if folder == top or top in folder.parents:
            if folder.is_symlink() or (folder.exists() and not folder.is_dir()):
                return folder
    return None


def unpromoted(ctx: Context, name: str) -> bool:
    """True when the lane's head is reachable from no other lane: deleting it would orphan work."""
    head = lane_head(ctx, name)
    for other in lane_names(ctx):
        if other != name and ctx.store.is_ancestor(head, lane_head(ctx, other)):
            return False
    return True


def internal_paths(ctx: Context, tree: str) -> list[str]:
    """Paths `tree` tracks under git-lanes' own folder `.lanes/` (where every lane's workspace lives)."""
    entry = ctx.store.entry_at(tree, refs.LANES_DIR)
    if entry is None:
        return []
    if entry.mode != 0o040000:
        return [refs.LANES_DIR]
    return [f"{refs.LANES_DIR}/{change.path}" for change in ctx.store.diff_trees(None, entry.oid)]


def require_no_internal(ctx: Context, tree: str, what: str, hint: str | None = None) -> None:
    """Refuse a state that tracks files under `.lanes/`: promoted, the trunk would track files inside other
    lanes' workspaces, and every checkout of it would write there. The one rule for every way a state comes
    in or goes out: commit, accept, promote, lane create --from, restore, lane reset and sync."""
    found = internal_paths(ctx, tree)
    if found:
        raise Refused(f"{what} tracks {some(found)} under {refs.LANES_DIR}/, git-lanes' own folder where every "
                      "lane's workspace lives; no state may hold it", code="lanes_internal",
                      details={"paths": found},
                      hint=hint or f"untrack it with `git rm -r --cached {refs.LANES_DIR}` in the workspace (the "
                                   "files stay), then commit again")


def require_removable(ctx: Context, name: str, path: Path) -> None:
    """Refuse (with or without --force), before anything moves, to remove a workspace holding a git
    repository of its own: a cloned dependency or a submodule's work tree may hold the only copy of its
    history, which no backup ref of ours can keep (`git worktree remove` refuses a submodule too), or whose
    private git dir holds its submodules' repositories (there even once their work trees are gone). And
    refuse (exit 3) while another git command works there (a `git commit` holding its index lock)."""
    ctx.store.require_index_free(path)
    nested = ctx.store.nested_repositories(path)
    require_no_histories(ctx, name, path, nested)
    if nested:
        raise Refused(f"the workspace of lane {name!r} holds git repositories of its own ({some(nested)}); "
                      "deleting it would delete their history, which git-lanes never does", code="nested_repository",
                      details={"nested": nested},
                      hint=f"move them out of {path} (or delete them yourself), then delete the lane again")


def require_no_histories(ctx: Context, name: str, path: Path, nested: list[str]) -> None:
    """Refuse to remove a workspace (present or deleted by hand) whose private git dir holds its submodules'
    repositories: a submodule's work tree, moved out, deleted or deinitialised, leaves its history there."""
    histories = ctx.store.submodule_histories(path)
    if histories:
        also = f" and {some(nested)} in {path}" if nested else ""
        raise Refused(f"the workspace of lane {name!r} has submodules whose repositories git keeps in the "
                      f"workspace's private git dir ({some(histories)}); deleting it would delete their history, "
                      "which git-lanes never does", code="nested_repository",
                      details={"nested": nested, "histories": histories},
                      hint=f"keep what you need of them (push their commits, or copy them elsewhere), then remove "
                           f"{some(histories)}{also} yourself and delete the lane again")


def require_not_deleted(ctx: Context, name: str) -> None:
    """A lane deleted already (its marker kept, no lane of that name since) asked to be deleted again: a
    stale read, like a second accept of one proposal, not a name nobody ever made."""
    if not is_text(name) or not LaneName.valid(name) or ctx.store.read_ref(refs.lane_ref(name, ctx.trunk)):
        return
    if ctx.store.read_ref(refs.deleted_ref(name)) is not None:
        raise StaleState(f"lane {name!r} is already deleted", code="lane_deleted",
                         hint=f"its last head is kept at {refs.deleted_ref(name)}")


def delete(ctx: Context, name: str, *, force: bool, unsaved: bool, backup: str | None,
           setup_copies: list[str] | None = None) -> dict:
    """Remove the lane's ref and workspace. The last head stays reachable from `refs.deleted_ref(lane)`,
    whose reflog remembers every lane of that name ever deleted. `setup_copies`: ignored files the trunk's
    `[setup]` copied into the workspace and changed there since, refused as edits are (no state holds them)."""
    if name == ctx.trunk:
        raise Refused("the trunk lane cannot be deleted", code="trunk")
    require_not_deleted(ctx, name)
    head = lane_head(ctx, name)
    path = workspace_path(ctx, name)
    if not force:
        if unsaved:
            raise Refused(f"lane {name!r} has unsnapshotted edits in {path}", code="dirty_workspace",
                          hint=f"snapshot them with {command('commit')}, or pass {option('force')} (they are kept in a "
                               "backup ref)")
        if setup_copies:
            count = len(setup_copies)
            raise Refused(f"lane {name!r} has {count} file{'' if count == 1 else 's'} the trunk's [setup] copied into "
                          f"{path} and changed there since: {some(setup_copies)}", code="dirty_workspace",
                          details={"setup_copies": setup_copies},
                          hint=f"git ignores them, so no state holds them: copy what you need out of the workspace "
                               f"(the main worktree keeps the originals), or pass {option('force')} (they are kept "
                               "in a backup ref)")
        if unpromoted(ctx, name):
            raise Refused(f"lane {name!r} has work not promoted into any other lane", code="unpromoted",
                          hint=f"promote it with {command('promote', name)}, or pass {option('force')}")
    if path is None:  # its folder was removed by hand; git's record of it may still hold submodules
        require_no_histories(ctx, name, default_workspace(ctx, name), [])
    graveyard = refs.deleted_ref(name)
    if not LaneName.valid(name):
        # A lane named as `lane create` refuses (HEAD, -rf: what an older sync took, or plain git wrote) has
        # no deletion to send: sync refuses a marker of that name on every run. Its last head is kept where
        # this machine keeps what only it needs, in a backup ref.
        graveyard = f"{refs.BACKUPS}{name}/{random_hex(8)}"
    # One step at a time, each leaving a consistent repository if the process dies after it (libgit2 commits
    # a multi-ref transaction ref by ref, and deleting a ref deletes its reflog): the head is kept first;
    # the workspace goes before the lane, so a kill in between leaves a lane without a workspace, which
    # `lane create` gives back, rather than a workspace of no lane.
    ctx.store.update_refs([RefUpdate(graveyard, head, ctx.store.read_ref(graveyard),
                                     f"lanes: delete lane {name} at {head}")])
    if path is not None:
        ctx.store.remove_worktree(path)
    else:  # its folder was removed by hand: git's record of it goes too, or `git worktree list` keeps it
        ctx.store.forget_missing_worktree(default_workspace(ctx, name))
    ctx.store.update_refs([RefUpdate(refs.lane_ref(name, ctx.trunk), None, head, f"lanes: delete lane {name}")])
    return {"lane": name, "head": head, "kept_at": graveyard, "backup": backup}


def require_workspace(ctx: Context, name: str) -> Path:
    lane_head(ctx, name)  # an unknown or invalid lane name says so, rather than "no workspace"
    path = workspace_path(ctx, name)
    if path is None and name == ctx.trunk:
        raise NotFound(f"the trunk {name!r} has no workspace here: the main worktree is not on it",
                       code="workspace_missing", hint=f"`git switch {name}` in {ctx.store.root}")
    if path is None:
        raise NotFound(f"lane {name!r} has no workspace here", code="workspace_missing",
                       hint=f"make one with {command('lane create', name)}")
    return path


def ensure_current(ctx: Context, name: str, path: Path) -> tuple[str, str]:
    """(lane head, the commit a new state builds on), after checking the workspace was built on the head;
    a stale workspace could silently revert what moved the lane since (a promotion, another writer). Commits
    made in the workspace with plain git on top of the head are the new state's ancestry, as in git."""
    head = lane_head(ctx, name)
    workspace_head = ctx.store.workspace_head(path)
    if workspace_head != head and ctx.store.index_tree(path) == ctx.store.tree_of(head):
        # The lane moved to exactly what this workspace snapshotted (a process was killed between the
        # accept and moving the workspace's HEAD): only HEAD is behind, nothing can be reverted.
        ctx.store.set_workspace_head(path, head)
        workspace_head = head
    if workspace_head == head or (workspace_head and ctx.store.is_ancestor(head, workspace_head)):
        return head, workspace_head or head
    behind = workspace_head is not None and ctx.store.is_ancestor(workspace_head, head)
    at = f"is at {workspace_head[:8]}, {'behind' if behind else 'off'}" if workspace_head else \
        "has no commit checked out (an unborn branch), not"
    raise Conflict(f"workspace of {name!r} {at} the lane's head {head[:8]}; a snapshot now could revert what "
                   "the lane holds", code="stale_workspace",
                   hint=f"in {path}, `git merge {refs.lane_ref(name, ctx.trunk)}` builds on the head (git keeps "
                        f"edits it does not touch; if it stops on conflicts, resolve them and `git commit`), then "
                        f"commit again; or {command('restore', name, w=name, force=True)} (your edits and commits "
                        "are kept in a backup ref)")
