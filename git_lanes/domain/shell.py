"""Shell lines as the shell sees them: every simple command a line runs, every file it writes, every
directory it moves to.

A line is parsed with tree-sitter's bash grammar, never matched as text, so a denied command cannot hide in
a pipeline, behind `&&`, `||` or `;`, in a subshell, `$(…)` or backticks, in `bash -c '…'`, a here-document
fed to a shell, `eval`, `alias`, behind `env X=1`, `sudo -iu root`, `xargs`, `flock`, `watch`… or in a
`find -exec` (what each program runs and writes is in `shell_programs`). Words are read as the shell passes
them: quotes removed, `$'\\x63url'` decoded, `c{u,}rl` brace-expanded. A program or a script the shell
computes at run time (`$CMD`, `bash -c "$X"`, `… | bash`, `/bin/c?rl`) cannot be judged and is refused, and
so is a line the parser cannot read fully: what we cannot see, we cannot admit.

Parser choice (measured on this project's machine): bashlex 0.18 builds its LALR tables on every import
(~200 ms: it vendors a PLY that no longer caches them) and cannot parse `[[ ]]`, `case`, `$(( ))`, arrays,
`time` or quoted here-documents, all common in agent commands; tree-sitter-bash imports in ~15 ms, parses in
microseconds and reads all of them. It is imported only when a shell line arrives."""

from __future__ import annotations

import posixpath

from git_lanes.domain import shell_programs as programs, shell_writes
from git_lanes.domain.shell_match import denies, matches
from git_lanes.domain.shell_words import Word, word_of, words_of
from git_lanes.errors import UserError
from git_lanes.model.frozen import Frozen

MAX_DEPTH = 8  # nested `bash -c` / eval levels
# Bounds on the work one line may ask for, so a check always ends well inside the hook's time (a CLI runs the
# tool when its hook times out): longer lines and lines of more commands are refused.
MAX_LINE_CHARS = 1 << 20
MAX_COMMANDS = 5000
WRITE_OPERATORS = {">", ">>", "&>", "&>>", ">|", "<>"}
HARMLESS_TARGETS = {"/dev/null", "/dev/stdout", "/dev/stderr", "/dev/tty"}
PIPE = "pipe"
# Write targets may use HOME and PWD, and `cd` follows CDPATH: a line that sets one makes it unknown.
SHELL_VARIABLES = ("HOME", "PWD", "CDPATH")

__all__ = ["Command", "ShellLine", "parse", "check", "matches", "denies"]


class Command(Frozen):
    """One simple command: its words as the shell passes them (an expansion stays as written), whether the
    allow list passes over it (`wrapper`: a wrapper whose wrapped command follows as another Command, or a
    command a project tool runs, whose whole line the allow list judged), and why what it runs cannot be
    known before it runs (`opaque`)."""

    argv: tuple[str, ...]
    wrapper: bool = False
    privileged: bool = False
    opaque: str | None = None

    @property
    def text(self) -> str:
        name = posixpath.basename(self.argv[0]) if self.argv else ""
        return " ".join((name, *self.argv[1:]))

    @property
    def dynamic(self) -> bool:
        return self.opaque is not None


class ShellLine(Frozen):
    commands: tuple[Command, ...]
    writes: tuple[str, ...]  # files written (redirections, cp/mv/tee/sed -i/…), as written
    directories: tuple[str, ...] = ()  # where `cd`/`pushd` move, in order: relative writes may land there
    sets: frozenset[str] = frozenset()  # of SHELL_VARIABLES, those the line assigns
    lanes: tuple[str, ...] = ()  # lanes whose workspaces a `git lanes` command rewrites (restore -w, lane reset…)
    unlinks: tuple[str, ...] = ()  # entries removed without following a symbolic link (`rm link`), as written


def unparsable(line: str, why: str) -> UserError:
    return UserError(f"cannot parse the shell line ({why}): {line[:200]}", code="unparsable_command",
                     hint="write it as plain shell the parser can read, or split it into simpler commands")


_parser = None


def _get_parser():
    global _parser
    if _parser is None:
        core, bash = _binding("tree_sitter"), _binding("tree_sitter_bash")
        _parser = core.Parser(core.Language(bash.language()))
    return _parser


def _binding(package: str):
    """`package._binding`, the compiled half of a tree-sitter package, loaded without running the package's
    `__init__`: those load `typing` and `importlib.resources` (for highlight queries we never use), over
    10 ms that every shell line's hook call would pay. Falls back to a plain import."""
    import sys

    name = f"{package}._binding"
    if name in sys.modules:
        return sys.modules[name]
    try:
        from importlib.machinery import EXTENSION_SUFFIXES
        from importlib.util import find_spec, module_from_spec, spec_from_file_location

        found = find_spec(package)  # locates the package without importing it
        for folder in (found.submodule_search_locations or []) if found else []:
            for suffix in EXTENSION_SUFFIXES:
                spec = spec_from_file_location(name, posixpath.join(folder, "_binding" + suffix))
                if spec is None or spec.loader is None or not posixpath.isfile(spec.origin or ""):
                    continue
                module = module_from_spec(spec)
                sys.modules[name] = module  # a later `import tree_sitter` reuses it, as Python's import would
                try:
                    spec.loader.exec_module(module)
                except BaseException:
                    del sys.modules[name]
                    raise
                return module
    except ImportError:
        pass
    import importlib

    return importlib.import_module(name)


class _Found:
    __slots__ = ("commands", "writes", "directories", "sets", "lanes", "unlinks", "vouched")

    def __init__(self) -> None:
        self.vouched = 0  # how many project tools (`uv run`…) the commands being found run beneath
        self.commands: list[Command] = []
        self.writes: list[str] = []
        self.directories: list[str] = []
        self.sets: set[str] = set()
        self.lanes: list[str] = []
        self.unlinks: list[str] = []


def parse(line: str, depth: int = 0) -> ShellLine:
    if len(line) > MAX_LINE_CHARS:
        raise unparsable(line, f"it is longer than {MAX_LINE_CHARS} characters, too long to check")
    found = _Found()
    try:
        _parse_into(line, depth, found)
    except RecursionError:
        raise unparsable(line, "it nests too deeply to check") from None
    return ShellLine(tuple(found.commands), tuple(found.writes), tuple(found.directories), frozenset(found.sets),
                     tuple(found.lanes), tuple(found.unlinks))


def _parse_into(line: str, depth: int, found: _Found) -> None:
    if not line.strip():
        raise unparsable(line, "it is empty")
    if depth > MAX_DEPTH:
        raise unparsable(line, f"more than {MAX_DEPTH} nested shells")
    tree = _get_parser().parse(line.encode("utf-8", "surrogateescape"))
    if tree.root_node.has_error:
        raise unparsable(line, "a syntax error")
    _walk(tree.root_node, found, depth, None)


def _walk(node, found: _Found, depth: int, stdin: Word | str | None) -> None:
    kind = node.type
    if kind == "pipeline":
        # A pipeline inside a here-document redirect starts with its `|`: every part reads the pipe then.
        first = node.children[0].type not in ("|", "|&")
        for child in node.children:
            if child.type in ("|", "|&"):
                continue
            _walk(child, found, depth, stdin if first else PIPE)
            first = False
        return
    if kind == "redirected_statement":
        body = node.child_by_field_name("body")
        fed = stdin
        for child in node.children:
            fed = _stdin_of(child) or fed
        for child in node.children:
            _walk(child, found, depth, fed if body is not None and child.id == body.id else None)
        return
    if kind == "command":
        _command(node, found, depth, _herestring(node) or stdin)
    elif kind in ("declaration_command", "unset_command"):
        _declaration(node, found, depth)
    elif kind == "variable_assignment":
        name, value = node.child_by_field_name("name"), node.child_by_field_name("value")
        if name is not None:
            _assignment(name.text.decode("utf-8", "surrogateescape"),
                        word_of(value) if value is not None else ("", False), found, depth)
    elif kind == "file_redirect":
        _redirect(node, found)
    for child in node.children:
        _walk(child, found, depth, None)


def _stdin_of(node) -> Word | str | None:
    """What a redirect feeds a command's standard input: a here-document's or here-string's text, PIPE for
    a process substitution, None for anything else."""
    if node.type == "heredoc_redirect":
        body = next((c for c in node.children if c.type == "heredoc_body"), None)
        if body is None:
            return None
        text = body.text.decode("utf-8", "surrogateescape")
        if any(c.type == "<<-" for c in node.children):
            text = "\n".join(line.lstrip("\t") for line in text.split("\n"))
        return text, any(c.type not in ("heredoc_content",) for c in body.children)
    if node.type == "herestring_redirect":
        target = next((c for c in node.children if c.type != "<<<"), None)
        return word_of(target) if target is not None else None
    if node.type == "file_redirect" and any(c.type == "<" for c in node.children):
        source = node.child_by_field_name("destination")
        if source is not None and source.type == "process_substitution":
            return PIPE
    return None


def _herestring(node) -> Word | None:
    for child in node.children:
        if child.type == "herestring_redirect":
            fed = _stdin_of(child)
            return fed if isinstance(fed, tuple) else None
    return None


def _command(node, found: _Found, depth: int, stdin: Word | str | None) -> None:
    name = node.child_by_field_name("name")
    if name is None:  # only assignments (X=1): nothing runs but what their values expand
        return
    parts = [name] + [child for index, child in enumerate(node.children)
                      if node.field_name_for_child(index) == "argument"]
    words = words_of(parts, program=True)
    if words is None:
        found.commands.append(Command((name.text.decode("utf-8", "surrogateescape"),),
                                      opaque="expands to more words than can be checked"))
        return
    _expand(words, found, depth, stdin)


def _declaration(node, found: _Found, depth: int) -> None:
    words = [word_of(child) for child in node.children if child.type not in ("variable_assignment",)]
    words = [w for w in words if w[0]]
    if words:
        _expand(words, found, depth, None)


def _assignment(name: str, value: Word, found: _Found, depth: int) -> None:
    """`NAME=value` (alone, before a command, after export/declare/env): a variable a write target uses, a
    command a program will run (GIT_SSH_COMMAND, EDITOR…), or a repository git will work on (GIT_DIR…)."""
    if name in SHELL_VARIABLES:
        found.sets.add(name)
    found.writes.extend(programs.variable_writes(name, value))
    inner = programs.variable_runs(name, value)
    if inner is not None:
        words = [(name, value[1])]
        if inner.opaque is not None:
            found.commands.append(Command(tuple(t for t, _ in words), opaque=inner.opaque))
        _follow(words, inner, found, depth, None)


def _expand(words: list[Word], found: _Found, depth: int, stdin: Word | str | None) -> None:
    """Record the command `words`, then whatever it runs in turn (a wrapped command, a script)."""
    program, dynamic = words[0]
    name = posixpath.basename(program)
    if dynamic:
        found.commands.append(Command(tuple(t for t, _ in words),
                                      opaque="runs a program computed at run time, which cannot be checked"))
        return
    inner = programs.runs(name, words, stdin)
    if len(found.commands) >= MAX_COMMANDS:
        raise unparsable(" ".join(t for t, _ in words), f"it runs more than {MAX_COMMANDS} commands, too many to check")
    found.commands.append(Command(tuple(t for t, _ in words),
                                  wrapper=inner is not None and inner.command is not None and
                                  name in programs.TRANSPARENT or found.vouched > 0,
                                  privileged=name in programs.PRIVILEGED,
                                  opaque=inner.opaque if inner is not None else None))
    found.writes.extend(shell_writes.writes(name, words, stdin))
    found.unlinks.extend(shell_writes.unlinks(name, words))
    found.lanes.extend(shell_writes.lanes(name, words))
    if name in ("cd", "pushd"):
        found.directories.append(programs.moved_to(name, words))
    moved = programs.wrapped_directory(name, words)
    if moved is not None:  # `env -C DIR cmd`, `sudo -D DIR cmd`: the command runs there
        found.directories.append(moved)
    if name == "env":
        for text, computed in words[1:]:
            variable, equals, value = text.partition("=")
            if equals and variable.isidentifier():
                _assignment(variable, (value, computed), found, depth)
    if inner is not None:
        _follow(words, inner, found, depth, None if name == "xargs" else stdin)


def _follow(words: list[Word], inner: programs.Runs, found: _Found, depth: int, stdin: Word | str | None) -> None:
    """What a command runs in turn: a command (a wrapper's), scripts (a shell's, eval's, git's…)."""
    if inner.vouched:
        found.vouched += 1
        try:
            _follow(words, programs.Runs(inner.command, inner.scripts, inner.opaque), found, depth, stdin)
        finally:
            found.vouched -= 1
        return
    if inner.command:
        _expand(inner.command, found, depth, stdin)
    for text, computed in inner.scripts:
        if not text.strip():  # `trap '' INT`, `alias x=`: runs nothing
            continue
        if computed:
            found.commands.append(Command(tuple(t for t, _ in words),
                                          opaque=f"runs a script computed at run time (`{text[:60]}`), which cannot "
                                                 "be checked; write the script out, in single quotes"))
            continue
        _parse_into(text, depth + 1, found)


def _redirect(node, found: _Found) -> None:
    operator = next((c.type for c in node.children if c.type in WRITE_OPERATORS or c.type == ">&"), None)
    destination = node.child_by_field_name("destination")
    if operator is None or destination is None:
        return
    if operator == ">&" and destination.type == "number":  # 2>&1: a descriptor, not a file
        return
    target = word_of(destination)[0]
    if target not in HARMLESS_TARGETS and not target.startswith("&"):
        found.writes.append(target)


# -- policy ---------------------------------------------------------------------------------------------------
def check(line: ShellLine, allow: tuple[str, ...] | None, deny: tuple[str, ...]) -> str | None:
    """Why the line may not run, or None. Deny wins over allow; no allow list admits all but the denied."""
    for command in line.commands:
        if command.opaque is not None:
            return f"`{command.text[:80]}` {command.opaque}"
        pattern = next((p for p in deny if denies(p, command.argv)), None)
        if pattern is not None:
            return f"`{command.text[:120]}` is denied by the command policy ({pattern!r})"
        if allow is not None and not command.wrapper and not any(matches(p, command.argv) for p in allow):
            return f"`{command.text[:120]}` is not in the command allow list"
    return None
