"""Token usage and cost, read from the transcript an agent CLI points its hooks to.

Each read continues where the last one stopped (a cursor kept in the run's state), so a long session costs
only its new lines. Claude Code writes one JSONL line per content block, repeating a response's usage on each:
a response counts once, by `message.id` and `requestId` (as ccusage does). Codex CLI logs cumulative
`token_count` events; Gemini CLI keeps one JSON document per session. Prices come from the policy."""

from __future__ import annotations

import json
import os
import stat

from git_lanes.model.format import MAX_TOKENS
from git_lanes.model.policy import Policy
from git_lanes.model.runs import Usage

TYPE_CHECKING = False  # not `from typing import …`: the hook path never loads typing
if TYPE_CHECKING:
    from typing import Any

SEEN_KEPT = 200  # response keys remembered across reads: duplicates are adjacent lines


def refresh(cli: str | None, path: str | None, cursor: dict[str, Any], policy: Policy) \
        -> tuple[Usage, dict[str, Any]] | None:
    """(new usage since `cursor`, the next cursor), or None when there is nothing new or no transcript."""
    if not path:
        return None
    path = os.path.expanduser(path)
    try:
        found = os.stat(path)
    except FileNotFoundError:
        return None  # not written yet: nothing to meter
    except OSError as exc:
        raise _unreadable(path, exc.strerror or type(exc).__name__) from None
    if not stat.S_ISREG(found.st_mode):  # a directory cannot be read, and a FIFO's open would block the call
        raise _unreadable(path, "it is a directory" if stat.S_ISDIR(found.st_mode) else "it is not a regular file")
    size = found.st_size
    if cursor.get("path") != path:
        cursor = {"path": path}
    if size == cursor.get("size") and cursor.get("offset", 0) >= size:
        return None
    reader = {"codex": _codex, "gemini": _gemini}.get(cli or "", _claude)
    try:
        delta, following = reader(path, cursor, policy)
    except FileNotFoundError:
        return None  # replaced while read: the next call reads it
    except OSError as exc:  # no permission, an I/O error
        raise _unreadable(path, exc.strerror or type(exc).__name__) from None
    following = {**following, "path": path, "size": size}
    if not delta.messages and not delta.tokens and following == cursor:
        return None
    return delta, following


def _unreadable(path: str, why: str) -> Exception:
    """The usage cannot be metered, so neither can the spend gate hold: the call is denied (hooks fail
    closed) with what is wrong with the transcript rather than an internal error."""
    from git_lanes.errors import UserError  # the failure path only: the hook path loads no more than it needs

    return UserError(f"cannot read the transcript {path} the hook payload names: {why}", code="transcript_unreadable",
                     hint="the agent CLI's transcript_path must be its session's transcript file, readable by you")


def _new_lines(path: str, offset: int) -> tuple[list[bytes], int]:
    """Complete lines written after `offset`, and where the next read starts (a line still being written is
    left for then)."""
    with open(path, "rb") as handle:
        handle.seek(offset)
        data = handle.read()
    end = data.rfind(b"\n")
    if end < 0:
        return [], offset
    return data[:end].split(b"\n"), offset + end + 1


def _json(line: bytes) -> Any:
    try:
        return json.loads(line)
    except ValueError:
        return None
    except RecursionError:  # a tool input nested thousands deep: the response's usage still counts
        return _shallow(line)


SHALLOW_DEPTH = 64  # far below what json reads, far above where a response's usage sits (depth 3)


def _shallow(raw: bytes) -> Any:
    """The JSON value of `raw` with every value nested deeper than SHALLOW_DEPTH replaced by null, or None.
    A line (or document) too deep for the json module would otherwise stop the reader there for good, and
    every later call of the session would fail with it."""
    import re

    text = raw.decode("utf-8", "replace")
    kept: list[str] = []
    depth, start = 0, 0
    for token in re.finditer(r'"(?:[^"\\]|\\.)*"|[\[\]{}]', text):
        mark = token.group()
        if mark in "[{":
            depth += 1
            if depth == SHALLOW_DEPTH + 1:
                kept.append(text[start:token.start()])
        elif mark in "]}":
            if depth == SHALLOW_DEPTH + 1:
                kept.append("null")
                start = token.end()
            depth -= 1
    try:
        return json.loads("".join(kept) + text[start:])
    except (ValueError, RecursionError):
        return None


def _claude(path: str, cursor: dict, policy: Policy) -> tuple[Usage, dict]:
    lines, offset = _new_lines(path, cursor.get("offset", 0))
    seen = list(cursor.get("seen", []))
    known = set(seen)
    total = Usage()
    for line in lines:
        record = _json(line)
        if not isinstance(record, dict) or record.get("type") != "assistant":
            continue
        message = record.get("message")
        usage = message.get("usage") if isinstance(message, dict) else None
        if not isinstance(usage, dict) or message.get("model") == "<synthetic>":
            continue
        key = f"{message.get('id')}:{record.get('requestId')}"
        if message.get("id") and key in known:
            continue
        known.add(key)
        seen.append(key)
        cache_write = _int(usage.get("cache_creation_input_tokens"))
        nested = usage.get("cache_creation")
        if not cache_write and isinstance(nested, dict):
            cache_write = sum(_int(v) for v in nested.values())
        tokens = {"input": _int(usage.get("input_tokens")), "output": _int(usage.get("output_tokens")),
                  "cache_read": _int(usage.get("cache_read_input_tokens")), "cache_write": cache_write}
        cost = policy.price(message.get("model")).cost(tokens)
        total = total + Usage(**tokens, cost_usd=round(cost, 6), messages=1)
    return total, {"offset": offset, "seen": seen[-SEEN_KEPT:]}


def _codex(path: str, cursor: dict, policy: Policy) -> tuple[Usage, dict]:
    lines, offset = _new_lines(path, cursor.get("offset", 0))
    model = cursor.get("model")
    total = Usage.from_dict(cursor.get("total"))
    latest = total
    for line in lines:
        record = _json(line)
        if not isinstance(record, dict):
            continue
        payload = record.get("payload") if isinstance(record.get("payload"), dict) else {}
        if record.get("type") == "turn_context" and payload.get("model"):
            model = payload["model"]
        info = payload.get("info") if payload.get("type") == "token_count" else None
        counts = info.get("total_token_usage") if isinstance(info, dict) else None
        if isinstance(counts, dict):
            cached = _int(counts.get("cached_input_tokens"))
            tokens = {"input": max(0, _int(counts.get("input_tokens")) - cached),
                      "output": _int(counts.get("output_tokens")), "cache_read": cached, "cache_write": 0}
            messages = latest.messages + (1 if _int(counts.get("total_tokens")) != latest.tokens else 0)
            new = Usage(**tokens, messages=messages)
            cost = latest.cost_usd + policy.price(model).cost(new.minus(latest).tokens_dict())
            latest = Usage(**tokens, cost_usd=round(cost, 6), messages=messages)
    return latest.minus(total), {"offset": offset, "model": model, "total": latest.to_dict()}


def _gemini(path: str, cursor: dict, policy: Policy) -> tuple[Usage, dict]:
    with open(path, "rb") as handle:  # refresh turns a failure into a clear deny
        raw = handle.read()
    document = _json(raw)
    if document is None:
        return Usage(), dict(cursor)  # being rewritten: the next read gets it
    messages = document.get("messages") if isinstance(document, dict) else None
    latest = Usage()
    for message in messages if isinstance(messages, list) else []:
        counts = message.get("tokens") if isinstance(message, dict) else None
        if not isinstance(counts, dict):
            continue
        cached = _int(counts.get("cached"))
        tokens = {"input": max(0, _int(counts.get("input")) - cached),
                  "output": _int(counts.get("output")) + _int(counts.get("thoughts")), "cache_read": cached,
                  "cache_write": 0}
        cost = policy.price(message.get("model")).cost(tokens)
        latest = latest + Usage(**tokens, cost_usd=round(cost, 6), messages=1)
    before = Usage.from_dict(cursor.get("total"))
    return latest.minus(before), {"offset": len(raw), "total": latest.to_dict()}


def _int(value: Any) -> int:
    """A token count as a transcript gives it, within a transition's bound: a count above it is kept at the
    bound, as a stored cost reads, since refusing it would stop the session's every later call on one line."""
    if not isinstance(value, int) or isinstance(value, bool) or value <= 0:
        return 0
    return value if value <= MAX_TOKENS else MAX_TOKENS
