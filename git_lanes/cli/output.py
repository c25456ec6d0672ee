"""What every command shares: `--json`, rendering, and turning errors into one line and an exit code."""

from __future__ import annotations

import json
import os
import sys
from collections.abc import Callable
from typing import Any, NoReturn

import click

from git_lanes.errors import EXIT_USER, InternalError, LanesError, UserError, take_notices, write_failed


# What to do with files a promotion changed while a worktree had unsaved edits there.
ATTENTION_HINT = "(merge the promoted version into your edits, then `git add`)"


def json_option(command: Callable) -> Callable:
    return click.option("--json", "as_json", is_flag=True, help="Print a JSON record instead of text.")(command)


def open_api(path: str | None = None) -> Any:
    from git_lanes.api import Lanes

    return Lanes(path or os.getcwd())


def run(action: Callable[[], Any], as_json: bool, render: Callable[[Any], str | None]) -> None:
    """Run `action`, print its result, and exit with the error's code if it raised."""
    try:
        try:
            result = action()
        finally:
            warn_notices()
    except LanesError as exc:
        fail(exc, as_json)
    except KeyboardInterrupt:
        sys.exit(130)
    except click.exceptions.Exit:
        raise
    except UnicodeError as exc:
        # Bytes in argv that are not UTF-8 arrive as lone surrogates; the model refuses them where it reads
        # text, and this catches the places that hand them straight to git or the file system.
        garbled = next((arg for arg in sys.argv[1:] if _not_utf8(arg)), None)
        if garbled is None:
            _internal(exc, as_json)
        from git_lanes.model.text import quoted

        fail(UserError(f"argument {quoted(garbled)} is not valid UTF-8", code="invalid_text"), as_json)
    except Exception as exc:  # a bug or an environment failure still gets one line, not a traceback
        refused = write_failed(exc)  # a full disk, no permission, a read-only file system: the user's to fix
        if refused is None:
            _internal(exc, as_json)
        fail(refused, as_json)
    # A listing (a list) that set records aside has no field to say so in its JSON: it warns in both modes.
    listed = [u.to_dict() for u in getattr(result, "unreadable", ())] if isinstance(result, list) else []
    result = plain(result)
    if as_json:
        click.echo(json.dumps(result, indent=2, sort_keys=True, default=str))
    else:
        try:
            text = render(result)
        except Exception as exc:  # a value the renderer cannot show is still one line, never a traceback
            _internal(exc, as_json)
        if text:
            click.echo(shown(text))
        listed += (result.get("unreadable") or []) if isinstance(result, dict) else []
    warn_unreadable(listed)
    # Work done, with a part a person must settle (a diverged lane, a collision a dry run found): the exit
    # code is that error's, as the result says.
    found = result.get("problem") if isinstance(result, dict) else None
    if found:
        sys.exit(found["exit_code"])


def echo_as_it_goes(text: str) -> None:
    """One line of a command that prints while it works (the demo's narration). A reader that went away
    mid-way (`git lanes demo | head`) ends it as click ends every other command whose output is closed:
    quietly, exit 1. Not a bug of ours, so not the internal error (6) that `run` would make of it."""
    try:
        click.echo(shown(text))
    except BrokenPipeError:
        # What is still buffered goes nowhere, so the interpreter's last flush has nothing to fail on.
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        sys.exit(EXIT_USER)


def warn_notices() -> None:
    """What the action went on past (a lost operation log head it started afresh), one line each on stderr
    in both modes: --json has no one field every command's record carries, and stdout stays the record."""
    for message in take_notices():
        click.echo(shown(f"warning: {message}"), err=True)


def warn_unreadable(found: list[dict[str, Any]]) -> None:
    """One warning line on stderr for each stored record a listing set aside because it cannot be read (a
    peer's malformed note or ledger record); `--json` carries them as `unreadable` where it has an object."""
    for u in found:
        if u.get("ref") != "refs/notes/lanes":  # a ledger record's reason names it
            click.echo(shown(f"warning: left out: {u['reason']}"), err=True)
            continue
        what = f"transition {short(u['transition'])}" if u.get("transition") else f"note on {short(u['key'])}"
        click.echo(shown(f"warning: unreadable {what}, left out: {u['reason']}"), err=True)


def _internal(exc: Exception, as_json: bool) -> NoReturn:
    if os.environ.get("GIT_LANES_DEBUG"):
        raise exc
    fail(InternalError(f"{type(exc).__name__}: {exc}", hint="set GIT_LANES_DEBUG=1 for a traceback"), as_json)


def _not_utf8(arg: str) -> bool:
    try:
        arg.encode()
    except UnicodeEncodeError:
        return True
    return False


def plain(result: Any) -> Any:
    """An API result as JSON-shaped data: records give their `to_dict()`, to render and to print."""
    if hasattr(result, "to_dict"):
        return result.to_dict()
    if isinstance(result, list):
        return [plain(item) for item in result]
    return result


# What to do about an error, in this face's words: the model and the ledger say what is wrong in terms every
# face shares (an MCP client has no --agent flag), and each face adds how to fix it with its own controls.
CLI_ADVICE = {
    "invalid_agent": "pass --agent ID or set GIT_LANES_AGENT",
    "invalid_actor": "pass --agent ID, or set git's user.name",
    "invalid_run": "see `git lanes run list`",
    "invalid_cost": "see --tokens-in, --tokens-out, --api-calls, --wall-time and --cost-usd in --help",
}


def hint_of(exc: LanesError) -> str | None:
    """The error's own hint followed by the CLI's advice for its code."""
    advice = CLI_ADVICE.get(exc.code)
    return "; ".join(part for part in (exc.hint, advice) if part) or None


def fail(exc: LanesError, as_json: bool) -> NoReturn:
    hint = hint_of(exc)
    if as_json:
        record = exc.to_dict() | ({"hint": hint} if hint else {})
        click.echo(json.dumps(record, indent=2, sort_keys=True, default=str))
    click.echo(shown(f"git-lanes: error: {exc.message}"), err=True)
    if hint:
        click.echo(shown(f"hint: {hint}"), err=True)
    sys.exit(exc.exit_code or EXIT_USER)


def nested_left(r: dict) -> str:
    """The line saying which nested repositories a forced restore or reset left where they were."""
    nested = r.get("nested_left") or []
    return (f"\nleft in place with everything in them, edits included (each holds a git repository of its "
            f"own, which git-lanes never deletes and no backup ref can hold): {', '.join(nested)}") if nested else ""


def held_line(transition: dict) -> str:
    """Why an auto-accepted transition stayed proposed (it changes a protected path), and what to run."""
    held = (transition.get("extra") or {}).get("held")
    if transition.get("status") != "proposed" or not held:
        return ""
    return f"\nheld for a person: {held['reason']}\naccept it with `git lanes accept {short(transition['id'])}`"


def render_overlaps(overlaps: list[dict]) -> list[str]:
    """The warnings for claims and dirty files that overlap another agent's (task, claim and agent commands)."""
    lines = []
    for o in overlaps:
        what = o.get("claim") and f"claim {o['claim']}" or o.get("file") and f"dirty {o['file']}" or "?"
        mine = o.get("glob") or o.get("file")
        lines.append(f"warning: {mine} overlaps {o['agent']}'s {what}")
    return lines


def shown_path(path: str) -> str:
    """A file name as text output shows it: as it is, or quoted as git quotes it (`"a\\033[2Jb"`) when it
    holds what a terminal would act on (an escape sequence, a line break) or bytes that are not UTF-8. A
    workspace's file names are whatever an agent made them; --json carries them exactly."""
    from git_lanes.model.text import git_quoted

    return git_quoted(path)


def shown(text: str) -> str:
    """Text output as a terminal may print it: what a terminal would act on rather than show (an escape
    sequence, a carriage return, a bidirectional override reversing what follows) is written as its escape
    (`\\u202e`). Every line text output prints goes through here, so no title, post, lane name or prompt an
    agent wrote can rewrite the screen; --json prints them exactly."""
    from git_lanes.model.text import shown_text

    return shown_text(text)


def short(oid: str | None) -> str:
    return oid[:8] if oid else "-"


def table(rows: list[list[str]]) -> str:
    if not rows:
        return ""
    # Escaped before measuring, so a cell with an escape keeps its column; a tab would break the columns.
    rows = [[shown(cell).replace("\t", "\\t") for cell in row] for row in rows]
    widths = [max(len(row[i]) for row in rows) for i in range(len(rows[0]))]
    return "\n".join("  ".join(cell.ljust(width) for cell, width in zip(row, widths)).rstrip() for row in rows)


def left_pending_note(lane: str, pending: list[str] | None) -> str | None:
    """What a promotion (or a task's integration) left out: the lane's proposals awaiting a decision."""
    if not pending:
        return None
    return (f"note: {lane}'s pending proposals {', '.join(short(i) for i in pending)} are not included "
            f"(only its accepted head is promoted; accept them first to include them)")
