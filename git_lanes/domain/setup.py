"""`init`: make a repository ready for lanes. Idempotent."""

from __future__ import annotations

from git_lanes.domain import transitions
from git_lanes.domain.context import Context
from git_lanes.errors import Ambiguous, NotFound, Refused
from git_lanes.model import refs
from git_lanes.model.records import Cost, Intent, Transition
from git_lanes.store import RefUpdate, Store
from git_lanes.model.entries import Entry

FILE_MODE = 0o100644

INIT_AGENT = "git-lanes"


def choose_trunk(store: Store, requested: str | None) -> str:
    configured = store.config_get("lanes.trunk")
    if configured and requested and configured != requested:
        raise Refused(f"this repository's trunk is already {configured!r}", code="trunk_set",
                      hint="change it with `git config lanes.trunk NAME` if you really mean to")
    if configured:
        return configured
    trunk = requested or store.head_branch() or refs.DEFAULT_TRUNK
    _require_branch(store, trunk)
    return trunk


def _require_branch(store: Store, trunk: str) -> None:
    """The trunk must be a branch that exists, as `git switch` wants one: a mistyped `mian` would otherwise
    become a new branch at HEAD's commit that every promotion then goes to, unnoticed. As in git, two cases
    need none: a repository with nothing committed, whose unborn HEAD the trunk names (`git init -b`), and a
    branch only one remote has, made local from it (`git switch` guesses so in a clone)."""
    if store.read_ref(f"refs/heads/{trunk}") is not None:
        return
    remotes = store.remotes_with_branch(trunk)
    if len(remotes) == 1:
        store.branch_from_remote(remotes[0], trunk)
        return
    if remotes:
        raise Ambiguous(f"no branch {trunk!r} here, and {len(remotes)} remotes have one: {', '.join(remotes)}",
                        code="ambiguous_branch",
                        hint=f"make it from one of them first: `git branch --track {trunk} {remotes[0]}/{trunk}`")
    prefix = "refs/heads/"
    branches = sorted(name[len(prefix):] for name in store.list_refs(prefix))
    if not branches or trunk == store.head_branch():
        return
    for remote, branch in _remote_and_branch(trunk):
        if remote in store.remotes_with_branch(branch):  # `origin/main`: `git switch` refuses it too
            raise NotFound(f"{trunk!r} is a remote-tracking branch of {remote}, not a branch to be the trunk",
                           code="unknown_branch", hint=f"name the branch: {branch!r} (made from {trunk} if it is "
                                                       "not here yet)", details={"did_you_mean": [branch]})
    import difflib  # only on this refusal

    # a remote's branches too: `develop` is what was meant in a clone that has it only as origin/develop
    remote_prefix = "refs/remotes/"
    tracked = {name[len(remote_prefix):].partition("/")[2] for name in store.list_refs(remote_prefix)} - {"HEAD", ""}
    close = difflib.get_close_matches(trunk, sorted(set(branches) | tracked), n=3, cutoff=0.6)
    shown = ", ".join(branches[:10]) + (f" and {len(branches) - 10} more" if len(branches) > 10 else "")
    create = f"to start a new trunk branch, create it first: `git branch {trunk}`"
    raise NotFound(f"no branch {trunk!r} to be the trunk (branches here: {shown})", code="unknown_branch",
                   hint=(f"did you mean {' or '.join(repr(c) for c in close)}? " if close else
                         "name one of them as the trunk; ") + create,
                   details={"did_you_mean": close})


def _remote_and_branch(name: str) -> list[tuple[str, str]]:
    """Every way `name` reads as REMOTE/BRANCH (a remote's name may hold a `/` too)."""
    return [(name[:at], name[at + 1:]) for at, char in enumerate(name) if char == "/"]


def initialize(store: Store, trunk: str, now: float) -> dict:
    changed = []
    if store.config_get("lanes.trunk") != trunk:
        store.config_set("lanes.trunk", trunk)
        changed.append("lanes.trunk")
    if store.config_get("core.logAllRefUpdates") != "always":
        store.config_set("core.logAllRefUpdates", "always")
        changed.append("core.logAllRefUpdates")
    if store.config_add("notes.displayRef", refs.NOTES):
        changed.append("notes.displayRef")
    if store.exclude("/.lanes/"):
        changed.append("info/exclude")
    ctx = Context(store, trunk, lambda: now)
    initial = None
    with store.locked():
        if store.read_ref(refs.lane_ref(trunk, trunk)) is None:
            initial = _initial_state(ctx, store)
            changed.append("initial state")
        if store.read_ref(refs.TRUNK_META) is None:
            record_trunk(store, trunk)
            changed.append(refs.TRUNK_META)
        if store.read_ref(refs.NOTES) is None:
            # notes.displayRef naming a missing ref makes every `git log` warn until the first transition.
            store.update_refs([store.write_notes(refs.NOTES, {}, "lanes: start the transition records")])
            changed.append(refs.NOTES)
    return {"root": str(store.root), "trunk": trunk, "changed": changed,
            "initial_state": initial, "already_initialized": not changed,
            "checked_out": store.head_branch()}


def _initial_state(ctx: Context, store: Store) -> str:
    """The trunk's first state: HEAD's commit when HEAD has one, else a snapshot of the working tree."""
    trunk_ref = refs.lane_ref(ctx.trunk, ctx.trunk)
    head_branch = store.head_branch()
    current = store.read_ref(f"refs/heads/{head_branch}") if head_branch else store.read_ref("HEAD")
    if current is not None:
        store.update_refs([RefUpdate(trunk_ref, current, None, "lanes: init trunk")])
        return current
    if head_branch != ctx.trunk:
        store.point_head(ctx.trunk)
    tree = store.snapshot(store.root)
    intent = Intent(prompt="Initial state", agent_id=INIT_AGENT)
    transition_id = transitions.new_id()
    state = store.write_commit(tree, [], transitions.commit_message(intent, ctx.trunk, transition_id, "init"),
                               author_name=INIT_AGENT, author_email=f"{INIT_AGENT}@lanes")
    record = Transition(id=transition_id, lane=ctx.trunk, base=None, state=state, tree=tree, status="accepted",
                        intent=intent, cost=Cost(), kind="init", created_at=ctx.now(), decided_at=ctx.now())
    store.update_refs([
        transitions.record_updates(ctx, [record], "lanes: init"),
        RefUpdate(trunk_ref, state, None, "lanes: initial state"),
    ])
    return state


def record_trunk(store: Store, trunk: str) -> None:
    """Name the trunk in refs/lanes/meta/trunk (a commit whose tree holds `trunk`), which travels with sync:
    a fresh clone learns the trunk from it even when the remote's HEAD is another branch."""
    blob = store.write_blob(f"{trunk}\n".encode())
    tree = store.edit_tree(None, {"trunk": Entry(blob, FILE_MODE)})
    commit = store.write_commit(tree, [], f"lanes: the trunk is {trunk}\n")
    store.update_refs([RefUpdate(refs.TRUNK_META, commit, None, f"lanes: the trunk is {trunk}")])


def recorded_trunk(store: Store, commit: str | None) -> str | None:
    """The trunk named by a refs/lanes/meta/trunk commit (a local or a fetched one)."""
    if commit is None:
        return None
    data = store.read_path(store.tree_of(commit), "trunk")
    # undecodable bytes are no branch name: the trunk they name is then not found, like any other bad name
    return data.decode("utf-8", "replace").strip() or None if data else None
