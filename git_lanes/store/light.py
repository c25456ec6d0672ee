"""A store without pygit2, for a sync with nothing to replay (issue 15): the same methods the domain calls on
`repo.Store`, answered from git's files (`gitfiles`, `ref_files`, `objects`) and, for a history longer than a few commits,
from one `git log`.

It answers only what such a sync asks. Anything else (a commit graph with merges to reason about, a ref in
packed-refs to delete, a config with includes, a repository in another format) raises `NeedsFullStore`
before anything is written, and the caller runs the ordinary path. Refs move as git moves them: every `.lock`
taken first, each ref's value checked under its lock (compare-and-swap), then the renames."""

from __future__ import annotations

import os

from git_lanes.errors import Conflict, UnsupportedFormat
from git_lanes.store import clock, gitfiles, light_log, ref_files, reflogs, stale
from git_lanes.store.light_objects import NeedsFullStore, ObjectReads
from git_lanes.store.values import CommitInfo, RefUpdate, Worktree

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Callable

    from git_lanes.store.gitcli import StartedGit
    from git_lanes.store.lock import Exclusive
    from git_lanes.store.objects import ObjectStore

# Up to this many commits are read here (~0.2 ms each from a pack) rather than by `git rev-list` (~5 ms).
SHORT_WALK = 16
EMPTY_TREE = "4b825dc642cb6eb9a060e54bf8d69288fbee4904"  # `git hash-object -t tree /dev/null` (SHA-1: see LightStore)
FALLBACK_NAME, FALLBACK_EMAIL = "git-lanes", "git-lanes@localhost"  # as repo.Store signs without an identity
# What points git (or libgit2) at other files than the repository's own: the light store does not follow it.
_REDIRECTING = ("GIT_DIR", "GIT_WORK_TREE", "GIT_COMMON_DIR", "GIT_OBJECT_DIRECTORY",
                "GIT_ALTERNATE_OBJECT_DIRECTORIES", "GIT_NAMESPACE", "GIT_CONFIG", "GIT_CONFIG_GLOBAL",
                "GIT_CONFIG_SYSTEM", "GIT_CONFIG_COUNT", "GIT_CONFIG_PARAMETERS", "GIT_REFLOG_ACTION")


class Signature:
    __slots__ = ("name", "email", "time", "offset")

    def __init__(self, name: str, email: str, when: int, offset: int) -> None:
        self.name, self.email, self.time, self.offset = name, email, when, offset

    def stamp(self) -> str:
        sign = "-" if self.offset < 0 else "+"
        hours, minutes = divmod(abs(self.offset), 60)
        return f"{self.name} <{self.email}> {self.time} {sign}{hours:02d}{minutes:02d}"


def open_light(start: str | os.PathLike[str]) -> LightStore:
    """The repository holding `start`, or NeedsFullStore when it is anything but a plain one."""
    if any(key in os.environ for key in _REDIRECTING):
        raise NeedsFullStore("git's location is redirected by the environment")
    try:
        where = gitfiles.discover(start)
    except Exception as exc:  # not a repository, bare, damaged: the ordinary path says so properly
        raise NeedsFullStore(str(exc)) from None
    return LightStore(where)


class LightStore(ObjectReads):
    """Its paths are strings (`repo.Store`'s are `Path`s): this path loads no pathlib, ~4 ms of a sync."""

    def __init__(self, where: gitfiles.Location) -> None:
        self.common_dir = os.path.realpath(where.common_dir)
        self.root = os.path.realpath(where.root)
        self.discovered_git_dir = os.path.realpath(where.git_dir)
        self._objects: ObjectStore | None = None
        self._config: dict[str, str] | None = None
        self._observers: list[Callable[[list[RefUpdate]], None]] = []
        self._before: list[Callable[[list[RefUpdate]], None]] = []  # told just before updates apply
        self._commits: dict[str, CommitInfo] = {}
        self._kinds: dict[str, str] = {}
        # (ancestor, head) -> [(commit, parents)] for head's commits that ancestor lacks: `git rev-list`'s answer
        self._between: dict[tuple[str | None, str], list[tuple[str, tuple[str, ...]]]] = {}
        # git commands started ahead of their answer (remote.start_fetch), by their arguments
        self.started_git: dict[tuple[str, ...], StartedGit] = {}
        # the `git log` a walk to come reads (start_log): its head, and the git
        self._started_log: tuple[str, StartedGit] | None = None
        config = self._read_config()
        if config.get("core.repositoryformatversion", "0") not in ("0", "1") or \
                any(key.startswith("extensions.") for key in config):
            raise NeedsFullStore("a repository format extension is in use")
        if any(key in config for key in ("core.sharedrepository", "core.fsync", "core.fsyncobjectfiles")):
            raise NeedsFullStore("objects and refs get modes or syncs the light store does not give them")


    # -- locking and observing ---------------------------------------------------------------------------
    # Context managers handed out as objects, not contextlib generators: see store/lock.py.
    def locked(self) -> Exclusive:
        from git_lanes.store import lock  # first taken once the fetch is in (fcntl, ~0.5 ms before it)

        return lock.exclusive(os.path.join(self.common_dir, "lanes.lock"))

    def observing(self, observer: Callable[[list[RefUpdate]], None],
                  before: Callable[[list[RefUpdate]], None] | None = None) -> _Observing:
        return _Observing(self, observer, before)

    # -- config and identity -----------------------------------------------------------------------------
    def _read_config(self) -> dict[str, str]:
        """Every level git reads (system, global, repository; later wins), flattened as gitfiles reads one."""
        if self._config is None:
            files = [] if os.environ.get("GIT_CONFIG_NOSYSTEM") else ["/etc/gitconfig"]
            files += [*gitfiles.config_files_beneath_home(), os.path.join(self.common_dir, "config")]
            merged: dict[str, str] = {}
            for path in files:
                try:
                    with open(path, errors="replace") as handle:
                        text = handle.read()
                except OSError:
                    continue
                if "[include" in text.lower():
                    raise NeedsFullStore(f"{path} includes other config files")
                merged.update(gitfiles.parse_config(text))
            self._config = merged
        return self._config

    def config_get(self, key: str) -> str | None:
        section, _, rest = key.partition(".")
        middle, _, name = rest.rpartition(".")
        return self._read_config().get(".".join(p for p in (section.lower(), middle, name.lower()) if p))

    def signature(self, name: str | None = None, email: str | None = None) -> Signature:
        base_name, base_email = self.config_get("user.name"), self.config_get("user.email")
        if not base_name or not base_email:
            base_name, base_email = FALLBACK_NAME, FALLBACK_EMAIL
        when, offset = clock.now()
        return Signature(name or base_name, email or base_email, when, offset)

    # -- refs ----------------------------------------------------------------------------------------------
    def read_ref(self, name: str) -> str | None:
        try:
            return ref_files.read_ref(self.common_dir, name)
        except UnsupportedFormat as exc:
            raise NeedsFullStore(exc.message) from None

    def list_refs(self, prefix: str) -> dict[str, str]:
        found = {}
        for name in ref_files.list_refs(self.common_dir, prefix):
            oid = self.read_ref(name)
            if oid:
                found[name] = oid
        return dict(sorted(found.items()))

    def update_refs(self, updates: list[RefUpdate]) -> None:
        """Apply every update, or none if any ref is not at its expected old value."""
        if not updates:
            return
        packed = ref_files.packed_refs(self.common_dir)
        if any(u.new is None and u.name in packed for u in updates):
            raise NeedsFullStore("deleting a packed ref rewrites packed-refs")
        for before in list(self._before):
            before(updates)
        taken: list[tuple[RefUpdate, str]] = []
        try:
            for update in updates:
                path = os.path.join(self.common_dir, update.name)
                if update.old is None and update.new is not None and stale.owned_ref(update.name):
                    reflogs.clear_orphans(self.common_dir, update.name, self.read_ref)
                os.makedirs(os.path.dirname(path), exist_ok=True)
                handle = ref_files.take_lock(f"{path}.lock", self.common_dir)
                taken.append((update, f"{path}.lock"))  # ours to remove only once taken: never a holder's
                with os.fdopen(handle, "w") as out:
                    if update.new is not None:
                        out.write(update.new + "\n")
            for update in updates:
                current = self.read_ref(update.name)
                if current != update.old:
                    raise Conflict(f"{update.name} moved: expected {_short(update.old)}, found {_short(current)}",
                                   code="stale_ref", hint="another writer got there first; re-read and retry")
            identity = self.signature()
            for update, _ in taken:
                self._log(update, identity)
        except BaseException:
            for _, held in taken:
                try:
                    os.unlink(held)
                except FileNotFoundError:
                    pass
            raise
        for update, held in taken:
            if update.new is None:
                try:
                    os.unlink(os.path.join(self.common_dir, update.name))
                except FileNotFoundError:
                    pass
                os.unlink(held)
                reflogs.remove(self.common_dir, update.name)
            else:
                os.replace(held, os.path.join(self.common_dir, update.name))
        for observer in list(self._observers):
            observer(updates)

    def _log(self, update: RefUpdate, identity: Signature) -> None:
        log = os.path.join(self.common_dir, "logs", update.name)
        if update.new is None or not (self._read_config().get("core.logallrefupdates", "").lower() == "always"
                                      or os.path.exists(log)):
            return
        os.makedirs(os.path.dirname(log), exist_ok=True)
        with open(log, "a") as out:
            out.write(f"{update.old or ref_files.ZERO} {update.new} {identity.stamp()}\t"
                      f"{' '.join(update.message.split())}\n")

    # -- objects (what is read: light_objects.py) ------------------------------------------------------------
    def empty_tree(self) -> str:
        """git's empty tree, which every operation-log entry names. When its loose file is there it is only
        freshened, as `objects.write` would after writing a temporary copy (a new file, the costliest of its
        system calls) and finding it there."""
        try:
            os.utime(os.path.join(self.common_dir, "objects", EMPTY_TREE[:2], EMPTY_TREE[2:]))
        except OSError:
            return self.objects.write(b"tree", b"")
        return EMPTY_TREE

    def write_commit(self, tree: str, parents: list[str], message: str, *, author_name: str | None = None,
                     author_email: str | None = None) -> str:
        author = self.signature(author_name, author_email).stamp()
        from git_lanes.store.objects import encode_commit

        return self.objects.write(b"commit", encode_commit(tree, parents, author, self.signature().stamp(), message))

    # -- history -------------------------------------------------------------------------------------------
    def is_ancestor(self, ancestor: str, descendant: str) -> bool:
        if ancestor == descendant:
            return True
        line = None if self._logging(descendant) else self._short_line(ancestor, descendant)
        if line is not None:
            return bool(line) and ancestor in line[-1][1]  # the walk stopped at `ancestor`, not at a root
        # `ancestor` is reachable from `descendant` exactly when a commit only `descendant` has is its child
        return any(ancestor in parents for _, parents in self._rev_list(ancestor, descendant))

    def count_between(self, ancestor: str | None, head: str) -> int:
        """How many commits `head` has that `ancestor` (None: nothing) has not."""
        if (ancestor, head) in self._between:
            return len(self._between[(ancestor, head)])
        line = None if self._logging(head) else self._short_line(ancestor, head)
        if line is not None and (ancestor is None or (line and ancestor in line[-1][1])):
            return len(line)
        return len(self._rev_list(ancestor, head))

    def _logging(self, head: str) -> bool:
        """A `git log` of `head` is started (`start_log`): the walk reads it, rather than commits here."""
        return self._started_log is not None and self._started_log[0] == head

    def _short_line(self, ancestor: str | None, head: str) -> list[tuple[str, tuple[str, ...]]] | None:
        """(commit, parents) from `head` down its single parents until `ancestor` or a root, newest first; None
        past SHORT_WALK commits or at a merge: `git rev-list` answers those (~5 ms, against ~0.2 ms a commit
        read here from a pack)."""
        line: list[tuple[str, tuple[str, ...]]] = []
        commit: str | None = head
        while commit is not None and commit != ancestor:
            if len(line) == SHORT_WALK:
                return None
            parents = self.commit_info(commit).parents
            if len(parents) > 1:
                return None
            line.append((commit, parents))
            commit = parents[0] if parents else None
        return line

    def start_log(self, ancestor: str | None, head: str) -> None:
        """Start the `git log` of `head` that a `_rev_list(ancestor, head)` to come reads, now (the light sync
        does so the moment its fetch brought `head` in), unless `head` is a short line of commits down to
        `ancestor`: those are read here, with no git process."""
        if self._short_line(ancestor, head) is not None:
            return
        self.stop_logs()  # one at a time: a second start replaces the first
        self._started_log = (head, light_log.start(self.root, head))

    def stop_logs(self) -> None:
        """Stop (kill and reap) a `start_log` git that no walk took."""
        if self._started_log is not None:
            _, started = self._started_log
            self._started_log = None
            started.stop()

    def _rev_list(self, ancestor: str | None, head: str) -> list[tuple[str, tuple[str, ...]]]:
        """head's commits that `ancestor` lacks, with their parents, newest first."""
        key = (ancestor, head)
        if key not in self._between:
            found = self._walk(ancestor, head)
            self._between[key] = found if found is not None else self._exact(ancestor, head)
        return self._between[key]

    def _walk(self, ancestor: str | None, head: str) -> list[tuple[str, tuple[str, ...]]] | None:
        """`_rev_list` for a line of single-parent commits, read as git prints it (`light_log.walk`); None when
        the line meets a merge or ends without meeting `ancestor`: `_exact` answers those."""
        if self._started_log is not None and self._started_log[0] == head:
            _, started = self._started_log
            self._started_log = None
        else:
            started = light_log.start(self.root, head)
        try:
            return light_log.walk(started, ancestor)
        except light_log.UnexpectedLog as exc:
            raise NeedsFullStore(str(exc)) from None

    def _exact(self, ancestor: str | None, head: str) -> list[tuple[str, tuple[str, ...]]]:
        """`_rev_list` by one `git log head ^ancestor`."""
        try:
            return light_log.exact(self.root, ancestor, head)
        except light_log.UnexpectedLog as exc:
            raise NeedsFullStore(str(exc)) from None

    # -- worktrees -----------------------------------------------------------------------------------------
    def linked_worktrees(self) -> bool:
        """Whether git records any worktree besides the main one (the light store does not read them)."""
        try:
            with os.scandir(os.path.join(self.common_dir, "worktrees")) as entries:
                return any(entries)
        except (FileNotFoundError, NotADirectoryError):
            return False

    def main_worktree(self) -> Worktree:
        head_file = os.path.join(self.discovered_git_dir if self.discovered_git_dir == self.common_dir
                                 else self.common_dir, "HEAD")
        try:
            with open(head_file) as handle:
                text = handle.read().strip()
        except OSError:
            raise NeedsFullStore("no HEAD") from None
        branch = text[4:].strip() if text.startswith("ref:") else None
        head = self.read_ref(branch) if branch else (text if len(text) == 40 else None)
        return Worktree(self.root, head, True, branch)  # type: ignore[arg-type]  # a str path: see the class

    def list_worktrees(self) -> list[Worktree]:
        if self.linked_worktrees():
            raise NeedsFullStore("linked worktrees are read through pygit2")
        return [self.main_worktree()]

    def __getattr__(self, name: str) -> object:
        # Any other Store method: the ordinary path answers it. (Never reached once the light sync has moved
        # a ref: what it calls after that is above.)
        raise NeedsFullStore(f"the light store has no {name}")


def _short(oid: str | None) -> str:
    return oid[:8] if oid else "nothing"


class _Observing:
    """`LightStore.observing`'s body: `observer` (and `before`) see every ref update made meanwhile."""

    def __init__(self, store: LightStore, observer: Callable[[list[RefUpdate]], None],
                 before: Callable[[list[RefUpdate]], None] | None) -> None:
        self.store, self.observer, self.before = store, observer, before

    def __enter__(self) -> None:
        self.store._observers.append(self.observer)
        if self.before is not None:
            self.store._before.append(self.before)

    def __exit__(self, *_: object) -> None:
        self.store._observers.remove(self.observer)
        if self.before is not None:
            self.store._before.remove(self.before)
