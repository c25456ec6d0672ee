"""`git lanes board …` and `git lanes wait`: messages between agents, and sleeping until something concerns
an agent."""

from __future__ import annotations

import time

import click

from git_lanes.cli import Command, SuggestingGroup
from git_lanes.cli.options import Finite, agent_option, limit_option
from git_lanes.cli.output import json_option, open_api, run

# The board's one default read length (`git_lanes.domain.BOARD_LIMIT`, which every other face imports), spelled
# here because a command module loads no domain code until it runs; tests/test_board_questions.py holds them equal.
BOARD_LIMIT = 20


def render_post(p: dict) -> str:
    when = time.strftime("%H:%M", time.localtime(p["time"]))
    to = f" -> {p['to']}" if p["to"] else ""
    flags = (" [unread]" if p.get("unread") else "") + (" [resolved]" if p.get("resolved") else "")
    return f"#{p['seq']} {when} {p['kind']} {p['from']}{to}{flags}: {p['text']}"


@click.group(cls=SuggestingGroup)
def board() -> None:
    """Post and read messages. A post without --to goes to everyone else.

    Each agent has a read cursor: `board read` shows what is unread and marks it read; heartbeat reports
    the unread count; `git lanes wait` returns when an unread post arrives.

    \b
    Example:
      git lanes board post "Who owns the session cache?" --kind question --agent coder-1
      git lanes board read --agent coder-2 --unread
    """


@board.command()
@click.argument("text")
@agent_option()
@click.option("--kind", type=click.Choice(["note", "question", "handoff"]), default="note", show_default=True)
@click.option("--to", "target", metavar="AGENT", help="Send to this agent only.")
@json_option
def post(text: str, agent: str, kind: str, target: str | None, as_json: bool) -> None:
    """Post TEXT on the board (at most 16 KiB).

    \b
    Example:
      git lanes board post "Schema is in docs/api.md" --agent coder-1 --to coder-2
    """
    def render(r: dict) -> str:
        line = f"posted #{r['post']} ({r['kind']} to {r['to'] or 'everyone'})"
        if not r.get("to_known", True):
            line += f"\nnote: no agent named {r['to']} has started yet; it sees this post when it does"
        return line

    run(lambda: open_api().board_post(text, agent, kind, target), as_json, render)


@board.command()
@agent_option(required=False, help_text="Whose posts to read (and mark read); without it, show the board.")
@click.option("--unread", "unread_only", is_flag=True, help="Only unread posts.")
@click.option("--unanswered", is_flag=True,
              help="Only the questions nobody answered or resolved yet, every one however old; marks nothing "
                   "read, and --limit does not apply.")
@click.option("--all", "everything", is_flag=True, help="Include posts sent to other agents.")
@limit_option("How many recent posts to include besides the unread ones (every face's default).",
              type=click.IntRange(min=0), default=BOARD_LIMIT, show_default=True)
@json_option
def read(agent: str | None, unread_only: bool, unanswered: bool, everything: bool, limit: int,
         as_json: bool) -> None:
    """Read the board as an agent: unread posts and recent ones; what is shown is marked read.

    \b
    Example:
      git lanes board read --agent coder-2 --unread
      git lanes board read --unanswered
    """
    if unread_only and unanswered:
        raise click.UsageError("--unread and --unanswered cannot be used together")

    def render(r: dict) -> str:
        return "\n".join(render_post(p) for p in r["posts"]) or \
            ("no unanswered questions" if unanswered else "no posts")

    run(lambda: open_api().board_read(agent, unread_only=unread_only, everything=everything, limit=limit,
                                      unanswered=unanswered), as_json, render)


@board.command()
@click.argument("post_id", metavar="POST")
@agent_option(required=False, help_text="Who resolves it.")
@json_option
def resolve(post_id: str, agent: str | None, as_json: bool) -> None:
    """Mark POST (a question, say) resolved: its number as the board shows it (12 or #12), or a unique
    prefix of its id as --json gives it.

    \b
    Example:
      git lanes board resolve 12 --agent coder-2
    """
    run(lambda: open_api().board_resolve(post_id, agent), as_json,
        lambda r: f"post #{r['post']} resolved by {r['resolved_by']}")


@board.command()
@click.argument("post_id", metavar="POST")
@click.argument("text")
@agent_option()
@json_option
def answer(post_id: str, text: str, agent: str, as_json: bool) -> None:
    """Answer question POST with TEXT: a post to its asker that names the question, and the question
    resolved, in one step. POST is the question's number as the board shows it (12 or #12), or a unique
    prefix of its id; a post that is not a question is refused (exit 1).

    \b
    Example:
      git lanes board answer 12 "By size: the cache evicts the largest first" --agent lead
    """
    run(lambda: open_api().board_answer(post_id, text, agent), as_json,
        lambda r: f"answered #{r['answers']} with #{r['post']} (to {r['to'] or 'everyone'}); question resolved")


@click.command(cls=Command)
@agent_option()
@click.option("--timeout", type=Finite(min=0, max=86400), default=60.0, show_default=True,
              metavar="SECONDS", help="Return after this long even if nothing happened.")
@json_option
def wait(agent: str, timeout: float, as_json: bool) -> None:
    """Sleep until something concerns the agent, and say what: a task of its became ready (task_ready),
    another agent stepped into its files (overlap), one of its ops was refused by a sync (refused), an
    unread post for it arrived (post) — or the timeout passed (timeout).

    What it returns is taken: the wakes leave the queue and the posts are marked read. Waiting takes no
    lock and does not extend the agent's lease (heartbeat does).

    \b
    Example:
      git lanes wait --agent coder-2 --timeout 300 --json
    """
    def render(r: dict) -> str:
        lines = [f"{r['reason']} after {r['waited']:.2f}s"]
        for w in r["wakes"]:
            subject = w.get("task") or w.get("agent") or (w.get("original") or {}).get("type") or ""
            lines.append(f"wake: {w['kind']} {str(subject)[:16]}".rstrip())
        lines += [render_post(p) for p in r["posts"]]
        return "\n".join(lines)

    run(lambda: open_api().wait(agent, timeout), as_json, render)
