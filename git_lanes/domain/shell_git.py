"""What a `git` command runs and writes, for the shell-line analysis (`domain/shell.py`).

git runs shell commands of its own that a line names only as configuration: an alias (`git -c
alias.x='!CMD' x`), a command-valued key (`core.fsmonitor`, `core.sshCommand`, `diff.external`, a filter's
`clean`…) given with `-c` or written with `git config`, `--upload-pack`/`--receive-pack`. Those commands are
judged as the shell lines they are. And git writes more than the worktree it runs in: refs, config and
worktrees shared by every lane (`update-ref`, `branch -f`, `push .`, `config`, `worktree remove`…), which
count as writes into the repository's git directory (`<dir>/.git`), and files named by `-o`/`--output`."""

from __future__ import annotations

import posixpath

from git_lanes.domain import shell_lanes

Word = tuple[str, bool]

# git subcommands that change neither the worktree nor the repository (run with -C DIR, they may go anywhere).
READS = {"status", "diff", "log", "show", "blame", "grep", "ls-files", "ls-tree", "rev-parse", "rev-list",
         "describe", "shortlog", "cat-file", "show-ref", "for-each-ref", "fetch", "help", "version", "name-rev",
         "merge-base", "var", "check-ignore", "check-attr", "count-objects", "fsck", "whatchanged", "range-diff",
         "reflog", "lanes", "diff-tree", "diff-index", "diff-files", "show-branch", "cherry", "verify-commit",
         "verify-tag", "archive", "bundle", "format-patch", "request-pull", "annotate"}
VALUED = {"-C", "-c", "--git-dir", "--work-tree", "--namespace", "--exec-path", "--super-prefix", "--config-env"}
# Subcommands that change what every lane shares (refs, config, worktrees, the object store's history).
SHARED = {"update-ref", "symbolic-ref", "replace", "notes", "config", "remote", "worktree", "reflog", "gc", "prune",
          "repack", "pack-refs", "maintenance", "filter-branch", "filter-repo"}
# Options that move or delete refs other than the worktree's own HEAD.
MOVES_REFS = {"branch": {"-f", "--force", "-d", "-D", "--delete", "-m", "-M", "--move", "-c", "-C", "--copy",
                         "-u", "--set-upstream-to", "--unset-upstream", "--edit-description"},
              "tag": {"-f", "--force", "-d", "--delete"},
              "checkout": {"-B"}, "switch": {"-C", "--force-create"}}
# Configuration whose value git runs as a shell command (or, for hooksPath, whose scripts it runs).
COMMAND_KEYS = {"core.fsmonitor", "core.sshcommand", "core.pager", "core.editor", "core.askpass", "core.gitproxy",
                "core.alternaterefscommand", "diff.external", "sequence.editor", "gpg.program",
                "gpg.ssh.program", "gpg.x509.program", "gpg.openpgp.program", "credential.helper",
                "uploadpack.packobjectshook", "sendemail.tocmd", "sendemail.cccmd", "sendemail.sendmailcmd",
                "web.browser", "instaweb.httpd", "man.viewer", "gpg.ssh.defaultkeycommand"}
COMMAND_SUFFIXES = (".textconv", ".command", ".cmd", ".driver", ".clean", ".smudge", ".process")
# Options whose value git runs as a shell command, per subcommand.
PROGRAM_OPTIONS = {"clone": {"-u", "--upload-pack"}, "fetch": {"--upload-pack"}, "pull": {"--upload-pack"},
                   "ls-remote": {"--upload-pack"}, "push": {"--receive-pack", "--exec"}, "archive": {"--exec"},
                   "rebase": {"-x", "--exec"}, "difftool": {"-x", "--extcmd"},
                   "filter-branch": {"--tree-filter", "--index-filter", "--msg-filter", "--commit-filter",
                                     "--env-filter", "--parent-filter", "--tag-name-filter"}}
READ_CONFIG = {"--get", "--get-all", "--get-regexp", "--get-urlmatch", "--get-color", "--get-colorbool", "--list",
               "-l", "get", "list", "--show-origin", "--show-scope", "--name-only"}


class GitLine:
    """What one git command does beyond itself: scripts it runs (words to parse as shell lines), a git
    command an alias stands for, why what it runs cannot be known (`opaque`), and the files it writes."""

    __slots__ = ("scripts", "command", "opaque", "writes", "lanes")

    def __init__(self) -> None:
        self.scripts: list[Word] = []
        self.command: list[Word] | None = None
        self.opaque: str | None = None
        self.writes: list[str] = []
        self.lanes: list[str] = []  # lanes whose workspaces a `git lanes` command rewrites, by name


def analyse(args: list[Word]) -> GitLine:
    """`git args…`: what it runs and writes."""
    found = GitLine()
    places, git_dirs, aliases, index = [], [], {}, 0
    while index < len(args):
        text, dynamic = args[index]
        name, equals, value = text.partition("=")
        if name in VALUED:
            word = (value, dynamic) if equals else (args[index + 1] if index + 1 < len(args) else ("", False))
            index += 1 if equals else 2
            if name == "-C" or name == "--work-tree":
                places.append(word[0])
            elif name == "--git-dir":
                git_dirs.append(word[0])
            elif name == "-c":
                _setting(word, found, aliases)
            elif name in ("--config-env", "--exec-path"):
                found.opaque = f"takes {name} from the environment, which cannot be checked"
            continue
        if not text.startswith("-"):
            break
        index += 1
    subcommand = args[index][0] if index < len(args) else None
    rest = args[index + 1:]
    if subcommand is None:
        return found
    if subcommand.lower() in aliases:
        value, dynamic = aliases[subcommand.lower()]
        if value.startswith("!"):
            found.scripts.append((" ".join([value[1:], *(t for t, _ in rest)]), dynamic or any(d for _, d in rest)))
            return found
        import shlex  # only for a line that defines a git alias: shell lines load nothing they do not use

        try:
            found.command = [("git", False), *((w, dynamic) for w in shlex.split(value)), *rest]
        except ValueError:
            found.opaque = "has an alias whose words cannot be read"
        return found
    programs = PROGRAM_OPTIONS.get(subcommand, set())
    found.scripts += [word for option, word in _options(rest) if option in programs]
    if subcommand == "bisect" and rest[:1] == [("run", False)] and len(rest) > 1:
        found.command = rest[1:]
    elif subcommand == "submodule" and ("foreach", False) in rest:
        after = rest[rest.index(("foreach", False)) + 1:]
        after = [w for w in after if w[0] not in ("--recursive", "-q", "--quiet")]
        found.scripts.append((" ".join(t for t, _ in after), any(d for _, d in after)))
    found.writes += _outputs(subcommand, rest)
    shared = git_dirs or [posixpath.join(place, ".git") for place in places or ["."]]
    if subcommand == "config" and not _lists(subcommand, rest):
        _config(rest, found, aliases)
        found.writes += _config_file(rest) or shared
    elif subcommand == "push" and _local_remote(rest):
        remote = _local_remote(rest)
        found.writes += shared if remote == "." else [remote]
    elif subcommand in SHARED and not _lists(subcommand, rest) or _moves_refs(subcommand, rest):
        found.writes += shared
    elif subcommand == "lanes":
        found.lanes += shell_lanes.rewritten(rest)
        if shell_lanes.writes_here(rest):
            found.writes += places or ["."]
        if shell_lanes.writes_shared(rest):
            found.writes += shared
    elif subcommand == "clone":
        operands = [t for t, _ in rest if not t.startswith("-")]
        found.writes += operands[1:2] or ["."]
    elif subcommand == "init":
        valued = {"-b", "--initial-branch", "--template", "--separate-git-dir", "--object-format", "--ref-format"}
        operands = [t for index, (t, _) in enumerate(rest)
                    if not t.startswith("-") and (index == 0 or rest[index - 1][0] not in valued)]
        found.writes += operands[:1] or places or ["."]
    elif subcommand not in READS and not _lists(subcommand, rest):
        # With --git-dir it also writes that repository's index, HEAD and refs (`reset --hard` moves its branch).
        found.writes += (places or ["."]) + git_dirs
    return found


def _setting(word: Word, found: GitLine, aliases: dict[str, Word]) -> None:
    """One `-c key=value`: an alias to expand, or a command git will run."""
    key, _, value = word[0].partition("=")
    key = key.lower()
    if key.startswith("alias."):
        aliases[key[len("alias."):]] = (value, word[1])
    elif key == "core.hookspath":
        found.opaque = "points git's hooks at a directory whose scripts cannot be checked"
    elif key in COMMAND_KEYS or key.startswith("pager.") or key.endswith(COMMAND_SUFFIXES):
        found.scripts.append((value[1:] if value.startswith("!") else value, word[1]))


def _config(rest: list[Word], found: GitLine, aliases: dict[str, Word]) -> None:
    """`git config [scope] KEY VALUE` (or `git config set KEY VALUE`): a command it stores is judged now."""
    words = [w for w in rest if not w[0].startswith("-")]
    if words[:1] and words[0][0] in ("set", "get", "list", "unset", "rename-section", "remove-section", "edit"):
        if words[0][0] != "set":
            return
        words = words[1:]
    if any(w[0] in READ_CONFIG for w in rest) or len(words) < 2:
        return
    _setting((f"{words[0][0]}={words[1][0]}", words[0][1] or words[1][1]), found, aliases)
    for name, (value, dynamic) in aliases.items():
        found.scripts.append((value[1:] if value.startswith("!") else "git " + value, dynamic))


def _config_file(rest: list[Word]) -> list[str]:
    """The file `git config --global/--system/--file F` writes (None: the repository's own config)."""
    for index, (text, _) in enumerate(rest):
        if text == "--global":
            return ["~/.gitconfig"]
        if text == "--system":
            return ["/etc/gitconfig"]
        if text in ("-f", "--file") and index + 1 < len(rest):
            return [rest[index + 1][0]]
        if text.startswith("--file="):
            return [text[len("--file="):]]
    return []


def _local_remote(rest: list[Word]) -> str | None:
    """The repository `git push` writes when it is a path on this machine (`.` is this repository)."""
    operands = [t for t, _ in rest if not t.startswith("-")]
    if operands and (operands[0] == "." or operands[0].startswith(("/", "./", "../", "~/"))):
        return operands[0]
    if operands and operands[0].startswith("file://"):
        return operands[0][len("file://"):]
    return None


def _options(rest: list[Word]) -> list[tuple[str, Word]]:
    out = []
    for index, (text, dynamic) in enumerate(rest):
        name, equals, value = text.partition("=")
        if equals and name.startswith("--"):
            out.append((name, (value, dynamic)))
        elif text.startswith("-") and index + 1 < len(rest):
            out.append((text, rest[index + 1]))
    return out


def _outputs(subcommand: str, rest: list[Word]) -> list[str]:
    """Files git writes besides the worktree: `--output`, `-o` of archive and format-patch, a bundle,
    checkout-index's `--prefix` (where it checks the files out), a separate git dir."""
    written = [word[0] for option, word in _options(rest)
               if option in ("--output", "--output-directory") or
               (option == "-o" and subcommand in ("archive", "format-patch")) or
               (option == "--prefix" and subcommand == "checkout-index") or
               (option == "--separate-git-dir" and subcommand in ("init", "clone"))]
    if subcommand == "bundle" and len(rest) > 1 and rest[0][0] == "create":
        written.append(rest[1][0])
    if subcommand == "format-patch" and not written and "--stdout" not in [t for t, _ in rest]:
        written.append(".")  # its patch files land where it runs
    return written


def _lists(subcommand: str, rest: list[Word]) -> bool:
    """`git branch`, `tag`, `remote`, `stash`, `worktree`, `config`, `notes`… when they only list or show."""
    words = [t for t, _ in rest]
    if subcommand in ("branch", "tag"):
        return not words or all(w.startswith("-") and w in ("-a", "-r", "-v", "-vv", "-l", "--list", "--all",
                                                             "--remotes", "--show-current", "--contains",
                                                             "--merged", "--no-merged") for w in words)
    if subcommand in ("remote", "notes"):  # bare `git stash` stashes, bare `git remote` lists
        return not words or words[0] in ("-v", "--verbose", "list", "show", "get-url")
    if subcommand in ("stash", "worktree", "submodule"):
        return words[:1] in (["list"], ["show"], ["status"])
    if subcommand == "config":
        changes = {"--unset", "--unset-all", "--add", "--replace-all", "--rename-section", "--remove-section", "-e",
                   "--edit", "set", "unset", "rename-section", "remove-section", "edit"}
        if changes & set(words):
            return False
        return any(w in READ_CONFIG for w in words) or len([w for w in words if not w.startswith("-")]) < 2
    if subcommand == "symbolic-ref":
        return len([w for w in words if not w.startswith("-")]) < 2 and not {"-d", "--delete"} & set(words)
    if subcommand in ("replace", "reflog"):
        return not words or words[0] in ("-l", "--list", "show", "exists")
    return False


def _moves_refs(subcommand: str, rest: list[Word]) -> bool:
    """A ref other than this worktree's HEAD moves: `branch -f`, `tag -d`, `checkout -B`, `fetch . A:B`."""
    words = [t for t, _ in rest]
    flags = MOVES_REFS.get(subcommand)
    if flags is not None:
        return any(w.split("=", 1)[0] in flags or (w.startswith("-") and not w.startswith("--") and
                                                   any("-" + c in flags for c in w[1:])) for w in words)
    if subcommand == "fetch":  # a refspec with a destination writes a local ref: `git fetch . HEAD:main`
        operands = [w for w in words if not w.startswith("-")]
        return any(":" in w and not w.endswith(":") for w in operands[1:])
    return False
