"""git's on-disk files read with the standard library: finding a repository from a directory, its linked
worktrees' pointers, and its config. Refs read and moved the same way are `ref_files.py`.

This is the light half of the storage layer, for the agent-hook path (DESIGN.md §6); everything else goes
through pygit2 in `repo.py`."""

from __future__ import annotations

import os

from git_lanes.errors import NotARepository, UserError

TYPE_CHECKING = False  # not `from typing import …`: neither the hook path nor the light sync loads typing
if TYPE_CHECKING:
    StrPath = str | os.PathLike[str]


class Location:
    """Where a directory sits in a repository: the worktree holding it, that worktree's git dir, the common
    git dir every worktree shares, and the main worktree's root. Plain strings, absolute and resolved: the
    paths that use them (hooks, the light sync) do not load pathlib."""

    __slots__ = ("worktree", "git_dir", "common_dir", "root")

    def __init__(self, worktree: str, git_dir: str, common_dir: str, root: str) -> None:
        self.worktree, self.git_dir, self.common_dir, self.root = worktree, git_dir, common_dir, root


def require_utf8_place(*folders: str) -> None:
    """Refuse a repository whose folders are not valid UTF-8, before anything is read or written there.

    git works in such a folder (it treats paths as bytes); git-lanes keeps paths as text: in the files that tie
    a workspace to the repository, in JSON records and output, and in what every face returns. It would fail
    half way (a lane's ref made, its workspace not), so it says so up front. Python reads such a folder's
    bytes as lone surrogates, which UTF-8 cannot encode: one encode per folder, cheap enough for the hooks."""
    for folder in folders:
        try:
            folder.encode("utf-8")
        except UnicodeEncodeError:
            shown = repr(folder.encode("utf-8", "surrogateescape"))[1:]
            raise UserError(f"the repository's folder {shown} is not valid UTF-8: git-lanes works only where "
                            "its paths are UTF-8 text", code="path_not_utf8",
                            hint="rename or move that folder to a UTF-8 name (e.g. `mv` it), then run again") \
                from None


def read_text(path: StrPath, errors: str | None = None) -> str:
    with open(path, errors=errors) as handle:
        return handle.read()


def named_git_dir(path: StrPath) -> str:
    """The git directory `path` names as GIT_DIR does: itself, or the one the gitfile at `path` points to
    (a linked worktree's `.git` file, which `git --git-dir=<worktree>/.git` accepts)."""
    if os.path.isfile(path):
        text = read_text(path, errors="replace").strip()
        if text.startswith("gitdir:"):
            return os.path.realpath(os.path.join(os.path.dirname(os.path.abspath(path)),
                                                 text[len("gitdir:"):].strip()))
    return os.path.realpath(path)


def discover(start: StrPath) -> Location:
    """The repository holding `start`, found as git does by walking up to a `.git` directory or file."""
    directory = os.path.realpath(start)
    while True:
        dot_git = os.path.join(directory, ".git")
        if os.path.isdir(dot_git):
            git_dir = dot_git
        elif os.path.isfile(dot_git):
            text = read_text(dot_git, errors="replace").strip()
            if not text.startswith("gitdir:"):
                raise NotARepository(f"{dot_git} is not a gitdir file")
            git_dir = os.path.realpath(os.path.join(directory, text[len("gitdir:"):].strip()))
        else:
            parent = os.path.dirname(directory)
            if parent == directory:
                break
            directory = parent
            continue
        common = git_dir
        commondir_file = os.path.join(git_dir, "commondir")
        if os.path.isfile(commondir_file):
            common = os.path.realpath(os.path.join(git_dir, read_text(commondir_file).strip()))
        root = main_root(common)
        require_utf8_place(directory, git_dir, common, root)
        return Location(directory, git_dir, common, root)
    raise NotARepository(f"not a git repository: {start}", hint="run the agent inside a lanes repository "
                                                               "(`git lanes init`)")


def main_root(common_dir: str) -> str:
    worktree = read_config(common_dir).get("core.worktree")
    if worktree:
        return os.path.realpath(os.path.join(common_dir, worktree))
    if os.path.basename(common_dir) != ".git":
        raise NotARepository(f"{common_dir} has no main worktree", code="bare_repository")
    return os.path.dirname(common_dir)


# -- linked worktrees -------------------------------------------------------------------------------------
# git marks a worktree it is still making with `locked: initializing`; git-lanes drafts its .git pointer under
# this name first (see worktree_add).
INITIALIZING = "initializing"
POINTER_DRAFT = ".git.lanes-draft"


def worktree_admin(path: str) -> str | None:
    """The private git dir (resolved) that the .git file of the worktree at `path` names; None without one."""
    named = _named_admin(path)
    return None if named is None else os.path.realpath(named)


def _named_admin(path: str) -> str | None:
    """The private git dir the .git file at `path` names, as written (normalised, links not followed)."""
    try:
        pointer = _read_small(os.path.join(path, ".git")).strip()
    except (OSError, ValueError):  # missing, a folder, unreadable, or not text
        return None
    if not pointer.startswith("gitdir: "):
        return None
    return os.path.normpath(os.path.join(path, pointer[len("gitdir: "):]))


def _read_small(path: str) -> str:
    """A file of one line that git writes (a worktree's pointers), without a text stream's set-up cost. A
    FIFO planted in its place answers at once (nothing), never holds the hook waiting for a writer."""
    descriptor = os.open(path, os.O_RDONLY | os.O_NONBLOCK)
    try:
        return os.read(descriptor, 1 << 16).decode()
    finally:
        os.close(descriptor)


def worktree_unfinished(path: str) -> bool:
    """A worktree at `path` that a killed creation left: its private git dir is missing or still marked."""
    if os.path.exists(os.path.join(path, POINTER_DRAFT)):
        return True
    if not os.path.isfile(os.path.join(path, ".git")):
        return False
    admin = worktree_admin(path)
    if admin is None or not os.path.isdir(admin):
        # A creation killed before its admin dir was renamed into place leaves the pointer alone in the
        # folder. With anything else there, it is someone's workspace whose record is elsewhere (a repository
        # moved by hand, a .git edited): broken, reported, and never cleared away.
        try:
            return set(os.listdir(path)) <= {".git", POINTER_DRAFT}
        except OSError:
            return False
    try:
        return read_text(os.path.join(admin, "locked")).strip() == INITIALIZING
    except (OSError, ValueError):
        return False


def worktree_problem(root: str, common_dir: str, path: str) -> str | None:
    """Why what stands at `path` (inside the main worktree `root`) is not the linked worktree git made for
    `path`; None when it is. A folder replaced by a symlink to another lane's workspace, or a `.git` pointing
    at another worktree, would make every command, and an agent's write gate, act on the wrong lane's files.
    A handful of system calls: the agent hooks ask on every tool call. All paths absolute; `root` resolved."""
    if path == root or path.startswith(root.rstrip(os.sep) + os.sep):
        folder = root
        for part in path[len(root):].strip(os.sep).split(os.sep):
            folder = os.path.join(folder, part)
            if os.path.islink(folder):
                return f"{folder} is a symbolic link (to {os.readlink(folder)}), not the lane's worktree"
    pointer = os.path.join(path, ".git")
    if not os.path.isdir(path):
        return f"{path} is not a folder"
    if os.path.isdir(pointer):
        return f"{path} holds a repository of its own, not a worktree of this one"
    if not os.path.isfile(pointer):
        return f"{path} has no .git file: its link to the repository is gone"
    # Compared as written first: a path equal as written is the same file, and realpath (a system call per
    # folder on the way) is paid only when they differ.
    admin = _named_admin(path)
    worktrees = os.path.join(common_dir, "worktrees")
    if admin is None or not (os.path.dirname(admin) == worktrees and not os.path.islink(admin)
                             or os.path.dirname(os.path.realpath(admin)) == os.path.realpath(worktrees)):
        return f"{path}/.git does not point at a worktree of this repository"
    try:
        recorded = _read_small(os.path.join(admin, "gitdir")).strip()
    except (OSError, ValueError):
        recorded = ""
    if not recorded:
        return None if worktree_unfinished(path) else f"git has no record of the worktree {path}/.git points at"
    if recorded != pointer and os.path.realpath(recorded) != os.path.realpath(pointer):
        return f"{path}/.git belongs to the worktree at {os.path.dirname(recorded)}"
    return None


# -- config -----------------------------------------------------------------------------------------------
# Keyed on the file's identity, not its mtime alone: git rewrites a config file by renaming a new one into
# place, and two rewrites within one tick of the file system's clock keep the same mtime.
_config_cache: dict[str, tuple[tuple[int, int, int, int], dict[str, str]]] = {}


def read_config(common_dir: StrPath) -> dict[str, str]:
    """The repository's own config file as `section.key` (or `section.subsection.key`) -> last value.
    Sections and keys are lower-cased as git compares them; includes are not followed."""
    return _read_config_file(os.path.join(common_dir, "config"))


def read_config_levels(common_dir: StrPath) -> dict[str, str]:
    """Every config file git reads for this repository, later levels winning: system (`GIT_CONFIG_SYSTEM`,
    none under `GIT_CONFIG_NOSYSTEM`), global (`GIT_CONFIG_GLOBAL`, else the XDG file and `~/.gitconfig`),
    then the repository's own. Read as `read_config` reads one file (includes are not followed)."""
    environ = os.environ
    files: list[str] = []
    if not environ.get("GIT_CONFIG_NOSYSTEM"):
        files.append(environ.get("GIT_CONFIG_SYSTEM") or "/etc/gitconfig")
    if "GIT_CONFIG_GLOBAL" in environ:
        files += [environ["GIT_CONFIG_GLOBAL"]] if environ["GIT_CONFIG_GLOBAL"] else []
    else:
        files += config_files_beneath_home()
    merged: dict[str, str] = {}
    for path in files:
        try:
            merged.update(_read_config_file(path))
        except OSError:
            continue  # a file we may not read costs only its settings, never the write
    merged.update(read_config(common_dir))
    return merged


# git_config_int's range (a C int): what git allows the settings read here (`git config --type=int` reads an
# int64: pass 2 ** 63 - 1 to match it)
INT_MAX = 2 ** 31 - 1
_UNITS = {"": 1, "k": 1 << 10, "m": 1 << 20, "g": 1 << 30}


def config_int(value: str | None, maximum: int = INT_MAX) -> int | None:
    """An integer config value as git parses one (git_parse_signed: strtoimax in base 0, then a unit):
    leading white space, a sign, `0x` hex, `0` octal or decimal digits, then nothing or one of k, m, g in
    either case, within -maximum..maximum once scaled. None where git refuses it ("bad numeric config
    value", and so refuses to run): the caller falls back to its default, since a setting only tunes."""
    if value is None:
        return None
    text = value.lstrip(" \t\n\v\f\r")
    sign = text[:1] if text[:1] in ("+", "-") else ""
    rest = text[len(sign):]
    if rest[:2] in ("0x", "0X"):
        base, allowed, rest = 16, "0123456789abcdefABCDEF", rest[2:]
    elif rest[:1] == "0":
        base, allowed = 8, "01234567"
    else:
        base, allowed = 10, "0123456789"
    unit = rest.lstrip(allowed)  # what strtoimax leaves: "" or the unit, else git refuses the value
    digits = rest[:len(rest) - len(unit)]
    factor = _UNITS.get(unit.lower())
    if not digits or factor is None:
        return None
    found = int(sign + digits, base)
    if abs(found) > maximum // factor:  # git's check: it truncates towards zero on either side
        return None
    return found * factor


def config_files_beneath_home() -> list[str]:
    """The global config files git reads when `GIT_CONFIG_GLOBAL` is not set: the XDG one, then ~/.gitconfig."""
    home = os.path.expanduser(os.environ.get("HOME", "~")) or "."
    xdg = os.environ.get("XDG_CONFIG_HOME") or os.path.join(home, ".config")
    return [os.path.join(xdg, "git", "config"), os.path.join(home, ".gitconfig")]


def _read_config_file(path: str) -> dict[str, str]:
    try:
        found = os.stat(path)
    except FileNotFoundError:
        return {}
    stamp = (found.st_mtime_ns, found.st_ctime_ns, found.st_size, found.st_ino)
    cached = _config_cache.get(path)
    if cached and cached[0] == stamp:
        return cached[1]
    values = parse_config(read_text(path, errors="replace"))
    _config_cache[path] = (stamp, values)
    return values


def parse_config(text: str) -> dict[str, str]:
    values: dict[str, str] = {}
    section = ""
    for raw in text.splitlines():
        line = raw.strip()
        if not line or line[0] in "#;":
            continue
        if line.startswith("["):
            header = line[1:line.index("]")] if "]" in line else line[1:]
            name, _, sub = header.partition(" ")
            sub = sub.strip()
            section = name.lower() + (("." + sub[1:-1].replace('\\"', '"')) if sub.startswith('"') else
                                      ("." + sub.lower() if sub else ""))
            rest = line[line.index("]") + 1:].strip() if "]" in line else ""
            if not rest:
                continue
            line = rest
        key, sep, value = line.partition("=")
        values[f"{section}.{key.strip().lower()}"] = _config_value(value) if sep else "true"
    return values


def _config_value(raw: str) -> str:
    out, quoted, index, kept = [], False, 0, 0  # kept: up to where white space is not an unquoted tail
    raw = raw.strip()
    while index < len(raw):
        char = raw[index]
        if char == '"':
            quoted = not quoted
        elif char == "\\" and index + 1 < len(raw):
            index += 1
            out.append({"n": "\n", "t": "\t", "b": "\b"}.get(raw[index], raw[index]))
            kept = len(out)
        elif char in "#;" and not quoted:
            break
        else:
            out.append(char)
            if quoted or not char.isspace():
                kept = len(out)
        index += 1
    # git drops white space at the end only outside quotes: `"1k "` keeps its space (and git refuses it as
    # a number), `1k  # note` does not
    return "".join(out[:kept])
