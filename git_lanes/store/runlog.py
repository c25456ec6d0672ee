"""Run logs (DESIGN.md §1, §6): `refs/lanes/runs/<run>` is a chain of commits, one per event. A commit's
message is a one-line summary and the event as JSON (so `git log refs/lanes/runs/<run>` reads as the run's
timeline); its tree holds `state.json`, the fold of the log up to that event, so a hook checks a budget by
reading one blob instead of replaying the log.

Appends take the runs' flock (check and charge happen inside it, against the state the log folds to) and
move the ref by compare-and-swap with git's lock protocol. Written with our own object writer: no pygit2."""

from __future__ import annotations

import json
import os
from contextlib import contextmanager
from pathlib import Path

from git_lanes.errors import UnsupportedFormat
from git_lanes.model.refs import RUNS
from git_lanes.store import lock, ref_files
from git_lanes.store.objects import ObjectStore, encode_commit, encode_tree, parse_commit, parse_tree

TYPE_CHECKING = False  # names for annotations only: the hook path loads nothing for them
if TYPE_CHECKING:
    from collections.abc import Iterator
    from typing import Any

STATE_FILE = "state.json"
BLOB_MODE = 0o100644
LOCK_FILE = "lanes-runs.lock"
FILES_DIR = "lanes-runs"  # per-run files that are not history: agent logs, prompts
PARSED_CONFIG = "lanes-config.json"  # the trunk's `.lanes.toml` as JSON, keyed by its blob id
NOTE_COSTS = "lanes-note-costs.json"  # what the hooks' budget check drew from the notes, keyed by the notes tree
TREE_MODE = 0o040000


class RunLog:
    """The run logs of one repository, seen from its common git dir."""

    def __init__(self, common_dir: Path) -> None:
        self.common_dir = common_dir
        self.objects = ObjectStore(common_dir / "objects")

    @contextmanager
    def locked(self) -> Iterator[None]:
        with lock.exclusive(self.common_dir / LOCK_FILE):
            yield

    def ref(self, run: str) -> str:
        return RUNS + run

    def files(self, run: str) -> Path:
        """The run's folder of local files (its agents' output, its prompts), beside the repository's refs."""
        return self.common_dir / FILES_DIR / run

    def remove_files(self, run: str) -> None:
        """Delete the run's local files (its agents' output, its prompts), as gc does once it pruned the run's
        log: nothing would name them any more."""
        import shutil  # only gc removes them: the hook path does not load it

        shutil.rmtree(self.files(run), ignore_errors=True)

    def runs(self) -> dict[str, str]:
        """run id -> head commit, for every run log here."""
        return {name[len(RUNS):]: oid for name, oid in ref_files.list_refs(self.common_dir, RUNS).items()}

    def runs_touched_since(self, since: float) -> dict[str, str]:
        """Runs whose log may have grown at or after `since` (by the ref files' times): the others are
        known not to have changed since then without reading them."""
        return {name[len(RUNS):]: oid for name, oid in
                ref_files.refs_touched_since(self.common_dir, RUNS, since).items()}

    def parsed_config(self, blob: str) -> dict[str, Any] | None:
        """The parsed `.lanes.toml` of blob `blob`, as a hook call saved it (`save_parsed_config`), or None.
        Keyed by the blob's id, so a new policy on the trunk is never read from a stale copy."""
        try:
            saved = json.loads((self.common_dir / PARSED_CONFIG).read_bytes())
        except (OSError, ValueError, RecursionError):
            return None
        if isinstance(saved, dict) and saved.get("blob") == blob and isinstance(saved.get("data"), dict):
            data: dict[str, Any] = saved["data"]
            return data
        return None

    def save_parsed_config(self, blob: str, data: dict[str, Any]) -> None:
        """Keep the parsed policy for the next calls: the TOML parser costs a hook call ~6 ms of imports, JSON
        nothing. Best effort (a copy that cannot be written is parsed again next time); written to a
        temporary file and renamed, so a reader sees a whole copy or none."""
        try:
            text = json.dumps({"blob": blob, "data": data}, ensure_ascii=False, allow_nan=True)
        except (TypeError, ValueError):
            return  # TOML dates have no JSON form: such a file is parsed on every call
        self._save_whole(PARSED_CONFIG, text)

    def note_costs(self) -> dict[str, Any] | None:
        """What `save_note_costs` kept, or None: a copy that cannot be read is drawn from the notes again."""
        try:
            saved = json.loads((self.common_dir / NOTE_COSTS).read_bytes())
        except (OSError, ValueError, RecursionError):
            return None
        return saved if isinstance(saved, dict) else None

    def save_note_costs(self, data: dict[str, Any]) -> None:
        """Keep what the budget check drew from the notes, so the next call reads only the notes that changed
        since. Best effort, whole or not at all, as `save_parsed_config`."""
        self._save_whole(NOTE_COSTS, json.dumps(data, ensure_ascii=False))

    def notes_changed(self, old_tree: str | None, new_tree: str | None) -> tuple[dict[str, str], list[str]]:
        """Between two notes trees (any fanout): {annotated object: note blob} of the notes added or changed,
        and the annotated objects whose note went. Subtrees that did not change are not read."""
        changed: dict[str, str] = {}
        gone: list[str] = []

        def walk(old: str | None, new: str | None, prefix: str) -> None:
            before = parse_tree(self.objects.read_typed(old, b"tree")) if old else {}
            after = parse_tree(self.objects.read_typed(new, b"tree")) if new else {}
            for name in before.keys() | after.keys():
                was, now = before.get(name), after.get(name)
                if was == now:
                    continue
                old_sub = was[1] if was is not None and was[0] == TREE_MODE else None
                new_sub = now[1] if now is not None and now[0] == TREE_MODE else None
                if old_sub is not None or new_sub is not None:  # a fanout level
                    walk(old_sub, new_sub, prefix + name)
                if was is not None and old_sub is None and (now is None or new_sub is not None):
                    gone.append(prefix + name)
                if now is not None and new_sub is None:
                    changed[prefix + name] = now[1]

        walk(old_tree, new_tree, "")
        return changed, gone

    def _save_whole(self, name: str, text: str) -> None:
        target = self.common_dir / name
        temporary = target.with_name(f"{name}.{os.getpid()}.tmp")
        try:
            temporary.write_text(text, encoding="utf-8")
            os.replace(temporary, target)
        except OSError:
            try:
                temporary.unlink()
            except OSError:
                pass

    def head(self, run: str) -> str | None:
        return ref_files.read_ref(self.common_dir, self.ref(run))

    def state_at(self, commit: str) -> bytes:
        """The `state.json` blob of event commit `commit`."""
        headers, _ = parse_commit(self.objects.read_typed(commit, b"commit"))
        tree = parse_tree(self.objects.read_typed(headers["tree"][0], b"tree"))
        entry = tree.get(STATE_FILE)
        if entry is None:
            raise UnsupportedFormat(f"run commit {commit[:8]} has no {STATE_FILE}",
                                    hint="the run log was written by something else; see `git log` of it")
        return self.objects.read_typed(entry[1], b"blob")

    def commits(self, head: str) -> Iterator[tuple[str, str]]:
        """(commit, message) from `head` back to the first event, following first parents."""
        commit: str | None = head
        while commit is not None:
            headers, message = parse_commit(self.objects.read_typed(commit, b"commit"))
            yield commit, message
            parents = headers.get("parent") or []
            commit = parents[0] if parents else None

    def append(self, run: str, old: str | None, state: bytes, message: str, identity: str, when: float) -> str:
        """Write one event commit on top of `old` and move the run's ref to it by compare-and-swap.
        Call inside `locked()`; Conflict when the ref is no longer at `old`."""
        blob = self.objects.write(b"blob", state)
        tree = self.objects.write(b"tree", encode_tree({STATE_FILE: (BLOB_MODE, blob)}))
        stamp = f"{identity} {int(when)} +0000"
        commit = self.objects.write(b"commit", encode_commit(tree, [old] if old else [], stamp, stamp, message))
        ref_files.update_ref(self.common_dir, self.ref(run), commit, old, message.split("\n", 1)[0],
                            identity, when)
        return commit
