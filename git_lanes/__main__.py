"""`git-lanes` and `python -m git_lanes`. The agent-hook path (`hook …`) is routed before click loads: it runs
on every agent tool call and must stay a bare interpreter plus a few milliseconds (DESIGN.md §6)."""

from __future__ import annotations

import sys


# The exit code of a command stopped by Ctrl-C, wherever it was: the shell's own for SIGINT, as
# cli/output.run gives it once the command runs.
INTERRUPTED = 130


def main() -> None:
    args = sys.argv[1:]
    if args[:1] == ["hook"] and not {"-h", "--help"} & set(args):
        try:
            from git_lanes.hooks import main as hook_main
        except KeyboardInterrupt:
            sys.exit(_hook_interrupted(args[2:3]))
        sys.exit(hook_main(args[1:]))
    try:
        _command(args)
    except KeyboardInterrupt:
        # Ctrl-C while the interpreter loads the command (click, pygit2: ~100 ms, seconds on a busy machine),
        # before its own handler is in place: the same quiet exit, not a traceback.
        sys.exit(INTERRUPTED)


def _hook_interrupted(event: list[str]) -> int:
    """Ctrl-C while the hook face loads, before its own handler is in place (git_lanes.hooks._on_interrupt):
    the same answer, a pre-tool call denied (exit 2 and a reason block it in every CLI), else a quiet 130."""
    if event and event[0] in ("PreToolUse", "BeforeTool"):
        sys.stderr.write("git-lanes denied this call because its hook was interrupted (SIGINT) before its checks "
                         "finished\n")
        return 2
    return INTERRUPTED


def _command(args: list[str]) -> None:
    import os

    try:
        os.getcwd()
    except FileNotFoundError:
        if not {"-h", "--help", "--version"} & set(args):
            _no_current_directory(args)
    if "GIT_DIR" in os.environ or "GIT_WORK_TREE" in os.environ:
        _follow_git_place(args)
    if args[:1] == ["sync"]:  # with nothing to replay, a sync needs neither click nor pygit2 (git_lanes.lite)
        import gc

        # A short process whose objects reference counting frees (its records, parsed ops and commit headers
        # hold no cycles): the cyclic collector's passes over all it loads and reads buy nothing (~3 ms).
        gc.disable()
        from git_lanes.lite.sync import main as sync_main

        code = sync_main(args[1:])
        if code is not None:
            _ending()
            sys.exit(code)
        gc.enable()  # the ordinary sync may replay a long history: it collects as any command does
    from git_lanes.cli import main as cli_main

    try:
        cli_main()
    finally:
        _ending()


def _no_current_directory(args: list[str]) -> None:
    """Every command finds its repository from the current directory: one that was removed (a lane's workspace
    deleted while a shell stood in it) is a user's error in one line, as git's "Unable to read current
    working directory", not an internal error or a traceback from whichever command met it first."""
    from git_lanes.cli.output import fail
    from git_lanes.errors import UserError

    fail(UserError("the current directory no longer exists (it was removed, perhaps as a lane's workspace)",
                   code="no_current_directory", hint="cd to a folder that exists, such as the repository's root"),
         "--json" in args)


def _follow_git_place(args: list[str]) -> None:
    """`git --git-dir=… --work-tree=… lanes …` works where it names, or is refused (api/git_place.py)."""
    from git_lanes.api import git_place
    from git_lanes.errors import LanesError

    try:
        git_place.follow()
    except LanesError as exc:
        from git_lanes.cli.output import fail

        fail(exc, "--json" in args)


def _ending() -> None:
    """The process ends now. Its objects moved out of the collector's reach, the interpreter's teardown skips a
    last full collection of everything it loaded (~5 ms after a light sync, ~15-20 ms once pygit2 and click are
    loaded); reference counts still free them, and nothing of ours waits in a reference cycle for a finalizer
    (files and pipes are closed where they are used; stdout and stderr are flushed by the interpreter)."""
    import gc

    gc.freeze()


if __name__ == "__main__":
    main()
