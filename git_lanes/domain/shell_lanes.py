"""What a `git lanes` command writes, for the shell-line analysis (`domain/shell_git.py` hands it the words
after `lanes`). Most of them coordinate through the ledger or move the caller's own lane, but some write files
and refs beyond it: `restore` rewrites the workspace -w names (else the one it runs in), `lane reset` and
`lane delete` their lane's, `install`/`uninstall` the settings of the worktree they run in, and `undo`, `gc`,
`init`, `doctor --fix` and `budget set|clear` change what every lane shares."""

from __future__ import annotations

Word = tuple[str, bool]


# The options of the `git lanes` commands read here that take a value, so a value is no operand (`--agent-id`
# is --agent's hidden alias: missing here, its value passed for the lane `lane reset` rewrites). Kept by hand,
# as the hook must not load click's command tree; tests/test_shell_lanes_options.py checks it against the tree.
VALUED = {"-w", "--workspace", "--onto", "--reason", "--agent", "--agent-id", "--older-than", "--trunk", "--check",
          "--lane", "--task", "--ticket", "--tokens", "--usd", "--command", "--scope"}


def _words(rest: list[Word]) -> tuple[list[str], list[str]]:
    """(operands, the lanes named by -w/--workspace) of `git lanes …`."""
    operands: list[str] = []
    named: list[str] = []
    index = 0
    while index < len(rest):
        text = rest[index][0]
        name, equals, value = text.partition("=")
        if name in VALUED and not equals:
            if name in ("-w", "--workspace") and index + 1 < len(rest):
                named.append(rest[index + 1][0])
            index += 2
            continue
        if name in ("-w", "--workspace"):
            named.append(value)
        elif text.startswith("-w") and len(text) > 2:  # click's -wLANE
            named.append(text[2:])
        elif not text.startswith("-"):
            operands.append(text)
        index += 1
    return operands, named


def rewritten(rest: list[Word]) -> list[str]:
    """The lanes (by name) whose workspace files `git lanes rest…` rewrites: a restore's -w, a lane reset's
    or delete's NAME. They are lanes other than the caller's as often as not, so they count as writes there."""
    operands, named = _words(rest)
    if operands[:1] == ["restore"]:
        return named
    if operands[:2] in (["lane", "reset"], ["lane", "delete"]):
        return operands[2:3]
    return []


def writes_shared(rest: list[Word]) -> bool:
    """`git lanes undo`, `gc`, `init` and `doctor --fix`: they move, prune and repair refs every lane shares (an undo
    of a promotion moves the trunk back), as `update-ref` does; `budget set|clear` change the limits a person
    sets on agents. Their dry runs, plain doctor and `budget show` only read."""
    operands, _ = _words(rest)
    words = {t for t, _ in rest}
    if operands[:1] in (["undo"], ["gc"]):
        return "--dry-run" not in words
    return (operands[:1] == ["doctor"] and "--fix" in words) or operands[:1] == ["init"] or \
        operands[:2] in (["budget", "set"], ["budget", "clear"])


def _installs_here(rest: list[Word]) -> bool:
    """`git lanes install|uninstall`: they write the settings of the worktree they run in (with --scope user,
    the home's, which the wall leaves alone)."""
    operands, _ = _words(rest)
    words = [t for t, _ in rest]
    user = "--scope=user" in words or any(a == "--scope" and b == "user" for a, b in zip(words, words[1:]))
    return operands[:1] in (["install"], ["uninstall"]) and "--dry-run" not in words and not user


def writes_here(rest: list[Word]) -> bool:
    """`git lanes restore` without -w rewrites the workspace it runs in; install and uninstall write its
    settings."""
    operands, named = _words(rest)
    return (operands[:1] == ["restore"] and not named) or _installs_here(rest)
