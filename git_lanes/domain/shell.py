"""Shell lines as the shell sees them: every simple command a line runs and every file it writes.

A line is parsed with tree-sitter's bash grammar, never matched as text, so a denied command cannot hide in
a pipeline, behind `&&`, `||` or `;`, in a subshell, `$(…)` or backticks, in `bash -c '…'`/`sh -c`/`eval`,
behind `env X=1`, `sudo`, `xargs`, `nohup`, `timeout`…, or in a `find -exec`. A line the parser cannot read
fully is refused: what we cannot see, we cannot admit.

Parser choice (measured on this project's machine): bashlex 0.18 builds its LALR tables on every import
(~200 ms: it vendors a PLY that no longer caches them) and cannot parse `[[ ]]`, `case`, `$(( ))`, arrays,
`time` or quoted here-documents, all common in agent commands; tree-sitter-bash imports in ~15 ms, parses in
microseconds and reads all of them. It is imported only when a shell line arrives."""

from __future__ import annotations

import posixpath
from dataclasses import dataclass
from fnmatch import fnmatchcase

from git_lanes.errors import UserError

MAX_DEPTH = 8  # nested `bash -c` / eval levels
SHELLS = {"bash", "sh", "zsh", "dash", "ksh", "mksh", "ash", "busybox"}
# Wrappers that run the rest of their arguments as a command without changing who runs it: an allow list
# judges the command they wrap. `sudo` and `doas` change who runs it, so they are judged themselves too.
TRANSPARENT = {"env", "command", "builtin", "exec", "nohup", "nice", "time", "timeout", "stdbuf", "xargs",
               "setsid", "ionice", "chrt", "unbuffer"}
PRIVILEGED = {"sudo", "doas"}
# Options of wrappers that take a value, so the value is not mistaken for the wrapped command.
VALUED = {
    "env": {"-u", "--unset", "-C", "--chdir", "-S", "--split-string"},
    "sudo": {"-u", "-g", "-p", "-C", "-h", "-U", "-r", "-t", "-D", "-R", "-T", "--user", "--group"},
    "doas": {"-u", "-C"},
    "xargs": {"-I", "-n", "-L", "-P", "-s", "-d", "-E", "-a", "-i", "--max-args", "--max-procs",
              "--delimiter", "--arg-file", "--replace", "--max-lines", "--eof"},
    "nice": {"-n", "--adjustment"},
    "timeout": {"-s", "--signal", "-k", "--kill-after"},
    "stdbuf": {"-i", "-o", "-e"},
    "ionice": {"-c", "-n", "-p"},
    "command": set(), "builtin": set(), "exec": {"-a"}, "nohup": set(), "time": {"-f", "-o"},
    "setsid": set(), "chrt": set(), "unbuffer": set(),
}
WRITE_OPERATORS = {">", ">>", "&>", "&>>", ">|", "<>"}
HARMLESS_TARGETS = {"/dev/null", "/dev/stdout", "/dev/stderr", "/dev/tty"}


@dataclass(frozen=True)
class Command:
    """One simple command: its words, unquoted (an expansion stays as written), and whether it is a wrapper
    whose wrapped command follows as another Command."""

    argv: tuple[str, ...]
    wrapper: bool = False
    privileged: bool = False

    @property
    def text(self) -> str:
        name = posixpath.basename(self.argv[0]) if self.argv else ""
        return " ".join((name, *self.argv[1:]))

    @property
    def dynamic(self) -> bool:
        """The program to run is computed when the line runs ($CMD, $(…)): nothing can be judged."""
        return bool(self.argv) and ("$" in self.argv[0] or "`" in self.argv[0])


@dataclass(frozen=True)
class ShellLine:
    commands: tuple[Command, ...]
    writes: tuple[str, ...]  # redirection targets and `tee` files, as written


def unparsable(line: str, why: str) -> UserError:
    return UserError(f"cannot parse the shell line ({why}): {line[:200]}", code="unparsable_command",
                     hint="write it as plain shell the parser can read, or split it into simpler commands")


_parser = None


def _get_parser():
    global _parser
    if _parser is None:
        import tree_sitter
        from tree_sitter_bash import _binding

        _parser = tree_sitter.Parser(tree_sitter.Language(_binding.language()))
    return _parser


def parse(line: str, depth: int = 0) -> ShellLine:
    if not line.strip():
        raise unparsable(line, "it is empty")
    if depth > MAX_DEPTH:
        raise unparsable(line, f"more than {MAX_DEPTH} nested shells")
    tree = _get_parser().parse(line.encode("utf-8", "surrogateescape"))
    if tree.root_node.has_error:
        raise unparsable(line, "a syntax error")
    commands: list[Command] = []
    writes: list[str] = []
    _walk(tree.root_node, commands, writes, depth)
    return ShellLine(tuple(commands), tuple(writes))


def _walk(node, commands: list[Command], writes: list[str], depth: int) -> None:
    kind = node.type
    if kind in ("command", "declaration_command", "unset_command"):
        _command(node, commands, writes, depth)
    elif kind == "file_redirect":
        _redirect(node, writes)
    for child in node.children:
        _walk(child, commands, writes, depth)


def _command(node, commands: list[Command], writes: list[str], depth: int) -> None:
    if node.type == "command":
        name = node.child_by_field_name("name")
        if name is None:  # only assignments (X=1): nothing runs but what their values expand
            return
        argv = [_word(name)] + [_word(child) for index, child in enumerate(node.children)
                                if node.field_name_for_child(index) == "argument"]
    else:
        argv = [_word(child) for child in node.children if child.type not in ("variable_assignment",)]
        argv = [a for a in argv if a]
    _expand(tuple(argv), commands, writes, depth)


def _expand(argv: tuple[str, ...], commands: list[Command], writes: list[str], depth: int) -> None:
    """Record `argv`, then whatever it runs in turn (a wrapped command, a shell's script, find's -exec)."""
    if not argv:
        return
    name = posixpath.basename(argv[0])
    inner = _wrapped(name, argv)
    commands.append(Command(argv, wrapper=inner is not None and name in TRANSPARENT,
                            privileged=name in PRIVILEGED))
    if inner is not None:
        _expand(inner, commands, writes, depth)
        return
    if name in SHELLS:
        script = _shell_script(argv)
        if script is not None:
            nested = parse(script, depth + 1)
            commands.extend(nested.commands)
            writes.extend(nested.writes)
    elif name == "eval" and len(argv) > 1:
        nested = parse(" ".join(argv[1:]), depth + 1)
        commands.extend(nested.commands)
        writes.extend(nested.writes)
    elif name == "find":
        for index, word in enumerate(argv):
            if word in ("-exec", "-execdir", "-ok", "-okdir"):
                end = next((i for i in range(index + 1, len(argv)) if argv[i] in (";", "\\;", "+")), len(argv))
                _expand(argv[index + 1:end], commands, writes, depth)
    elif name == "tee":
        writes.extend(a for a in argv[1:] if not a.startswith("-"))


def _wrapped(name: str, argv: tuple[str, ...]) -> tuple[str, ...] | None:
    """The command a wrapper runs, or None for a command that is not a wrapper (or wraps nothing)."""
    valued = VALUED.get(name)
    if valued is None:
        return None
    index = 1
    while index < len(argv):
        word = argv[index]
        if word == "--":
            index += 1
            break
        if name == "env" and "=" in word and not word.startswith("-"):
            index += 1
            continue
        if not word.startswith("-") or word == "-":
            break
        index += 2 if word in valued else 1
    if name == "timeout" and index < len(argv):
        index += 1  # the duration
    return argv[index:] or None


def _shell_script(argv: tuple[str, ...]) -> str | None:
    """The script of `sh -c SCRIPT` (options may be grouped: -lc, -ec); None when the shell reads a file
    or stdin, which runs what the file says (judged as the shell command itself)."""
    for index, word in enumerate(argv[1:], 1):
        if word.startswith("-") and not word.startswith("--") and "c" in word[1:]:
            if index + 1 >= len(argv):
                raise unparsable(" ".join(argv), "-c without a script")
            return argv[index + 1]
        if not word.startswith("-"):
            return None
    return None


def _redirect(node, writes: list[str]) -> None:
    operator = next((c.type for c in node.children if c.type in WRITE_OPERATORS or c.type == ">&"), None)
    destination = node.child_by_field_name("destination")
    if operator is None or destination is None:
        return
    if operator == ">&" and destination.type == "number":  # 2>&1: a descriptor, not a file
        return
    target = _word(destination)
    if target not in HARMLESS_TARGETS and not target.startswith("&"):
        writes.append(target)


def _word(node) -> str:
    """A word as the shell would pass it, quotes removed; expansions are kept as written."""
    kind = node.type
    text = node.text.decode("utf-8", "surrogateescape")
    if kind == "command_name":
        return "".join(_word(c) for c in node.children) if node.children else text
    if kind == "raw_string":
        return text[1:-1]
    if kind == "string":
        return "".join(_word(c) if c.type != '"' else "" for c in node.children)
    if kind == "ansi_c_string":
        return text[2:-1]
    if kind == "concatenation":
        return "".join(_word(c) for c in node.children)
    if kind in ("word", "string_content"):
        return _unescape(text) if kind == "word" else text
    return text


def _unescape(text: str) -> str:
    out, index = [], 0
    while index < len(text):
        if text[index] == "\\" and index + 1 < len(text):
            index += 1
        out.append(text[index])
        index += 1
    return "".join(out)


# -- policy matching --------------------------------------------------------------------------------------
def matches(pattern: str, command: Command) -> bool:
    """`pattern` is a glob over the command's words joined by single spaces, its program named by basename
    (`/bin/rm -rf x` is `rm -rf x`); a pattern ending in ` *` also matches the bare command (`git diff *`
    matches `git diff`)."""
    text = command.text
    return fnmatchcase(text, pattern) or (pattern.endswith(" *") and text == pattern[:-2])


def check(line: ShellLine, allow: tuple[str, ...] | None, deny: tuple[str, ...]) -> str | None:
    """Why the line may not run, or None. Deny wins over allow; no allow list admits all but the denied."""
    for command in line.commands:
        if command.dynamic:
            return f"`{command.text[:80]}` runs a program computed at run time, which cannot be checked"
        pattern = next((p for p in deny if matches(p, command)), None)
        if pattern is not None:
            return f"`{command.text[:120]}` is denied by the command policy ({pattern!r})"
        if allow is not None and not command.wrapper and not any(matches(p, command) for p in allow):
            return f"`{command.text[:120]}` is not in the command allow list"
    return None
