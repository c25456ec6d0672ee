"""The agent-hook face: `git lanes hook claude|codex|gemini EVENT`, run by an agent CLI on every tool call.

This path is the hottest in the product, so `git_lanes.__main__` routes here before click loads, and nothing
here imports pygit2 or click: the payload is parsed with the standard library, and the domain's control plane
reads the policy and appends to the run's log through the light storage path. Only a resume briefing and the
turn's snapshot (once per session or turn) load the whole API.

Fail closed: whatever goes wrong (a bad payload, an unreadable policy, a corrupt log, no repository, a bug)
becomes a deny with the reason on a pre-tool event, in the CLI's own protocol, and a notice elsewhere. The
process never exits 1, which every one of these CLIs reads as "hook failed, run the tool"."""

from __future__ import annotations

import importlib
import os
import sys
import time

TYPE_CHECKING = False  # not `from typing import …`: the hook path never loads typing
if TYPE_CHECKING:
    from typing import Any

CLIS = {"claude": "git_lanes.hooks.claude", "codex": "git_lanes.hooks.codex", "gemini": "git_lanes.hooks.gemini"}
USAGE = "usage: git lanes hook claude|codex|gemini EVENT  (the agent CLI sends the event's JSON on stdin)"
# Every CLI runs the tool when a hook outlives its timeout (60 s as installed): a pre-tool check still
# working at this deadline answers deny instead. GIT_LANES_HOOK_DEADLINE (seconds) overrides it.
DEADLINE_SECONDS = 40.0
MAX_DEADLINE_SECONDS = 86400.0


def main(argv: list[str]) -> int:
    argv = [arg for arg in argv if arg != "--json"]  # accepted for uniformity: the answer is always JSON
    if len(argv) != 2 or argv[0] not in CLIS:
        # Exit 2 with a reason on stderr blocks the call in all three CLIs: a mistyped install fails closed.
        sys.stderr.write(f"git-lanes: {USAGE}\n")
        return 2
    name = argv[1]
    once = _Once()
    _on_interrupt(once, name)
    module = importlib.import_module(CLIS[argv[0]])
    if getattr(module, "ALIASES", {}).get(name, name) == module.PRE_TOOL:
        _watch(once, module, name, os.environ.get("GIT_LANES_HOOK_DEADLINE"))
    from git_lanes.hooks.protocol import MAX_PAYLOAD_BYTES

    answer = respond(module, name, sys.stdin.buffer.read(MAX_PAYLOAD_BYTES + 1), dict(os.environ), time.time())
    once.emit(answer)
    return once.code  # the deadline's deny, if it came first


class _Once:
    """The hook answers exactly once: two answers on stdout would be one unreadable answer, which the CLIs
    read as "hook failed, run the tool"."""

    def __init__(self) -> None:
        import _thread  # the builtin beneath `threading`, which costs a millisecond to import on every call

        self.lock = _thread.allocate_lock()
        self.code = 0

    def emit(self, answer: Any) -> bool:
        if not self.lock.acquire(blocking=False):
            return False
        self.code = answer.code
        if answer.stdout:
            sys.stdout.write(answer.stdout + "\n")
        if answer.stderr:
            sys.stderr.write(answer.stderr + "\n")
        sys.stdout.flush()
        sys.stderr.flush()
        return True


# The pre-tool events of the three CLIs (Claude Code's and Codex's, Gemini's, and the alias Gemini takes).
PRE_TOOL_EVENTS = ("PreToolUse", "BeforeTool")
INTERRUPTED = 130


class _Stopped:
    """The answer of a hook stopped by Ctrl-C (see `_on_interrupt`): exit 2 with the reason on stderr blocks
    the call in all three CLIs, and needs none of their modules, which may be half loaded at that instant."""

    __slots__ = ("stdout", "stderr", "code")

    def __init__(self, stderr: str, code: int) -> None:
        self.stdout, self.stderr, self.code = "", stderr, code


def _on_interrupt(once: _Once, name: str) -> None:
    """Ctrl-C in the agent's terminal reaches its hooks too (one process group). A hook that died of it (a
    traceback, exit 1 or the signal) is read by every CLI as "hook failed, run the tool": a pre-tool hook
    denies instead, and any other ends quietly with the shell's 130. An answer already being written is left
    to finish. An ignored SIGINT (a caller's choice) stays ignored."""
    import _signal

    if _signal.getsignal(_signal.SIGINT) == _signal.SIG_IGN:
        return

    def interrupted(signum: int, frame: Any) -> None:
        answer = _Stopped(f"git-lanes denied this call because its hook was interrupted (SIGINT) before its "
                          f"checks finished", 2) if name in PRE_TOOL_EVENTS else _Stopped("", INTERRUPTED)
        if once.emit(answer):
            os._exit(answer.code)

    _signal.signal(_signal.SIGINT, interrupted)


def _watch(once: _Once, module: Any, name: str, given: str | None) -> None:
    """Past the deadline, deny and end the process, whatever the check is waiting for (a huge line, a lock
    held elsewhere, a slow disk): the run's log stays consistent, as after any killed writer."""
    import _thread

    try:
        seconds = float(given) if given else DEADLINE_SECONDS
    except ValueError:
        seconds = DEADLINE_SECONDS
    if not 0 <= seconds <= MAX_DEADLINE_SECONDS:  # negative, NaN or past what sleep takes: no deadline at all
        seconds = DEADLINE_SECONDS

    def expire() -> None:
        time.sleep(seconds)
        answer = module.deny(name, f"git-lanes denied this call because its checks did not finish within "
                                   f"{seconds:g} s (the line may be too large to check); try a smaller step")
        if once.emit(answer):
            os._exit(answer.code)

    # A bare thread: the process ends when the answer is out (no `threading` shutdown joins it).
    _thread.start_new_thread(expire, ())


def respond(module: Any, name: str, raw: bytes, env: dict[str, str], now: float):
    """The answer to one hook call: the CLI's protocol around the control plane's verdict."""
    aliases = getattr(module, "ALIASES", {})
    if aliases.get(name, name) != module.PRE_TOOL:
        pre_names = [module.PRE_TOOL, *(alias for alias, to in aliases.items() if to == module.PRE_TOOL)]
        sent = _sent_event(raw) if any(f'"{pre}"'.encode() in raw for pre in pre_names) else None
        if sent in pre_names:
            # A hook installed under another event's name (a typo, a hand-edited settings file) would record
            # a pre-tool call as something else, or ignore it, and the tool would run: the wall holds instead.
            return module.deny(module.PRE_TOOL, f"git-lanes denied this call because its hook command names the "
                                                f"event {name[:100]!r}, not {sent}; fix the hook entry (git lanes "
                                                f"install {module.CLI} rewrites it, git lanes doctor shows it)")
    if aliases.get(name, name) not in module.EVENTS:
        from git_lanes.model.calls import Verdict

        return module.answer(name, Verdict())  # an event we do not handle: no opinion
    try:
        from git_lanes.hooks import protocol

        payload = protocol.load_payload(raw)
        sent = payload.get("hook_event_name")
        if aliases.get(name, name) == module.PRE_TOOL and isinstance(sent, str) and \
                aliases.get(sent, sent) != module.PRE_TOOL:
            # another CLI's call (`BeforeTool` at Claude's hook) would be read in the wrong protocol: its shell
            # tool taken for an unknown one, its answer ignored
            raise protocol.Malformed(f"the payload is a {sent[:100]!r} event, not {name}: this hook command is "
                                     f"wired into the wrong CLI or event (git lanes doctor shows it)")
        event = module.to_event(name, payload, env)
        verdict = dispatch(event, now)
        if verdict.env and hasattr(module, "export_env"):
            module.export_env(verdict.env, env)  # a CLI that takes variables from a hook (Claude Code)
        return module.answer(name, verdict)
    except KeyboardInterrupt:
        raise
    except BaseException as exc:  # noqa: BLE001 - every failure must become a deny, never a traceback
        reason = describe(exc)
        if aliases.get(name, name) == module.PRE_TOOL:
            return module.deny(name, f"git-lanes denied this call because the policy could not be evaluated: {reason}")
        return module.notice(name, f"git-lanes could not record this {name}: {reason}")


def _sent_event(raw: bytes) -> str | None:
    """The event the payload says it is (`hook_event_name`), if it says so readably."""
    import json

    try:
        payload = json.loads(raw)
    except (ValueError, RecursionError):
        return None
    sent = payload.get("hook_event_name") if isinstance(payload, dict) else None
    return sent if isinstance(sent, str) else None


def describe(exc: BaseException) -> str:
    from git_lanes.errors import LanesError

    if isinstance(exc, LanesError):
        return exc.message + (f" (hint: {exc.hint})" if exc.hint else "")
    return f"internal error {type(exc).__name__}: {exc}"


def dispatch(event: Any, now: float):
    name = event.name
    if name in ("pre_tool", "post_tool", "tool_failed"):
        from git_lanes.domain import control

        if name == "pre_tool":
            return control.pre_tool(event, now, lambda repo, run, spent: _api(repo).budget_exhausted(run, spent))
        return control.post_tool(event, now)
    from git_lanes.domain import sessions

    if name == "prompt":
        return sessions.prompt(event, now)
    if name == "session_start":
        return sessions.session_start(event, now, _briefing)
    if name == "stop":
        return sessions.stop(event, now, lambda repo, state, mode: _api(repo).hook_snapshot(event, state, mode))
    if name == "pre_compact":
        return sessions.with_usage(event, now, "compact", {"trigger": event.source or "auto"})
    if name == "subagent_stop":
        return sessions.with_usage(event, now, "subagent_stop", {"agent_type": event.subagent})
    if name == "session_end":
        return sessions.with_usage(event, now, "session_end", {"reason": event.source or "other"})
    from git_lanes.model.calls import Verdict

    return Verdict()


def _api(repo: Any):
    from git_lanes.api import Lanes

    return Lanes(repo.root)


def _briefing(repo: Any, run: str) -> str:
    return _api(repo).hook_briefing(run)
