"""Remotes: fetching lane state into `refs/lanes-remote/<remote>/…` and pushing it back with a lease on every
ref. The network is the git CLI's: it speaks every transport and credential helper a user has set up."""

from __future__ import annotations

import os
import time

from git_lanes.errors import Conflict, NotFound, RemoteFailed, UserError
from git_lanes.model import refs
from git_lanes.model.frozen import Frozen
from git_lanes.store import stale
from git_lanes.store.gitcli import StartedGit, run_git
from git_lanes.store.values import RefUpdate

TYPE_CHECKING = False
if TYPE_CHECKING:  # either store: the light sync path never loads pygit2 (nor subprocess: see StartedGit)
    from git_lanes.store.gitcli import Answered
    from git_lanes.store.light import LightStore
    from git_lanes.store.repo import Store

# The remote a sync, pull or push uses when none is named and `lanes.remote` is not set.
DEFAULT_REMOTE = "origin"
NETWORK_TIMEOUT = 600.0
FETCH_LOCK_RETRIES = 3
# What a remote's name may hold ([A-Za-z0-9][A-Za-z0-9._-]*): checked by hand, since every sync checks it and
# a compiled pattern costs its start-up; git's messages are parsed by patterns compiled only on a failure.
_NAME_START = frozenset("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789")
_NAME_CHARS = _NAME_START | frozenset("._-")
_MISSING_REF = r"couldn't find remote ref (\S+)"
_LOCK_PATH = r"Unable to create '([^']+\.lock)'"
# git could not store a tracking ref at all (a name too long for the file system, say), as opposed to
# finding its lock taken ("File exists"), which is another fetch at work.
# git's words for a connection that broke mid-push (the server died, the network dropped), not a refusal.
_DISCONNECTED = ("unexpected disconnect while reading sideband packet", "the remote end hung up unexpectedly")
_UNSTORABLE = r"cannot lock ref '([^']+)': Unable to create '[^']+': (.+)"


class Fetched(Frozen):
    """What a fetch copied: remote ref -> oid, and the remote refs this machine could not store (ref ->
    why), which were left out."""

    refs: dict[str, str]
    unstorable: dict[str, str]


class PushUpdate(Frozen):
    """Make the remote's `ref` `new` (None deletes it), provided it is still `expected` (None: absent)."""

    ref: str
    new: str | None
    expected: str | None


class PushResult(Frozen):
    ok: bool
    # ref -> git's reason, for every ref the remote refused
    rejected: dict[str, str]
    # what the server's hooks said, if anything
    server_said: str = ""

    @property
    def raced(self) -> bool:
        """True when every refusal says only that the remote moved (a lease or lock lost to another writer)."""
        return not self.ok and all(_is_race(reason) for reason in self.rejected.values())

    def refusal(self) -> tuple[str, str]:
        """The ref and reason that explain a failed push (not the refs an atomic push dropped with it)."""
        causes = [(ref, why) for ref, why in self.rejected.items() if not _is_race(why)]
        return (causes or list(self.rejected.items()) or [("-", "rejected")])[0]


def tracking_prefix(remote: str) -> str:
    return f"{refs.REMOTE_PREFIX}{remote}/"


def tracking_ref(remote: str, ref: str) -> str:
    """Where the remote's `ref` is kept here: refs/lanes/x -> refs/lanes-remote/<remote>/lanes/x."""
    return tracking_prefix(remote) + ref[len("refs/"):]


def remote_ref_of(remote: str, tracking: str) -> str:
    return "refs/" + tracking[len(tracking_prefix(remote)):]


def synced_patterns(trunk: str) -> list[str]:
    """Every ref pattern that travels (DESIGN.md §1); backups stay on the machine whose workspace they saved."""
    return [f"refs/heads/{trunk}", refs.LANE_HEADS + "*", refs.PROPOSALS + "*", refs.REJECTED + "*",
            refs.DELETED + "*", refs.RUNS + "*", refs.META + "*", refs.LEDGER, refs.NOTES]


def synced_refs(store: Store, trunk: str) -> dict[str, str]:
    """Every ref here that travels, with what it points at."""
    found = {}
    for pattern in synced_patterns(trunk):
        if pattern.endswith("*"):
            found.update(store.list_refs(pattern[:-1]))
        else:
            oid = store.read_ref(pattern)
            if oid:
                found[pattern] = oid
    return found


def check_remote(store: Store, remote: str) -> str:
    """The remote's URL; a clear error for a name that is not a configured remote."""
    if not (remote[:1] in _NAME_START and set(remote) <= _NAME_CHARS):
        # Lanes keeps a remote's copies under its name, so a URL needs a name first.
        from git_lanes.model.text import quoted

        raise UserError(f"invalid remote name {quoted(remote)}", code="invalid_remote",
                        hint="REMOTE is the name of a configured remote: `git remote add NAME URL`, then use NAME")
    url = store.config_get(f"remote.{remote}.url")
    if not url:
        raise NotFound(f"no remote named {remote!r}", code="unknown_remote",
                       hint=f"add it with `git remote add {remote} URL`")
    return url


def fetch(store: Store, remote: str, trunk: str) -> Fetched:
    """Copy the remote's lane state into the tracking namespace (pruning what it no longer has). Tracking
    refs are a cache of the remote, so forcing them is safe: nothing here is ever pushed from that
    namespace. A remote ref this machine cannot store is left out and reported."""
    prefix = tracking_prefix(remote)
    patterns = synced_patterns(trunk)
    unstorable: dict[str, str] = {}
    atomic = True
    # An exact refspec the remote lacks fails the whole fetch, so each missing one is dropped and retried;
    # usually (the trunk and notes exist) this is one round trip. A concurrent fetch holding a tracking
    # ref's lock is waited out a few times.
    lock_waits = 0
    for _ in range(len(patterns) + FETCH_LOCK_RETRIES + 2):
        proc = _network(store, _fetch_args(remote, patterns, atomic))
        if proc.returncode == 0:
            break
        import re

        from git_lanes.store.fetch_failures import check_writable  # as `re`: loaded by a failure only

        missing = [ref for ref in re.findall(_MISSING_REF, proc.stderr) if ref in patterns]
        refused = {remote_ref_of(remote, ref): why for ref, why in re.findall(_UNSTORABLE, proc.stderr)
                   if ref.startswith(prefix) and not why.startswith("File exists")}
        check_writable(store, proc.stderr, refused)
        if missing:
            patterns = [pattern for pattern in patterns if pattern not in missing]
            _forget(store, [tracking_ref(remote, ref) for ref in missing])
        elif refused and atomic:
            # git's atomic fetch names one such ref per attempt, and a remote may hold any number. Fetched
            # once more without --atomic, git stores every ref it can, all from one listing of the remote (a
            # consistent copy), and names each one it cannot.
            atomic = False
        elif refused and len(refused) == sum(1 for line in proc.stderr.splitlines() if line.strip()):
            unstorable.update(refused)  # and nothing else went wrong: every other ref is stored
            break
        elif "lock" in proc.stderr and lock_waits < FETCH_LOCK_RETRIES:
            lock_waits += 1
            _clear_abandoned_tracking_locks(store, remote, proc.stderr)
            time.sleep(0.05 * lock_waits)
        else:
            raise RemoteFailed(f"git fetch from {remote!r} failed: {_reason(proc.stderr)}",
                               hint="check the remote's URL and your access to it")
    else:
        raise RemoteFailed(f"git fetch from {remote!r} kept failing: {_reason(proc.stderr)}")
    return Fetched({remote_ref_of(remote, name): oid for name, oid in store.list_refs(prefix).items()},
                   unstorable)


def _fetch_args(remote: str, patterns: list[str], atomic: bool = True) -> list[str]:
    specs = [f"+{pattern}:{tracking_ref(remote, pattern)}" for pattern in patterns]
    # Whether a tracking ref was forced is only ever printed, and --quiet prints nothing, yet git finds out by
    # walking every commit that came in (~6 ms of its CPU for 1,000 ledger ops); with the walk off, git would
    # advise turning it back on.
    return ["-c", "advice.fetchShowForcedUpdates=false", "fetch", "--quiet", "--no-show-forced-updates",
            "--no-tags", "--no-write-fetch-head", "--prune", *(["--atomic"] if atomic else []), "--no-auto-gc",
            "--no-recurse-submodules", remote, *specs]


def start_fetch(store: LightStore, remote: str, trunk: str) -> StartedGit:
    """Start `fetch(store, remote, trunk)`'s first git fetch now (after `check_remote`): the caller works
    while git fetches (the light sync loads the domain), and `fetch` then takes this process's answer."""
    args = _fetch_args(remote, synced_patterns(trunk))
    started = store.started_git[tuple(args)] = StartedGit(args, store.root)
    return started


def settle_started(store: LightStore, *, interrupted: bool = False) -> None:
    """Wait for every fetch `start_fetch` began that no `fetch` took (the sync failed before it fetched), or
    stop it now (killed and reaped) when the sync was `interrupted`."""
    while store.started_git:
        _, started = store.started_git.popitem()
        try:
            started.result(timeout=0.0 if interrupted else NETWORK_TIMEOUT)
        except Exception as exc:
            if not _timed_out(exc):
                raise
            # killed and reaped: it only refreshed tracking copies, and the next sync does so again


def fetch_meta(store: Store, remote: str) -> dict[str, str]:
    """Only the remote's shared facts (refs/lanes/meta/*), for a clone deciding how to set itself up: a
    glob, so a remote without them fetches nothing rather than failing."""
    pattern = refs.META + "*"
    proc = _network(store, ["fetch", "--quiet", "--no-tags", "--no-write-fetch-head", "--no-auto-gc",
                            "--no-recurse-submodules", remote, f"+{pattern}:{tracking_ref(remote, pattern)}"])
    if proc.returncode != 0:
        raise RemoteFailed(f"git fetch from {remote!r} failed: {_reason(proc.stderr)}",
                           hint="check the remote's URL and your access to it")
    return {remote_ref_of(remote, name): oid
            for name, oid in store.list_refs(tracking_ref(remote, refs.META)).items()}


def _clear_abandoned_tracking_locks(store: Store, remote: str, stderr: str) -> None:
    """A fetch killed mid-update leaves `<tracking ref>.lock`, which fails every later fetch. Only sync writes
    the tracking namespace, so under the writers' flock a lock no process holds open is abandoned."""
    namespace = os.path.realpath(os.path.join(store.common_dir, tracking_prefix(remote)))
    with store.locked():
        import re

        for path in re.findall(_LOCK_PATH, stderr):
            lock = os.path.realpath(path)
            if lock.startswith(namespace + os.sep):
                stale.clear_if_stale(lock)


def _forget(store: Store, tracking: list[str]) -> None:
    """Drop tracking copies of refs the remote no longer has (a cache: a lost race here is harmless)."""
    updates = [RefUpdate(name, None, oid, "lanes: gone from the remote") for name in tracking
               if (oid := store.read_ref(name)) is not None]
    try:
        store.update_refs(updates)
    except Conflict:
        pass


def push(store: Store, remote: str, updates: list[PushUpdate], *, atomic: bool = True) -> PushResult:
    """Push every update under a lease on its expected value, all-or-nothing where the server can.

    No refspec carries `+`: it would silently switch the lease off."""
    if not updates:
        return PushResult(True, {})
    args = ["push", "--porcelain", "--no-verify"]
    if atomic:
        args.append("--atomic")
    for update in updates:
        args.append(f"--force-with-lease={update.ref}:{update.expected or ''}")
    args.append(remote)
    args += [f"{update.new or ''}:{update.ref}" for update in updates]
    proc = _network(store, args)
    if atomic and "does not support --atomic" in proc.stderr:
        return push(store, remote, updates, atomic=False)
    rejected = _rejections(proc.stdout)
    if proc.returncode != 0 and not rejected:
        if {update.ref for update in updates} <= _taken(proc.stdout):
            return PushResult(True, {})  # the server took every ref and said so; then the connection broke
        if any(sign in proc.stderr for sign in _DISCONNECTED):
            # it may have taken some or none: the next sync's fetch finds out, and its lease protects the rest
            raise RemoteFailed(f"the connection to {remote!r} broke during the push ({_reason(proc.stderr)})",
                               hint="nothing here is lost; sync again once the remote is back: the next sync "
                                    "finds out what it took")
        raise RemoteFailed(f"git push to {remote!r} failed: {_reason(proc.stderr)}",
                           hint="check the remote's URL and your access to it")
    said = [line[len("remote:"):].strip() for line in proc.stderr.splitlines() if line.startswith("remote:")]
    # git's refusal of a push into a checked-out branch is one error line and a page of advice
    told = _reason("\n".join(said)) if any(line.startswith(("error:", "fatal:")) for line in said) \
        else "; ".join(line for line in said if line)
    return PushResult(not rejected, rejected, told)


def _rejections(porcelain: str) -> dict[str, str]:
    found = {}
    for line in porcelain.splitlines():
        parts = line.split("\t")
        if len(parts) >= 3 and parts[0] == "!":
            found[parts[1].split(":", 1)[-1]] = parts[2]
    return found


def _taken(porcelain: str) -> set[str]:
    """The refs the server reported updated (or already so): porcelain's flags other than `!`."""
    return {parts[1].split(":", 1)[-1] for line in porcelain.splitlines()
            if len(parts := line.split("\t")) >= 3 and parts[0] in (" ", "+", "-", "*", "=")}


def _is_race(reason: str) -> bool:
    # The server's own ref transaction losing to a concurrent push reads as a lock or transaction failure.
    return any(word in reason for word in ("stale info", "fetch first", "non-fast-forward", "atomic push failed",
                                            "lock", "transaction failed", "failed to update ref",
                                            "incorrect old value", "expected"))


def _network(store: Store, args: list[str]) -> Answered:
    started: StartedGit | None = getattr(store, "started_git", {}).pop(tuple(args), None)  # see start_fetch
    try:
        if started is not None:
            return started.result(timeout=NETWORK_TIMEOUT)
        return run_git(args, cwd=store.root, check=False, timeout=NETWORK_TIMEOUT)
    except Exception as exc:
        if not _timed_out(exc):
            raise
        command = args[2] if args[0] == "-c" else args[0]  # git's subcommand, after a `-c` setting
        raise RemoteFailed(f"git {command} gave no answer in {NETWORK_TIMEOUT:.0f} s",
                           hint="check the network and the remote; what merged here is kept: sync again") from None


def _timed_out(exc: Exception) -> bool:
    """Whether `exc` is a git command's timeout. (`subprocess` is imported here, on an error, not at the top:
    the light sync runs git without it. A timeout was raised through it, so it is loaded then.)"""
    import subprocess

    return isinstance(exc, subprocess.TimeoutExpired)


def _reason(text: str) -> str:
    """git's own reason for a failure: its first fatal:/error: line (with the line it continues onto when
    it ends in a colon, as "unable to connect to HOST:" does), not the advice it prints after it."""
    lines = [line.strip() for line in text.strip().splitlines() if line.strip()]
    for i, line in enumerate(lines):
        if line.startswith(("fatal:", "error:")):
            reason = line.split(":", 1)[1].strip()
            if reason.endswith(":") and i + 1 < len(lines):
                reason = f"{reason} {lines[i + 1]}"
            return reason
    return lines[-1] if lines else "no output"


# -- notes: reading a record at a given notes commit, and writing a merge of two notes commits -----------
def note_at(store: Store, notes_commit: str | None, target: str) -> str | None:
    """The note text for `target` in the notes tree of `notes_commit`, whatever its fanout."""
    if notes_commit is None:
        return None
    return store.read_note_at(store.tree_of(notes_commit), target)


def differing_notes(store: Store, ours: str, theirs: str) -> set[str]:
    """Annotated object ids whose note differs between two notes commits (equal subtrees are skipped)."""
    changes = store.diff_trees(store.tree_of(ours), store.tree_of(theirs))
    return {change.path.replace("/", "") for change in changes}


def write_notes_merge(store: Store, ours: str, theirs: str, texts: dict[str, str], message: str) -> str:
    """A notes commit with parents (ours, theirs) whose tree is ours with `texts` (target -> note) set."""
    from git_lanes.store import notes

    tree = notes.with_notes(store.repo, store.tree_of(ours), texts)
    return store.write_commit(tree, [ours, theirs], message + "\n")


def count_between(store: Store, ancestor: str | None, head: str | None) -> int:
    """How many commits `head` has that `ancestor` has not."""
    return 0 if head is None else store.count_between(ancestor, head)


# The transport's runner and its reading of git's errors, for the store's other network users (branches.py).
network = _network
reason = _reason
